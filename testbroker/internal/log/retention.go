package log

import "time"

// Retention is a log's retention policy, retention.ms and retention.bytes; a negative value
// means unlimited.
type Retention struct {
	Ms    int64
	Bytes int64
}

// ApplyRetention removes the oldest batches that retention no longer keeps, as Kafka's
// UnifiedLog.deleteOldSegments does with segments; the batch is this log's segment. First, by
// time, the batches from the front whose MaxTimestamp is more than r.Ms before now; then, by
// size, the batches from the front as long as the bytes left stay at least r.Bytes. A batch
// goes only when it lies wholly below the high watermark, so that the log start offset never
// passes it, and each pass stops at the first batch it keeps. The log start offset moves to
// the first batch left, or to the log end offset when none is. It returns how many batches
// went; a change wakes the Notify channel.
func (p *Partition) ApplyRetention(now time.Time, r Retention) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	if r.Ms >= 0 {
		cutoff := now.UnixMilli() - r.Ms
		for n < len(p.batches) && p.batches[n].last < p.hwm && p.batches[n].maxTimestamp < cutoff {
			n++
		}
	}
	if r.Bytes >= 0 {
		size := int64(0)
		for i := n; i < len(p.batches); i++ {
			size += int64(len(p.batches[i].data))
		}
		for excess := size - r.Bytes; n < len(p.batches) && p.batches[n].last < p.hwm; n++ {
			if excess -= int64(len(p.batches[n].data)); excess < 0 {
				break
			}
		}
	}
	if n == 0 {
		return 0
	}
	start := p.leo
	if n < len(p.batches) {
		start = p.batches[n].base
	}
	p.moveStart(max(start, p.logStart))
	p.notifyLocked()
	return n
}
