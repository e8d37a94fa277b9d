//go:build !unix

package main

import (
	"errors"
	"time"
)

func selfCPU() (time.Duration, error) {
	return 0, errors.New("measuring CPU time needs getrusage, which this system lacks")
}
