package testbroker_test

import (
	"os"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/leakcheck"
)

// TestMain fails the run when, after every test has closed its clusters, goroutines of the
// cluster remain. (franz-go's are not counted: a closing group consumer of kgo v1.22.3 can leave
// one waiting in LeaveGroupContext.)
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Main(m, func(stack string) bool { return strings.Contains(stack, "kshare/testbroker/internal/") }))
}
