package share

// archiveBelowLocked follows the log start offset ls when it has passed the SPSO, as Kafka's
// SharePartition.updateCacheAndOffsets does once a share fetch finds its offset below the log
// start (OFFSET_OUT_OF_RANGE): the AVAILABLE records below ls become ARCHIVED, terminal records
// between the SPSO and ls stop counting as delivered-complete, and the SPSO moves to ls (the
// SPEO too, when it lay below). ACQUIRED records below ls keep their owner and lock: their
// acknowledgements are ignored, as for every record below the SPSO, and their lock's expiry,
// a release or the end of the owner's session archives them (settle), after which the SPSO's
// usual advance forgets them. It reports whether the SPSO moved.
func (p *Partition) archiveBelowLocked(ls int64) bool {
	if ls <= p.start {
		return false
	}
	var archived, leftDone int64
	for i := p.head; i < len(p.batches) && p.batches[i].first < ls; i++ {
		b := &p.batches[i]
		if b.offs == nil && (b.last < ls || b.rec.state != Available) {
			if b.rec.state.terminal() {
				leftDone += max(0, min(b.last, ls-1)-max(b.first, p.start)+1)
			}
			if b.rec.state == Available { // wholly below ls
				b.rec.state = Archived
				archived += b.size()
			}
			continue
		}
		if b.offs == nil {
			b.split() // AVAILABLE on both sides of ls
		}
		for o := b.first; o <= min(b.last, ls-1); o++ {
			switch r := &b.offs[o-b.first]; {
			case r.state.terminal():
				if o >= p.start {
					leftDone++
				}
			case r.state == Available:
				r.state = Archived
				archived++
			}
		}
	}
	p.avail -= archived
	p.done -= leftDone
	p.start = ls
	p.end = max(p.end, ls)
	p.advanceStart()
	return true
}
