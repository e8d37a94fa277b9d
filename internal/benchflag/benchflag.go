// Package benchflag holds the flag types the benchmark commands share.
package benchflag

import (
	"fmt"
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
