package benchkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateTopic creates topic with parts partitions through cl, unless it exists, and waits up to
// 30 s until each partition has a leader.
func CreateTopic(ctx context.Context, cl *kgo.Client, topic string, parts int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(parts), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td := md.Topics[topic]
			ready := td.Err == nil && len(td.Partitions) == parts
			for _, p := range td.Partitions {
				ready = ready && p.Leader >= 0 && p.Err == nil
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader for every partition: %w", topic, errors.Join(err, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
