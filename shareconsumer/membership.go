package shareconsumer

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/errors"
)

// maxBackoff caps the pause between failed heartbeats or metadata requests.
const maxBackoff = 5 * time.Second

// heartbeater is the heartbeat loop's own state; only its goroutine touches it.
type heartbeater struct {
	c        *Consumer
	coord    int32    // the group coordinator; -1 unknown
	epoch    int32    // the member epoch; 0 (re)joins
	sentSub  []string // the subscription the coordinator acknowledged
	rackSent bool
	interval time.Duration // the coordinator's heartbeat interval
	failures int
	// describedEpoch is the member epoch at the last ShareGroupDescribe, sent to count the
	// members when the member is assigned nothing.
	describedEpoch int32
}

// setEpoch sets the member epoch, and shows it to Status.
func (hb *heartbeater) setEpoch(e int32) {
	hb.epoch = e
	c := hb.c
	c.mu.Lock()
	c.health.memberEpoch = e
	if e > 0 {
		c.health.coordErr = nil
	}
	c.noteLocked()
	c.mu.Unlock()
}

// describeIfIdle counts the group's members (ShareGroupDescribe), once per member epoch, while
// the member is assigned nothing, so that Status and Poll's error can say how many members
// share how many partitions. A failure leaves the count unknown.
func (hb *heartbeater) describeIfIdle() {
	c := hb.c
	c.mu.Lock()
	idle := len(c.assignment) == 0 && len(c.subscription) > 0
	c.mu.Unlock()
	if !idle || hb.epoch <= 0 || hb.describedEpoch == hb.epoch {
		return
	}
	hb.describedEpoch = hb.epoch
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{c.cfg.group}
	kresp, err := c.cl.Broker(int(hb.coord)).Request(c.hbCtx, req)
	if err != nil {
		return
	}
	for _, g := range kresp.(*kmsg.ShareGroupDescribeResponse).Groups {
		if g.GroupID == c.cfg.group && g.ErrorCode == 0 {
			c.mu.Lock()
			c.health.members = len(g.Members)
			c.noteLocked()
			c.mu.Unlock()
		}
	}
}

// wakeHeartbeat makes the heartbeat loop send a heartbeat now.
func (c *Consumer) wakeHeartbeat() {
	select {
	case c.hbWake <- struct{}{}:
	default:
	}
}

// heartbeatLoop keeps the member in its group (ShareGroupHeartbeat v1 to the group
// coordinator, every HeartbeatIntervalMs the coordinator asks for), joins when subscribed,
// leaves when unsubscribed, applies the assignments it receives, and leaves when Close asks.
// It is the consumer's only long-lived goroutine.
func (c *Consumer) heartbeatLoop() {
	defer c.wg.Done()
	defer close(c.hbDone)
	hb := &heartbeater{c: c, coord: -1, interval: 5 * time.Second}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-c.hbStop:
			hb.leave()
			return
		case <-c.hbWake:
		case <-timer.C:
		}
		next := hb.step()
		if next >= 0 && hb.epoch > 0 {
			// Wake up in time to leave when the application stops polling.
			next = min(next, c.pollTimeLeft())
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

func (hb *heartbeater) backoff() time.Duration {
	d := retryBackoff << min(hb.failures, 6)
	hb.failures++
	return min(d, maxBackoff)
}

// step sends one heartbeat if one is due and returns when to send the next, or -1 to wait for
// a wake-up.
func (hb *heartbeater) step() time.Duration {
	c := hb.c
	c.mu.Lock()
	sub := c.subscription
	fatal, left := c.fatal != nil, c.health.left
	timedOut := !left && hb.epoch > 0 && !c.polling.Load() && time.Since(c.lastPoll) >= c.cfg.maxPollInterval
	var closed <-chan struct{}
	if timedOut {
		closed = c.leaveForPollTimeoutLocked()
	}
	c.mu.Unlock()
	if timedOut {
		select {
		case <-closed:
		case <-c.closing:
		}
		hb.leave()
		return -1
	}
	if fatal || left {
		return -1 // a member that left for want of Polls sends no heartbeat until one comes
	}
	if len(sub) == 0 {
		hb.leave()
		return -1
	}
	if hb.coord < 0 && !hb.findCoordinator(c.hbCtx) {
		return hb.backoff()
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = c.cfg.group, c.memberID, hb.epoch
	if hb.epoch == 0 || !slices.Equal(sub, hb.sentSub) {
		req.SubscribedTopicNames = sub
	}
	if c.rack != nil && (!hb.rackSent || hb.epoch == 0) {
		req.RackID = c.rack
	}
	kresp, err := c.cl.Broker(int(hb.coord)).Request(c.hbCtx, req)
	if err != nil {
		if c.hbCtx.Err() == nil {
			c.log(kgo.LogLevelWarn, "heartbeat failed; finding the coordinator again", "coordinator", hb.coord, "err", err)
			c.mu.Lock()
			c.errLocked(err)
			c.mu.Unlock()
		}
		hb.coord = -1
		return hb.backoff()
	}
	resp := kresp.(*kmsg.ShareGroupHeartbeatResponse)
	if code := resp.ErrorCode; code != 0 {
		c.mu.Lock()
		c.errLocked(errors.FromKafka(code, resp.ErrorMessage))
		switch code {
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			c.health.coordErr = errors.FromKafka(code, resp.ErrorMessage)
		}
		c.mu.Unlock()
	}
	switch code := resp.ErrorCode; code {
	case 0:
		hb.failures = 0
		hb.setEpoch(resp.MemberEpoch)
		hb.sentSub = sub
		hb.rackSent = true
		if resp.HeartbeatIntervalMillis > 0 {
			hb.interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
		if resp.Assignment != nil {
			c.mu.Lock()
			// An assignment answering an old subscription still counts: the next heartbeat
			// brings the one for the new subscription.
			if len(c.subscription) > 0 {
				c.setAssignmentLocked(resp.Assignment.TopicPartitions)
			}
			c.mu.Unlock()
		}
		hb.describeIfIdle()
		return hb.interval
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		c.log(kgo.LogLevelInfo, "member fenced by the group coordinator; rejoining", "err", errors.FromKafka(code, resp.ErrorMessage))
		hb.setEpoch(0)
		c.mu.Lock()
		c.setAssignmentLocked(nil)
		c.mu.Unlock()
		return 0
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		hb.coord = -1
		return hb.backoff()
	case kerr.CoordinatorLoadInProgress.Code:
		return hb.backoff()
	case kerr.TopicAuthorizationFailed.Code:
		c.mu.Lock()
		c.addPollErrLocked(&errors.KafkaError{Code: code, Message: deref(resp.ErrorMessage)})
		c.mu.Unlock()
		return hb.interval
	default:
		kerrMsg := errors.FromKafka(code, resp.ErrorMessage)
		if errors.IsFatalHeartbeatCode(code) {
			c.log(kgo.LogLevelError, "the group coordinator refused the member for good", "err", kerrMsg)
			c.mu.Lock()
			c.fatal = &errors.FatalError{Group: c.cfg.group, Err: kerr.ErrorForCode(code), Message: deref(resp.ErrorMessage),
				InconsistentGroupType: errors.IsInconsistentGroupType(code, deref(resp.ErrorMessage), req.MemberEpoch)}
			c.setAssignmentLocked(nil)
			c.mu.Unlock()
			c.wake()
			return -1
		}
		c.log(kgo.LogLevelWarn, "heartbeat refused", "err", kerrMsg)
		return hb.backoff()
	}
}

// findCoordinator asks for the group coordinator (FindCoordinator, key type 0) and checks that
// it serves share groups; a broker that does not is fatal. It reports whether hb.coord is set.
func (hb *heartbeater) findCoordinator(ctx context.Context) bool {
	c := hb.c
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = c.cfg.group
	req.CoordinatorKeys = []string{c.cfg.group}
	req.CoordinatorType = 0
	kresp, err := c.cl.Request(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "finding the group coordinator failed", "err", err)
			c.mu.Lock()
			c.errLocked(err)
			c.noteLocked()
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
		c.errLocked(err)
		c.health.coordErr = err
		c.noteLocked()
		c.mu.Unlock()
		return false
	}
	v, err := c.versionsFor(ctx, node)
	if err != nil {
		c.log(kgo.LogLevelWarn, "asking the group coordinator for its ApiVersions failed", "coordinator", node, "err", err)
		return false
	}
	if !v.SupportsShareGroups() {
		c.mu.Lock()
		c.fatal = &errors.FatalError{Group: c.cfg.group, Err: kerr.UnsupportedVersion,
			Message: "the group coordinator does not support share groups: they need ShareGroupHeartbeat, ShareFetch and ShareAcknowledge v1 (Kafka 4.1)"}
		c.mu.Unlock()
		c.wake()
		return false
	}
	hb.coord = node
	c.mu.Lock()
	c.health.coordErr = nil
	c.mu.Unlock()
	return true
}

// leave sends the heartbeat that leaves the group (MemberEpoch -1), if the consumer is a
// member. GROUP_ID_NOT_FOUND in answer is ignored, as Kafka's client ignores it.
func (hb *heartbeater) leave() {
	if hb.epoch <= 0 {
		hb.epoch = 0
		return
	}
	c := hb.c
	hb.setEpoch(0)
	hb.sentSub = nil
	if hb.coord < 0 && !hb.findCoordinator(c.ctx) {
		return
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = c.cfg.group, c.memberID, -1
	kresp, err := c.cl.Broker(int(hb.coord)).Request(c.ctx, req)
	switch {
	case err != nil:
		if c.ctx.Err() == nil {
			c.log(kgo.LogLevelWarn, "leaving the group failed", "err", err)
		}
	case kresp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode != 0:
		resp := kresp.(*kmsg.ShareGroupHeartbeatResponse)
		if resp.ErrorCode != kerr.GroupIDNotFound.Code {
			c.log(kgo.LogLevelWarn, "leaving the group failed", "err", errors.FromKafka(resp.ErrorCode, resp.ErrorMessage))
		}
	}
}

// setAssignmentLocked replaces the assignment with the coordinator's (nil: none) and resolves
// it through metadata.
func (c *Consumer) setAssignmentLocked(tps []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) {
	c.assignment = make(map[[16]byte][]int32, len(tps))
	for _, n := range c.nodes {
		n.fetchedEmpty = false
	}
	for _, tp := range tps {
		c.assignment[tp.TopicID] = append(c.assignment[tp.TopicID], tp.Partitions...)
	}
	if !c.resolveAssignmentLocked() {
		c.triggerMetadataLocked()
	}
	c.kickLocked()
}

// resolveAssignmentLocked turns the assignment into partitions by name; it reports false when
// some topic id, or some partition's leader, is not known yet.
func (c *Consumer) resolveAssignmentLocked() bool {
	all := true
	assigned := make(map[TopicPartition]*assignedPart)
	for id, ps := range c.assignment {
		tm := c.topics[id]
		if tm == nil {
			all = false
			continue
		}
		for _, p := range ps {
			tp := TopicPartition{tm.name, p}
			assigned[tp] = &assignedPart{tp: tp, id: id}
			if li, ok := tm.leaders[p]; !ok || li.node < 0 {
				all = false
			}
		}
	}
	c.assigned = assigned
	return all
}

// triggerMetadataLocked makes the metadata goroutine run, or run again.
func (c *Consumer) triggerMetadataLocked() {
	if c.stopped {
		return
	}
	if c.metaRunning {
		c.metaAgain = true
		return
	}
	c.metaRunning = true
	c.wg.Add(1)
	go c.metadataLoop()
}

// metadataLoop asks for the metadata of the subscribed topics and of the assigned ones (names,
// ids, leaders), until the assignment is resolved and no new request was asked for meanwhile.
func (c *Consumer) metadataLoop() {
	defer c.wg.Done()
	failures := 0
	for {
		c.mu.Lock()
		names := slices.Clone(c.subscription)
		for _, tm := range c.topics {
			if _, ok := c.assignment[tm.id]; ok {
				names = append(names, tm.name)
			}
		}
		c.metaAgain = false
		c.mu.Unlock()
		names = normalizeTopics(names)

		ok := true
		if len(names) > 0 {
			req := kmsg.NewPtrMetadataRequest()
			for _, n := range names {
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, t)
			}
			kresp, err := c.cl.Request(c.ctx, req)
			c.mu.Lock()
			if err != nil {
				if c.ctx.Err() == nil {
					c.log(kgo.LogLevelWarn, "metadata request failed", "err", err)
					c.errLocked(err)
				}
				ok = false
			} else {
				c.applyMetadataLocked(kresp.(*kmsg.MetadataResponse))
			}
		} else {
			c.mu.Lock()
		}
		if !c.resolveAssignmentLocked() {
			ok = false
		}
		c.kickLocked()
		if ok {
			failures = 0
		}
		if (ok && !c.metaAgain) || c.stopped || c.closed.Load() {
			c.metaRunning = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if !ok {
			d := min(retryBackoff<<min(failures, 6), maxBackoff)
			failures++
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.closing:
				t.Stop()
			}
		}
	}
}

// applyMetadataLocked records the topics of a metadata response.
func (c *Consumer) applyMetadataLocked(resp *kmsg.MetadataResponse) {
	for _, t := range resp.Topics {
		if t.Topic != nil {
			if t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				if c.health.unknownTopics == nil {
					c.health.unknownTopics = make(map[string]bool)
				}
				c.health.unknownTopics[*t.Topic] = true
			} else if t.ErrorCode == 0 {
				delete(c.health.unknownTopics, *t.Topic)
			}
		}
		if t.ErrorCode != 0 || t.Topic == nil || t.TopicID == ([16]byte{}) {
			continue
		}
		name := *t.Topic
		if old, ok := c.byName[name]; ok && old != t.TopicID {
			// The topic was deleted and created again; the old id stays known for records
			// still in flight.
			c.log(kgo.LogLevelInfo, "topic has a new id", "topic", name)
		}
		tm := c.topics[t.TopicID]
		if tm == nil {
			tm = &topicMeta{name: name, id: t.TopicID, leaders: make(map[int32]leaderInfo)}
			c.topics[t.TopicID] = tm
		}
		c.byName[name] = t.TopicID
		for _, p := range t.Partitions {
			if cur, ok := tm.leaders[p.Partition]; ok && p.LeaderEpoch < cur.epoch {
				continue // older than a leader a broker already named
			}
			c.setLeaderLocked(tm, p.Partition, leaderInfo{node: p.Leader, epoch: p.LeaderEpoch})
		}
	}
}
