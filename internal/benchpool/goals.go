package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kshare/kshare/internal/benchkit"
)

// The goals of issue 20, which the goal tables check per broker: "yes" or "no".
const (
	// (a) empty handler: kshare's records/s over the franz-go pool's with as many workers, its
	// client CPU per record over the pool's, and its CPU per record at the largest pool size
	// over that at the smallest.
	goalEmptySpeed = 1.5
	goalEmptyCPU   = 1.0
	goalEmptyScale = 1.3
	// (b) sleeping handler: kshare's records/s over what the handler time allows (the pool
	// without Kafka).
	goalSleepAllowed = 0.95
)

// pairs calls fn for every kshare result with the franz-go result of the same broker and pool
// size.
func pairs(rs []result, fn func(k, f result)) {
	for _, k := range rs {
		if k.client != clientKshare {
			continue
		}
		for _, f := range rs {
			if f.client == clientFranz && f.broker == k.broker && f.scenario.workers == k.scenario.workers {
				fn(k, f)
			}
		}
	}
}

func printEmptyGoals(p printer, rs []result) {
	var cmp []string
	pairs(rs, func(k, f result) {
		speed, cpu := k.rate()/f.rate(), k.cpuPerRecord()/f.cpuPerRecord()
		cmp = append(cmp, fmt.Sprintf("| %s | %d | %s | %.2f | %s | %.2f | %.2f | %s |", k.broker, k.scenario.workers, k.label(),
			speed, benchkit.YesNo(speed >= goalEmptySpeed), k.rateToLast()/f.rateToLast(), cpu, benchkit.YesNo(cpu <= goalEmptyCPU)))
	})
	if len(cmp) > 0 {
		p("\nGoals: kshare at least %.1fx the records/s of the franz-go pool with as many workers (until every acceptance was answered), at no more client CPU per record.\n\n", goalEmptySpeed)
		p("| broker | workers | client | records/s kshare/franz-go | ≥ %.1fx | to the last handler, kshare/franz-go | CPU/rec kshare/franz-go | ≤ 1x |\n", goalEmptySpeed)
		p("|---|---:|---|---:|---|---:|---:|---|\n%s\n", strings.Join(cmp, "\n"))
	}

	// Scale: CPU per record at the largest pool size against the smallest, per broker and client.
	lo, hi := rs[0].scenario.workers, rs[0].scenario.workers
	for _, r := range rs {
		lo, hi = min(lo, r.scenario.workers), max(hi, r.scenario.workers)
	}
	if lo == hi {
		return
	}
	p("\nGoal: kshare's CPU per record with %d workers within %.1fx of that with %d (franz-go's for comparison).\n\n", hi, goalEmptyScale, lo)
	p("| broker | client | CPU µs/rec, %d workers | CPU µs/rec, %d workers | ratio | ≤ %.1fx |\n|---|---|---:|---:|---:|---|\n", lo, hi, goalEmptyScale)
	for _, h := range rs {
		for _, l := range rs {
			if h.scenario.workers != hi || l.scenario.workers != lo || l.broker != h.broker || l.label() != h.label() {
				continue
			}
			ratio := h.cpuPerRecord() / l.cpuPerRecord()
			goal := "-"
			if h.client == clientKshare {
				goal = benchkit.YesNo(ratio <= goalEmptyScale)
			}
			p("| %s | %s | %.2f | %.2f | %.2f | %s |\n", h.broker, h.label(), l.cpuPerRecord(), h.cpuPerRecord(), ratio, goal)
		}
	}
}

func printSleepGoals(p printer, rs []result) {
	p("\nGoal: kshare at least %.0f%% of what the handler time allows (the pool without Kafka on the same broker, in the same run), on records/s until every acceptance was answered; to the last handler for comparison, and franz-go's pool beside it.\n\n", 100*goalSleepAllowed)
	p("| broker | client | records/s | what the handler time allows | %% of it | ≥ %.0f%% | to the last handler, %% of it |\n|---|---|---:|---:|---:|---|---:|\n", 100*goalSleepAllowed)
	for _, r := range rs {
		allowed := allowedRate(rs, r)
		if r.client == clientBaseline || allowed <= 0 {
			continue
		}
		goal := "-"
		if r.client == clientKshare {
			goal = benchkit.YesNo(r.rate() >= goalSleepAllowed*allowed)
		}
		p("| %s | %s | %s | %s | %.1f%% | %s | %.1f%% |\n", r.broker, r.label(), benchkit.Thousands(r.rate()), benchkit.Thousands(allowed),
			100*r.rate()/allowed, goal, 100*r.rateToLast()/allowed)
	}
}

// minRenewGap is the least time between two renew requests to one broker that keeps to one
// request per leader per renew interval: the renew interval is the lock minus Process's margin,
// which is at most half the lock.
func minRenewGap(lock time.Duration) time.Duration { return lock / 2 }

// slowGoals are the goals of the slow scenario met by one run.
type slowGoals struct {
	noRedelivery, noTwice, renewsPaced bool
}

func (r result) slowGoals() slowGoals {
	rs := r.renewStats()
	return slowGoals{
		noRedelivery: r.redelivered == 0,
		noTwice:      r.acceptedTwice == 0,
		renewsPaced:  len(rs.interval) == 0 || rs.interval[0] >= minRenewGap(r.scenario.lock),
	}
}

func printSlowGoals(p printer, rs []result) {
	gap := minRenewGap(rs[0].scenario.lock)
	runs := len(rs[0].runs)
	every := ""
	if runs > 1 {
		every = fmt.Sprintf(" A goal is met when each of the %d runs met it; \"no (k of %d)\" says in how many it was not.", runs, runs)
	}
	p("\nGoals: no redelivery, no record accepted twice, and at most one renew request per partition leader per renew interval, the lock minus Process's margin, which is at most half the lock: no two renew requests to one broker less than %v apart.%s\n\n", gap, every)
	p("| broker | client | 0 redelivered | 0 accepted twice | ≤ 1 renew request per leader per renew interval (gaps ≥ %v) |\n|---|---|---|---|---|\n", gap)
	for _, r := range rs {
		all := r.runs
		if len(all) == 0 {
			all = []result{r}
		}
		cell := func(met func(slowGoals) bool) string {
			failed := 0
			for _, run := range all {
				if !met(run.slowGoals()) {
					failed++
				}
			}
			switch {
			case failed == 0:
				return "yes"
			case len(all) == 1:
				return "no"
			}
			return fmt.Sprintf("no (%d of %d)", failed, len(all))
		}
		paced := cell(func(g slowGoals) bool { return g.renewsPaced })
		if !slices.ContainsFunc(all, func(run result) bool { return run.renewStats().requests > 0 }) {
			paced += " (none sent)"
		}
		p("| %s | %s | %s | %s | %s |\n", r.broker, r.label(),
			cell(func(g slowGoals) bool { return g.noRedelivery }),
			cell(func(g slowGoals) bool { return g.noTwice }), paced)
	}
}
