// Package benchkit is what the benchmark harnesses in internal/ share, so that each of them
// keeps only its scenario code:
//
//   - CPU clocks: SelfCPU (getrusage of this process) and ProcessCPU (any process's CPU-time
//     clock, in nanoseconds, Linux only), and Meter, which measures a span of this process
//     (wall time, CPU, allocations) and, optionally, of a broker process;
//   - repeated runs: Median, MedianBy and Percentile;
//   - broker programs: BrokerPackages, Programs (build each program once), StartBroker (its own
//     process, its output prefixed on stderr with -v) and StopBroker;
//   - flags: Ints, Brokers (-brokers-to-run), StartCPUProfile (-cpuprofile-dir);
//   - machine facts and formatting: CPUModel, WriteMachine, Thousands, YesNo, FirstLine;
//   - topics and records: CreateTopic, ProduceRoundRobin and ProduceValues.
//
// It replaces internal/benchcmd, which held the flag type, the machine facts and the number
// formatting only.
package benchkit
