package main

import (
	"math/rand/v2"
)

// The records' values: text that compresses about as well as a log line or a small JSON
// document, so that lz4 and zstd have something to do (a value of one repeated byte would
// compress to almost nothing and make decompression free). Every value is words of 3 to 8
// lowercase letters from a vocabulary of 512, chosen at random, separated by spaces, cut to
// the value's size. The random source is seeded, so that every run produces the same bytes.

const vocabularySize = 512

// valueMaker makes the values of one run.
type valueMaker struct {
	rng   *rand.Rand
	words [][]byte
	size  int
}

func newValueMaker(size int) *valueMaker {
	v := &valueMaker{rng: rand.New(rand.NewPCG(1, 2)), size: size}
	v.words = make([][]byte, vocabularySize)
	for i := range v.words {
		w := make([]byte, 3+v.rng.IntN(6))
		for j := range w {
			w[j] = byte('a' + v.rng.IntN(26))
		}
		v.words[i] = w
	}
	return v
}

// next returns a new value of the maker's size.
func (v *valueMaker) next() []byte {
	b := make([]byte, 0, v.size+9)
	for len(b) < v.size {
		b = append(b, v.words[v.rng.IntN(len(v.words))]...)
		b = append(b, ' ')
	}
	return b[:v.size]
}
