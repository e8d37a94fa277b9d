// Package leakcheck finds goroutines that outlive a package's tests, for the TestMain of
// packages that promise that nothing of theirs survives Close.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Left returns the stacks of the running goroutines that match reports as ours.
func Left(match func(stack string) bool) []string {
	buf := make([]byte, 4<<20)
	var out []string
	for _, stack := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if match(stack) {
			out = append(out, stack)
		}
	}
	return out
}

// Main runs the tests and then, if they passed, gives the matching goroutines ten seconds to
// end (closing is asynchronous in places: a connection's goroutine sees its close a moment
// later); it fails the run, printing their stacks, if any remain. It returns the exit code.
func Main(m *testing.M, match func(stack string) bool) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if left = Left(match); len(left) == 0 {
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "goroutines left after every test:\n%s\n", strings.Join(left, "\n\n"))
	return 1
}
