// Package share is the broker side of share groups (KIP-932, with the lock renewal of
// KIP-1222), in Kafka's terms:
//
//   - Partition is one share partition (Kafka's SharePartition): the records of one topic
//     partition as one share group sees them, with their states, delivery counts and locks.
//   - Manager is the SharePartitionManager: the share partitions of every group, created on
//     a group's first fetch of a partition, handed over on leader moves, closed on topic
//     deletion; and the acknowledgement of a request's partitions (Manager.Acknowledge).
//   - Sessions is one broker's ShareSessionCache: each member's share session, with its
//     epoch and partitions, evicted when its connection closes (Sessions.OpenFetch,
//     OpenAcknowledge, Release).
//   - Fetch is one ShareFetch after its session rules ran, and its acquisition, which waits
//     for MinBytes on the cluster clock as Kafka's DelayedShareFetch does (Fetch.Poll).
//
// It does no networking and knows no wire format: the server's ShareFetch and
// ShareAcknowledge handlers decode requests, call these, and encode responses. The cluster's
// topics are reached through Metadata.
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
// Acknowledge refuses with a *kafkaerr.Error carrying Kafka's error code and Kafka's exact message
// (INVALID_RECORD_STATE or INVALID_REQUEST), and then changes nothing for the whole request.
package share
