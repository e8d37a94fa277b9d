package kshareotel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// TestPartitionOpts: each key gets the attributes partitionAttrs and its error.type give, a
// key seen before gets the same option back, and looking it up allocates nothing.
func TestPartitionOpts(t *testing.T) {
	var c partitionOpts
	set := func(o metric.MeasurementOption) attribute.Set {
		return metric.NewRecordConfig([]metric.RecordOption{o}).Attributes()
	}
	keys := []partitionKey{
		{group: "g", operation: "process", topic: "orders", partition: 3},
		{group: "g", operation: "process", topic: "orders", partition: 4},
		{group: "g", operation: "process", topic: "orders", partition: 3, errorType: ErrorTypeRelease},
		{group: "g", operation: "process", topic: "orders", partition: 4, errorType: ErrorTypeRelease},
		{group: "g", topic: "orders", partition: 3},
		{group: "h", operation: "process", topic: "orders", partition: 3},
		{operation: "process", topic: "refunds", partition: 3},
	}
	seen := map[attribute.Distinct]partitionKey{}
	for _, k := range keys {
		got := set(c.get(k))
		want := partitionAttrs(k.group, k.operation, k.topic, k.partition)
		if k.errorType != "" {
			want = append(want, semconv.ErrorTypeKey.String(k.errorType))
		}
		assert.True(t, got.Equals(ptr(attribute.NewSet(want...))), "%+v: %v", k, got.ToSlice())
		if prev, ok := seen[got.Equivalent()]; ok {
			t.Errorf("%+v has the attributes of %+v", k, prev)
		}
		seen[got.Equivalent()] = k
	}
	for _, k := range keys {
		assert.Equal(t, c.get(k), c.get(k), "%+v", k)
	}
	assert.Len(t, c.opts, len(keys))
	k := keys[2]
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = c.get(k) }), "a kept option is not made again")
}

func ptr[T any](v T) *T { return &v }
