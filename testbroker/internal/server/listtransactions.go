package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/txn"
)

func init() {
	register(66, 0, 2, (*Broker).handleListTransactions, failedListTransactions, noScope)
}

// handleListTransactions lists the transactions this broker coordinates, as each Kafka broker
// lists those of its __transaction_state partitions (admin clients ask every broker), filtered
// by state, producer id, duration (v1+: running longer than the filter) and transactional id
// pattern (v2+: an RE2 expression the whole id must match; one that does not compile is
// INVALID_REQUEST). State filters that name no state come back in UnknownStateFilters.
func (b *Broker) handleListTransactions(cn *conn, req *kmsg.ListTransactionsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{
		States:        req.StateFilters,
		ProducerIDs:   req.ProducerIDFilters,
		MinDurationMs: -1,
		Coordinates:   func(id string) bool { return c.txnCoordinatorFor(id) == b.id },
	}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	if req.Version >= 2 {
		f.IDPattern = req.TransactionalIDPattern
	}
	list, unknown, err := c.txns.List(f)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	resp.UnknownStateFilters = unknown
	for _, l := range list {
		if !cn.authorize(acl.OpDescribe, acl.ResourceTransactionalID, l.TransactionalID) {
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
			TransactionalID: l.TransactionalID, ProducerID: l.ProducerID, TransactionState: l.State.String()})
	}
	return resp
}

func failedListTransactions(req *kmsg.ListTransactionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	resp.ErrorCode = code
	return resp
}
