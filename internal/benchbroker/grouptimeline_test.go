package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRebalancePhasesCutTheTimeline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	req := func(key kmsg.Key, sent, answered float64) loggedRequest {
		return loggedRequest{key: int16(key), sent: at(sent), answered: at(answered)}
	}
	second := []loggedRequest{
		req(kmsg.JoinGroup, 2, 2.2), // MEMBER_ID_REQUIRED
		req(kmsg.JoinGroup, 2.3, 50.6),
		req(kmsg.SyncGroup, 50.7, 51),
		req(kmsg.OffsetFetch, 51.1, 51.3),
		req(kmsg.Heartbeat, 51.2, 51.4),
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

	t.Run("heartbeat after the join", func(t *testing.T) {
		first := []loggedRequest{
			req(kmsg.Heartbeat, 50, 50.1),
			req(kmsg.JoinGroup, 50.2, 50.5),
			req(kmsg.SyncGroup, 50.6, 50.7),
			req(kmsg.Heartbeat, 60, 60.1),
		}
		ps, err := rebalancePhases(t0, at(52), second, first)
		require.NoError(t, err)
		want := [numPhases]time.Duration{ms(2), ms(0.3), ms(47.7), ms(0.6), ms(0.4), ms(0.3), ms(0.7)}
		for i := range ps {
			assert.InDelta(t, want[i], ps[i], float64(time.Microsecond), phaseNames[i])
		}
		var sum time.Duration
		for _, d := range ps {
			sum += d
		}
		assert.InDelta(t, ms(52), sum, float64(time.Microsecond), "the phases add up to the whole")
	})

	t.Run("heartbeat in flight when the join arrived", func(t *testing.T) {
		first := []loggedRequest{
			req(kmsg.Heartbeat, 2.2, 2.5),
			req(kmsg.JoinGroup, 2.6, 50.5),
		}
		ps, err := rebalancePhases(t0, at(52), second, first)
		require.NoError(t, err)
		assert.Zero(t, ps[phaseHeartbeatWait])
		assert.InDelta(t, ms(48.3), ps[phaseRejoin], float64(time.Microsecond))
	})

	t.Run("no rejoin of the first member", func(t *testing.T) {
		_, err := rebalancePhases(t0, at(52), second, []loggedRequest{req(kmsg.Heartbeat, 50, 50.1)})
		assert.Error(t, err)
	})

	t.Run("no SyncGroup", func(t *testing.T) {
		_, err := rebalancePhases(t0, at(52), second[:2], nil)
		assert.Error(t, err)
	})
}

func TestRequestLogAwaitsTheNextHeartbeat(t *testing.T) {
	l := newRequestLog()
	answer := func(key kmsg.Key) { l.OnBrokerE2E(kgo.BrokerMetadata{}, int16(key), kgo.BrokerE2E{}) }
	answer(kmsg.Heartbeat) // before the call: not the one awaited

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, l.awaitHeartbeat(ctx), context.Canceled, "an earlier answer does not count")

	answer(kmsg.Fetch)
	assert.Len(t, l.since(time.Time{}), 1, "only group requests are logged")

	// The waiter may take an answer given before it started as the earlier one, so answers
	// keep coming until it returns.
	done := make(chan error)
	go func() { done <- l.awaitHeartbeat(context.Background()) }()
	deadline := time.After(10 * time.Second)
	for {
		answer(kmsg.Heartbeat)
		select {
		case err := <-done:
			require.NoError(t, err)
			return
		case <-deadline:
			t.Fatal("awaitHeartbeat did not return")
		case <-time.After(time.Millisecond):
		}
	}
}
