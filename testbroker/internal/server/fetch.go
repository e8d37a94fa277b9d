package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/log"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/replica"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

func init() {
	register(1, 4, 18, (*Broker).handleFetch, failedFetch, fetchScope)
}

// maxFetchBytes caps the records of one fetch response, as Kafka's fetch.max.bytes default
// (55 MiB) does.
const maxFetchBytes = 55 << 20

// noRecords is the records of a partition answered without any: Kafka's response building
// (KafkaApis turns every partition's records into FetchResponse.recordsOrFail's, null into
// MemoryRecords.EMPTY) never sends null records, and librdkafka fails the whole response on a
// null (-1) size. It is shared and never written.
var noRecords = []byte{}

// noAbortedTransactions is what a READ_COMMITTED fetch that must skip no aborted transaction
// gets: an empty list, never null, as Kafka sends it. It is shared and never written.
var noAbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}

// fetchPart is one partition of a fetch: what was asked, where its answer goes, and the
// partition when it exists.
type fetchPart struct {
	req     *kmsg.FetchRequestTopicPartition
	out     *kmsg.FetchResponseTopicPartition
	p       *replica.Partition // nil when the topic or partition is unknown
	err     *kerr.Error        // why p is nil, or why the follower's fetch of it was refused
	topic   int                // index of the partition's topic in the request
	records [][]byte           // the records read, as slices of the log's storage; empty for none
	// diverging is set when a follower's LastFetchedEpoch shows that its log diverged from
	// the leader's: the answer is the epoch and end offset to truncate to, with no records.
	diverging *kmsg.FetchResponseTopicPartitionDivergingEpoch
}

// handleFetch answers Fetch v4-18 as a Kafka leader answers a consumer. Topics are named by
// name up to v12 and by id from v13 (an unknown id is UNKNOWN_TOPIC_ID, an unknown name or
// partition UNKNOWN_TOPIC_OR_PARTITION); in the response, as with Kafka, the partitions the
// cluster has come first, in request order, and the unknown ones after them.
//
// Fetch sessions (KIP-227) are refused the way Kafka refuses them when its session cache is
// full: a full fetch (SessionEpoch 0, which asks for a session, or -1, which does not) is
// answered with SessionID 0, meaning that no session was created, and the client keeps sending
// full fetches. Any other epoch belongs to an incremental fetch of a session this broker never
// created, which fails as a whole with FETCH_SESSION_ID_NOT_FOUND. ForgottenTopics therefore
// has nothing to forget.
//
// Each partition gets its high watermark, last stable offset, log start offset, and the stored
// batches from the one holding FetchOffset up to the high watermark (READ_UNCOMMITTED,
// IsolationLevel 0) or the last stable offset (READ_COMMITTED, 1), within PartitionMaxBytes
// and what is left of the request's MaxBytes (capped at 55 MiB, Kafka's fetch.max.bytes). The
// first partition with data gets at least one whole batch whatever the limits, as with Kafka
// (KIP-74). A READ_COMMITTED fetch also gets the aborted transactions its records overlap
// (log.Partition.AbortedTransactions, from FetchOffset to the end of the records), an empty
// list when there are none; a READ_UNCOMMITTED one gets null, as with Kafka. A FetchOffset
// outside the log is OFFSET_OUT_OF_RANGE. A partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER, with the leader in CurrentLeader and its address in Brokers from
// v16, as Kafka sends them; a CurrentLeaderEpoch older or newer than the partition's is
// FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH. Failed partitions report -1 for every offset.
//
// When the records found add up to less than MinBytes, MaxWaitMillis is positive and no
// partition failed, the fetch waits for appends, high watermark and leader moves, as
// replica.Manager.Fetch (Kafka's DelayedFetch) describes, reading again at each.
//
// A follower's fetch (ReplicaID, or ReplicaState from v15) reads up to the leader's log end
// offset, as readAndWait describes. A consumer's fetch from v11 may read from a follower, up
// to the follower's high watermark (KIP-392); with replica.selector.class set to the
// RackAwareReplicaSelector, the leader sends a consumer whose RackID names another broker's
// rack to a replica there (readPreferring).
func (b *Broker) handleFetch(cn *conn, req *kmsg.FetchRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionEpoch != 0 && req.SessionEpoch != -1 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	}
	var denied []kmsg.FetchRequestTopic
	req.Topics, denied = cn.splitFetchTopics(req)
	parts, waitable := b.fetchParts(req, resp)
	from := fetcher{id: -1, epoch: -1, hangup: cn.done}
	if id := req.ReplicaID; req.Version < 15 && id >= 0 {
		from.id = id
	} else if req.Version >= 15 && req.ReplicaState.ID >= 0 {
		from.id, from.epoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	from.kip1166 = from.follower() && c.configs.Snapshot().Replica.KIP1166
	b.readPreferring(req, parts[:waitable], from)
	if req.Version >= 16 {
		for i := range parts[:waitable] {
			if out := parts[i].out; out.CurrentLeader.LeaderID >= 0 {
				resp.Brokers = c.appendFetchBroker(resp.Brokers, out.CurrentLeader.LeaderID)
			}
		}
	}
	appendDeniedFetch(resp, denied)
	// The records go out from the log's storage, without a copy: the parts are in response
	// order, as wire.FetchResponse's Records.
	var records [][][]byte
	for i := range parts[:waitable] {
		if len(parts[i].records) > 0 {
			if records == nil {
				records = make([][][]byte, waitable)
			}
			records[i] = parts[i].records
		}
	}
	if records == nil {
		return resp
	}
	return &wire.FetchResponse{FetchResponse: resp, Records: records}
}

// readAndWait reads the parts into their response slots and, when they hold less than the
// request's MinBytes, waits for more (replica.Manager.Fetch). A follower's fetch (from is its
// broker id, -1 for a consumer) first records the follower's position at each partition
// (recordFollower); one whose log diverged is answered at once.
func (b *Broker) readAndWait(req *kmsg.FetchRequest, parts []fetchPart, from fetcher) {
	c := b.c
	maxBytes := min(max(int(req.MaxBytes), 0), maxFetchBytes)
	f := &replica.DelayedFetch{
		Broker:     b.id,
		Partitions: make([]*replica.Partition, len(parts)),
		MinBytes:   min(int(req.MinBytes), maxBytes),
		MaxWait:    time.Duration(req.MaxWaitMillis) * time.Millisecond,
		Closed:     c.closed,
		Hangup:     from.hangup,
		Read: func() (int, bool) {
			return b.readFetch(parts, maxBytes, req.IsolationLevel == 1, req.Version, from)
		},
		HighWatermark: func(i int) int64 { return parts[i].out.HighWatermark },
	}
	for i := range parts {
		f.Partitions[i] = parts[i].p
	}
	if from.follower() {
		f.Topology = c.replicas.Topology()
		if from.kip1166 {
			f.SentHighWatermarks = make([]int64, len(parts))
			for i := range parts {
				f.SentHighWatermarks[i] = parts[i].req.HighWatermark
			}
		}
		if b.recordFollower(parts, from) {
			f.MaxWait = 0
		}
	}
	c.replicas.Fetch(f)
}

// recordFollower applies a follower's fetch to the leader's view before the read, as Kafka's
// leader does: a LastFetchedEpoch (v12+) that shows a diverged log gets the epoch and end
// offset to truncate to (log.Partition.DivergingEpoch), or OFFSET_OUT_OF_RANGE when the leader
// cannot place it; otherwise the follower's position is recorded (replica.Partition.Fetched),
// which may move the ISR and the high watermark. It reports whether a partition diverged.
func (b *Broker) recordFollower(parts []fetchPart, from fetcher) bool {
	diverged := false
	for i := range parts {
		fp := &parts[i]
		st := fp.p.State()
		if b.leaderError(st, fp.req.CurrentLeaderEpoch) != nil {
			continue // readFetch answers the error
		}
		if fp.req.LastFetchedEpoch >= 0 {
			epoch, end, div, err := st.LeaderLog().DivergingEpoch(fp.req.LastFetchedEpoch, fp.req.FetchOffset)
			if err != nil {
				fp.err = kerrOf(err)
				continue
			}
			if div {
				fp.diverging = &kmsg.FetchResponseTopicPartitionDivergingEpoch{Epoch: epoch, EndOffset: end}
				diverged = true
				continue
			}
		}
		if err := fp.p.Fetched(from.id, from.epoch, fp.req.FetchOffset); err != nil {
			fp.err = kerrOf(err)
		}
	}
	return diverged
}

// fetcher is who sends a fetch: a consumer (id -1) or a follower broker with its broker epoch,
// whether the leader applies KIP-1166 to it, and the channel its connection's close closes.
type fetcher struct {
	id      int32
	epoch   int64
	kip1166 bool
	hangup  <-chan struct{}
}

func (f fetcher) follower() bool { return f.id >= 0 }

// appendFetchBroker adds the address of node id to brokers unless it is there already.
func (c *Cluster) appendFetchBroker(brokers []kmsg.FetchResponseBroker, id int32) []kmsg.FetchResponseBroker {
	for _, have := range brokers {
		if have.NodeID == id {
			return brokers
		}
	}
	if nb := c.broker(id); nb != nil {
		brokers = append(brokers, kmsg.FetchResponseBroker{NodeID: id, Host: nb.host, Port: nb.port})
	}
	return brokers
}

// fetchParts resolves the request's partitions and lays out the response: the partitions the
// cluster has, in request order, then the unknown ones with their errors, grouped into topics
// wherever neighbours share one (Kafka's order). It returns the parts in that order and how
// many of them exist (the ones to read and wait on).
func (b *Broker) fetchParts(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) ([]fetchPart, int) {
	c := b.c
	total := 0
	for i := range req.Topics {
		total += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchPart, 0, total)
	var unknown []fetchPart
	for i := range req.Topics {
		rt := &req.Topics[i]
		var t *metadata.Topic
		unknownTopic := kerr.UnknownTopicOrPartition
		if req.Version >= 13 {
			t, unknownTopic = c.meta.TopicByID(rt.TopicID), kerr.UnknownTopicID
		} else {
			t = c.meta.Topic(rt.Topic)
		}
		for j := range rt.Partitions {
			fp := fetchPart{req: &rt.Partitions[j], topic: i}
			if t == nil {
				fp.err = unknownTopic
			} else if fp.p = c.meta.Partition(t, fp.req.Partition); fp.p == nil {
				fp.err = kerr.UnknownTopicOrPartition
			}
			if fp.err != nil {
				unknown = append(unknown, fp)
			} else {
				parts = append(parts, fp)
			}
		}
	}
	known := len(parts)
	parts = append(parts, unknown...)

	outs := make([]kmsg.FetchResponseTopicPartition, len(parts))
	sameTopic := func(i int) bool { // whether part i belongs to the topic of part i-1
		if i == 0 {
			return false
		}
		a, b := &req.Topics[parts[i].topic], &req.Topics[parts[i-1].topic]
		return a.Topic == b.Topic && a.TopicID == b.TopicID
	}
	topics := 0
	for i := range parts {
		if !sameTopic(i) {
			topics++
		}
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, topics)
	for i := range parts {
		fp := &parts[i]
		out := &outs[i]
		out.Default()
		out.Partition = fp.req.Partition
		out.RecordBatches = noRecords
		fp.out = out
		if fp.err != nil {
			out.ErrorCode = fp.err.Code
			out.HighWatermark = -1
		}
		if !sameTopic(i) {
			rt := &req.Topics[fp.topic]
			resp.Topics = append(resp.Topics, kmsg.FetchResponseTopic{Topic: rt.Topic, TopicID: rt.TopicID, Partitions: outs[i:i]})
		}
		last := &resp.Topics[len(resp.Topics)-1]
		last.Partitions = last.Partitions[:len(last.Partitions)+1]
	}
	return parts, known
}

// readFetch reads every part into its response slot and its records, and returns the record
// bytes read and whether a partition failed. Reading again rewrites every part, so none keeps
// stale records. A consumer reads up to the high watermark of this broker's replica, a
// follower up to the leader's log end offset.
func (b *Broker) readFetch(parts []fetchPart, maxBytes int, committed bool, version int16, from fetcher) (int, bool) {
	left := maxBytes
	first := true // no partition has given records yet: the next one gets at least a batch
	failed := false
	total := 0
	for i := range parts {
		fp := &parts[i]
		out := fp.out
		st := fp.p.State()
		fp.records = fp.records[:0]
		out.AbortedTransactions = nil
		lerr := fp.err
		if lerr == nil {
			// A consumer from v11 may read from a follower (KIP-392); a follower only from the leader.
			lerr = b.replicaError(st, fp.req.CurrentLeaderEpoch, from.follower() || version < 11)
		}
		if lerr != nil {
			b.failFetchPart(out, lerr, st, version)
			failed = true
			continue
		}
		lg := st.Log(b.id)
		hwm, lso := lg.HighWatermark(), lg.LastStableOffset()
		limit := hwm
		switch {
		case from.follower():
			limit = lg.LogEndOffset()
		case committed:
			limit = lso
		}
		partMax := min(max(int(fp.req.PartitionMaxBytes), 0), left)
		n := 0
		var err error
		switch {
		case fp.diverging != nil:
			// No records: the follower truncates first.
			out.DivergingEpoch = *fp.diverging
		case first || partMax > 0:
			fp.records, n, err = lg.AppendSpans(fp.records, fp.req.FetchOffset, partMax, limit)
		case fp.req.FetchOffset < lg.LogStartOffset() || fp.req.FetchOffset > lg.LogEndOffset():
			// The response is full: no records, but the offset is still checked.
			err = kerr.OffsetOutOfRange
		}
		if err != nil {
			b.failFetchPart(out, kerrOf(err), st, version)
			failed = true
			continue
		}
		if !first && n > partMax {
			// Only the first partition with data may exceed the limits (KIP-74).
			fp.records, n = fp.records[:0], 0
		}
		if n > 0 {
			first = false
			left = max(left-n, 0)
			total += n
		}
		out.ErrorCode = 0
		out.HighWatermark = hwm
		out.LastStableOffset = lso
		out.LogStartOffset = lg.LogStartOffset()
		out.CurrentLeader.LeaderID, out.CurrentLeader.LeaderEpoch = -1, -1
		if committed {
			out.AbortedTransactions = abortedTransactions(lg, fp.req.FetchOffset, fp.records)
		}
	}
	return total, failed
}

// failFetchPart sets a failed partition's answer: the error, -1 for every offset, and for a
// partition led elsewhere the leader (v16+, as Kafka sends it).
func (b *Broker) failFetchPart(out *kmsg.FetchResponseTopicPartition, err *kerr.Error, st *replica.State, version int16) {
	out.ErrorCode = err.Code
	out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
	out.CurrentLeader.LeaderID, out.CurrentLeader.LeaderEpoch = -1, -1
	if version >= 16 && (err == kerr.NotLeaderForPartition || err == kerr.FencedLeaderEpoch) {
		out.CurrentLeader.LeaderID, out.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
	}
}

// kerrOf returns the Kafka error err carries, or UNKNOWN_SERVER_ERROR.
func kerrOf(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

func failedFetch(r *kmsg.FetchRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrFetchResponse()
	resp.ErrorCode = code
	resp.SessionID = r.SessionID
	for _, t := range r.Topics {
		rt := kmsg.FetchResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark = p.Partition, code, -1
			rp.RecordBatches = noRecords
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func fetchScope(c *Cluster, r *kmsg.FetchRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range r.Topics {
		s.nameOrID(t.Topic, t.TopicID)
	}
	for _, t := range r.ForgottenTopics {
		s.nameOrID(t.Topic, t.TopicID)
	}
	return s.result()
}

// abortedTransactions lists the aborted transactions a READ_COMMITTED fetch at offset must skip
// in records, the batches it read, as Kafka bounds them: from the fetch offset to the end of
// the last batch read. No records, no list: an empty one.
func abortedTransactions(lg *log.Partition, offset int64, records [][]byte) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	if len(records) == 0 {
		return noAbortedTransactions
	}
	aborted := lg.AbortedTransactions(offset, endOffset(records[len(records)-1]))
	if len(aborted) == 0 {
		return noAbortedTransactions
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
	for i, a := range aborted {
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

// endOffset returns the offset after the last batch of span, whole batches the log stored.
func endOffset(span []byte) int64 {
	var h log.BatchHeader
	for pos := 0; pos+log.HeaderSize <= len(span); {
		h, _ = log.ParseHeader(span[pos:])
		pos += 12 + int(h.BatchLength) // BaseOffset and BatchLength come before what it counts
	}
	return h.LastOffset() + 1
}
