package benchkit

import (
	"strconv"
	"strings"
)

// Thousands formats f rounded to an integer with a comma between groups of three digits.
func Thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// YesNo words a goal check for a report table.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// FirstLine returns the first line of err's message, for a one-line list of failures.
func FirstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
