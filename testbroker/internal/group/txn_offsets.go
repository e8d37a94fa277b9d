package group

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// CommitTxnOffsets runs the group part of a TxnOffsetCommit as Kafka's OffsetMetadataManager
// does: the checks of CommitOffsets, with the leniency of a transactional commit (see
// OffsetCommitMember.Transactional; a missing group with a generation is ILLEGAL_GENERATION, and
// so is a stale member epoch, since TxnOffsetCommit has no STALE_MEMBER_EPOCH), and the offsets
// are held pending for producerID's transaction: OffsetFetch does not show them (RequireStable
// gets UNSTABLE_OFFSET_COMMIT for their partitions) until EndTxnOffsets commits them.
func (c *Coordinator) CommitTxnOffsets(producerID int64, req OffsetCommit) []TopicResults {
	c.mu.Lock()
	defer c.mu.Unlock()
	req.Member.Transactional = true
	out := c.commitOffsetsLocked(req, c.pendingStore(producerID))
	for i := range out {
		for j := range out[i].Partitions {
			if ge, ok := out[i].Partitions[j].Err.(*kafkaerr.Error); ok && ge.Code == kerr.StaleMemberEpoch {
				out[i].Partitions[j].Err = kerr.IllegalGeneration
			}
		}
	}
	return out
}

// pendingStore returns the function that gives a group's pending offsets of producerID.
func (c *Coordinator) pendingStore(producerID int64) func(*Group) *offsetStore {
	return func(g *Group) *offsetStore {
		if g.pendingTxn == nil {
			g.pendingTxn = make(map[int64]*offsetStore)
		}
		s := g.pendingTxn[producerID]
		if s == nil {
			s = &offsetStore{}
			g.pendingTxn[producerID] = s
		}
		return s
	}
}

// EndTxnOffsets ends producerID's transaction in the group, as the transaction's marker does
// on the group's __consumer_offsets partition: its pending offsets become committed (commit) or
// are dropped.
func (c *Coordinator) EndTxnOffsets(groupID string, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.groups[groupID]
	if grp == nil {
		return
	}
	s := grp.pendingTxn[producerID]
	if s == nil {
		return
	}
	delete(grp.pendingTxn, producerID)
	if !commit {
		return
	}
	for topic, ps := range s.byTopic {
		for p, o := range ps {
			grp.offsets.set(topic, p, o)
		}
	}
}

// hasPendingTxnOffset reports whether a transaction has an offset of the partition pending.
func (g *Group) hasPendingTxnOffset(topic string, partition int32) bool {
	for _, s := range g.pendingTxn {
		if _, ok := s.get(topic, partition); ok {
			return true
		}
	}
	return false
}
