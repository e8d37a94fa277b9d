// Package replica is the replication of the test cluster's partitions, as Kafka's
// ReplicaManager, Partition and ReplicaFetcherThread do it: every partition has one log per
// replica, each on its own broker; one replica leads and takes the appends, the others follow
// it by fetching over the wire.
//
// # Leader epochs and the ISR
//
// A Partition's State (leader, leader epoch, replicas, in-sync replicas) changes as a KRaft
// controller would change it: a new leader raises the leader epoch, the ISR shrinks when a
// follower has not caught up within replica.lag.time.max.ms on the cluster clock, or when its
// broker stops, and grows again when the follower's log end offset reaches the high
// watermark. A broker that stops takes its leaderships with it: each goes to the first replica
// in the ISR that runs, or, when none does, to nobody (leader -1) until an ISR member runs
// again (unclean election is never done).
//
// # High watermark
//
// The leader's high watermark is the lowest log end offset in the ISR. The leader learns a
// follower's log end offset from the fetch offset of its FETCH requests (Partition.Fetched), so
// the watermark moves when the followers fetch again after replicating. A follower's watermark
// is the lower of the leader's, as its last fetch response carried it, and its own log end
// offset. Consumers never read past the watermark of the replica they read from.
//
// # Delayed fetch
//
// A FETCH that finds too few bytes parks, as Kafka's DelayedFetch in its fetch purgatory:
// Manager.Fetch reads, then waits on the partitions' wake-ups (an append, a high-watermark
// move, a leader move, the fetch's MaxWait on the cluster clock, its connection or the cluster
// closing) and reads again until MinBytes is reached or it must answer. The server keeps the
// reading and the response; this package decides when to read again and when to answer.
//
// # KIP-1166
//
// A follower's FETCH v18 carries the high watermark it knows. With KIP-1166 on (the default,
// testbroker.kip1166.enable), the leader answers a follower's fetch at once when the follower's
// watermark is below its own (compared after the fetch has moved it), and a change of the
// leader's watermark completes every parked follower fetch of the partition; so a follower
// learns a new watermark within one round trip instead of after the replica fetch MaxWait.
// With it off, follower fetches park for data only, as Kafka 4.2's replica manager does (its
// KRaft metadata log alone has the rule).
package replica
