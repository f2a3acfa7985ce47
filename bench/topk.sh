#!/usr/bin/env bash
# Throughput of bloomproxy's TOPK.ADD against its BF.ADD, all through the same proxy in front of
# one redis-server, in interleaved rounds: TOPK.ADD of 1 item and of BATCH (100) items per call
# (calls/s and items/s) against BF.ADD of 1 item, c50 P16. See bench/sketches.md.
#
# Usage: bench/topk.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds, ratios also per round
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   CLIENTS, PIPELINE   redis-benchmark -c / -P (default 50, 16)
#   N            requests per single-item run (BF.ADD, TOPK.ADD of 1 item; default 500000)
#   BATCH        items per call of the batched TOPK.ADD run (default 100)
#   BATCH_N      requests per batched run (default N / 20: as many items as the single runs
#                send five times over)
#   TOPK_K, TOPK_WIDTH, TOPK_DEPTH, TOPK_DECAY   the sketch (default 50 2000 7 0.9)
#   CAPACITY     the Bloom filter's capacity (default 20000000, error 0.01)
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
BATCH="${BATCH:-100}"
BATCH_N="${BATCH_N:-$(((N + 19) / 20))}"
TOPK_K="${TOPK_K:-50}"
TOPK_WIDTH="${TOPK_WIDTH:-2000}"
TOPK_DEPTH="${TOPK_DEPTH:-7}"
TOPK_DECAY="${TOPK_DECAY:-0.9}"
CAPACITY="${CAPACITY:-20000000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
require_positive_ints CLIENTS PIPELINE N BATCH BATCH_N TOPK_K TOPK_WIDTH TOPK_DEPTH CAPACITY RUN_TIMEOUT
if ((QUICK)); then N=$(((N + 9) / 10)) BATCH_N=$(((BATCH_N + 9) / 10)); fi
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

results_files topk   # STAMP, CSV, MD
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
rcli() { redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }

BF_KEY=bfk TOPK_KEY=tk
got="$(rcli BF.RESERVE "$BF_KEY" 0.01 "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY 0.01 $CAPACITY: $got"
got="$(rcli TOPK.RESERVE "$TOPK_KEY" "$TOPK_K" "$TOPK_WIDTH" "$TOPK_DEPTH" "$TOPK_DECAY" 2>&1)"
[[ "$got" == OK ]] || die "TOPK.RESERVE $TOPK_KEY $TOPK_K $TOPK_WIDTH $TOPK_DEPTH $TOPK_DECAY: $got"
# A batched call must answer BATCH elements (null or an expelled item), not an error.
mapfile -t check_items < <(seq -f 'check:%g' 1 "$BATCH")
got="$(rcli TOPK.ADD "$TOPK_KEY" "${check_items[@]}" 2>&1)" || true
# (redis-cli without a terminal prints one line per element, an empty one for a null.)
if (($(wc -l <<<"$got") != BATCH)) || grep -qiE '^(\(error\) )?(ERR|WRONGTYPE|TopK)' <<<"$got"; then
  die "TOPK.ADD of $BATCH items through the proxy answered: $(head -3 <<<"$got")"
fi
SKETCH="k $TOPK_K, width $TOPK_WIDTH, depth $TOPK_DEPTH, decay $TOPK_DECAY"
log "reserved $BF_KEY (BF, 1%, $CAPACITY) and $TOPK_KEY (TOPK: $SKETCH)"

BATCH_ITEMS=()
for ((i = 0; i < BATCH; i++)); do BATCH_ITEMS+=(__rand_int__); done
# test name -> requests, command words (each __rand_int__ gets its own random number)
declare -A REQS=([BF.ADD]="$N" [TOPK.ADD]="$N" ["TOPK.ADD x$BATCH"]="$BATCH_N")
declare -A ITEMS=([BF.ADD]=1 [TOPK.ADD]=1 ["TOPK.ADD x$BATCH"]="$BATCH")
declare -A ARGS=([BF.ADD]="BF.ADD $BF_KEY __rand_int__" [TOPK.ADD]="TOPK.ADD $TOPK_KEY __rand_int__"
                 ["TOPK.ADD x$BATCH"]="TOPK.ADD $TOPK_KEY ${BATCH_ITEMS[*]}")
TESTS=(BF.ADD TOPK.ADD "TOPK.ADD x$BATCH")

# Warm-up: connections, the allocator, the proxy's cache of the keys' shapes, the heap filled.
for t in "${TESTS[@]}"; do
  # shellcheck disable=SC2086  # the command's words
  timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 \
    -p "$PROXY_PORT" -q -n $((20000 / ${ITEMS[$t]})) -c 10 -P 16 -r 100000000 ${ARGS[$t]} >/dev/null 2>&1 \
    || log "warning: warm-up of $t failed"
done

echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
TOTAL=$((ROUNDS * ${#TESTS[@]}))
RUN=0
FAILED=0
declare -A PORT=([proxy]="$PROXY_PORT")
declare -A TARGET_ARGS=()
log "benchmark: $ROUNDS round(s) x ${#TESTS[@]} commands, -c $CLIENTS -P $PIPELINE -r 100000000," \
  "-n $N (1 item per call) / $BATCH_N ($BATCH items per call); raw results -> ${CSV#"$REPO_ROOT"/}"
for ((r = 1; r <= ROUNDS; r++)); do
  # Rotate the order, so that no command always runs on a warmer (or busier) machine.
  order=()
  for ((j = 0; j < ${#TESTS[@]}; j++)); do order+=("${TESTS[(j + r - 1) % ${#TESTS[@]}]}"); done
  for t in "${order[@]}"; do
    # shellcheck disable=SC2086  # the command's words
    redis_bench_run "$r" "$t" proxy "${REQS[$t]}" -r 100000000 ${ARGS[$t]}
  done
done

STATE="TOPK.INFO $TOPK_KEY: $(rcli TOPK.INFO "$TOPK_KEY" | paste -d' ' - - | paste -sd',' | sed 's/,/, /g'); sketch $SKETCH; top 3: $(rcli TOPK.LIST "$TOPK_KEY" WITHCOUNT | head -6 | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"
rounds_report "$CSV" "$BATCH" "$STATE" >"$MD" <<'EOF'
batch = int(sys.argv[3])
big = f"TOPK.ADD x{batch}"
def items(test):
    return batch if test == big else 1
print("| command | items per call | median calls/s | median items/s | runs (calls/s) | median p50 ms |")
print("|---|---:|---:|---:|---|---:|")
for test in tests:
    k = (test, "proxy")
    runs = " / ".join(f"{x:.0f}" for x in rps[k])
    print(f"| {test} | {items(test)} | {med(k):,.0f} | {med(k) * items(test):,.0f} | {runs} | "
          f"{statistics.median(p50[k]):.3f} |")
print()
print("TOPK.ADD against BF.ADD through the same proxy (items/s; per round: the runs of one round):")
print()
print("| ratio | of the medians | median of per-round |")
print("|---|---:|---:|")
for test, label in (("TOPK.ADD", "TOPK.ADD (1 item) / BF.ADD"),
                    (big, f"TOPK.ADD ({batch} items per call), items/s / BF.ADD")):
    a, b = med((test, "proxy")), med(("BF.ADD", "proxy"))
    a = a * items(test) if a else a
    per = [by_round[(test, "proxy")][r] * items(test) / by_round[("BF.ADD", "proxy")][r]
           for r in by_round[(test, "proxy")] if by_round[("BF.ADD", "proxy")].get(r)]
    print(f"| {label} | {ratio(a, b)} | {statistics.median(per):.2f} |" if per else
          f"| {label} | {ratio(a, b)} | |")
load_summary()
print()
print(f"{sys.argv[4]}")
EOF
cat "$MD"
finish_runs
