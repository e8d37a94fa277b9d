package testbroker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/server"
	"github.com/kshare/kshare/testbroker/internal/share"
)

// ShareRecordState is the state of a record in a share partition, with Kafka's ids and names
// (String gives "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED" or "ARCHIVED").
type ShareRecordState = share.RecordState

// The share record states. ShareAcknowledged and ShareArchived are terminal.
const (
	// ShareAvailable records may be acquired by the next ShareFetch of any member.
	ShareAvailable ShareRecordState = ShareRecordState(share.Available)
	// ShareAcquired records are held by one member under an acquisition lock.
	ShareAcquired ShareRecordState = ShareRecordState(share.Acquired)
	// ShareAcknowledged records were accepted.
	ShareAcknowledged ShareRecordState = ShareRecordState(share.Acknowledged)
	// ShareArchived records were rejected, acknowledged as a gap, or ran out of deliveries.
	ShareArchived ShareRecordState = ShareRecordState(share.Archived)
)

// ShareRecordInfo is the state of one record of a share partition.
type ShareRecordInfo = share.RecordInfo

// ShareSessionInfo is one share session of a broker.
type ShareSessionInfo = server.ShareSessionInfo

// ShareRecords returns the state of every record a share group's share partition tracks, in
// offset order: the records of its in-flight batches, from the first one (which may start with
// records before the share-partition start offset, already done with) to the share-partition
// end offset. Records past the end offset have never been acquired and are not listed. It
// returns nil when the topic does not exist or the group has not fetched the partition yet (its
// share partition is made by its first ShareFetch on the partition's leader).
func (c *Cluster) ShareRecords(group, topic string, partition int32) []ShareRecordInfo {
	sp, ok := c.s.SharePartitionState(group, topic, partition)
	if !ok {
		return nil
	}
	if infos := sp.Records(); infos != nil {
		return infos
	}
	return []ShareRecordInfo{} // nil is for no share partition

}

// ShareRecord returns the state of one record of a share group's share partition; ok is false
// when the partition does not track it (see ShareRecords).
func (c *Cluster) ShareRecord(group, topic string, partition int32, offset int64) (ShareRecordInfo, bool) {
	sp, ok := c.s.SharePartitionState(group, topic, partition)
	if !ok {
		return ShareRecordInfo{}, false
	}
	ri, ok := sp.Record(offset)
	if !ok {
		return ShareRecordInfo{}, false
	}
	return ri, true
}

// SharePartitionOffsets returns a share group's share-partition start offset (SPSO: every record
// below it is acknowledged or archived) and end offset (SPEO: the last offset the partition
// tracks, equal to the SPSO while it tracks none). ok is false when the topic does not exist or
// the group has not fetched the partition yet.
func (c *Cluster) SharePartitionOffsets(group, topic string, partition int32) (start, end int64, ok bool) {
	sp, ok := c.s.SharePartitionState(group, topic, partition)
	if !ok {
		return 0, 0, false
	}
	return sp.StartOffset(), sp.EndOffset(), true
}

// ShareSessions returns the share sessions of one broker, sorted by group then member; nil for
// an unknown broker. A session lives from a member's ShareFetch with epoch 0 until its
// ShareFetch or ShareAcknowledge with epoch -1, a newer epoch-0 ShareFetch of the same member,
// or the close of the connection that opened it.
func (c *Cluster) ShareSessions(broker int32) []ShareSessionInfo {
	return c.s.ShareSessions(broker)
}

// Kafka41 makes the cluster speak the share-group protocol of Apache Kafka 4.1: ShareFetch and
// ShareAcknowledge up to version 1 (no RENEW acknowledgements, no IsRenewAck, no
// ShareAcquireMode, no AcquisitionLockTimeoutMs in ShareAcknowledge responses) and
// DescribeShareGroupOffsets version 0 (no lag). It lowers those APIs' caps as MaxVersion does,
// keeping a lower cap set before it; a MaxVersion for the same API after it replaces its cap.
// The cluster's own behaviour stays that of Kafka 4.2: in particular a session's release
// leaves delivery counts unchanged, where 4.1 decremented them, and AlterShareGroupOffsets
// (version 0 in both) creates a missing group, where 4.1 answered GROUP_ID_NOT_FOUND.
func Kafka41() Opt {
	return opt(func(c *cfg) {
		for key, v := range kafka41Caps {
			if cur, ok := c.maxVersions[int16(key)]; !ok || cur > v {
				c.maxVersions[int16(key)] = v
			}
		}
	})
}

// kafka41Caps are the highest versions Kafka 4.1 implements of the APIs 4.2 extended.
var kafka41Caps = map[kmsg.Key]int16{
	kmsg.ShareFetch:                1,
	kmsg.ShareAcknowledge:          1,
	kmsg.DescribeShareGroupOffsets: 0,
}
