package share

import (
	"strings"
	"time"
)

// The strategies of share.auto.offset.reset.
const (
	resetLatest = iota
	resetEarliest
	resetByDuration
)

// parseOffsetReset reads share.auto.offset.reset. Anything but "earliest" or a valid
// "by_duration:<duration>" reads as latest, Kafka's default; the server validates the config
// before it reaches the partition.
func parseOffsetReset(v string) (strategy int, back time.Duration) {
	if v == "earliest" {
		return resetEarliest, 0
	}
	if rest, ok := strings.CutPrefix(v, "by_duration:"); ok {
		if d, ok := parseISODuration(rest); ok && d >= 0 {
			return resetByDuration, d
		}
	}
	return resetLatest, 0
}

// ValidOffsetReset reports whether v is a value share.auto.offset.reset accepts: "latest",
// "earliest", or "by_duration:" and a non-negative ISO-8601 duration. The server validates the
// group config with it, so that the partition reads exactly what was accepted.
func ValidOffsetReset(v string) bool {
	if v == "latest" || v == "earliest" {
		return true
	}
	rest, ok := strings.CutPrefix(v, "by_duration:")
	if !ok {
		return false
	}
	d, ok := parseISODuration(rest)
	return ok && d >= 0
}

// parseISODuration parses the ISO-8601 durations java.time.Duration.parse accepts:
// [sign]P[nD][T[nH][nM][n[.fraction]S]], letters in either case, every number signed or not,
// at least one part, and a T only with a time part after it.
func parseISODuration(s string) (time.Duration, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || s[0]|0x20 != 'p' {
		return 0, false
	}
	s = s[1:]
	units := []struct {
		letter byte
		unit   time.Duration
		timed  bool // belongs after the T
	}{{'d', 24 * time.Hour, false}, {'h', time.Hour, true}, {'m', time.Minute, true}, {'s', time.Second, true}}
	var total time.Duration
	next, parts, inTime, timeParts := 0, 0, false, 0
	for s != "" {
		if s[0]|0x20 == 't' {
			if inTime {
				return 0, false
			}
			inTime, s = true, s[1:]
			continue
		}
		n, frac, dotted, rest, ok := isoNumber(s)
		if !ok || rest == "" {
			return 0, false
		}
		letter := rest[0] | 0x20
		for next < len(units) && units[next].letter != letter {
			next++
		}
		if next == len(units) || units[next].timed != inTime || dotted && letter != 's' {
			return 0, false
		}
		total += time.Duration(n)*units[next].unit + frac
		next, parts, s = next+1, parts+1, rest[1:]
		if inTime {
			timeParts++
		}
	}
	if parts == 0 || inTime && timeParts == 0 {
		return 0, false
	}
	if neg {
		total = -total
	}
	return total, true
}

// isoNumber reads a signed integer and, after '.' or ',' (dotted), up to nine fraction digits
// (as nanoseconds, carrying the integer's sign) from the front of s.
func isoNumber(s string) (n int64, frac time.Duration, dotted bool, rest string, ok bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if n > (1<<63-1)/10 {
			return 0, 0, false, "", false
		}
		n = n*10 + int64(s[i]-'0')
	}
	if i == 0 {
		return 0, 0, false, "", false
	}
	s = s[i:]
	if s != "" && (s[0] == '.' || s[0] == ',') {
		dotted = true
		j, scale := 1, time.Duration(1e8)
		for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			if j > 9 {
				return 0, 0, false, "", false
			}
			frac += time.Duration(s[j]-'0') * scale
			scale /= 10
		}
		s = s[j:]
	}
	if neg {
		n, frac = -n, -frac
	}
	return n, frac, dotted, s, true
}
