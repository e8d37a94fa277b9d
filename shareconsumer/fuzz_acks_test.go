package shareconsumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/errors"
)

// FuzzAcknowledgeBatching delivers records of four partitions from two leaders (some
// delivered again, some offsets of corrupt batches) into the ledger's polled set, makes
// Acknowledge and AcknowledgeOffset calls of random types on random records and offsets, and
// now and then takes the acknowledgements for sending as a Poll or commit does (the ledger's
// moveAcked, then each session's takeAcks). Each call succeeds exactly when the record is held
// and the type allowed; the batches are ordered and disjoint, go to the session of the leader
// that delivered each record, and carry each acknowledged record once, with the last type
// given; nothing else is ever acknowledged.
func FuzzAcknowledgeBatching(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{9, 200, 3, 3, 1, 2, 4, 0xff, 7, 7, 7, 1, 0, 1, 0, 5, 2, 2, 2})
	f.Add([]byte{40, 250, 250, 250, 1, 1, 1, 1, 6, 6, 6, 6, 3, 0, 9, 9, 9, 0xfe, 0, 0, 1})

	c := fuzzConsumer(f)
	type key struct {
		p   int32
		off int64
	}
	type held struct {
		node        int32
		undecodable bool
		rec         *Record
	}
	f.Fuzz(func(t *testing.T, plan []byte) {
		in := fuzzInput{plan}
		c.mu.Lock()
		fuzzReset(c)
		c.mu.Unlock()

		holding := make(map[key]held)
		acked := make(map[key]acktype.Type) // acknowledged, not taken yet
		var recs []*Record
		next := map[int32]int64{}
		// deliver adds records as Poll's take does; a record delivered again replaces the
		// earlier delivery, and comes from its partition's leader.
		deliver := func(count int) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for range count {
				p := int32(in.u8() % 4)
				step := int64(in.u8() % 5)
				off := next[p] + step - 1 // -1: the record before, delivered again
				if off < 0 {
					off = 0
				}
				next[p] = max(next[p], off+1)
				node := p / 2
				part := c.ledger.part(TopicPartition{"t", p}, fuzzTopic, c.sessions.get(node))
				k := key{p, off}
				c.ledger.mu.Lock()
				if in.u8()%8 == 0 {
					c.ledger.polled.add(part, off, nil, true, acktype.Reject)
					c.ledger.mu.Unlock()
					holding[k] = held{node: node, undecodable: true}
					acked[k] = acktype.Reject
					continue
				}
				r := &Record{Topic: "t", Partition: p, Offset: off, DeliveryCount: 1}
				c.ledger.polled.add(part, off, r, false, 0)
				c.ledger.mu.Unlock()
				holding[k] = held{node: node, rec: r}
				delete(acked, k)
				recs = append(recs, r)
			}
		}
		take := func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.ledger.moveAcked(&c.sessions)
			sent := make(map[key]acktype.Type)
			for _, s := range c.sessions.sorted() {
				for _, part := range s.takeAcks(&c.acks, time.Now()) {
					checkBatches(t, part.batches)
					for o, ty := range batchTypes(part.batches) {
						k := key{part.tp.Partition, o}
						h, ok := holding[k]
						require.True(t, ok, "acknowledgement of %d-%d, which was not delivered", k.p, o)
						require.Equal(t, h.node, s.node, "acknowledgement of %d-%d sent to another leader than the one that delivered it", k.p, o)
						_, dup := sent[k]
						require.False(t, dup, "offset %d-%d acknowledged twice", k.p, o)
						sent[k] = ty
					}
				}
			}
			require.Equal(t, acked, sent)
			for k := range acked {
				delete(holding, k)
			}
			acked = make(map[key]acktype.Type)
		}

		deliver(int(in.u8() % 32))
		for in.more() {
			switch op := in.u8() % 8; op {
			case 0:
				take()
			case 1:
				deliver(int(in.u8() % 8))
			case 2: // an offset, as for a corrupt batch
				p, off, ty := int32(in.u8()%4), int64(in.u8()%64), fuzzAckType(&in)
				h, ok := holding[key{p, off}]
				err := c.AcknowledgeOffset("t", p, off, ty)
				switch {
				case !ty.Valid() || ty == acktype.Renew:
					require.ErrorIs(t, err, errors.ErrInvalidAcknowledgeType)
				case ok && h.undecodable:
					require.NoError(t, err)
					acked[key{p, off}] = ty
				default:
					require.ErrorIs(t, err, errors.ErrCannotAcknowledge)
				}
			default: // a record Poll returned, or one it did not
				if len(recs) == 0 {
					continue
				}
				r, ty := recs[int(in.u8())%len(recs)], fuzzAckType(&in)
				if op == 3 {
					r = &Record{Topic: "t", Partition: r.Partition, Offset: r.Offset + int64(in.u8()%3)}
				}
				k := key{r.Partition, r.Offset}
				h, ok := holding[k]
				err := c.Acknowledge(r, ty)
				switch {
				case !ty.Valid():
					require.ErrorIs(t, err, errors.ErrInvalidAcknowledgeType)
				case ok && !h.undecodable:
					require.NoError(t, err)
					acked[k] = ty
				default:
					require.ErrorIs(t, err, errors.ErrCannotAcknowledge)
				}
			}
		}
		take()
	})
}

// FuzzShareAcknowledgeResponse applies a fuzzed ShareAcknowledge answer, decoded from the
// wire, to a session's ShareAcknowledge of CommitAsync, CommitSync or Close. Nothing panics;
// every partition sent gets exactly one outcome or, for CommitSync and a retriable code only, is
// queued to be sent again, once; a close leaves no session open, and a session error resets
// it.
func FuzzShareAcknowledgeResponse(f *testing.F) {
	seed := func(v int16, code int16, codes ...int16) []byte {
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		resp.Version, resp.ErrorCode, resp.AcquisitionLockTimeoutMillis = v, code, 15000
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = fuzzTopic
		for p, pc := range codes {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), pc
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 1, 9
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt, rt)
		ep := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ep.NodeID, ep.Host, ep.Port = 1, "localhost", 9093
		resp.NodeEndpoints = append(resp.NodeEndpoints, ep)
		return resp.AppendTo(nil)
	}
	for v := int16(0); v <= 2; v++ {
		for kind := uint8(0); kind < 3; kind++ {
			f.Add(uint8(v), kind, seed(v, 0, 0, kerr.KafkaStorageError.Code, kerr.NotLeaderForPartition.Code))
			f.Add(uint8(v), kind, seed(v, 0, kerr.InvalidRecordState.Code, kerr.FencedLeaderEpoch.Code, kerr.RequestTimedOut.Code, 0))
			f.Add(uint8(v), kind, seed(v, kerr.InvalidShareSessionEpoch.Code))
			f.Add(uint8(v), kind, seed(v, kerr.CoordinatorLoadInProgress.Code))
			f.Add(uint8(v)|0x80, kind, seed(v, 0))
		}
	}

	f.Fuzz(func(t *testing.T, version, kind uint8, wire []byte) {
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		resp.Version = int16(version&0x7f) % 3
		if resp.ReadFrom(wire) != nil {
			return
		}
		var reqErr error
		if version&0x80 != 0 {
			reqErr = errors.New("fuzz: connection reset")
		}
		o := tOutcomes()
		s := newSession(0, nil)
		s.epoch = 4
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.ShareSessionEpoch = s.epoch
		w := newCommitWait(context.Background())
		var j *ackJob
		parts := []*ackPart{tPart(0, 0, 1, acktype.Accept), tPart(1, 5, 5, acktype.Release), tPart(2, 7, 9, acktype.Reject), tPart(3, 2, 2, acktype.Accept)}
		switch kind % 3 {
		case 0:
			j = &ackJob{kind: jobAsync, parts: parts}
		case 1:
			j = &ackJob{kind: jobSync, parts: parts, commit: w}
			s.enqueue(j)
			s.jobs = nil
		case 2:
			j = &ackJob{kind: jobClose, parts: parts, commit: w}
			s.enqueue(j)
			s.jobs = nil
			req.ShareSessionEpoch = -1
		}
		// CommitSync's context lasts: every retriable code is retried.
		ans := s.applyAck(j, req, resp, reqErr, retriableAck, o, time.Now())

		outcomes := make(map[TopicPartition]int)
		for _, ac := range o.completions {
			outcomes[ac.TopicPartition]++
		}
		var retried []*ackPart
		for _, rj := range s.jobs {
			require.Equal(t, jobSync, rj.kind, "only CommitSync retries")
			retried = append(retried, rj.parts...)
		}
		for _, p := range retried {
			outcomes[p.tp]++
		}
		for _, p := range parts {
			require.Equal(t, 1, outcomes[p.tp], "partition %v: one outcome or one retry", p.tp)
		}
		switch {
		case req.ShareSessionEpoch == -1, reqErr != nil, isSessionError(resp.ErrorCode):
			require.Zero(t, s.epoch, "no session stays open")
		default:
			require.EqualValues(t, 5, s.epoch)
		}
		switch {
		case reqErr != nil:
			require.Equal(t, answerFailed, ans.kind)
		case isSessionError(resp.ErrorCode):
			require.Equal(t, answerSessionLost, ans.kind)
		case resp.ErrorCode != 0:
			require.Equal(t, answerRefused, ans.kind)
		default:
			require.Equal(t, answerOK, ans.kind)
		}
		if j.kind == jobSync {
			require.Equal(t, len(retried), w.remaining, "CommitSync waits for the retried parts only")
		}
		if j.kind == jobClose {
			require.Zero(t, w.remaining, "Close's wait for the session's close is over")
		}
	})
}
