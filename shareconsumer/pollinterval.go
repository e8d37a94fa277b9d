package shareconsumer

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pollEnded starts the MaxPollInterval count, when a Poll or Process returns.
func (c *Consumer) pollEnded() {
	c.mu.Lock()
	c.poll.lastPoll = time.Now()
	c.mu.Unlock()
}

// pollTimeLeft returns how long the member may stay without a Poll at now, 0 when the time is
// up; while a Poll or Process runs it is a full MaxPollInterval.
func (c *Consumer) pollTimeLeft(now time.Time) time.Duration {
	if c.poll.polling.Load() {
		return c.cfg.maxPollInterval
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.cfg.maxPollInterval-now.Sub(c.poll.lastPoll))
}

// leaveForPollTimeoutLocked stops a member the application has not polled for
// MaxPollInterval, as Kafka's share consumer does: it stops fetching, gives back the records
// it holds and closes its share sessions (with the acknowledgements recorded so far), so that
// brokers release its records now rather than when their locks run out. The heartbeat loop
// sends the leave once the sessions' closes are answered (the returned channel is closed then),
// so that the acknowledgements they carry reach the brokers while the member is in the group.
func (c *Consumer) leaveForPollTimeoutLocked(now time.Time) <-chan struct{} {
	c.log(kgo.LogLevelWarn, "consumer poll timeout has expired: the time between calls to Poll was longer than "+
		"MaxPollInterval (max.poll.interval.ms), which typically means that the poll loop spends too much time "+
		"processing records; leaving the group, to rejoin at the next Poll. Raise MaxPollInterval, or lower "+
		"MaxPollRecords.", "max_poll_interval", c.cfg.maxPollInterval)
	c.member.left = true
	c.assignmentChangedLocked(c.member.assign(nil))
	c.ledger.giveBack(&c.sessions, now)
	c.ledger.moveAcked(&c.sessions)
	w := newCommitWait(context.Background())
	for _, s := range c.sessions.sorted() {
		s.close(w, &c.acks, now)
	}
	c.kickLocked()
	if w.remaining == 0 {
		close(w.done)
	}
	return w.done
}

// rejoinIfLeftLocked makes a member that left for want of Polls join again, for the Poll or
// Process starting now.
func (c *Consumer) rejoinIfLeftLocked() {
	if !c.member.left {
		return
	}
	c.log(kgo.LogLevelWarn, "the time between calls to Poll was longer than MaxPollInterval (max.poll.interval.ms); rejoining the group now",
		"exceeded_by", time.Since(c.poll.lastPoll)-c.cfg.maxPollInterval)
	c.member.left = false
	c.wakeHeartbeat()
	c.noteLocked(time.Now())
}
