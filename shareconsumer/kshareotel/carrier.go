package kshareotel

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
)

// HeaderCarrier makes record headers a propagation.TextMapCarrier: a producer injects its span
// context into a kgo.Record's headers with it, prop.Inject(ctx, kshareotel.HeaderCarrier(&r.Headers)),
// and the consumer reads it back from a shareconsumer.Record's. Get returns the value of the
// last header with the key, as Kafka's clients do; Set replaces every header with the key by
// one, in a new slice (a consumed record's headers share their array with other records and
// are never written to).
func HeaderCarrier(h *[]kgo.RecordHeader) propagation.TextMapCarrier { return carrier{h} }

type carrier struct{ h *[]kgo.RecordHeader }

var _ propagation.TextMapCarrier = carrier{}

func (c carrier) Get(key string) string {
	hs := *c.h
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return string(hs[i].Value)
		}
	}
	return ""
}

func (c carrier) Set(key, value string) {
	hs := (*c.h)[:0:0]
	for _, h := range *c.h {
		if h.Key != key {
			hs = append(hs, h)
		}
	}
	*c.h = append(hs, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(*c.h))
	for _, h := range *c.h {
		keys = append(keys, h.Key)
	}
	return keys
}
