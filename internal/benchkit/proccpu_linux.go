package benchkit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The methods ProcessCPU names, for a report's description of its CPU figures.
const (
	MethodCPUClock = "process CPU clock (ns)"
	MethodProcStat = "/proc/<pid>/stat utime+stime (10 ms ticks)"
)

// ProcessCPU returns the CPU time, user plus system, that every thread of process pid has used
// so far, dead threads included, and how it was read. It reads the process's CPU-time clock
// (what clock_getcpuclockid(3) returns: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in the
// kernel's posix-cpu-timers), which counts nanoseconds. /proc/<pid>/stat counts the same time
// in clock ticks, 10 ms each, too coarse for a broker that spends 30 ms on a quick run; it is
// the fallback only where the clock is refused.
func ProcessCPU(pid int) (time.Duration, string, error) {
	clock := (^int32(pid))<<3 | 2
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0)
	if errno == 0 {
		return time.Duration(ts.Nano()), MethodCPUClock, nil
	}
	d, err := procStatCPU(pid)
	if err != nil {
		return 0, "", fmt.Errorf("clock_gettime: %v; %w", errno, err)
	}
	return d, MethodProcStat, nil
}

// clockTicksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100 on every
// Linux architecture Go supports (getconf CLK_TCK); Go cannot call sysconf(3) without cgo.
const clockTicksPerSecond = 100

// procStatCPU returns utime+stime of process pid from /proc/<pid>/stat, fields 14 and 15.
func procStatCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces and parentheses itself.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, so utime is f[11] and stime f[12]
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime %q or stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicksPerSecond, nil
}
