#!/usr/bin/env bash
# kgo-suite.sh runs franz-go's own kgo integration suite (the franz-go version in the root go.mod)
# against a 3-broker cluster started as a program, and prints pass/fail per test and the total time.
#
#   testbroker/interop/kgo-suite.sh                      # against testbroker
#   testbroker/interop/kgo-suite.sh -broker kfake        # against franz-go's kfake, for comparison
#   testbroker/interop/kgo-suite.sh -run 'TestGroupETL'  # a subset (go test -run)
#
# Exit status: 0 when every test that ran passed, 1 otherwise.
# The broker is started from a binary built here and killed on exit, whatever the exit path.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
broker=testbroker
run=""
timeout=10m
while [ $# -gt 0 ]; do
  case "$1" in
    -broker) broker="$2"; shift 2 ;;
    -run) run="$2"; shift 2 ;;
    -timeout) timeout="$2"; shift 2 ;;
    -h|-help|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kgo-suite: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$broker" in
  testbroker) pkg=./testbroker/cmd/testbroker ;;
  kfake) pkg=./internal/benchbroker/kfakebroker ;;
  *) echo "kgo-suite: -broker must be testbroker or kfake, not $broker" >&2; exit 2 ;;
esac

if ! command -v go >/dev/null 2>&1; then
  export PATH="$PATH:/usr/local/go/bin"
fi
cd "$root"
# The root module alone, so that the suite is the franz-go version of the root go.mod.
export GOWORK=off
tmp="$(mktemp -d)"
test_pid=""
cleanup() {
  # The suite first (it holds connections), then the broker; both are our own children.
  if [ -n "$test_pid" ]; then kill -- -"$test_pid" 2>/dev/null || true; wait "$test_pid" 2>/dev/null || true; fi
  for pid in "${broker_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

go build -o "$tmp/broker" "$pkg"
go test -c -o "$tmp/kgo.test" github.com/twmb/franz-go/pkg/kgo

# start_broker NAME COUNT ARGS... starts the broker program with ARGS, waits until it reports
# COUNT brokers, and sets seeds to their addresses. Both programs print "broker N listening on
# HOST:PORT" once per broker when it accepts connections.
broker_pids=()
start_broker() {
  local name="$1" count="$2"
  shift 2
  : >"$tmp/$name.out" # exists before the broker, which opens it in the background
  "$tmp/broker" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  local pid=$!
  broker_pids+=("$pid")
  seeds=""
  for _ in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "kgo-suite: $broker ($name) exited at start:" >&2; cat "$tmp/$name.err" >&2; exit 1
    fi
    if [ "$(grep -c ' listening on ' "$tmp/$name.out" || true)" -ge "$count" ]; then
      seeds="$(awk '/ listening on /{print $NF}' "$tmp/$name.out" | paste -sd, -)"
      return
    fi
    sleep 0.05
  done
  echo "kgo-suite: $broker ($name) did not report $count brokers within 10s" >&2; exit 1
}

start_broker broker 3 -brokers 3 -addr 127.0.0.1:0
main_seeds="$seeds"
echo "kgo-suite: $broker on $main_seeds"
# The suite's SASL tests (TestSCRAMAuth, TestSCRAMAuthBadCredentials, TestOAuthAuth) want a
# listener of their own with a SCRAM-SHA-256 user and Kafka's unsecured OAUTHBEARER validator;
# only testbroker's program takes SASL flags.
sasl_env=()
if [ "$broker" = testbroker ]; then
  start_broker sasl 1 -brokers 1 -addr 127.0.0.1:0 -sasl SCRAM-SHA-256,OAUTHBEARER -user kgo:kgo-secret
  echo "kgo-suite: $broker with SASL on $seeds"
  sasl_env=(KGO_TEST_SCRAM_SEEDS="$seeds" KGO_TEST_SCRAM=kgo:kgo-secret:256 KGO_TEST_OAUTH_SEEDS="$seeds")
fi

args=(-test.v -test.count=1 -test.timeout="$timeout")
[ -n "$run" ] && args+=(-test.run="$run")

start=$(date +%s%N)
set +e
# The suite runs in its package directory, as go test would run it; its own process group lets
# cleanup stop it and anything it started.
(cd "$(go list -f '{{.Dir}}' github.com/twmb/franz-go/pkg/kgo)" && \
  exec env KGO_SEEDS="$main_seeds" "${sasl_env[@]}" setsid "$tmp/kgo.test" "${args[@]}") >"$tmp/suite.out" 2>&1 &
test_pid=$!
wait "$test_pid"
status=$?
test_pid=""
set -e
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))

# Top-level results only (subtests are indented).
grep -E '^--- (PASS|FAIL|SKIP): ' "$tmp/suite.out" | awk '{printf "%-5s %s %s\n", $2, $3, $4}' | tr -d ':' >"$tmp/results"
pass=$(grep -c '^PASS' "$tmp/results" || true)
fail=$(grep -c '^FAIL' "$tmp/results" || true)
skip=$(grep -c '^SKIP' "$tmp/results" || true)
cat "$tmp/results"
# A test that panicked or hit the timeout has no --- line: show the tail so the cause is visible.
if [ "$status" -ne 0 ] && [ "$fail" -eq 0 ]; then
  echo "kgo-suite: the suite exited $status without a failing test line; its last output:"
  tail -40 "$tmp/suite.out"
  fail=$((fail + 1))
elif [ "$fail" -gt 0 ]; then
  echo "kgo-suite: output of the failing tests:"
  grep -E -B30 '^--- FAIL' "$tmp/suite.out" | grep -v -E '^(=== |--- PASS|\[)' | head -200
fi
printf 'kgo-suite: against %s in %d.%01ds\n' "$broker" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
printf 'kgo-suite: %d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skip"
[ "$fail" -eq 0 ]
