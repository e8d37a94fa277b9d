// Package renewbuffer holds the records a share consumer's application acknowledged as RENEW
// (KIP-1222) until the renew is answered, and then until a later Poll hands them back.
//
// Renewing a record asks the broker to restart the record's acquisition lock; the record stays
// acquired by the consumer and must be acknowledged again later. Like Kafka's Java client, the
// consumer keeps the record while the renew is in flight and, once the broker confirms it, returns
// the same record from a later Poll. A failed renew (INVALID_RECORD_STATE because the lock had
// already expired, for instance) drops the record: this consumer never returns it again.
//
// A [Buffer] tracks each held record through three states:
//
//	Add ──> Queued ──MarkSent──> Sent ──Complete──> Ready ──Take──> handed to the application
//	                              │                   │
//	                              └──Fail──> dropped  └──Take, deadline passed──> dropped, reported
//
// Add puts a record back in Queued from any state; Remove and RemovePartition drop records in any
// state (the broker delivered the offset again, the application acknowledged it finally, or the
// partition went away).
//
// A Buffer is a plain data structure: it starts no goroutines, never reads the clock (times are
// passed in), and is not safe for concurrent use; the consumer calls it under its own lock.
package renewbuffer
