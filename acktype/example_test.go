package acktype_test

import (
	"fmt"

	"github.com/kshare/kshare/acktype"
)

func ExampleAccumulator() {
	var acc acktype.Accumulator
	for offset := int64(0); offset < 5; offset++ {
		acc.Add(offset, acktype.Accept)
	}
	acc.Add(2, acktype.Release) // replaces the Accept of offset 2
	acc.Add(9, acktype.Reject)

	for _, b := range acc.Take() {
		fmt.Println(b.FirstOffset, b.LastOffset, b.Types, b.Wire())
	}
	// Output:
	// 0 4 [accept accept release accept accept] [1 1 2 1 1]
	// 9 9 [reject] [3]
}

func ExampleAppendBatches() {
	var acks []acktype.Ack
	acks = append(acks, acktype.Ack{Offset: 0, Type: acktype.Release})
	for offset := int64(1); offset <= 12; offset++ {
		acks = append(acks, acktype.Ack{Offset: offset, Type: acktype.Accept})
	}
	acks = append(acks, acktype.Ack{Offset: 13, Type: acktype.Gap})

	// The 12 accepts are more than MaxSameTypeInMixedBatch: they become a batch of their own.
	for _, b := range acktype.AppendBatches(nil, acks) {
		fmt.Println(b.FirstOffset, b.LastOffset, b.Types)
	}
	// Output:
	// 0 0 [release]
	// 1 12 [accept]
	// 13 13 [gap]
}

func ExampleParse() {
	t, err := acktype.Parse("RENEW")
	fmt.Println(t, int8(t), t.Final(), err)

	_, err = acktype.FromID(7)
	fmt.Println(err)
	// Output:
	// renew 4 false <nil>
	// Unknown acknowledge type id: 7
}
