package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

// measurement is what one run of one workload against one broker gave.
type measurement struct {
	records                      int
	produce, consume             time.Duration // wall time the client saw for each phase
	brokerProduce, brokerConsume time.Duration // broker CPU time in each phase
	brokerBoth                   time.Duration // their sum (a median of sums, in a median)
	client                       time.Duration // this process's CPU time in both phases
	brokerUser, brokerSys        time.Duration // broker CPU time from exec to exit, for reference
}

func (m measurement) produceRate() float64 { return float64(m.records) / m.produce.Seconds() }
func (m measurement) consumeRate() float64 { return float64(m.records) / m.consume.Seconds() }

// perRecord returns d per record, in µs.
func (m measurement) perRecord(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(m.records)
}

func (m measurement) String() string {
	return fmt.Sprintf("produce %v (%.0f rec/s), consume %v (%.0f rec/s), broker CPU %v + %v = %.3f µs/rec (whole process: user %v, system %v), client CPU %.3f µs/rec",
		m.produce.Round(time.Millisecond), m.produceRate(), m.consume.Round(time.Millisecond), m.consumeRate(),
		m.brokerProduce.Round(time.Millisecond), m.brokerConsume.Round(time.Millisecond), m.perRecord(m.brokerBoth),
		m.brokerUser.Round(time.Millisecond), m.brokerSys.Round(time.Millisecond), m.perRecord(m.client))
}

// median returns, field by field, the median of ms (the lower middle one for an even count).
func median(ms []measurement) measurement {
	pick := func(f func(measurement) time.Duration) time.Duration { return benchkit.MedianOf(ms, f) }
	return measurement{
		records:       ms[0].records,
		produce:       pick(func(m measurement) time.Duration { return m.produce }),
		consume:       pick(func(m measurement) time.Duration { return m.consume }),
		brokerProduce: pick(func(m measurement) time.Duration { return m.brokerProduce }),
		brokerConsume: pick(func(m measurement) time.Duration { return m.brokerConsume }),
		brokerBoth:    pick(func(m measurement) time.Duration { return m.brokerBoth }),
		client:        pick(func(m measurement) time.Duration { return m.client }),
		brokerUser:    pick(func(m measurement) time.Duration { return m.brokerUser }),
		brokerSys:     pick(func(m measurement) time.Duration { return m.brokerSys }),
	}
}

// row is one row of a report table: a broker's median measurement of a workload.
type row[M any] struct {
	broker string
	w      workload
	m      M
}

// result is a row of the plain table.
type result = row[measurement]

// printReport writes the environment, then, for the plain workload, one row per broker and
// workload and the testbroker/kfake ratios where both brokers ran.
func printReport(out io.Writer, c *config, method string, results []result) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }

	benchkit.WriteMachine(out)
	p("- Broker CPU: user+system time of the broker process, all threads, read from its %s just before producing, between the phases and just after consuming\n", method)
	p("- Client: franz-go kgo in the harness process; %d broker(s) per cluster (the replication workload starts its own), idempotent producer, linger %v, compression %s, %d run(s) per row (median)\n",
		c.clusterBrokers, c.client.linger, c.client.codecName, c.runs)
	if len(c.brokerConfigs) > 0 {
		p("- Broker configs: %s\n", strings.Join(c.brokerConfigs, ", "))
	}
	if len(results) == 0 {
		return
	}
	p("\n")

	p("| broker | record | partitions | records | produce rec/s | consume rec/s | broker CPU µs/rec | produce µs/rec | consume µs/rec | client CPU µs/rec |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		m := r.m
		p("| %s | %s | %d | %d | %s | %s | %.3f | %.3f | %.3f | %.2f |\n",
			r.broker, sizeName(r.w.size), r.w.partitions, r.w.records,
			benchkit.Thousands(m.produceRate()), benchkit.Thousands(m.consumeRate()),
			m.perRecord(m.brokerBoth), m.perRecord(m.brokerProduce), m.perRecord(m.brokerConsume), m.perRecord(m.client))
	}

	var cmp []string
	for _, name := range c.brokers {
		if name == "kfake" {
			continue
		}
		versusKfake(results, name, func(tb, kf result) {
			cpu := tb.m.perRecord(tb.m.brokerBoth) / kf.m.perRecord(kf.m.brokerBoth)
			prod := tb.m.produceRate() / kf.m.produceRate()
			cons := tb.m.consumeRate() / kf.m.consumeRate()
			cmp = append(cmp, fmt.Sprintf("| %s | %s | %d | %.2f | %.2f | %.2f | %s |", tb.broker,
				sizeName(tb.w.size), tb.w.partitions, cpu, prod, cons, benchkit.YesNo(cpu <= plainGoal && prod >= 1 && cons >= 1)))
		})
	}
	if len(cmp) > 0 {
		p("\nGoal: at most %.1fx kfake's broker CPU per record, with the client's records/s no lower.\n\n", plainGoal)
		p("| broker | record | partitions | broker CPU broker/kfake | produce rec/s broker/kfake | consume rec/s broker/kfake | goal met |\n")
		p("|---|---|---:|---:|---:|---:|---|\n")
		p("%s\n", strings.Join(cmp, "\n"))
	}
}

// plainGoal is issue 21's bound on the plain workload's broker CPU per record against kfake's.
const plainGoal = 0.4

// versusKfake calls fn with each row of broker and the kfake row of the same workload.
func versusKfake[M any](rows []row[M], broker string, fn func(tb, kf row[M])) {
	for _, tb := range rows {
		if tb.broker != broker {
			continue
		}
		for _, kf := range rows {
			if kf.broker == "kfake" && kf.w == tb.w {
				fn(tb, kf)
			}
		}
	}
}

// printFailures lists what was not measured, and why.
func printFailures(out io.Writer, failures []string) {
	if len(failures) == 0 {
		return
	}
	fmt.Fprintf(out, "\nNot measured:\n")
	for _, f := range failures {
		fmt.Fprintf(out, "- %s\n", f)
	}
}
