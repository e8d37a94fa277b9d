package errors_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kshare/kshare/errors"
)

func TestReject(t *testing.T) {
	t.Parallel()
	poison := errors.New("poison")
	err := errors.Reject(poison)
	assert.EqualError(t, err, "poison")
	assert.ErrorIs(t, err, poison)
	assert.ErrorIs(t, err, errors.ErrReject)

	err = errors.Reject(nil)
	assert.EqualError(t, err, "record rejected by the handler")
	assert.ErrorIs(t, err, errors.ErrReject)
	assert.NotErrorIs(t, poison, errors.ErrReject)
}

func TestPanicError(t *testing.T) {
	t.Parallel()
	assert.EqualError(t, &errors.PanicError{Value: "boom", Stack: []byte("goroutine 1")}, "shareconsumer: handler panicked: boom")
	assert.EqualError(t, &errors.PanicError{Value: 42}, "shareconsumer: handler panicked: 42")
}
