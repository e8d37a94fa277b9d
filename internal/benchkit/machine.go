package benchkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// CPUModel returns the first "model name" in /proc/cpuinfo, or "unknown".
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// GoVersion describes this program's runtime and, when it differs, the go command's version,
// which builds the broker programs.
func GoVersion() string {
	v := runtime.Version()
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		if gv := strings.TrimSpace(string(out)); gv != v {
			return fmt.Sprintf("%s (brokers built with %s)", v, gv)
		}
	}
	return v
}

// WriteMachine writes the machine facts of a report as two Markdown list items:
//
//   - Go: go1.26.8, linux/amd64
//   - CPU: AMD EPYC, 2 logical CPUs, GOMAXPROCS 2
//
// GOMAXPROCS is followed by the environment variable's value when it is set (the broker
// programs inherit it too).
func WriteMachine(w io.Writer) {
	gomaxprocs := fmt.Sprint(runtime.GOMAXPROCS(0))
	if env := os.Getenv("GOMAXPROCS"); env != "" {
		gomaxprocs += " (GOMAXPROCS=" + env + ", brokers too)"
	}
	fmt.Fprintf(w, "- Go: %s, %s/%s\n", GoVersion(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "- CPU: %s, %d logical CPUs, GOMAXPROCS %s\n", CPUModel(), runtime.NumCPU(), gomaxprocs)
}

// WriteCommand writes the command line that ran the harness as a Markdown list item, as
// `go run ./internal/NAME` and this process's arguments.
func WriteCommand(w io.Writer, pkg string) {
	fmt.Fprintf(w, "- Command: `%s`\n", strings.Join(append([]string{"go run " + pkg}, os.Args[1:]...), " "))
}
