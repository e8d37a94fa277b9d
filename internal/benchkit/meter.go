package benchkit

import (
	"runtime"
	"time"
)

// Meter measures a span of this process, from Start to Stop: wall time, CPU time (SelfCPU), heap
// allocations and, when BrokerPid is set, the CPU time of that process (ProcessCPU). Start
// collects garbage first, so that an earlier phase's garbage is not counted.
type Meter struct {
	BrokerPid int // a broker process to read the CPU time of; 0 for none

	t0      time.Time
	cpu0    time.Duration
	broker0 time.Duration
	mem0    runtime.MemStats
}

// Span is what a Meter measured.
type Span struct {
	Start, End time.Time
	CPU        time.Duration // this process's user+system CPU time
	BrokerCPU  time.Duration // the broker process's; -1 without a BrokerPid
	Mallocs    uint64        // heap allocations
	AllocBytes uint64        // bytes allocated on the heap
}

// Wall is the span's wall time.
func (s Span) Wall() time.Duration { return s.End.Sub(s.Start) }

// Start begins the span.
func (m *Meter) Start() error {
	runtime.GC()
	runtime.ReadMemStats(&m.mem0)
	if m.BrokerPid != 0 {
		var err error
		if m.broker0, _, err = ProcessCPU(m.BrokerPid); err != nil {
			return err
		}
	}
	cpu, err := SelfCPU()
	m.cpu0, m.t0 = cpu, time.Now()
	return err
}

// CPU returns this process's CPU time since Start, for a figure of part of the span.
func (m *Meter) CPU() (time.Duration, error) {
	cpu, err := SelfCPU()
	return cpu - m.cpu0, err
}

// Stop ends the span and returns what it measured.
func (m *Meter) Stop() (Span, error) {
	s := Span{Start: m.t0, End: time.Now(), BrokerCPU: -1}
	cpu, err := SelfCPU()
	if m.BrokerPid != 0 && err == nil {
		var b time.Duration
		b, _, err = ProcessCPU(m.BrokerPid)
		s.BrokerCPU = b - m.broker0
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	s.CPU = cpu - m.cpu0
	s.Mallocs, s.AllocBytes = mem.Mallocs-m.mem0.Mallocs, mem.TotalAlloc-m.mem0.TotalAlloc
	return s, err
}
