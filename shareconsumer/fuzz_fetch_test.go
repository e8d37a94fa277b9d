package shareconsumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// fuzzFetchSeed encodes a ShareFetch answer for the seeds of FuzzShareFetchResponse.
func fuzzFetchSeed(version int16, code int16, parts ...kmsg.ShareFetchResponseTopicPartition) []byte {
	resp := kmsg.NewPtrShareFetchResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.AcquisitionLockTimeoutMillis = 30000
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID = fuzzTopic
	t.Partitions = parts
	resp.Topics = append(resp.Topics, t)
	other := kmsg.NewShareFetchResponseTopic()
	other.TopicID = [16]byte{9}
	other.Partitions = parts
	resp.Topics = append(resp.Topics, other)
	ep := kmsg.NewShareFetchResponseNodeEndpoint()
	ep.NodeID, ep.Host, ep.Port = 1, "localhost", 9093
	resp.NodeEndpoints = append(resp.NodeEndpoints, ep)
	return resp.AppendTo(nil)
}

func fuzzFetchPart(p int32, code, ackCode int16, records []byte, acquired ...kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) kmsg.ShareFetchResponseTopicPartition {
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.AcknowledgeErrorCode = p, code, ackCode
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	rp.Records, rp.AcquiredRecords = records, acquired
	return rp
}

// fuzzMaxAcquired bounds the acquired offsets of an answer FuzzShareFetchResponse applies. The
// consumer, as Kafka's client, accounts for acquired offsets one by one (a gap is acknowledged
// offset by offset) up to maxAcquiredOffsets a partition, so such an answer takes a while to
// apply; the target keeps to answers that can be checked offset by offset many times a second.
// Partitions over maxAcquiredOffsets are refused at once and do not count.
const fuzzMaxAcquired = 1 << 16

// fuzzAcquiredCount returns how many offsets resp's partitions acquire, counting every
// partition entry the consumer does not refuse, capped just above fuzzMaxAcquired.
func fuzzAcquiredCount(resp *kmsg.ShareFetchResponse) int64 {
	var k int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			rs := normalizeAcquired(p.AcquiredRecords)
			if tooManyAcquired(rs) {
				continue
			}
			for _, r := range rs {
				k += min(r.last-r.first+1, fuzzMaxAcquired+1)
				if k > fuzzMaxAcquired {
					return k
				}
			}
		}
	}
	return k
}

// FuzzShareFetchResponse applies a fuzzed ShareFetch answer, decoded from the wire as kgo
// decodes it, to a consumer whose fetch carried acknowledgements, then has Poll's take (the
// ledger's) hand out every record it buffered and the application acknowledge them at random.
// Nothing panics; each acknowledgement the fetch carried gets exactly one outcome; the session
// epoch moves as Kafka's client moves it; leader epochs never go back; and the
// acknowledgements built afterwards are ordered, disjoint batches that name only offsets the
// answer acquired for the consumer, each once: records Poll handed out with the type the
// application gave, offsets of corrupt batches (rejected unless the application said
// otherwise), and gaps.
func FuzzShareFetchResponse(f *testing.F) {
	recs := tBatch(0, 4, 0, 1000, tRec{delta: 0, value: []byte("a")}, tRec{delta: 2, value: []byte("b")}, tRec{delta: 4, value: []byte("c")})
	more := tBatch(5, 2, 0, 1000, tRec{delta: 0, value: []byte("d")}, tRec{delta: 1, value: []byte("e")}, tRec{delta: 2, value: []byte("f")})
	gz := tCompressedBatch(f, more, kgo.GzipCompression())
	bad := append([]byte{}, more...)
	bad[len(bad)-2] ^= 0xff
	notLeader := fuzzFetchPart(2, kerr.NotLeaderForPartition.Code, 0, nil)
	notLeader.CurrentLeader.LeaderID, notLeader.CurrentLeader.LeaderEpoch = 1, 7
	fenced := fuzzFetchPart(1, kerr.FencedLeaderEpoch.Code, 0, nil)
	fenced.CurrentLeader.LeaderID, fenced.CurrentLeader.LeaderEpoch = 0, -5
	for v := int16(0); v <= 2; v++ {
		plan := []byte{0, 1, 2, 3, 4, 5, 6, 7}
		f.Add(uint8(v), fuzzFetchSeed(v, 0, fuzzFetchPart(0, 0, 0, append(append([]byte{}, recs...), gz...), acq(0, 7, 1))), plan)
		f.Add(uint8(v), fuzzFetchSeed(v, 0,
			fuzzFetchPart(0, 0, kerr.InvalidRecordState.Code, append(append([]byte{}, recs...), bad...), acq(3, 9, 2), acq(0, 4, 1), acq(8, 6, 1), acq(-3, 1, -1)),
			notLeader, fenced), plan)
		f.Add(uint8(v), fuzzFetchSeed(v, 0, fuzzFetchPart(0, 0, 0, recs, acq(0, 4, 1)), fuzzFetchPart(0, 0, 0, recs, acq(0, 4, 2))), plan) // a partition twice
		f.Add(uint8(v), fuzzFetchSeed(v, 0, fuzzFetchPart(0, 0, 0, nil, acq(100, 110, 1)), fuzzFetchPart(3, 0, 0, recs, acq(0, 4, 1))), plan)
		f.Add(uint8(v), fuzzFetchSeed(v, kerr.ShareSessionNotFound.Code), plan)
		f.Add(uint8(v), fuzzFetchSeed(v, kerr.GroupAuthorizationFailed.Code), plan)
		f.Add(uint8(v), fuzzFetchSeed(v, 0, fuzzFetchPart(1, kerr.UnknownTopicID.Code, 0, nil), fuzzFetchPart(0, kerr.TopicAuthorizationFailed.Code, 0, recs, acq(0, 4, 1))), plan)
		f.Add(uint8(v)|0x80, fuzzFetchSeed(v, 0), plan) // the request failed
		f.Add(uint8(v), fuzzFetchSeed(v, 0, fuzzFetchPart(0, 0, 0, recs, acq(0, 1<<62, 1)), fuzzFetchPart(1, 0, 0, recs, acq(0, 4, 1))), plan)
	}

	c := fuzzConsumer(f)
	f.Fuzz(func(t *testing.T, version uint8, wire, plan []byte) {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.Version = int16(version&0x7f) % 3
		if resp.ReadFrom(wire) != nil {
			return // kgo fails such an answer as a whole: the request's error path
		}
		if fuzzAcquiredCount(resp) > fuzzMaxAcquired {
			return
		}
		var reqErr error
		if version&0x80 != 0 {
			reqErr = errors.New("fuzz: connection reset")
		}
		in := fuzzInput{plan}

		c.mu.Lock()
		locked := true
		defer func() { // a failed check must not leave the consumer locked for the next input
			if locked {
				c.mu.Unlock()
			}
		}()
		fuzzReset(c)
		s := c.sessions.get(0)
		s.epoch = 1 + int32(in.u8()%3)
		s.parts = map[tidp]struct{}{{fuzzTopic, 0}: {}, {fuzzTopic, 1}: {}}
		job := &ackJob{kind: jobPiggyback}
		for p := range int32(in.u8() % 3) {
			job.parts = append(job.parts, tPart(p, int64(p)*10, int64(p)*10+2, acktype.Accept))
		}
		names := map[[16]byte]string{fuzzTopic: "t"}
		epochsBefore := make(map[int32]int32)
		for p, li := range c.member.topics[fuzzTopic].leaders {
			epochsBefore[p] = li.epoch
		}
		now := time.Now()
		var decoded map[tidp]decodedPart
		if reqErr == nil && resp.ErrorCode == 0 {
			decoded = c.decodeResponse(resp, names, now, nil)
		}
		epoch := s.epoch
		c.applyFetchLocked(s, job, names, resp, reqErr, decoded, now, now)

		require.Len(t, c.acks.completions, len(job.parts), "each acknowledgement the fetch carried gets one outcome")
		switch {
		case reqErr != nil, isSessionError(resp.ErrorCode):
			require.Zero(t, s.epoch, "the session is opened anew")
			buffered := c.ledger.pollView().anyBuffered
			require.False(t, buffered)
		default:
			require.Equal(t, nextEpoch(epoch), s.epoch)
		}
		for p, li := range c.member.topics[fuzzTopic].leaders {
			require.GreaterOrEqual(t, li.epoch, epochsBefore[p], "partition %d: a leader hint took the leader epoch back", p)
			require.GreaterOrEqual(t, li.node, int32(0))
		}

		// What the answer acquired for the consumer, by partition.
		acquired := make(map[int32]map[int64]bool)
		refused := 0
		if reqErr == nil && resp.ErrorCode == 0 {
			// The entry of each partition the consumer takes: its last, as in applyFetchLocked.
			last := make(map[int32]*kmsg.ShareFetchResponseTopicPartition)
			for ti := range resp.Topics {
				if resp.Topics[ti].TopicID == fuzzTopic {
					for pi := range resp.Topics[ti].Partitions {
						last[resp.Topics[ti].Partitions[pi].Partition] = &resp.Topics[ti].Partitions[pi]
					}
				}
			}
			for ti := range resp.Topics {
				rt := &resp.Topics[ti]
				if rt.TopicID != fuzzTopic {
					continue
				}
				for pi := range rt.Partitions {
					rp := &rt.Partitions[pi]
					if rp.ErrorCode != 0 {
						continue
					}
					rs := normalizeAcquired(rp.AcquiredRecords)
					if tooManyAcquired(rs) {
						if last[rp.Partition] == rp {
							refused++
						}
						continue // the consumer takes nothing of it
					}
					for _, r := range rs {
						if acquired[rp.Partition] == nil {
							acquired[rp.Partition] = make(map[int64]bool)
						}
						for o := r.first; o <= r.last; o++ {
							acquired[rp.Partition][o] = true
						}
					}
				}
			}
		}

		tooMany := 0
		for _, err := range c.poll.errs {
			if errors.Is(err, errors.ErrTooManyAcquired) {
				tooMany++
			}
		}
		if len(c.poll.errs) < maxPollErrs { // else the oldest errors were dropped
			require.Equal(t, refused, tooMany, "each refused partition is reported once, and only those")
		}

		// Poll hands out everything; the application acknowledges some of it.
		type key struct {
			p   int32
			off int64
		}
		handed := make(map[key]bool) // true: an offset of a corrupt batch
		var handedRecs []*Record
		for {
			if buffered := c.ledger.pollView().anyBuffered; !buffered {
				break
			}
			got, ce, _, _, _ := c.ledger.take(time.Now(), c.cfg.maxPollRecords)
			for _, r := range got {
				require.Equal(t, "t", r.Topic)
				require.True(t, acquired[r.Partition][r.Offset], "record %d-%d was not acquired", r.Partition, r.Offset)
				_, dup := handed[key{r.Partition, r.Offset}]
				require.False(t, dup, "record %d-%d handed out twice", r.Partition, r.Offset)
				handed[key{r.Partition, r.Offset}] = false
				handedRecs = append(handedRecs, r)
			}
			if ce != nil {
				require.ErrorIs(t, ce, kerr.CorruptMessage)
				for _, o := range ce.Offsets {
					require.True(t, acquired[ce.Partition][o], "corrupt offset %d-%d was not acquired", ce.Partition, o)
					_, dup := handed[key{ce.Partition, o}]
					require.False(t, dup, "offset %d-%d handed out twice", ce.Partition, o)
					handed[key{ce.Partition, o}] = true
				}
			}
		}
		c.mu.Unlock()
		locked = false

		wantType := make(map[key]acktype.Type)
		for in.more() && len(handed) > 0 {
			ty := fuzzAckType(&in)
			i := int(in.u8())
			if i < len(handedRecs) {
				r := handedRecs[i]
				err := c.Acknowledge(r, ty)
				if ty.Valid() {
					require.NoError(t, err)
					wantType[key{r.Partition, r.Offset}] = ty
				} else {
					require.ErrorIs(t, err, errors.ErrInvalidAcknowledgeType)
				}
				continue
			}
			p, off := int32(in.u8()%4), int64(in.u8())
			err := c.AcknowledgeOffset("t", p, off, ty)
			switch corrupt, ok := handed[key{p, off}]; {
			case !ty.Valid() || ty == acktype.Renew:
				require.ErrorIs(t, err, errors.ErrInvalidAcknowledgeType)
			case ok && corrupt:
				require.NoError(t, err)
				wantType[key{p, off}] = ty
			default:
				require.ErrorIs(t, err, errors.ErrCannotAcknowledge)
			}
		}

		c.mu.Lock()
		locked = true
		c.ledger.acceptAll()
		c.ledger.moveAcked(&c.sessions)
		sent := make(map[key]acktype.Type)
		for _, ss := range c.sessions.sorted() {
			for _, part := range ss.takeAcks(&c.acks, time.Now()) {
				require.Equal(t, int32(0), ss.node, "acknowledgements go to the leader the records came from")
				require.Equal(t, "t", part.tp.Topic)
				checkBatches(t, part.batches)
				for o, ty := range batchTypes(part.batches) {
					k := key{part.tp.Partition, o}
					require.True(t, acquired[k.p][o], "acknowledgement of offset %d-%d, which the answer did not acquire", k.p, o)
					_, dup := sent[k]
					require.False(t, dup, "offset %d-%d acknowledged twice", k.p, o)
					sent[k] = ty
				}
			}
		}
		for k, corrupt := range handed {
			want, ok := wantType[k]
			switch {
			case ok:
			case corrupt:
				want = acktype.Reject
			default:
				want = acktype.Accept
			}
			require.Equal(t, want, sent[k], "offset %d-%d", k.p, k.off)
		}
		for k, ty := range sent {
			if _, ok := handed[k]; !ok {
				require.Equal(t, acktype.Gap, ty, "offset %d-%d was never handed out", k.p, k.off)
			}
		}
	})
}

// applyTestFetch applies a ShareFetch answer with parts, read from the wire, to a consumer whose
// session with broker 0 is open and whose fetch carried job, and returns the consumer locked.
func applyTestFetch(t *testing.T, job *ackJob, parts ...kmsg.ShareFetchResponseTopicPartition) *Consumer {
	t.Helper()
	c := fuzzConsumer(t)
	resp := kmsg.NewPtrShareFetchResponse()
	require.NoError(t, resp.ReadFrom(fuzzFetchSeed(resp.Version, 0, parts...)))
	c.mu.Lock()
	fuzzReset(c)
	s := c.sessions.get(0)
	s.epoch = 1
	names := map[[16]byte]string{fuzzTopic: "t"}
	now := time.Now()
	c.applyFetchLocked(s, job, names, resp, nil, c.decodeResponse(resp, names, now, nil), now, now)
	return c
}

// tTake takes what a Poll would from c's ledger.
func tTake(c *Consumer) ([]*Record, *errors.CorruptBatchError) {
	recs, ce, _, _, _ := c.ledger.take(time.Now(), c.cfg.maxPollRecords)
	return recs, ce
}

// A partition an answer names twice counts once, as its last entry, as in Kafka's client: its
// records are not handed out twice (found by FuzzShareFetchResponse).
func TestShareFetchPartitionTwiceCountsOnce(t *testing.T) {
	t.Parallel()
	recs := tBatch(0, 1, 0, 0, tRec{delta: 0, value: []byte("a")}, tRec{delta: 1, value: []byte("b")})
	c := applyTestFetch(t, &ackJob{kind: jobPiggyback, parts: []*ackPart{tPart(0, 5, 5, acktype.Accept)}},
		fuzzFetchPart(0, 0, kerr.InvalidRecordState.Code, recs, acq(0, 1, 1)),
		fuzzFetchPart(0, 0, 0, recs, acq(0, 1, 2)))
	defer c.mu.Unlock()

	got, ce := tTake(c)
	require.Nil(t, ce)
	require.Equal(t, []int64{0, 1}, offsetsOf(got))
	require.EqualValues(t, 2, got[0].DeliveryCount, "the last entry's")
	buffered := c.ledger.pollView().anyBuffered
	require.False(t, buffered)
	require.Len(t, c.acks.completions, 1)
	require.NoError(t, c.acks.completions[0].Err, "the last entry's acknowledgement outcome")
}

// An answer acquiring 2^62 offsets of a partition, with no data behind them, is refused at once
// (it used to hold the consumer's lock while counting them): Poll reports it, nothing of it is
// acknowledged, and the answer's other partitions are taken as usual.
func TestShareFetchTooManyAcquiredRefused(t *testing.T) {
	t.Parallel()
	recs := tBatch(0, 1, 0, 0, tRec{delta: 0, value: []byte("a")}, tRec{delta: 1, value: []byte("b")})
	c := applyTestFetch(t, &ackJob{kind: jobPiggyback},
		fuzzFetchPart(0, 0, 0, nil, acq(0, 1<<62, 1)),
		fuzzFetchPart(1, 0, 0, recs, acq(0, 3, 1)))
	defer c.mu.Unlock()

	require.Len(t, c.poll.errs, 1)
	var pe *errors.PartitionError
	require.ErrorAs(t, c.poll.errs[0], &pe)
	require.ErrorIs(t, pe, errors.ErrTooManyAcquired)
	require.Equal(t, TopicPartition{"t", 0}, TopicPartition{pe.Topic, pe.Partition})

	got, ce := tTake(c)
	require.Nil(t, ce)
	require.Equal(t, []int64{0, 1}, offsetsOf(got))
	for _, r := range got {
		require.Equal(t, int32(1), r.Partition)
	}
	c.ledger.acceptAll()
	c.ledger.moveAcked(&c.sessions)
	for _, s := range c.sessions.sorted() {
		for _, part := range s.takeAcks(&c.acks, time.Now()) {
			require.Equal(t, int32(1), part.tp.Partition, "nothing of the refused partition is acknowledged")
			require.Equal(t, map[int64]acktype.Type{0: acktype.Accept, 1: acktype.Accept}, batchTypes(part.batches),
				"2 and 3 lie past the data: not acknowledged")
		}
	}
}
