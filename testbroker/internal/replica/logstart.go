package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/log"
)

// DeleteRecords moves the leader's log start offset up to offset, as Kafka's
// Partition.deleteRecordsOnLeader does for a DeleteRecords request: offset -1 means the high
// watermark, another negative offset and one past the high watermark are OFFSET_OUT_OF_RANGE,
// and a broker that no longer leads as of st is NOT_LEADER_OR_FOLLOWER. An offset at or below
// the log start offset changes nothing. It returns the leader's log start offset afterwards,
// the low watermark the request is answered with. The followers learn the new log start
// offset from their next fetch (FollowLogStart).
func (p *Partition) DeleteRecords(st *State, offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.state.Load()
	if cur.Leader != st.Leader || cur.LeaderEpoch != st.LeaderEpoch || cur.LeaderLog() == nil {
		return -1, kerr.NotLeaderForPartition
	}
	lg := cur.LeaderLog()
	if offset == -1 {
		offset = lg.HighWatermark()
	}
	if offset < 0 {
		return -1, fmt.Errorf("The offset %d for partition %s is not valid: %w", offset, p, kerr.OffsetOutOfRange)
	}
	start, err := lg.IncrementLogStartOffset(offset)
	if err != nil {
		return -1, err
	}
	return start, nil
}

// FollowLogStart moves broker's log start offset up to the leader's, leaderStart, as a Kafka
// follower does with the log start offset of each fetch response
// (ReplicaFetcherThread.processPartitionData), while broker still follows the leader of
// leaderEpoch. The follower's log start offset never passes its own high watermark: a
// follower that has not replicated that far yet catches up first.
func (p *Partition) FollowLogStart(broker, leaderEpoch int32, leaderStart int64) error {
	return p.AsFollower(broker, leaderEpoch, func(lg *log.Partition) error {
		if to := min(leaderStart, lg.HighWatermark()); to > lg.LogStartOffset() {
			_, err := lg.IncrementLogStartOffset(to)
			return err
		}
		return nil
	})
}
