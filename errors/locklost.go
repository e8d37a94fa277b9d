package errors

import "fmt"

// LockLostReason says why shareconsumer's Process lost a record's acquisition lock.
type LockLostReason uint8

// The reasons a lock is lost.
const (
	// LockRenewRefused: the leader refused the renew with an error other than those below
	// (UNSUPPORTED_VERSION from a leader downgraded in place, an authorization error).
	LockRenewRefused LockLostReason = iota + 1
	// LockInvalidRecordState: the leader answered INVALID_RECORD_STATE: the lock had run out
	// and the record was delivered again, or renewing is disabled for the group
	// (share.renew.acknowledge.enable=false, Kafka 4.3).
	LockInvalidRecordState
	// LockSessionReset: the share session with the leader was lost (the connection dropped,
	// or the broker no longer knew the session). Renews and acknowledgements cannot travel
	// until a new session is open, and those queued for the old one fail, so Process gives
	// the records of that leader up at once rather than let their handlers finish work whose
	// acknowledgement would fail.
	LockSessionReset
	// LockLeaderMoved: the partition's leadership moved; the lock stayed with the old leader.
	LockLeaderMoved
	// LockDeadlinePassed: the lock's deadline passed, by the local estimate, with no renew
	// answered in time (or none possible: a Kafka 4.1 leader, renewal off).
	LockDeadlinePassed
	// LockMaxHoldReached: the record was held for shareconsumer.MaxHold; Process stopped
	// renewing it.
	LockMaxHoldReached
)

var lockLostNames = [...]string{
	LockRenewRefused:       "renew_refused",
	LockInvalidRecordState: "invalid_record_state",
	LockSessionReset:       "session_reset",
	LockLeaderMoved:        "leader_moved",
	LockDeadlinePassed:     "deadline_passed",
	LockMaxHoldReached:     "max_hold_reached",
}

// LockLostReasons lists every reason, in the order shareconsumer.ProcessStats prints them.
var LockLostReasons = []LockLostReason{LockRenewRefused, LockInvalidRecordState, LockSessionReset, LockLeaderMoved, LockDeadlinePassed, LockMaxHoldReached}

// String returns the reason as the stats name it: "renew_refused", "invalid_record_state",
// "session_reset", "leader_moved", "deadline_passed" or "max_hold_reached".
func (r LockLostReason) String() string {
	if int(r) < len(lockLostNames) && lockLostNames[r] != "" {
		return lockLostNames[r]
	}
	return fmt.Sprintf("LockLostReason(%d)", r)
}

// LockLostError is the cause (context.Cause) of a shareconsumer Process handler's context that
// was cancelled because the record's acquisition lock was lost: the record is no longer this
// consumer's and may already be with another one. Nothing is acknowledged for it, whatever the
// handler returns.
//
// errors.Is(err, ErrLockLost) holds, and, when the broker refused a renew, so does errors.Is
// with the kerr code (kerr.InvalidRecordState, say): Err is then the renew's *AckError, which
// keeps Kafka's message.
type LockLostError struct {
	Topic     string
	Partition int32
	Offset    int64
	Reason    LockLostReason
	Err       error // the renew's outcome, when a broker's answer lost the lock; else nil
}

// Error returns, for example, "shareconsumer: acquisition lock of orders-3 offset 17 lost
// (invalid_record_state): ...".
func (e *LockLostError) Error() string {
	s := fmt.Sprintf("shareconsumer: acquisition lock of %s-%d offset %d lost (%s)", e.Topic, e.Partition, e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrLockLost and Err.
func (e *LockLostError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLockLost}
	}
	return []error{ErrLockLost, e.Err}
}
