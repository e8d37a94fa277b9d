package errors

import stderrors "errors"

// Conditions the consumer reports. Where Kafka's Java client reports the same condition, the
// message is Kafka's.
var (
	// ErrUnsupportedAcknowledgeType: the partition's leader does not support the acknowledge type
	// (Renew needs Kafka 4.2: ShareFetch and ShareAcknowledge v2). Nothing was sent.
	ErrUnsupportedAcknowledgeType = stderrors.New("acknowledge type not supported by the partition leader")

	// ErrInvalidAcknowledgeType: shareconsumer's Acknowledge or AcknowledgeOffset was given a type
	// the application may not use: anything but acktype.Accept, Release, Reject and Renew
	// (acktype.Gap is the consumer's own).
	ErrInvalidAcknowledgeType = stderrors.New("not an acknowledge type the application may use")

	// ErrClosed: the consumer was closed; it cannot be used again.
	ErrClosed = stderrors.New("consumer is closed")

	// ErrWokenUp: Wakeup interrupted a blocking call. The consumer stays usable.
	ErrWokenUp = stderrors.New("consumer woken up by Wakeup")

	// ErrConcurrentPoll: Poll was called while another Poll was running.
	ErrConcurrentPoll = stderrors.New("Poll called while another Poll is running")

	// ErrImplicitMode: a record was acknowledged while the consumer acknowledges implicitly
	// (every record a Poll returned is accepted by the next Poll or commit).
	ErrImplicitMode = stderrors.New("Implicit acknowledgement of delivery is being used.")

	// ErrCannotAcknowledge: the record is not one the consumer is holding: it was not returned by
	// the current Poll, or its acknowledgement was already sent.
	ErrCannotAcknowledge = stderrors.New("The record cannot be acknowledged.")

	// ErrUnacknowledgedRecords: in explicit mode, Poll was called before every record the last
	// Poll returned was acknowledged. Nothing was consumed: acknowledge the records and poll again.
	ErrUnacknowledgedRecords = stderrors.New("All records must be acknowledged in explicit acknowledgement mode.")

	// ErrNotSubscribed: Poll was called with no subscription.
	ErrNotSubscribed = stderrors.New("Consumer is not subscribed to any topics.")

	// ErrProcessRunning: Poll was called while Process runs the consumer's poll loop, or
	// Process was called twice at once.
	ErrProcessRunning = stderrors.New("Process is running the consumer's poll loop")

	// ErrProcessStopped is the cause (context.Cause) of a handler's context that Process
	// cancelled because it was shutting down and the grace period had passed.
	ErrProcessStopped = stderrors.New("Process shut down and the grace period for running handlers passed")

	// ErrReject: a Process handler returned an error for which errors.Is(err, ErrReject) holds:
	// the record is rejected (never delivered again) rather than released.
	ErrReject = stderrors.New("record rejected by the handler")

	// ErrInconsistentGroupType: the group exists but is of another type (a classic or consumer
	// group, say), so it cannot be used as a share group. Kafka has no error code for this: it
	// answers GROUP_ID_NOT_FOUND "Group <id> is not a share group.", and the *FatalError that
	// matches ErrInconsistentGroupType also matches kerr.GroupIDNotFound and keeps that message.
	ErrInconsistentGroupType = stderrors.New("the group exists but is of another type")

	// ErrLockLost is what a lost acquisition lock's *LockLostError matches with errors.Is: the
	// record is no longer this consumer's, and nothing will be acknowledged for it.
	ErrLockLost = stderrors.New("the record's acquisition lock was lost")
)

// Is reports whether any error in err's tree matches target; it is the standard library's
// errors.Is.
func Is(err, target error) bool { return stderrors.Is(err, target) }

// As finds the first error in err's tree that matches target and, if one is found, sets target
// to it and returns true; it is the standard library's errors.As.
func As(err error, target any) bool { return stderrors.As(err, target) }

// New returns an error whose Error method returns text; it is the standard library's errors.New.
func New(text string) error { return stderrors.New(text) }

// Join returns an error that wraps errs, leaving out nils, or nil when every one is nil; it is the
// standard library's errors.Join.
func Join(errs ...error) error { return stderrors.Join(errs...) }

// Unwrap returns the result of calling err's Unwrap method, or nil when err has none or it
// returns a list; it is the standard library's errors.Unwrap.
func Unwrap(err error) error { return stderrors.Unwrap(err) }
