// Package groupconfig sets Kafka group configs (share.auto.offset.reset,
// share.record.lock.duration.ms, ...) the way kafka-configs.sh --entity-type groups does: one
// IncrementalAlterConfigs request on a GROUP resource. Kafka, testbroker and kfake accept it
// before the group exists. The benchmarks and tests use it; kadm has no call for it.
package groupconfig

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Set sets configs on group, kv alternating keys and values, in one request. The error wraps
// the *kerr.Error Kafka answered with, followed by its message when it sent one.
func Set(ctx context.Context, cl *kgo.Client, group string, kv ...string) error {
	if len(kv) == 0 || len(kv)%2 != 0 {
		return fmt.Errorf("groupconfig: want key, value pairs, got %d strings", len(kv))
	}
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kv); i += 2 {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		res.Configs = append(res.Configs, cfg)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("setting %v on group %s: %w", kv, group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("setting %v on group %s: %w%s", kv, group, err, msg)
		}
	}
	return nil
}

// SetOn is Set through a client of its own on seeds, closed before it returns.
func SetOn(ctx context.Context, seeds []string, group string, kv ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return Set(ctx, cl, group, kv...)
}
