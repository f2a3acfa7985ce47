#!/usr/bin/env bash
# Throughput of windowed Bloom filters (docs/windowed-filters.md) against plain ones, through the
# same proxy in front of one redis-server, in interleaved rounds: BF.ADD on a windowed filter vs
# BF.ADD on a plain one, and BF.EXISTS on a windowed filter with its g slots filled vs BF.EXISTS
# on a plain one (the issue's bars: windowed BF.ADD >= 0.9x plain, windowed BF.EXISTS with g = 3
# >= 0.6x plain, c50 P16). BF.ADD also runs on a plain filter of one slot's size (capacity
# C/(g-1) at error E/g: a slot's bits per item and hashes), which shows what the windowing itself
# costs apart from a slot's tighter error. See bench/sketches.md.
#
# Usage: bench/window.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds, ratios also per round
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   CLIENTS, PIPELINE   redis-benchmark -c / -P (default 50, 16)
#   N            requests per run (default 500000)
#   CAPACITY     both filters' capacity (default 20000000; per window for the windowed one)
#   WINDOW_MS, SLOTS   the windowed filter's window and slots (default 3600000 and 3)
#   PREFILL      items put in each filter before the rounds (default 1000000; the windowed
#                filter's spread over its g slots with BF.INSERT ... TTL, so lookups read g
#                filled slots)
#   DRY_RUN      1: the "windowed" filter is a plain one too (checks the script's plumbing on a
#                proxy without windowed filters; the ratios are then ~1)
#   RUN_TIMEOUT  seconds before one run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
#
# Exits 1 when the setup fails (a server, a reservation, the prefill) or a run fails (an error
# reply), never because of a ratio: the table says whether each bar is met.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"   # ROUNDS, QUICK
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
N="${N:-500000}"
CAPACITY="${CAPACITY:-20000000}"
WINDOW_MS="${WINDOW_MS:-3600000}"
SLOTS="${SLOTS:-3}"
PREFILL="${PREFILL:-1000000}"
DRY_RUN="${DRY_RUN:-0}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
require_positive_ints CLIENTS PIPELINE N CAPACITY WINDOW_MS SLOTS PREFILL RUN_TIMEOUT
[[ "$DRY_RUN" =~ ^[01]$ ]] || die "DRY_RUN must be 0 or 1"
((SLOTS >= 2)) || die "SLOTS must be at least 2"
if ((QUICK)); then N=$(((N + 9) / 10)) PREFILL=$(((PREFILL + 9) / 10)); fi
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

results_files window   # STAMP, CSV, MD
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
rcli() { redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }

PLAIN_KEY=bfk WIN_KEY=wfk SLOT_KEY=bfs
SLOT_ERROR="$(awk -v g="$SLOTS" 'BEGIN { printf "%.17g", 0.01 / g }')"
SLOT_CAPACITY=$(((CAPACITY + SLOTS - 2) / (SLOTS - 1)))
WINDOW_ARGS=(WINDOW "$WINDOW_MS" SLOTS "$SLOTS")
((DRY_RUN)) && WINDOW_ARGS=()
got="$(rcli BF.RESERVE "$PLAIN_KEY" 0.01 "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $PLAIN_KEY 0.01 $CAPACITY: $got"
got="$(rcli BF.RESERVE "$WIN_KEY" 0.01 "$CAPACITY" "${WINDOW_ARGS[@]}" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $WIN_KEY 0.01 $CAPACITY ${WINDOW_ARGS[*]}: $got"
if ((!DRY_RUN)); then
  got="$(rcli BF.INFO "$WIN_KEY" | tr -d '\r' | paste -sd' ')"
  [[ "$got" == *"Window $WINDOW_MS Slots $SLOTS"* ]] \
    || die "$WIN_KEY is not a windowed filter (BF.INFO: $got); DRY_RUN=1 checks the script alone"
fi
got="$(rcli BF.RESERVE "$SLOT_KEY" "$SLOT_ERROR" "$SLOT_CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $SLOT_KEY $SLOT_ERROR $SLOT_CAPACITY: $got"
log "reserved $SLOT_KEY ($SLOT_ERROR, $SLOT_CAPACITY), $PLAIN_KEY (0.01, $CAPACITY) and $WIN_KEY (0.01, $CAPACITY${WINDOW_ARGS[*]:+, ${WINDOW_ARGS[*]}})"

# bench_quiet N COMMAND...: one unrecorded redis-benchmark run through the proxy; dies if it fails.
bench_quiet() {
  local n="$1" err="$BENCH_TMP/quiet.err"
  shift
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 \
    -p "$PROXY_PORT" -q -n "$n" -c "$CLIENTS" -P "$PIPELINE" -r 100000000 "$@" \
    >"$BENCH_TMP/quiet.out" 2>"$err" || { _show_log "$err"; die "redis-benchmark $* failed"; }
  ! grep -qiE '^(error|err )|error from server' "$err" "$BENCH_TMP/quiet.out" \
    || { _show_log "$BENCH_TMP/quiet.out"; die "redis-benchmark $*: error replies"; }
}

# Prefill: PREFILL random items in each filter; the windowed filter's spread over its g slots
# with lifetimes W, W - s, ..., and 1 ms (an item of lifetime L goes to the slot of now + L).
log "prefill: $PREFILL items in each filter"
bench_quiet "$PREFILL" BF.ADD "$PLAIN_KEY" __rand_int__
bench_quiet $(((PREFILL + SLOTS - 1) / SLOTS)) BF.ADD "$SLOT_KEY" __rand_int__
if ((DRY_RUN)); then
  bench_quiet "$PREFILL" BF.ADD "$WIN_KEY" __rand_int__
else
  for ((j = 0; j < SLOTS; j++)); do
    ttl=$((WINDOW_MS - j * WINDOW_MS / (SLOTS - 1)))
    ((ttl >= 1)) || ttl=1
    bench_quiet $(((PREFILL + SLOTS - 1) / SLOTS)) BF.INSERT "$WIN_KEY" TTL "$ttl" ITEMS __rand_int__
  done
fi
log "$WIN_KEY: $(rcli BF.INFO "$WIN_KEY" | tr -d '\r' | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"

COMMANDS=("BF.ADD $PLAIN_KEY" "BF.ADD $WIN_KEY" "BF.EXISTS $PLAIN_KEY" "BF.EXISTS $WIN_KEY"
  "BF.ADD $SLOT_KEY")
TESTS=("BF.ADD plain" "BF.ADD windowed" "BF.EXISTS plain" "BF.EXISTS windowed"
  "BF.ADD plain slot-sized")
# Warm-up: connections, the allocator, and the proxy's cache of the filters' shapes.
for c in "${COMMANDS[@]}"; do
  # shellcheck disable=SC2086  # the command's words
  timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 \
    -p "$PROXY_PORT" -q -n 20000 -c 10 -P 16 -r 100000000 $c __rand_int__ >/dev/null 2>&1 \
    || log "warning: warm-up of $c failed"
done

echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
TOTAL=$((ROUNDS * ${#COMMANDS[@]}))
RUN=0
FAILED=0
declare -A PORT=([proxy]="$PROXY_PORT")
declare -A TARGET_ARGS=()
log "benchmark: $ROUNDS round(s) x ${#COMMANDS[@]} commands, -c $CLIENTS -P $PIPELINE -n $N" \
  "-r 100000000; raw results -> ${CSV#"$REPO_ROOT"/}"
for ((r = 1; r <= ROUNDS; r++)); do
  # Alternate the order, so that neither kind always runs on a warmer machine.
  order=(0 1 4 2 3)
  ((r % 2)) || order=(4 1 0 3 2)
  for i in "${order[@]}"; do
    # shellcheck disable=SC2086  # the command's words
    redis_bench_run "$r" "${TESTS[i]}" proxy "$N" -r 100000000 ${COMMANDS[i]} __rand_int__
  done
done

STATE="$(rcli BF.INFO "$WIN_KEY" | tr -d '\r' | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"
rounds_report "$CSV" "$STATE" "$DRY_RUN" >"$MD" <<'EOF'
print("| command | median req/s | runs (req/s) | median p50 ms |")
print("|---|---:|---|---:|")
for test in tests:
    k = (test, "proxy")
    runs = " / ".join(f"{x:.0f}" for x in rps[k])
    print(f"| {test} | {med(k):,.0f} | {runs} | {statistics.median(p50[k]):.3f} |")
print()
print("Windowed against plain through the same proxy:")
print()
print("| ratio | of the medians | median of per-round | bar | met |")
print("|---|---:|---:|---:|---|")
for cmd, bar in (("BF.ADD", 0.9), ("BF.EXISTS", 0.6)):
    w, p = (f"{cmd} windowed", "proxy"), (f"{cmd} plain", "proxy")
    a, b = med(w), med(p)
    per = [by_round[w][r] / by_round[p][r] for r in by_round[w] if by_round[p].get(r)]
    per_s = f"{statistics.median(per):.2f}" if per else ""
    met = "" if not (a and b) else ("yes" if a / b >= bar else "no")
    print(f"| {cmd} windowed / plain | {ratio(a, b)} | {per_s} | {bar} | {met} |")
w, p = ("BF.ADD windowed", "proxy"), ("BF.ADD plain slot-sized", "proxy")
per = [by_round[w][r] / by_round[p][r] for r in by_round[w] if by_round[p].get(r)]
per_s = f"{statistics.median(per):.2f}" if per else ""
print(f"| BF.ADD windowed / plain of a slot's size | {ratio(med(w), med(p))} | {per_s} | | |")
load_summary()
print()
print(f"windowed filter after the runs: {sys.argv[3]}")
if sys.argv[4] == "1":
    print()
    print("DRY_RUN=1: the 'windowed' filter was a plain one; these ratios only check the script.")
EOF
cat "$MD"
finish_runs
