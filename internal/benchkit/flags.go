package benchkit

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
)

// Ints is a flag.Value of positive numbers separated by commas ("1,3").
type Ints []int

func (l *Ints) String() string { return fmt.Sprint(*l) }

// Set replaces the list with the numbers in s.
func (l *Ints) Set(s string) error {
	*l = nil
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("want positive numbers separated by commas, got %q", s)
		}
		*l = append(*l, n)
	}
	return nil
}

// Brokers is the -brokers-to-run flag: names of BrokerPackages separated by commas, each kept
// once, in the order given.
type Brokers []string

func (b *Brokers) String() string { return strings.Join(*b, ",") }

// Set replaces the list with the brokers named in s.
func (b *Brokers) Set(s string) error {
	*b = nil
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if _, ok := BrokerPackages[name]; !ok {
			return fmt.Errorf("unknown broker %q: use testbroker and/or kfake", name)
		}
		if !slices.Contains(*b, name) {
			*b = append(*b, name)
		}
	}
	return nil
}

// StartCPUProfile writes a CPU profile of this process to path from now until stop is called;
// with an empty path it does nothing. It is what -cpuprofile and -cpuprofile-dir turn on.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
