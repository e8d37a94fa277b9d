// Package share is the state machine of one share partition: the records of one topic
// partition as one share group sees them (KIP-932), with the lock renewal of KIP-1222. It does
// no networking: the server's ShareFetch and ShareAcknowledge handlers call Acquire, Acknowledge
// and ReleaseMember, and wait on Notify.
//
// # Records
//
// Every record between the share-partition start offset (SPSO) and the high watermark is in
// one of four states, with Kafka's ids: AVAILABLE (0), ACQUIRED (1) by one member under a
// time-limited lock, ACKNOWLEDGED (2) or ARCHIVED (4). The last two are terminal. A record
// starts AVAILABLE with a delivery count of 0; each acquisition adds one. Acknowledging it
// ACCEPT makes it ACKNOWLEDGED, REJECT or a gap makes it ARCHIVED, RELEASE makes it AVAILABLE
// again, and RENEW keeps it ACQUIRED under a fresh lock. A lock that expires, a RELEASE and the
// end of the owner's share session make an ACQUIRED record AVAILABLE, or ARCHIVED once its
// delivery count has reached share.delivery.count.limit. The delivery count never exceeds the
// limit, and every record ends ACKNOWLEDGED or ARCHIVED if consumers keep fetching.
//
// The SPSO moves past the contiguous terminal records at its front; records below it are
// forgotten. The share-partition end offset (SPEO) is the last offset the partition tracks:
// the end of the last batch it acquired records from.
//
// # Data structure
//
// As in Kafka's SharePartition, the records between the SPSO and the SPEO are kept as in-flight
// batches ordered by first offset, each holding one state for all its records. A batch is split
// into one state per offset only when an acknowledgement, a throttled or record-limited
// acquisition, or a partial renewal touches part of it. Batches whose records are all terminal
// are dropped from the front as the SPSO moves. Acquiring a fresh log batch and acknowledging a
// whole batch with one type therefore cost a few operations, whatever the number of records.
//
// # Locks
//
// Each acquisition schedules one timer on the cluster clock per acquired range (a batch, or a
// run of offsets), firing exactly at the lock's deadline; a RENEW replaces it with one timer per
// renewed batch, or per renewed offset when only part of a batch is renewed. A timer that has
// been superseded (its records were acknowledged, released or renewed) is stopped, and one that
// fires anyway finds its lock dead and does nothing. Timer functions take the partition's mutex
// and never block, so they may run synchronously inside clock.Manual.Advance.
//
// # Leader moves
//
// When its topic partition changes leader, Handover fences the partition and returns the one
// the new leader starts with, built from what Kafka persists: everything but acquisitions, so
// ACQUIRED records come back AVAILABLE with the delivery count they had before.
//
// # Errors
//
// Acknowledge refuses with an *Error carrying Kafka's error code and Kafka's exact message
// (INVALID_RECORD_STATE or INVALID_REQUEST), and then changes nothing for the whole request.
package share
