package server

import (
	"github.com/kshare/kshare/testbroker/internal/replica"
)

// newReplicaManager returns the cluster's replica manager: its fetchers reach the leaders
// through the cluster's own listeners, and a new leader takes over the share partitions.
func (c *Cluster) newReplicaManager() *replica.Manager {
	return replica.NewManager(replica.Config{
		Brokers:       c.cfg.Brokers,
		Clock:         c.clock,
		Settings:      func() replica.Settings { return c.configs.Snapshot().Replica },
		Dial:          c.cfg.Dial,
		Addr:          func(broker int32) string { return c.broker(broker).addr },
		Logger:        c.logger,
		LeaderChanged: c.leaderChanged,
		Authenticate:  c.interBrokerAuth(),
	})
}
