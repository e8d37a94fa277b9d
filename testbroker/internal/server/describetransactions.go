package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(65, 0, 0, (*Broker).handleDescribeTransactions, failedDescribeTransactions, noScope)
}

// handleDescribeTransactions describes transactional ids (txn.Coordinator.Describe): state,
// producer id and epoch, timeout, start time (-1 for none) and partitions, topics in name
// order. An id this broker does not coordinate is NOT_COORDINATOR, an empty one
// INVALID_REQUEST, one no producer initialised TRANSACTIONAL_ID_NOT_FOUND.
func (b *Broker) handleDescribeTransactions(cn *conn, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		var err error
		switch {
		case !cn.authorize(acl.OpDescribe, acl.ResourceTransactionalID, id):
			err = kerr.TransactionalIDAuthorizationFailed
		case id == "":
			err = kerr.InvalidRequest
		case c.txnCoordinatorFor(id) != b.id:
			err = kerr.NotCoordinator
		default:
			d, derr := c.txns.Describe(id)
			if err = derr; err != nil {
				break
			}
			st.State, st.ProducerID, st.ProducerEpoch = d.State.String(), d.ProducerID, d.ProducerEpoch
			st.TimeoutMillis, st.StartTimestamp = d.TimeoutMs, d.StartTimeMs
			for _, tp := range d.Partitions {
				// Partitions of topics the principal may not describe are left out, as Kafka does.
				if !cn.authorizeTopic(acl.OpDescribe, tp.Topic) {
					continue
				}
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
					st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
				}
				last := &st.Topics[len(st.Topics)-1]
				last.Partitions = append(last.Partitions, tp.Partition)
			}
		}
		st.ErrorCode = codeOf(err)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func failedDescribeTransactions(req *kmsg.DescribeTransactionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode = id, code
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
