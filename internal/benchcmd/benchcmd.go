// Package benchcmd holds what the benchmark commands share: a flag type, the machine facts
// they print, and how they format numbers.
package benchcmd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ints is a flag.Value of positive numbers separated by commas ("1,3").
type Ints []int

func (l *Ints) String() string { return fmt.Sprint(*l) }

// Set replaces the list with the numbers in s.
func (l *Ints) Set(s string) error {
	*l = nil
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("want positive numbers separated by commas, got %q", s)
		}
		*l = append(*l, n)
	}
	return nil
}

// Thousands formats f rounded to an integer with a comma between groups of three digits.
func Thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// YesNo words a goal check for a report table.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// CPUModel returns the first "model name" in /proc/cpuinfo, or "unknown".
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

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
