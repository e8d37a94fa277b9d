package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

func init() {
	register(26, 0, 5, (*Broker).handleEndTxn, failedEndTxn, noScope)
}

// handleEndTxn commits or aborts a transaction (txn.Coordinator.EndTxn). v5 is a TV2 client's:
// the epoch is bumped and the response carries the producer id and epoch to go on with (-1 and
// -1 with an error). An empty transactional id is INVALID_REQUEST; one this broker does not
// coordinate NOT_COORDINATOR.
func (b *Broker) handleEndTxn(cn *conn, req *kmsg.EndTxnRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	v := txn.V0
	if req.Version >= 5 {
		v = txn.V2
	}
	var err error
	switch {
	case !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		err = kerr.TransactionalIDAuthorizationFailed
	case req.TransactionalID == "":
		err = kerr.InvalidRequest
	case c.txnCoordinatorFor(req.TransactionalID) != b.id:
		err = kerr.NotCoordinator
	default:
		resp.ProducerID, resp.ProducerEpoch, err = c.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, v)
	}
	resp.ErrorCode = codeOf(err)
	return resp
}

func failedEndTxn(req *kmsg.EndTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp
}
