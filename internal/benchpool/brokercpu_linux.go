package main

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// brokerCPU returns the CPU time, user plus system, every thread of process pid has used so
// far, from the process's CPU-time clock (the clock id clock_getcpuclockid(3) makes:
// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)), in nanoseconds.
func brokerCPU(pid int) (time.Duration, error) {
	clock := (^int32(pid))<<3 | 2
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("reading the CPU clock of process %d: %w", pid, errno)
	}
	return time.Duration(ts.Nano()), nil
}
