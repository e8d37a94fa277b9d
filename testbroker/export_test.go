package testbroker

// WithoutReplicaFetchers leaves every follower's replica fetcher off, so that a test of the
// leader can send the followers' fetches itself.
func WithoutReplicaFetchers() Opt { return opt(func(c *cfg) { c.noReplicaFetchers = true }) }
