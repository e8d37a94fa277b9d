package benchkit

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The process CPU clock and /proc/<pid>/stat count the same time, at different resolutions.
func TestProcessCPUAgreesWithProcStat(t *testing.T) {
	// A child that burns CPU on its own, so we measure another process, as the harnesses read a broker.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		clock, method, err := ProcessCPU(cmd.Process.Pid)
		require.NoError(t, err)
		require.Equal(t, MethodCPUClock, method)
		if clock >= 300*time.Millisecond {
			break
		}
		require.True(t, time.Now().Before(deadline), "child used only %v of CPU in 10s", clock)
		time.Sleep(10 * time.Millisecond)
	}
	before, _, err := ProcessCPU(cmd.Process.Pid)
	require.NoError(t, err)
	ticks, err := procStatCPU(cmd.Process.Pid)
	require.NoError(t, err)
	after, _, err := ProcessCPU(cmd.Process.Pid)
	require.NoError(t, err)
	// Ticks lag the clock by at most about a tick, plus whatever ran between the reads.
	assert.InDelta(t, float64(before), float64(ticks), float64(30*time.Millisecond+after-before))
}
