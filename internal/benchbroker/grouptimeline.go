package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The rebalance figure, phase by phase: kgo hooks on both members log when their group requests
// were sent and answered, and the second member's way from its client to its first record is cut
// where one request hands over to the next. The phases add up to the rebalance figure.

// rebalancePhase is one step of the second member's way to its first record.
type rebalancePhase int

const (
	// phaseConnect: from creating the client to sending JoinGroup (ApiVersions, Metadata,
	// FindCoordinator and their connections).
	phaseConnect rebalancePhase = iota
	// phaseMemberID: the first JoinGroup, answered MEMBER_ID_REQUIRED (v4+), until the second
	// one, with the member id, is sent.
	phaseMemberID
	// phaseHeartbeatWait: from sending the second JoinGroup, which the coordinator parks, to
	// the first member sending the Heartbeat that is answered REBALANCE_IN_PROGRESS. The first
	// member's heartbeat timer decides it, not the broker.
	phaseHeartbeatWait
	// phaseRejoin: until the second JoinGroup is answered: that Heartbeat's round trip, the
	// first member's revoke and JoinGroup, and the coordinator completing the join.
	phaseRejoin
	// phaseSync: the SyncGroup, answered once the leader (the first member) sent the assignment.
	phaseSync
	// phaseOffsets: the OffsetFetch of the committed offsets.
	phaseOffsets
	// phaseFetch: until the first record is polled (any metadata lookup, the fetch
	// connection, the Fetch).
	phaseFetch
	numPhases
)

var phaseNames = [numPhases]string{
	"connect (ApiVersions, Metadata, FindCoordinator)",
	"JoinGroup MEMBER_ID_REQUIRED",
	"wait for the first member's heartbeat (client timer)",
	"rejoin (Heartbeat REBALANCE_IN_PROGRESS, first member's JoinGroup, join completes)",
	"SyncGroup",
	"OffsetFetch",
	"first Fetch to first record",
}

// loggedRequest is one group request of a client: when it was sent and when its answer was read.
type loggedRequest struct {
	key            int16
	sent, answered time.Time
}

// requestLog is a kgo hook that logs a client's group requests (JoinGroup, SyncGroup,
// Heartbeat, OffsetFetch) and signals each answered Heartbeat.
type requestLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
	// heartbeat receives a value (dropped when one is pending) when a Heartbeat is answered.
	heartbeat chan struct{}
}

func newRequestLog() *requestLog { return &requestLog{heartbeat: make(chan struct{}, 1)} }

// OnBrokerE2E implements kgo.HookBrokerE2E; it runs once the answer is read.
func (l *requestLog) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetFetch:
	default:
		return
	}
	if e.WriteErr != nil || e.ReadErr != nil {
		return
	}
	now := time.Now()
	l.mu.Lock()
	l.reqs = append(l.reqs, loggedRequest{key: key, sent: now.Add(-e.DurationE2E()), answered: now})
	l.mu.Unlock()
	if kmsg.Key(key) == kmsg.Heartbeat {
		select {
		case l.heartbeat <- struct{}{}:
		default:
		}
	}
}

// since returns the logged requests sent at or after t, in the order they were answered.
func (l *requestLog) since(t time.Time) []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedRequest
	for _, r := range l.reqs {
		if !r.sent.Before(t) {
			out = append(out, r)
		}
	}
	return out
}

// awaitHeartbeat returns when the client's next Heartbeat (after the call) is answered.
func (l *requestLog) awaitHeartbeat(ctx context.Context) error {
	select {
	case <-l.heartbeat: // an answer from before the call
	default:
	}
	select {
	case <-l.heartbeat:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// rebalancePhases cuts the time from start (creating the second member's client) to record (its
// first record) into phases, from the second member's and the first member's request logs.
func rebalancePhases(start, record time.Time, second, first []loggedRequest) ([numPhases]time.Duration, error) {
	var ps [numPhases]time.Duration
	find := func(reqs []loggedRequest, key kmsg.Key, ok func(loggedRequest) bool) (loggedRequest, bool) {
		for _, r := range reqs {
			if kmsg.Key(r.key) == key && ok(r) {
				return r, true
			}
		}
		return loggedRequest{}, false
	}
	all := func(loggedRequest) bool { return true }
	join1, ok1 := find(second, kmsg.JoinGroup, all)
	syncReq, ok2 := find(second, kmsg.SyncGroup, all)
	if !ok1 || !ok2 {
		return ps, errors.New("second member: no JoinGroup or SyncGroup logged")
	}
	// The JoinGroup that got the generation is the last one answered before the SyncGroup.
	var join2 loggedRequest
	for _, r := range second {
		if kmsg.Key(r.key) == kmsg.JoinGroup && r.sent.After(join1.sent) && !r.answered.After(syncReq.sent) {
			join2 = r
		}
	}
	offsets, ok3 := find(second, kmsg.OffsetFetch, func(r loggedRequest) bool { return !r.sent.Before(syncReq.answered) })
	rejoin, ok4 := find(first, kmsg.JoinGroup, func(r loggedRequest) bool { return !r.sent.Before(join2.sent) })
	if join2.key == 0 || !ok3 || !ok4 {
		return ps, fmt.Errorf("incomplete request logs (JoinGroup with member id %v, OffsetFetch %v, first member's rejoin %v)",
			join2.key != 0, ok3, ok4)
	}
	// The Heartbeat that told the first member of the rebalance is its last one answered
	// before its rejoin; one in flight when the coordinator parked the join may have been
	// sent a little earlier, hence the clamp.
	var hb loggedRequest
	for _, r := range first {
		if kmsg.Key(r.key) == kmsg.Heartbeat && !r.answered.After(rejoin.sent) {
			hb = r
		}
	}
	if hb.key == 0 {
		return ps, errors.New("first member: no Heartbeat before its rejoin")
	}
	woken := hb.sent
	if woken.Before(join2.sent) {
		woken = join2.sent
	}
	ps[phaseConnect] = join1.sent.Sub(start)
	ps[phaseMemberID] = join2.sent.Sub(join1.sent)
	ps[phaseHeartbeatWait] = woken.Sub(join2.sent)
	ps[phaseRejoin] = join2.answered.Sub(woken)
	ps[phaseSync] = syncReq.answered.Sub(join2.answered)
	ps[phaseOffsets] = offsets.answered.Sub(syncReq.answered)
	ps[phaseFetch] = record.Sub(offsets.answered)
	return ps, nil
}
