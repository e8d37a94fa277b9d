package benchkit

import (
	"bytes"
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceRoundRobin produces n records of valueSize bytes to topic ("" for the client's
// default topic), record i to partition i mod parts (the client needs kgo.ManualPartitioner),
// and waits for all of them; it returns the first produce error.
func ProduceRoundRobin(ctx context.Context, cl *kgo.Client, topic string, parts, n, valueSize int) error {
	value := bytes.Repeat([]byte("v"), valueSize)
	return ProduceValues(ctx, cl, topic, parts, n, func(int) []byte { return value })
}

// ProduceValues is ProduceRoundRobin with record i's value from value(i); the slice is kept
// until the record is acknowledged, so value must not reuse it.
func ProduceValues(ctx context.Context, cl *kgo.Client, topic string, parts, n int, value func(i int) []byte) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	wg.Add(n)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: value(i)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	return firstErr
}
