package server

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/txn"
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

// handleInitProducerID answers InitProducerId v0-5. Without a transactional id it is an
// idempotent producer's: a fresh producer id with epoch 0, as Kafka's coordinator gives. That
// includes KIP-360 requests that name the producer's current id and epoch (v3+): Kafka bumps
// the epoch of transactional producers only, and gives an idempotent producer a new id, which
// resets its sequences just as a bump would. With a transactional id it goes to the
// transaction coordinator (txn.Coordinator.InitProducerID: epoch bumps, fencing, KIP-360
// recovery, INVALID_TRANSACTION_TIMEOUT), on the broker that coordinates the id
// (NOT_COORDINATOR on the others).
//
// Errors: a ProducerID without a ProducerEpoch or the reverse is INVALID_REQUEST, and so is an
// empty transactional id, as with Kafka. Error responses carry producer id -1 and epoch -1.
func (b *Broker) handleInitProducerID(cn *conn, req *kmsg.InitProducerIDRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case req.TransactionalID == nil && !cn.mayWriteIdempotently():
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil && !c.txns.ValidTimeout(req.TransactionTimeoutMillis):
		// Checked before the coordinator, as Kafka's TransactionCoordinator does.
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
	case req.TransactionalID != nil && c.txnCoordinatorFor(*req.TransactionalID) != b.id:
		resp.ErrorCode = kerr.NotCoordinator.Code
	case req.TransactionalID != nil:
		var expected *txn.ProducerIDAndEpoch
		if req.ProducerID != -1 {
			expected = &txn.ProducerIDAndEpoch{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
		}
		var err error
		resp.ProducerID, resp.ProducerEpoch, err = c.txns.InitProducerID(*req.TransactionalID, req.TransactionTimeoutMillis, expected)
		resp.ErrorCode = codeOf(err)
	default:
		resp.ProducerID, resp.ProducerEpoch = c.producerIDs.allocate(), 0
	}
	return resp
}

func failedInitProducerID(_ *kmsg.InitProducerIDRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp
}
