package replica

import "time"

// FollowerView is what the leader knows of one follower, as Kafka's Replica.stateSnapshot
// gives it: the follower's log end offset (its last fetch offset, -1 before it fetched from
// the current leader) and the last moment it was known to have all the leader had.
type FollowerView struct {
	Broker       int32
	LogEndOffset int64
	LastCaughtUp time.Time
}

// Followers returns the leader's view of each follower of the current leader, in no order.
func (p *Partition) Followers() []FollowerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]FollowerView, 0, len(p.followers))
	for r, f := range p.followers {
		out = append(out, FollowerView{Broker: r, LogEndOffset: f.leo, LastCaughtUp: f.lastCaughtUp})
	}
	return out
}
