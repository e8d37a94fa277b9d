package shareconsumer

import "time"

// GroupLag is a share group's lag: per partition, the records not yet delivered or
// acknowledged.
type GroupLag struct {
	Group string
	// Partitions are every partition the group has share state for, by topic then partition.
	Partitions []PartitionLag
	// Total is the sum of the partitions' Lag, those with Lag -1 left out.
	Total int64
	// At is when the lookup was answered.
	At time.Time
}

// PartitionLag is one partition of a share group's lag.
type PartitionLag struct {
	TopicPartition
	// StartOffset is the share-partition start offset (SPSO): every record below it is done
	// with. -1 when the group has no share state for the partition.
	StartOffset int64
	// EndOffset is the partition's high watermark when the lag was computed from it (Lag is
	// then EndOffset - StartOffset); -1 when the broker answered the lag itself.
	EndOffset int64
	// Lag is the records not yet delivered or acknowledged: the broker's own figure
	// (KIP-1226, DescribeShareGroupOffsets v1, which also leaves out the records at or after
	// the start offset that are done with), or EndOffset - StartOffset from an older broker.
	// -1 when it could not be known (Err says why).
	Lag int64
	// FromBroker says whether Lag is the broker's figure (KIP-1226).
	FromBroker bool
	// Err is the partition's error, a *errors.KafkaError; nil when it had none.
	Err error
}
