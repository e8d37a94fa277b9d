package shareconsumer

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// This file runs membership's requests: the heartbeat loop (alive from New to Close) and the
// metadata goroutine, started when metadata is needed.

// wakeHeartbeat makes the heartbeat loop send a heartbeat now.
func (c *Consumer) wakeHeartbeat() {
	select {
	case c.life.hbWake <- struct{}{}:
	default:
	}
}

// heartbeatLoop keeps the member in its group (ShareGroupHeartbeat v1 to the group
// coordinator, every HeartbeatIntervalMs the coordinator asks for), joins when subscribed,
// leaves when unsubscribed or not polled for MaxPollInterval, applies the assignments it
// receives, and leaves when Close asks.
func (c *Consumer) heartbeatLoop() {
	defer c.life.wg.Done()
	defer close(c.life.hbDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-c.life.hbStop:
			c.leave()
			c.noteMembership()
			return
		case <-c.life.hbWake:
		case <-timer.C:
		}
		next := c.heartbeatStep()
		// Every change of the membership goes through this loop (Subscribe, Unsubscribe and a
		// Poll rejoining wake it), but assignments whose topics metadata has yet to name.
		c.noteMembership()
		c.mu.Lock()
		member := c.member.epoch > 0
		c.mu.Unlock()
		if next >= 0 && member {
			// Wake up in time to leave when the application stops polling.
			next = min(next, c.pollTimeLeft(time.Now()))
		}
		timer.Stop()
		select {
		case <-timer.C:
		default:
		}
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// heartbeatStep sends one heartbeat if one is due and returns when to send the next, or -1 to
// wait for a wake-up.
func (c *Consumer) heartbeatStep() time.Duration {
	c.mu.Lock()
	now := time.Now()
	m := &c.member
	timedOut := !m.left && m.epoch > 0 && !c.poll.polling.Load() && now.Sub(c.poll.lastPoll) >= c.cfg.maxPollInterval
	var closed <-chan struct{}
	if timedOut {
		closed = c.leaveForPollTimeoutLocked(now)
	}
	idle := m.fatal != nil || m.left || len(m.subscription) == 0
	noCoord := m.coord < 0
	c.mu.Unlock()
	if timedOut {
		select {
		case <-closed:
		case <-c.life.closing:
		}
		c.leave()
		return -1
	}
	if idle {
		c.mu.Lock()
		unsubscribed := len(c.member.subscription) == 0
		c.mu.Unlock()
		if unsubscribed {
			c.leave()
		}
		return -1 // a member that left for want of Polls sends no heartbeat until one comes
	}
	if noCoord && !c.findCoordinator(c.life.hbCtx) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.member.backoff()
	}

	c.mu.Lock()
	req := c.member.heartbeat()
	coord := c.member.coord
	c.mu.Unlock()
	kresp, err := c.cl.Broker(int(coord)).Request(c.life.hbCtx, req)
	resp, _ := kresp.(*kmsg.ShareGroupHeartbeatResponse)

	c.mu.Lock()
	defer c.mu.Unlock()
	now = time.Now()
	if err != nil && c.life.hbCtx.Err() != nil {
		return -1 // Close started
	}
	out := c.member.applyHeartbeat(req, resp, err)
	if out.err != nil {
		c.health.setErr(out.err, now)
		switch {
		case err != nil:
			c.log(kgo.LogLevelWarn, "heartbeat failed; finding the coordinator again", "coordinator", coord, "err", err)
		case out.coordErr:
			c.health.coordErr = out.err
		case out.fatal:
			c.log(kgo.LogLevelError, "the group coordinator refused the member for good", "err", out.err)
			c.poll.wake()
			c.memberTold.cause = out.err
		case out.fenced:
			c.log(kgo.LogLevelInfo, "member fenced by the group coordinator; rejoining", "err", out.err)
			c.memberTold.cause = out.err
		case out.pollErr == nil:
			c.log(kgo.LogLevelWarn, "heartbeat refused", "err", out.err)
		}
	}
	if c.member.epoch > 0 {
		c.health.coordErr = nil
	}
	if err == nil && resp.ErrorCode == 0 {
		c.health.hbDenied = nil
		if len(c.member.withheld) > 0 {
			// Ask Metadata again, to send the withheld topics once an ACL allows them.
			c.triggerMetadataLocked()
		}
	}
	switch {
	case out.pollErr == nil:
	case errors.Is(out.pollErr, kerr.TopicAuthorizationFailed):
		c.heartbeatDeniedLocked(out.pollErr)
	default:
		c.poll.addErr(out.pollErr)
	}
	if out.assignment {
		c.assignmentChangedLocked(out.resolved)
	}
	c.noteLocked(now)
	if err == nil && resp.ErrorCode == 0 && !c.life.stopped && c.member.describeDue() {
		c.life.wg.Add(1)
		go c.describe(c.member.coord)
	}
	return out.next
}

// heartbeatDeniedLocked takes a heartbeat's TOPIC_AUTHORIZATION_FAILED: Kafka refuses the
// whole heartbeat when the member may not describe a subscribed topic, and names none. The
// next Poll gets a *errors.TopicAuthorizationError, once until a heartbeat succeeds, naming the
// subscribed topics metadata refuses, as far as known. The member stays as it is and the
// heartbeats go on, as in Kafka's client; Metadata, asked now, names the refused topics for
// Status, and the heartbeats leave them out (membership.withhold), so that the member joins
// with the others.
func (c *Consumer) heartbeatDeniedLocked(kafkaErr error) {
	news := c.health.hbDenied == nil
	c.health.hbDenied = &errors.TopicAuthorizationError{Topics: c.health.deniedOf(c.member.subscription), Err: kafkaErr}
	if news {
		c.log(kgo.LogLevelWarn, "the group coordinator refused the heartbeat: a subscribed topic may not be described", "err", c.health.hbDenied)
		c.poll.addErr(c.health.hbDenied)
	}
	c.triggerMetadataLocked()
}

// assignmentChangedLocked follows a new assignment: sessions fetch anew, and metadata is asked
// for when some partition's leader is not known.
func (c *Consumer) assignmentChangedLocked(resolved bool) {
	for _, s := range c.sessions.byNode {
		s.fetchedEmpty = false
	}
	if !resolved {
		c.triggerMetadataLocked()
	}
	c.kickLocked()
}

// describe counts the group's members (ShareGroupDescribe at coord), so that Status and Poll's
// error can say how many members share how many partitions (membership.describeDue says when).
// A failure leaves the count unknown.
func (c *Consumer) describe(coord int32) {
	defer c.life.wg.Done()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{c.cfg.group}
	kresp, err := c.cl.Broker(int(coord)).Request(c.life.hbCtx, req)
	if err != nil {
		return
	}
	for _, g := range kresp.(*kmsg.ShareGroupDescribeResponse).Groups {
		if g.GroupID == c.cfg.group && g.ErrorCode == 0 {
			c.mu.Lock()
			c.health.members = len(g.Members)
			c.noteLocked(time.Now())
			c.mu.Unlock()
		}
	}
}

// findCoordinator asks for the group coordinator (FindCoordinator, key type 0) and checks that
// it serves share groups; a broker that does not is fatal. It reports whether the coordinator
// is known now.
func (c *Consumer) findCoordinator(ctx context.Context) bool {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = c.cfg.group
	req.CoordinatorKeys = []string{c.cfg.group}
	req.CoordinatorType = 0
	kresp, err := c.cl.Request(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "finding the group coordinator failed", "err", err)
			c.mu.Lock()
			c.health.setErr(err, time.Now())
			c.noteLocked(time.Now())
			c.mu.Unlock()
		}
		return false
	}
	resp := kresp.(*kmsg.FindCoordinatorResponse)
	code, msg, node := resp.ErrorCode, resp.ErrorMessage, resp.NodeID
	for _, co := range resp.Coordinators {
		if co.Key == c.cfg.group {
			code, msg, node = co.ErrorCode, co.ErrorMessage, co.NodeID
		}
	}
	if code != 0 {
		err := errors.FromKafka(code, msg)
		c.log(kgo.LogLevelWarn, "finding the group coordinator failed", "err", err)
		c.mu.Lock()
		c.health.setErr(err, time.Now())
		c.health.coordErr = err
		c.noteLocked(time.Now())
		c.mu.Unlock()
		return false
	}
	v, err := c.versionsFor(ctx, node)
	if err != nil {
		c.log(kgo.LogLevelWarn, "asking the group coordinator for its ApiVersions failed", "coordinator", node, "err", err)
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !v.SupportsShareGroups() {
		c.member.fatal = &errors.FatalError{Group: c.cfg.group, Err: kerr.UnsupportedVersion,
			Message: "the group coordinator does not support share groups: they need ShareGroupHeartbeat, ShareFetch and ShareAcknowledge v1 (Kafka 4.1)"}
		c.poll.wake()
		return false
	}
	c.member.coord = node
	c.health.coordErr = nil
	return true
}

// leave sends the heartbeat that leaves the group (MemberEpoch -1), if the consumer is a
// member. GROUP_ID_NOT_FOUND in answer is ignored, as Kafka's client ignores it.
func (c *Consumer) leave() {
	c.mu.Lock()
	epoch := c.member.leaving()
	noCoord := c.member.coord < 0
	c.noteLocked(time.Now())
	c.mu.Unlock()
	if epoch == 0 {
		return
	}
	if noCoord && !c.findCoordinator(c.life.ctx) {
		return
	}
	c.mu.Lock()
	coord := c.member.coord
	c.mu.Unlock()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = c.cfg.group, c.member.memberID, -1
	kresp, err := c.cl.Broker(int(coord)).Request(c.life.ctx, req)
	switch {
	case err != nil:
		if c.life.ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "leaving the group failed", "err", err)
		}
	case kresp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode != 0:
		resp := kresp.(*kmsg.ShareGroupHeartbeatResponse)
		if resp.ErrorCode != kerr.GroupIDNotFound.Code {
			c.log(kgo.LogLevelWarn, "leaving the group failed", "err", errors.FromKafka(resp.ErrorCode, resp.ErrorMessage))
		}
	}
}

// afterMetadata tells the hooks what metadata changed: the assignment's partitions, now named,
// and the locks of partitions whose leader moved.
func (c *Consumer) afterMetadata() {
	c.noteMembership()
	c.fireLockLost()
}

// triggerMetadataLocked makes the metadata goroutine run, or run again.
func (c *Consumer) triggerMetadataLocked() {
	if c.life.stopped {
		return
	}
	if c.member.metaRunning {
		c.member.metaAgain = true
		return
	}
	c.member.metaRunning = true
	c.life.wg.Add(1)
	go c.metadataLoop()
}

// metadataLoop asks for the metadata of the subscribed topics and of the assigned ones (names,
// ids, leaders), until the assignment is resolved and no new request was asked for meanwhile.
func (c *Consumer) metadataLoop() {
	defer c.life.wg.Done()
	failures := 0
	for {
		c.mu.Lock()
		names := c.member.metadataTopics()
		c.member.metaAgain = false
		c.mu.Unlock()

		ok := true
		var resp *kmsg.MetadataResponse
		var err error
		if len(names) > 0 {
			req := kmsg.NewPtrMetadataRequest()
			for _, n := range names {
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, t)
			}
			var kresp kmsg.Response
			kresp, err = c.cl.Request(c.life.ctx, req)
			resp, _ = kresp.(*kmsg.MetadataResponse)
		}
		c.mu.Lock()
		now := time.Now()
		switch {
		case err != nil:
			if c.life.ctx.Err() == nil {
				c.log(kgo.LogLevelWarn, "metadata request failed", "err", err)
				c.health.setErr(err, now)
			}
			ok = false
		case resp != nil:
			moves, unknown, known := c.member.applyMetadata(resp)
			denied := metadataDenied(resp)
			if newly := c.health.topicsSeen(unknown, known, denied); len(newly) > 0 {
				// As Kafka's client throws TopicAuthorizationException from poll for the topics
				// metadata refuses; once, until metadata knows them again.
				err := &errors.TopicAuthorizationError{Topics: newly, Err: &errors.KafkaError{Code: kerr.TopicAuthorizationFailed.Code}}
				c.log(kgo.LogLevelWarn, "not authorized to describe subscribed topics; the heartbeats leave them out", "err", err)
				c.poll.addErr(err)
			}
			if c.member.withhold(denied, known) {
				c.wakeHeartbeat()
			}
			for _, mv := range moves {
				c.leaderMovedLocked(mv)
			}
		}
		if !c.member.resolve() {
			ok = false
		}
		c.kickLocked()
		if ok {
			failures = 0
		}
		if (ok && !c.member.metaAgain) || c.life.stopped || c.life.closed.Load() {
			c.member.metaRunning = false
			c.mu.Unlock()
			c.afterMetadata()
			return
		}
		c.mu.Unlock()
		c.afterMetadata()
		if !ok {
			d := min(retryBackoff<<min(failures, 6), maxBackoff)
			failures++
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.life.closing:
				t.Stop()
			}
		}
	}
}
