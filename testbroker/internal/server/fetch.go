package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/log"
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
// partition failed, the fetch waits (Kafka's DelayedFetch): every append (a transaction marker
// included) or high watermark move on one of its partitions makes it read again, so a
// READ_COMMITTED fetch sees the last stable offset move, and it answers as soon as it has
// MinBytes, or with whatever it has once MaxWaitMillis has passed on the cluster clock. A
// leader move of one of its partitions (Cluster.MoveLeader) makes it read again too, so that a
// fetch waiting at the old leader answers NOT_LEADER_OR_FOLLOWER at once. The
// wait's deadline is its only timer on the clock, stopped when data ends the wait early, so
// that a test on the manual clock can see the fetch parked. A closing cluster ends the wait.
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
// request's MinBytes, waits for more as handleFetch describes. A follower's fetch (from is
// its broker id, -1 for a consumer) first records the follower's position at each partition
// (replica.Partition.Fetched) and, with KIP-1166 on, is also answered at once when a
// partition's watermark is ahead of the one the follower sent (complete).
func (b *Broker) readAndWait(req *kmsg.FetchRequest, parts []fetchPart, from fetcher) {
	c := b.c
	maxBytes := min(max(int(req.MaxBytes), 0), maxFetchBytes)
	minBytes := min(int(req.MinBytes), maxBytes)
	committed := req.IsolationLevel == 1

	// A follower's fetch also waits on the topology as it was before anything was read, so
	// that a change made meanwhile (a partition added, a leader moved) is not missed.
	var topology <-chan struct{}
	if from.follower() {
		topology = c.replicas.Topology()
	}
	diverged := from.follower() && b.recordFollower(parts, from)
	n, failed := b.readFetch(parts, maxBytes, committed, req.Version, from)
	if req.MaxWaitMillis <= 0 || len(parts) == 0 || n >= minBytes || failed || diverged || from.complete(parts) {
		return
	}

	expired := make(chan struct{})
	timer := c.clock.AfterFunc(time.Duration(req.MaxWaitMillis)*time.Millisecond, func() { close(expired) })
	w := replica.NewWaiter(len(parts), expired, c.closed, from.hangup, topology)
	for {
		// Ask for the wake-ups before reading, so that an append or a leader move between the
		// read and the wait is not missed.
		for i := range parts {
			st := parts[i].p.State()
			w.Set(i, b.notify(st), st.Moved())
		}
		n, failed = b.readFetch(parts, maxBytes, committed, req.Version, from)
		if n >= minBytes || failed || from.complete(parts) {
			timer.Stop()
			return
		}
		switch w.Wait() {
		case replica.WaitExpired:
			b.readFetch(parts, maxBytes, committed, req.Version, from)
			return
		case replica.WaitClosed:
			timer.Stop()
			return
		}
		if from.follower() && topologyChanged(topology) {
			// The follower's fetcher has partitions to add or drop: answer, so it asks again.
			timer.Stop()
			b.readFetch(parts, maxBytes, committed, req.Version, from)
			return
		}
	}
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

func topologyChanged(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
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

// complete reports whether a follower's fetch is answered at once under KIP-1166: some
// partition's high watermark is above the one the follower sent (-1: unknown; the default
// of versions before 18, MaxInt64, is never below). Kafka's KRaft leader applies this rule to
// its metadata log (KafkaRaftClient.handleFetchRequest); package replica applies it to every
// partition.
func (f fetcher) complete(parts []fetchPart) bool {
	if !f.follower() || !f.kip1166 {
		return false
	}
	for i := range parts {
		if fp := &parts[i]; fp.out.ErrorCode == 0 && replica.BehindOnHighWatermark(fp.req.HighWatermark, fp.out.HighWatermark) {
			return true
		}
	}
	return false
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// notify returns the wake-up of this broker's replica in st, or, when the broker holds none
// (a reassignment took it away), a closed channel: the next read answers the error.
func (b *Broker) notify(st *replica.State) <-chan struct{} {
	if lg := st.Log(b.id); lg != nil {
		return lg.Notify()
	}
	return closedChan
}

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
		var t *Topic
		unknownTopic := kerr.UnknownTopicOrPartition
		if req.Version >= 13 {
			t, unknownTopic = c.topicByID(rt.TopicID), kerr.UnknownTopicID
		} else {
			t = c.topic(rt.Topic)
		}
		for j := range rt.Partitions {
			fp := fetchPart{req: &rt.Partitions[j], topic: i}
			if t == nil {
				fp.err = unknownTopic
			} else if fp.p = c.partition(t, fp.req.Partition); fp.p == nil {
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
