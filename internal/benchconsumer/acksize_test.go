package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAckCountRedeliveries counts the acceptances of redelivered records (offsets divisible by
// releaseEvery with Accept) however they are batched, and the bytes of those alone in a batch.
func TestAckCountRedeliveries(t *testing.T) {
	t.Parallel()
	const accept, release = 1, 2
	var c ackCount
	c.releaseEvery = 10
	c.add(0, 9, []int8{release, accept, accept, accept, accept, accept, accept, accept, accept, accept}) // first delivery of 0: released
	c.add(11, 19, []int8{accept})                                                                        // no multiple of 10
	c.add(0, 0, []int8{accept})                                                                          // 0 redelivered alone: 19 bytes
	c.add(10, 12, []int8{accept})                                                                        // 10 redelivered with 11 and 12
	c.add(20, 31, []int8{accept, accept, accept, accept, accept, accept, accept, accept, accept, accept, release, accept})
	assert.EqualValues(t, 3, c.redelAcks.Load(), "0, 10 and 20; 30 was released")
	assert.EqualValues(t, 19, c.redelBytes.Load(), "the batch of 0 alone: two offsets, the length, one type, the tag buffer")
	assert.EqualValues(t, 5, c.batches.Load())

	// Bounds no client sends are counted as batches, and nothing more, without a long walk.
	c.add(-20, -10, []int8{accept})
	c.add(40, 30, []int8{accept})
	c.add(0, math.MaxInt64, []int8{accept, accept})
	assert.EqualValues(t, 4, c.redelAcks.Load(), "offset 0 of the last batch; -20 and -10 are no offsets")
	c.add(10, math.MaxInt64, []int8{accept})
	assert.EqualValues(t, 4+math.MaxInt64/10, c.redelAcks.Load(), "every multiple of 10 from 10 on, counted without walking")
}
