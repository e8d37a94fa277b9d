package errors_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/errors"
)

func TestDeadLetter(t *testing.T) {
	t.Parallel()
	poison := errors.New("poison")
	err := errors.DeadLetter(poison)
	assert.EqualError(t, err, "poison")
	assert.ErrorIs(t, err, poison)
	assert.ErrorIs(t, err, errors.ErrDeadLetter)
	assert.NotErrorIs(t, err, errors.ErrReject)

	err = errors.DeadLetter(nil)
	assert.EqualError(t, err, "record sent to the dead-letter topic by the handler")
	assert.ErrorIs(t, err, errors.ErrDeadLetter)
	assert.NotErrorIs(t, poison, errors.ErrDeadLetter)

	var pe *errors.PanicError
	assert.ErrorAs(t, errors.DeadLetter(&errors.PanicError{Value: 1}), &pe)
}

func TestDeadLetterError(t *testing.T) {
	t.Parallel()
	err := error(&errors.DeadLetterError{DeadLetterTopic: "orders.dlq", Topic: "orders", Partition: 3, Offset: 42, Err: kerr.TopicAuthorizationFailed})
	assert.EqualError(t, err, "dead-lettering orders-3@42 to orders.dlq: "+kerr.TopicAuthorizationFailed.Error())
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	var de *errors.DeadLetterError
	assert.ErrorAs(t, err, &de)
	assert.Equal(t, "orders.dlq", de.DeadLetterTopic)

	err = &errors.DeadLetterError{DeadLetterTopic: "d", Topic: "t", Err: context.Canceled}
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, &errors.DeadLetterError{DeadLetterTopic: "d", Topic: "t"}, "dead-lettering t-0@0 to d: unknown error")

	err = &errors.DeadLetterError{DeadLetterTopic: "d", Topic: "t", Offset: 7, Copied: true, Err: errors.ErrCannotAcknowledge}
	assert.EqualError(t, err, "dead-lettering t-0@7 to d: copied, but not accepted: The record cannot be acknowledged.")
	assert.ErrorIs(t, err, errors.ErrCannotAcknowledge)
}
