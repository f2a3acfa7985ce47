#!/usr/bin/env bash
# Throughput of bloomproxy's CF.ADD / CF.EXISTS against its BF.ADD / BF.EXISTS, all through the
# same proxy in front of one redis-server, in interleaved rounds (the issue's bar: each CF command
# at least 0.5x its BF counterpart, c50 P16). See bench/sketches.md.
#
# Usage: bench/cf.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds, ratios also per round
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   CLIENTS, PIPELINE   redis-benchmark -c / -P (default 50, 16)
#   N            requests per run (default 500000)
#   CAPACITY     the filters' capacity (default 20000000: the cuckoo filter's first sub-filter is
#                one data key of 32 MiB, on the proxy's fast paths, which take sub-filters of one
#                data key, at most bf-max-shard-bytes; see bench/sketches.md)
#   RUN_TIMEOUT  seconds before one run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"   # ROUNDS, QUICK
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
N="${N:-500000}"
CAPACITY="${CAPACITY:-20000000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
require_positive_ints CLIENTS PIPELINE N CAPACITY RUN_TIMEOUT
((QUICK)) && N=$(((N + 9) / 10))
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

results_files cf   # STAMP, CSV, MD
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
rcli() { redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }

BF_KEY=bfk CF_KEY=cfk
got="$(rcli BF.RESERVE "$BF_KEY" 0.01 "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY 0.01 $CAPACITY: $got"
got="$(rcli CF.RESERVE "$CF_KEY" "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "CF.RESERVE $CF_KEY $CAPACITY: $got"
log "reserved $BF_KEY (BF, 1%, $CAPACITY) and $CF_KEY (CF, $CAPACITY: $(rcli CF.DEBUG "$CF_KEY"))"

COMMANDS=("BF.ADD $BF_KEY" "CF.ADD $CF_KEY" "BF.EXISTS $BF_KEY" "CF.EXISTS $CF_KEY")
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
  # Alternate the order, so that neither family always runs on a warmer machine.
  order=("${COMMANDS[@]}")
  ((r % 2)) || order=("${COMMANDS[1]}" "${COMMANDS[0]}" "${COMMANDS[3]}" "${COMMANDS[2]}")
  for c in "${order[@]}"; do
    # shellcheck disable=SC2086  # the command's words
    redis_bench_run "$r" "${c%% *}" proxy "$N" -r 100000000 $c __rand_int__
  done
done

STATE="$(rcli CF.INFO "$CF_KEY" | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"
rounds_report "$CSV" "$STATE" >"$MD" <<'EOF'
print("| command | median req/s | runs (req/s) | median p50 ms |")
print("|---|---:|---|---:|")
for test in tests:
    k = (test, "proxy")
    runs = " / ".join(f"{x:.0f}" for x in rps[k])
    print(f"| {test} | {med(k):,.0f} | {runs} | {statistics.median(p50[k]):.3f} |")
print()
print("CF against BF through the same proxy (target >= 0.5):")
print()
print("| ratio | of the medians | median of per-round |")
print("|---|---:|---:|")
for cf, bf in (("CF.ADD", "BF.ADD"), ("CF.EXISTS", "BF.EXISTS")):
    a, b = med((cf, "proxy")), med((bf, "proxy"))
    per = [by_round[(cf, "proxy")][r] / by_round[(bf, "proxy")][r]
           for r in by_round[(cf, "proxy")] if by_round[(bf, "proxy")].get(r)]
    print(f"| {cf} / {bf} | {ratio(a, b)} | {statistics.median(per):.2f} |" if per else
          f"| {cf} / {bf} | {ratio(a, b)} | |")
load_summary()
print()
print(f"{sys.argv[3]}")
EOF
cat "$MD"
finish_runs
