package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManualFiresInDeadlineOrderExactlyAtDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	var fired []string
	m.AfterFunc(2*time.Second, func() { fired = append(fired, "b") })
	m.AfterFunc(time.Second, func() { fired = append(fired, "a") })
	m.AfterFunc(2*time.Second, func() { fired = append(fired, "c") })

	m.Advance(999 * time.Millisecond)
	assert.Empty(t, fired)
	assert.Equal(t, 3, m.Pending())

	m.Advance(time.Millisecond)
	assert.Equal(t, []string{"a"}, fired)

	m.Advance(time.Second)
	assert.Equal(t, []string{"a", "b", "c"}, fired)
	assert.Equal(t, start.Add(2*time.Second), m.Now())
	assert.Zero(t, m.Pending())
}

func TestManualNowDuringCallbackIsTheDeadline(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	var at time.Time
	m.AfterFunc(time.Second, func() { at = m.Now() })
	m.Advance(time.Hour)
	assert.Equal(t, time.Unix(1, 0), at)
	assert.Equal(t, time.Unix(3600, 0), m.Now())
}

func TestManualStop(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	called := false
	tm := m.AfterFunc(time.Second, func() { called = true })
	require.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	m.Advance(time.Minute)
	assert.False(t, called)
}

func TestManualTimerScheduledByCallbackFiresWithinAdvance(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	var n int
	var again func()
	again = func() {
		n++
		m.AfterFunc(time.Second, again)
	}
	m.AfterFunc(time.Second, again)
	m.Advance(5 * time.Second)
	assert.Equal(t, 5, n)
	assert.Equal(t, 1, m.Pending())
}

func TestManualZeroDurationFiresOnNextAdvance(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	called := false
	m.AfterFunc(0, func() { called = true })
	assert.False(t, called)
	m.Advance(0)
	assert.True(t, called)
}

func TestWaitPending(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	done := make(chan struct{})
	go m.AfterFunc(time.Second, func() {})
	assert.True(t, m.WaitPending(done, 1))
	close(done)
	assert.False(t, m.WaitPending(done, 2))
	d, ok := m.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, time.Unix(1, 0), d)
}
