package server

import (
	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/log"
)

// startRetention runs the retention check of every log every log.retention.check.interval.ms
// on the cluster clock, as Kafka's LogManager schedules its kafka-log-retention task (whose
// first run Kafka delays by 30 s; here it comes one interval after the start), so that a test
// on the manual clock sees records go when it advances past retention.ms and a check. The
// check is a periodic task of the clock (clock.Every): a manual clock's Pending does not count
// it.
func (c *Cluster) startRetention() clock.Timer {
	return clock.Every(c.clock, c.configs.RetentionCheckInterval(), c.applyRetention)
}

// applyRetention applies each topic's retention.ms and retention.bytes (log.Partition's
// ApplyRetention) to the log of every replica on a running broker, as each Kafka broker applies
// it to the logs it holds, leader or follower. Topics whose cleanup.policy lacks delete keep
// everything.
func (c *Cluster) applyRetention() {
	now := c.clock.Now()
	for _, t := range c.meta.SortedTopics() {
		policy := c.configs.LogPolicy(c.meta.TopicConfigs(t))
		if !policy.Delete || policy.RetentionMs < 0 && policy.RetentionBytes < 0 {
			continue
		}
		r := log.Retention{Ms: policy.RetentionMs, Bytes: policy.RetentionBytes}
		for _, p := range c.meta.Partitions(t) {
			st := p.State()
			for _, broker := range st.Replicas {
				if lg := st.Log(broker); lg != nil && c.replicas.Alive(broker) {
					lg.ApplyRetention(now, r)
				}
			}
		}
	}
}
