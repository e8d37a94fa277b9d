package config

import (
	"slices"
	"strconv"
	"time"
)

// LogPolicy is what a topic's configs say about removing its records, read at the moment of
// use so that a change applies at the next retention check or DeleteRecords.
type LogPolicy struct {
	// Delete is whether cleanup.policy includes delete: a compact-only topic refuses
	// DeleteRecords and keeps its records past retention.
	Delete bool
	// RetentionMs is retention.ms (else log.retention.ms, .minutes, .hours); -1 is unlimited.
	RetentionMs int64
	// RetentionBytes is retention.bytes (else log.retention.bytes); -1 is unlimited.
	RetentionBytes int64
}

// LogPolicy returns the policy of a topic with the given explicit configs.
func (s *Store) LogPolicy(topicConfigs map[string]string) LogPolicy {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ms, _ := strconv.ParseInt(s.topicValueLocked(topicConfigs, -1, "retention.ms"), 10, 64)
	bytes, _ := strconv.ParseInt(s.topicValueLocked(topicConfigs, -1, "retention.bytes"), 10, 64)
	return LogPolicy{
		Delete:         slices.Contains(splitList(s.topicValueLocked(topicConfigs, -1, "cleanup.policy")), "delete"),
		RetentionMs:    ms,
		RetentionBytes: bytes,
	}
}

// RetentionCheckInterval is log.retention.check.interval.ms, how often every log applies its
// retention.
func (s *Store) RetentionCheckInterval() time.Duration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return time.Duration(s.intLocked("log.retention.check.interval.ms")) * time.Millisecond
}
