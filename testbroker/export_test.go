package testbroker

// WithoutReplicaFetchers leaves every follower's replica fetcher off, so that a test of the
// leader can send the followers' fetches itself.
func WithoutReplicaFetchers() Opt { return opt(func(c *cfg) { c.noReplicaFetchers = true }) }

// WriteTxnMarker writes a transaction marker into a partition's leader log, as the transaction
// coordinator does when a transaction ends, for tests of the log side of transactions.
func (c *Cluster) WriteTxnMarker(topic string, partition int32, producerID int64, producerEpoch int16, commit bool) (int64, error) {
	return c.s.WriteTxnMarker(topic, partition, producerID, producerEpoch, commit, 0, 1)
}
