//go:build !linux

package main

import (
	"errors"
	"time"
)

func brokerCPU(int) (time.Duration, error) {
	return 0, errors.New("reading another process's CPU time needs Linux")
}
