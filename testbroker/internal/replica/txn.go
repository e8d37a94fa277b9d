package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// AppendTxnMarkerAsLeader appends an end transaction marker for producerID to the leader's log,
// as of State st, as Kafka's WriteTxnMarkers does with acks=all: it refuses with
// NOT_LEADER_OR_FOLLOWER when the leader changed since st and with NOT_ENOUGH_REPLICAS when the
// ISR is smaller than minISR, appending nothing; otherwise it returns the marker's offset, or the
// log's refusal (log.Partition.AppendTxnMarkerVersion, for transactionVersion). The high
// watermark moves as after a produce; a caller that must know the marker replicated waits with
// WaitReplicated for offset+1.
func (p *Partition) AppendTxnMarkerAsLeader(st *State, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, transactionVersion int16, minISR int) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.state.Load()
	if cur.Leader != st.Leader || cur.LeaderEpoch != st.LeaderEpoch {
		return -1, kerr.NotLeaderForPartition
	}
	if len(cur.ISR) < effectiveMinISR(cur, minISR) {
		return -1, kerr.NotEnoughReplicas
	}
	off, err := cur.LeaderLog().AppendTxnMarkerVersion(producerID, producerEpoch, commit, coordinatorEpoch, transactionVersion)
	if err != nil {
		return -1, err
	}
	p.maybeAdvanceHighWatermarkLocked()
	return off, nil
}
