package clock

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEveryOnManual(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	var runs []time.Duration
	task := Every(m, time.Minute, func() { runs = append(runs, m.Now().Sub(start)) })
	m.AfterFunc(90*time.Second, func() { runs = append(runs, -m.Now().Sub(start)) })

	assert.Equal(t, 1, m.Pending(), "the periodic task is not pending")
	next, ok := m.NextDeadline()
	assert.True(t, ok)
	assert.Equal(t, start.Add(90*time.Second), next, "nor does it set the next deadline")

	m.Advance(3 * time.Minute)
	assert.Equal(t, []time.Duration{time.Minute, -90 * time.Second, 3 * time.Minute}, runs, "in order with the timers; the ticks at 2 and 3 minutes, with no timer between, run once")
	assert.Zero(t, m.Pending())

	runs = nil
	m.Advance(365 * 24 * time.Hour)
	assert.Equal(t, []time.Duration{3*time.Minute + 365*24*time.Hour}, runs, "the ticks of a long advance run once, at the last")

	runs = nil
	m.AfterFunc(150*time.Second, func() { runs = append(runs, -1) })
	m.Advance(5 * time.Minute)
	base := 3*time.Minute + 365*24*time.Hour
	assert.Equal(t, []time.Duration{base + 2*time.Minute, -1, base + 5*time.Minute}, runs, "a timer between ticks sees the task run before it")

	assert.True(t, task.Stop())
	assert.False(t, task.Stop())
	m.Advance(time.Hour)
	assert.Len(t, runs, 3, "no run after Stop")
}

// TestEveryTasksDoNotBoundEachOther: two periodic tasks of different periods run a few times
// over a long advance, not once per period as they would if each bounded the other's skip by its
// next tick, and each runs at one of its own ticks, in deadline order.
func TestEveryTasksDoNotBoundEachOther(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	var runs []string
	Every(m, time.Second, func() { runs = append(runs, "fast@"+m.Now().Sub(start).String()) })
	Every(m, 7*time.Second, func() { runs = append(runs, "slow@"+m.Now().Sub(start).String()) })
	const year = 365 * 24 * time.Hour // 31,536,000 s: 6 s past a multiple of 7 s
	m.Advance(year)
	lastSlow := year - 6*time.Second
	assert.Equal(t, []string{"fast@" + lastSlow.String(), "slow@" + lastSlow.String(), "fast@" + year.String()}, runs)
	assert.Equal(t, start.Add(year), m.Now())
}

func TestEveryOnReal(t *testing.T) {
	var n atomic.Int32
	done := make(chan struct{})
	task := Every(Real{}, time.Millisecond, func() {
		if n.Add(1) == 3 {
			close(done)
		}
	})
	<-done
	assert.True(t, task.Stop())
	assert.False(t, task.Stop())
}

// TestEveryStopWaitsForARun: on the real clock, Stop returns only once a call of f under way has
// finished, so that nothing of the task runs after it (the cluster's retention after Close).
func TestEveryStopWaitsForARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
		task := Every(Real{}, time.Second, func() {
			close(entered)
			<-release
		})
		<-entered
		go func() {
			task.Stop()
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned while f was running")
		default:
		}
		close(release)
		synctest.Wait()
		select {
		case <-stopped:
		default:
			t.Fatal("Stop did not return once f finished")
		}
		time.Sleep(time.Hour) // in the bubble: a run after Stop would close entered again and panic
	})
}
