package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

func init() {
	register(25, 0, 4, (*Broker).handleAddOffsetsToTxn, failedAddOffsetsToTxn, addOffsetsToTxnScope)
}

// handleAddOffsetsToTxn adds a group to a transaction (txn.Coordinator.AddOffsets), so that
// its TxnOffsetCommits are committed or dropped with the transaction. An empty transactional
// id is INVALID_REQUEST; one this broker does not coordinate NOT_COORDINATOR.
func (b *Broker) handleAddOffsetsToTxn(cn *conn, req *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	var err error
	switch {
	case !cn.authorize(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		err = kerr.TransactionalIDAuthorizationFailed
	case !cn.authorizeGroup(acl.OpRead, req.Group):
		err = kerr.GroupAuthorizationFailed
	case req.TransactionalID == "":
		err = kerr.InvalidRequest
	case c.txnCoordinatorFor(req.TransactionalID) != b.id:
		err = kerr.NotCoordinator
	default:
		err = c.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, txn.V0)
	}
	resp.ErrorCode = codeOf(err)
	return resp
}

func failedAddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.ErrorCode = code
	return resp
}

func addOffsetsToTxnScope(_ *Cluster, req *kmsg.AddOffsetsToTxnRequest) (topics, groups []string) {
	return nil, []string{req.Group}
}
