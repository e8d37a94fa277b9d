package kshareprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Opt configures Metrics.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

type cfg struct {
	namespace, subsystem string
	constLabels          prometheus.Labels

	registerer    prometheus.Registerer
	registererSet bool
	gatherer      prometheus.Gatherer
	handlerOpts   promhttp.HandlerOpts

	processBuckets []float64
	fetchBuckets   []float64
}

// DefaultProcessDurationBuckets are the buckets of process_duration_seconds: from 1ms to about
// 33s, each twice the one before (16 buckets).
var DefaultProcessDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// DefaultFetchDurationBuckets are the buckets of fetch_request_duration_seconds: from 1ms to
// about 16s, each twice the one before (15 buckets). A ShareFetch waits at the broker for up to
// the consumer's FetchMaxWait when no records are there, so the upper buckets are the usual ones
// on a quiet topic.
var DefaultFetchDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// Registerer sets where New registers the Metrics (it is a prometheus.Collector). Without this
// option New registers them with a registry of their own, which Handler serves. With nil New
// registers them nowhere: register them yourself, with prometheus.Registerer.Register or
// MustRegister.
//
// New panics, as MustRegister does, when r refuses them: most often because r already holds a
// Metrics with the same namespace, subsystem and const labels (one Metrics per consumer; give
// each its own ConstLabels, for example the group).
func Registerer(r prometheus.Registerer) Opt {
	return opt(func(c *cfg) { c.registerer, c.registererSet = r, true })
}

// Gatherer sets what Handler serves. Without it, Handler serves the Registerer when it is also
// a prometheus.Gatherer (a *prometheus.Registry, prometheus.DefaultRegisterer), else a registry
// holding only these Metrics.
func Gatherer(g prometheus.Gatherer) Opt {
	return opt(func(c *cfg) { c.gatherer = g })
}

// HandlerOpts sets the options of the handler Handler returns (promhttp.HandlerFor's).
func HandlerOpts(o promhttp.HandlerOpts) Opt {
	return opt(func(c *cfg) { c.handlerOpts = o })
}

// Subsystem puts a subsystem between the namespace and each metric's name:
// namespace_subsystem_fetch_records_total. Empty by default.
func Subsystem(s string) Opt {
	return opt(func(c *cfg) { c.subsystem = s })
}

// ConstLabels adds labels with fixed values to every metric, for example
// prometheus.Labels{"group": "orders"} to tell the consumers of two groups apart in one
// registry. The names topic, partition, node_id, outcome, type, reason and state are the
// metrics' own and are refused (New panics).
func ConstLabels(l prometheus.Labels) Opt {
	return opt(func(c *cfg) {
		if c.constLabels == nil {
			c.constLabels = make(prometheus.Labels, len(l))
		}
		for k, v := range l {
			c.constLabels[k] = v
		}
	})
}

// ProcessDurationBuckets sets the upper bounds, in seconds and increasing, of the buckets of
// process_duration_seconds (default DefaultProcessDurationBuckets).
func ProcessDurationBuckets(b []float64) Opt {
	return opt(func(c *cfg) { c.processBuckets = b })
}

// FetchDurationBuckets sets the upper bounds, in seconds and increasing, of the buckets of
// fetch_request_duration_seconds (default DefaultFetchDurationBuckets).
func FetchDurationBuckets(b []float64) Opt {
	return opt(func(c *cfg) { c.fetchBuckets = b })
}
