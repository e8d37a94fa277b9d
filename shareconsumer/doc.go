// Package shareconsumer is a consumer of Kafka share groups (KIP-932, "queues for Kafka"):
// many consumers read the same partitions, the broker hands each record to one of them under a
// time-limited acquisition lock, and the consumer acknowledges records one by one.
//
// A Consumer is created with New and used from one goroutine's poll loop:
//
//	c, err := shareconsumer.New(
//		shareconsumer.ClientOpts(kgo.SeedBrokers("localhost:9092")),
//		shareconsumer.Group("workers"),
//		shareconsumer.Topics("orders"),
//		shareconsumer.ExplicitAcknowledgement(),
//	)
//	...
//	defer c.Close(context.Background())
//	for {
//		recs, err := c.Poll(ctx)
//		...
//		for _, r := range recs {
//			if process(r) == nil {
//				c.Acknowledge(r, acktype.Accept)
//			} else {
//				c.Acknowledge(r, acktype.Release) // deliver it again, maybe elsewhere
//			}
//		}
//	}
//
// # How a record flows
//
// Poll first finishes with the records the previous Poll returned: in implicit mode (the
// default) it accepts the ones the application left unacknowledged; in explicit mode it fails
// with errors.ErrUnacknowledgedRecords while any is unacknowledged. It then returns held records
// if it has any, or sends a ShareFetch to each leader of the partitions the group assigned to
// the member, with the acknowledgements for that leader piggybacked, and returns as soon as
// records arrive. Only a waiting Poll fetches: a consumer holds at most one poll's worth of
// records it has not returned (per leader that was fetched in parallel), so locks do not run
// out in a buffer while the application is busy. FetchAhead trades some lock time for
// throughput: the next fetch goes out as soon as a Poll returned records.
//
// Records come from the ShareFetch responses' record batches, decoded and decompressed by the
// consumer; only acquired offsets become records, each with its delivery count. Acquired
// offsets within the data without a record (compaction, transaction markers) are acknowledged
// as gaps on their own, and batches that cannot be decoded are reported by Poll
// (*errors.CorruptBatchError) and rejected unless the application says otherwise
// (AcknowledgeOffset). Acquired offsets outside the data were never fetched: unlike Kafka's
// client, which acknowledges those after the data as gaps, the consumer leaves them to their
// lock's expiry, so that a record a broker failed to send is delivered again rather than
// archived. An answer acquiring more than a million offsets of a partition is refused
// (errors.ErrTooManyAcquired).
//
// Acknowledge records ACCEPT, RELEASE or REJECT for a record; the acknowledgement travels on
// the next ShareFetch to that record's leader, or in a ShareAcknowledge on CommitSync,
// CommitAsync or Close. The OnAcknowledgementCommit callback and CommitSync's result report
// the outcome per partition.
//
// # Renewing locks (KIP-1222)
//
// In explicit mode, Acknowledge(r, acktype.Renew) asks for more time: the next Poll or commit
// sends the renew, the consumer holds r (package renewbuffer) until the broker answers, and a
// later Poll returns r again, with its lock deadline moved on, until the application
// acknowledges it with a final type. A failed renew is reported like any acknowledgement and r
// is not returned again. Renew is refused up front with errors.ErrUnsupportedAcknowledgeType
// when r's leader predates Kafka 4.2 (ShareFetch and ShareAcknowledge v2).
//
// # Sessions and membership
//
// The consumer keeps one share session per leader (epoch 0 opens it, each answered request moves
// it on, -1 closes it) and never sends more than one request at a time to a leader. When a
// broker loses the session (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED, a dropped connection) the consumer opens it again and reports the
// acknowledgements that were on the failed request as NETWORK_EXCEPTION, as Kafka's client does;
// the broker keeps the member's records locked, so they can still be acknowledged afterwards.
// A heartbeat goroutine keeps the member in the group, follows the coordinator, rejoins when
// fenced, and turns the assignment (topic ids) into partitions and leaders through metadata.
// Partition leaders that move are followed; acknowledgements for records of the old leader
// fail with NOT_LEADER_OR_FOLLOWER, since the locks went with the leadership.
//
// # When no records come
//
// A Poll whose context ends first returns an *errors.PollTimeoutError wrapping the context's
// error, with why nothing came (no broker reachable and the dial error with its address, no
// coordinator, an unknown or refused topic, no partitions assigned, nothing available); Status
// tells the same without polling, and the consumer logs through the kgo logger when the reason
// changes. A broker that refuses the consumer's login (SASL credentials, the TLS handshake)
// makes Poll return an *errors.AuthenticationError at once; one that refuses it the group
// (GROUP_AUTHORIZATION_FAILED) makes it fail with an *errors.FatalError; a refused topic is
// reported once, as an *errors.TopicAuthorizationError, and listed in Status.TopicErrors while
// the other topics keep being consumed.
// A member the application does not poll for MaxPollInterval (max.poll.interval.ms) leaves the
// group and closes its share sessions, releasing its records; the next Poll rejoins.
//
// # Worker pools
//
// Process runs the poll loop itself with a pool of workers, one record per handler call, and
// acknowledges each record from the handler's answer (nil accepts, an error releases,
// errors.Reject rejects, a panic releases). While a handler works, Process renews the record's
// lock before it runs out, all due renews of a leader in one ShareAcknowledge, and cancels the
// handler's context, with a *errors.LockLostError as its cause, the moment the lock is lost. It
// never holds more acquired records than its workers and queue can take, and on shutdown it
// releases what it has not started, waits for running handlers and commits. See docs/guide.md.
//
// # Differences from Kafka's Java client
//
//   - Poll takes a context and returns ctx.Err(), wrapped with the reason, when it ends before
//     records arrive, where Java returns an empty batch after its timeout.
//   - Wakeup interrupts Poll only; CommitSync and Close are bounded by their contexts.
//   - Errors are values: the sentinels and error types of package
//     github.com/kshare/kshare/errors, which holds every error of the SDK.
//   - Renew is refused up front, not in the callback, when the leader cannot take it, and a
//     Poll waiting for a renew's answer returns as soon as it is in, not after its timeout.
package shareconsumer
