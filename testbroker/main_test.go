package testbroker_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when, after every test has closed its clusters, goroutines of the
// cluster remain. (franz-go's are not counted: a closing group consumer of kgo v1.22.3 can leave
// one waiting in LeaveGroupContext.)
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var left []string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if left = clusterGoroutines(); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "goroutines left after every test:\n%s\n", strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// clusterGoroutines returns the stacks of the goroutines that run testbroker's code.
func clusterGoroutines() []string {
	buf := make([]byte, 4<<20)
	var out []string
	for _, stack := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(stack, "kshare/testbroker/internal/") {
			out = append(out, stack)
		}
	}
	return out
}
