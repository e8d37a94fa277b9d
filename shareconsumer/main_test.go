package shareconsumer

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when, after every test has closed its consumers and clusters,
// goroutines of the consumer or of franz-go remain.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var left []string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if left = consumerGoroutines(); len(left) == 0 {
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
