package log

import "sort"

// UndefinedEpoch and UndefinedEpochOffset are the epoch and end offset that answer an epoch
// the log cannot place, as OffsetForLeaderEpoch sends them (Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// epochEntry says that the batches of leader epoch epoch start at offset start.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is a partition's leader epoch cache, Kafka's LeaderEpochFileCache without the
// checkpoint file: its entries rise strictly in both epoch and start offset.
type epochCache struct {
	entries []epochEntry
}

// assign records that epoch starts at start, unless the latest entry already has that epoch
// and an offset no later. Entries that the new one contradicts, those with an epoch or start
// offset not below it, are removed first, as Kafka does to keep the cache monotonic. A
// negative epoch, which no batch of a leader carries, is not recorded.
func (c *epochCache) assign(epoch int32, start int64) {
	if epoch < 0 {
		return
	}
	if n := len(c.entries); n > 0 && c.entries[n-1].epoch == epoch && c.entries[n-1].start <= start {
		return
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].epoch >= epoch || c.entries[n-1].start >= start) {
		n--
	}
	c.entries = append(c.entries[:n], epochEntry{epoch: epoch, start: start})
}

// latest returns the latest epoch, or UndefinedEpoch when the cache is empty.
func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return UndefinedEpoch
	}
	return c.entries[len(c.entries)-1].epoch
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor; see Partition.EndOffsetForEpoch.
func (c *epochCache) endOffsetFor(requested int32, leo int64) (int32, int64) {
	if requested == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if len(c.entries) > 0 && c.latest() == requested {
		return requested, leo
	}
	// higher is the first entry with an epoch above requested; the one before it, if any, is
	// the largest epoch not above it.
	higher := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].epoch > requested })
	switch {
	case higher == len(c.entries):
		return UndefinedEpoch, UndefinedEpochOffset
	case higher == 0:
		return requested, c.entries[0].start
	default:
		return c.entries[higher-1].epoch, c.entries[higher].start
	}
}

// startOffset returns the start offset of epoch, if the cache has an entry for it.
func (c *epochCache) startOffset(epoch int32) (int64, bool) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].epoch >= epoch })
	if i == len(c.entries) || c.entries[i].epoch != epoch {
		return 0, false
	}
	return c.entries[i].start, true
}

// truncateFromEnd removes the entries that start at end or later, when the log is cut to end.
func (c *epochCache) truncateFromEnd(end int64) {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].start >= end {
		n--
	}
	c.entries = c.entries[:n]
}

func (c *epochCache) clear() { c.entries = c.entries[:0] }

// LatestEpoch returns the leader epoch of the log's latest epoch entry, UndefinedEpoch (-1)
// when it has none. Entries come from the PartitionLeaderEpoch of the batches appended, and from
// StartLeaderEpoch; truncation removes the entries of the batches it removes.
func (p *Partition) LatestEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs.latest()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for the requested epoch with the rules of
// Kafka's LeaderEpochFileCache.endOffsetFor:
//
//   - requested is UndefinedEpoch (-1): (UndefinedEpoch, UndefinedEpochOffset).
//   - requested is the latest epoch: (requested, log end offset); the latest epoch is still
//     being written to.
//   - no epoch above requested is known (requested is above the latest epoch, or the cache is
//     empty): (UndefinedEpoch, UndefinedEpochOffset).
//   - requested is below every known epoch: (requested, the start offset of the first epoch).
//     The epochs between may be gone with the log's start; a follower then truncates to where
//     the leader's known history begins.
//   - otherwise: the largest known epoch not above requested, and the start offset of the first
//     epoch above requested, where that epoch's batches end.
//
// Kafka's OffsetForLeaderEpoch handler sends (-1, -1) with no error when the end offset is
// UndefinedEpochOffset.
func (p *Partition) EndOffsetForEpoch(requested int32) (epoch int32, endOffset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs.endOffsetFor(requested, p.leo)
}

// EpochStartOffset returns the offset at which the log's batches of leader epoch epoch start,
// and false when the log holds no entry for that epoch.
func (p *Partition) EpochStartOffset(epoch int32) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs.startOffset(epoch)
}

// StartLeaderEpoch makes this log the leader's in epoch: Append writes epoch into the batches
// it appends from now on, as after SetLeaderEpoch, and the epoch is recorded as starting at the
// log end offset, before any batch of it is appended, as Kafka's Partition.makeLeader does. A
// follower asking for an epoch between the previous one and this one then learns that it ends
// here, not an undefined offset. A log that turns follower keeps its entries until TruncateTo
// or AppendReplicated contradicts them.
func (p *Partition) StartLeaderEpoch(epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch = epoch
	p.epochs.assign(epoch, p.leo)
}
