package testbroker

// MoveLeader makes broker the leader of a topic partition, as a Kafka leader election (or a
// reassignment that elects a new leader) does, so that tests can watch clients follow it.
//
// The partition's leader epoch goes up by one, even when broker already leads it (Kafka's
// controller bumps the epoch for every partition change that names a leader; clients holding
// the old epoch then get FENCED_LEADER_EPOCH). A broker that holds no replica of the partition
// takes the old leader's place among its replicas, as a reassignment would; otherwise the
// replicas stay as they are and the old leader stays a follower. A broker that holds no
// replica takes the old leader's log with its place; a follower takes over with its own log,
// so it must be in the ISR (an error wrapping kerr.PreferredLeaderNotAvailable otherwise) and
// running (kerr.BrokerNotAvailable). Every record the high watermark covered is readable at the
// new leader, at the same offsets, and batches appended afterwards carry the new epoch.
//
// Clients see, as with Kafka: Metadata and DescribeShareGroupOffsets report the new leader and
// epoch; Produce, Fetch, ListOffsets and ShareFetch at the old leader answer
// NOT_LEADER_OR_FOLLOWER, with the new leader in CurrentLeader and its address in the
// response's broker list where the version carries them (Produce v10+, Fetch v16+,
// ShareFetch); a request naming the old epoch gets FENCED_LEADER_EPOCH; a Fetch or ShareFetch
// waiting at the old leader wakes and answers at once.
//
// Share groups: when the leader changes, the old leader's share partitions of it are fenced
// and the new leader starts from the share-group state Kafka persists, which never records
// acquisitions. Acquisition locks of the partition end (their timers are cancelled), and every
// ACQUIRED record becomes AVAILABLE again with its delivery count one lower, so that its next
// delivery, from the new leader, carries the same delivery count as the last one; ACKNOWLEDGED,
// ARCHIVED and AVAILABLE records, their delivery counts and the share-partition start offset
// carry over. Acknowledgements sent to the old leader for the partition fail for that
// partition with UNKNOWN_TOPIC_OR_PARTITION, as Kafka's old leader answers once it has dropped
// its share partitions (NOT_LEADER_OR_FOLLOWER with the new leader only for one racing the
// move); share sessions at the old leader keep the partition, which their fetches answer with
// NOT_LEADER_OR_FOLLOWER, and share sessions at the new leader take it up. Moving the leader
// to the broker that leads already leaves share state alone.
//
// MoveLeader fails, changing nothing, for a topic or partition the cluster does not have
// (an error wrapping kerr.UnknownTopicOrPartition), a broker the cluster does not have (wrapping
// kerr.InvalidReplicaAssignment), and on a closed cluster.
func (c *Cluster) MoveLeader(topic string, partition int32, broker int32) error {
	return c.s.MoveLeader(topic, partition, broker)
}

// StopBroker stops a broker as a crash would, so that tests can watch clients fail over: its
// listener and connections close, Metadata stops listing it, its replicas leave every ISR, and
// each partition it led gets a new leader with the next leader epoch, the first of its
// replicas that is in sync and running. A partition none of whose in-sync replicas runs has
// no leader (-1, LEADER_NOT_AVAILABLE in Metadata) until one starts again: unclean election
// is never done. Share-group state (record states, delivery counts, the share-partition start
// offset) moves to the new leader as MoveLeader describes, and the groups the broker
// coordinated move, with their state, to the next running broker. Stopping a stopped broker
// does nothing; stopping the last running broker fails (kerr.BrokerNotAvailable).
func (c *Cluster) StopBroker(broker int32) error { return c.s.StopBroker(broker) }

// StartBroker starts a stopped broker again, on the address it had, with a new broker epoch.
// Its replicas fetch what they missed from their leaders (truncating first what the new
// leaders never had) and rejoin the ISR once they have caught up with the high watermark; it
// leads again every partition whose leadership it had kept as the last in-sync replica.
// Starting a running broker does nothing.
func (c *Cluster) StartBroker(broker int32) error { return c.s.StartBroker(broker) }
