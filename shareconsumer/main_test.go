package shareconsumer

import (
	"os"
	"testing"

	"github.com/kshare/kshare/internal/leakcheck"
)

// TestMain fails the run when, after every test has closed its consumers and clusters,
// goroutines of the consumer or of franz-go remain.
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m, isConsumerGoroutine)) }
