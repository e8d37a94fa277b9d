package server

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(22, 0, 5, (*Broker).handleInitProducerID, failedInitProducerID, noScope)
}

// producerIDs hands out producer ids for the whole cluster: 0, 1, 2, ... in request order, so
// that no two producers of the cluster ever share one, whichever broker they asked.
type producerIDs struct {
	next atomic.Int64
}

// allocate returns a producer id no producer of the cluster has had.
func (p *producerIDs) allocate() int64 { return p.next.Add(1) - 1 }

// errTransactionsUnsupported refuses everything transactional. The test broker has no
// transaction coordinator, so it must fail transactional producers at once and for good rather
// than let them retry. InitProducerId answers with UNSUPPORTED_FOR_MESSAGE_FORMAT, "the broker
// does not support the request": a code every client treats as final, which does not blame the
// client's authorization (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or its use of the transaction
// API (INVALID_TXN_STATE). Produce uses the code of the log package's refusal of transactional
// batches (INVALID_RECORD), so that a transactional producer sees one code whichever of the two
// gives it away; see handleProduce.
var errTransactionsUnsupported = errorf(kerr.UnsupportedForMessageFormat, "testbroker does not implement transactions")

// handleInitProducerID answers InitProducerId v0-5 as Kafka's transaction coordinator does for
// an idempotent producer: every request without a transactional id gets a fresh producer id with
// epoch 0. That includes KIP-360 requests that name the producer's current id and epoch (v3+):
// Kafka bumps the epoch of transactional producers only, and gives an idempotent producer a new
// id, which resets its sequences just as a bump would.
//
// Errors: a ProducerID without a ProducerEpoch or the reverse is INVALID_REQUEST, and so is an
// empty transactional id, as with Kafka; a transactional id is refused with
// errTransactionsUnsupported. Error responses carry producer id -1 and epoch -1.
func (b *Broker) handleInitProducerID(_ *conn, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil:
		resp.ErrorCode = codeOf(errTransactionsUnsupported)
	default:
		resp.ProducerID, resp.ProducerEpoch = b.c.producerIDs.allocate(), 0
	}
	return resp
}

func failedInitProducerID(_ *kmsg.InitProducerIDRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp
}
