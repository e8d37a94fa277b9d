//go:build !linux

package main

import (
	"errors"
	"time"
)

// processCPU is only implemented on Linux, where another process's CPU time can be read while it runs.
func processCPU(int) (time.Duration, string, error) {
	return 0, "", errors.New("measuring another process's CPU time needs Linux")
}
