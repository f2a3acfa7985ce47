#!/usr/bin/env bash
# Where the CPU goes: the CPU time each process spends per request (redis-server, the proxy in
# the middle, redis-benchmark, and the kernel's softirq threads), for the cases of
# bench/round2.sh whose ratios are bound by the machine, direct / through bloomproxy / through
# twemproxy, in interleaved rounds:
#
#   1  GET c50 P1      direct, proxy, twemproxy
#   2  GET c50 P16     direct, proxy, twemproxy
#   3  GET c1 P1       direct, proxy, twemproxy (latency: the machine is mostly idle)
#   4  BF.ADD c50 P16  proxy, floor (BITFIELD 8x SET u1, fixed offsets, straight to Redis)
#   5  BF.ADD c50 P1   proxy, floor
#
# From them it derives each target's ceiling on this machine: the req/s at which the CPUs would
# be full at the measured cost per request, or one single-threaded process would use a whole
# core, whichever comes first; the ratio of two ceilings is what the measured ratio tends to
# when both sides use the machine alike. And, for the issue's targets, the budget: how much CPU
# per request the middle could spend if the target were met with everything else as measured.
#
#   bench/cpu_cost.sh               # 3 rounds, about 2 minutes
#   ROUNDS=5 CASES="1 4" bench/cpu_cost.sh
#
# Environment: ROUNDS (3), CASES (all), N_P1 (200000), N_P16 (1000000), N_SERIAL (30000),
# N_BF (500000), N_BF_P1 (200000), KEYSPACE (100000), DATASIZE (3), RUN_TIMEOUT (300),
# BLOOMPROXY_BIN / BLOOMPROXY_ARGS (lib.sh). CPU times come from /proc (clock ticks: 10 ms),
# redis-benchmark's from the shell's `times`. Output: stdout and bench/results/cpu_cost-*.md,
# raw runs in the .csv.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS="${ROUNDS:-3}" N_P1="${N_P1:-200000}" N_P16="${N_P16:-1000000}"
N_SERIAL="${N_SERIAL:-30000}" N_BF="${N_BF:-500000}" N_BF_P1="${N_BF_P1:-200000}"
KEYSPACE="${KEYSPACE:-100000}" DATASIZE="${DATASIZE:-3}" RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
require_positive_ints ROUNDS N_P1 N_P16 N_SERIAL N_BF N_BF_P1 KEYSPACE DATASIZE RUN_TIMEOUT
for tool in redis-benchmark redis-cli "$NUTCRACKER_BIN" "$REDIS_SERVER_BIN"; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

# The filter and the floor as in round2.sh: a filter never scaling during the runs; the floor a
# plain string the size of such a filter, 8 fixed offsets (the middle of each eighth).
BF_KEY=bfk FLOOR_KEY=bfk2 BF_ERROR=0.01 BF_CAPACITY=10000000 FLOOR_BITS=95850000 FLOOR_K=8
bf_floor_commands

results_files cpu_cost   # STAMP, CSV, MD
bench_init
check_host_idle

start_redis
start_bloomproxy "$REDIS_PORT"
start_nutcracker "$REDIS_PORT"
declare -A PORT=([direct]="$REDIS_PORT" [floor]="$REDIS_PORT" [proxy]="$PROXY_PORT"
  [twemproxy]="$TWEM_PORT")
declare -A MIDDLE=([direct]=0 [floor]=0 [proxy]="$PROXY_PID" [twemproxy]="$TWEM_PID")
declare -A TARGET_ARGS=()
for t in direct proxy twemproxy; do
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done
reserve_bench_filter proxy
create_bf_floor "$REDIS_PORT"
prefill_keyspace direct
for t in direct proxy twemproxy; do
  redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" -t get -n 5000 -c 10 -r "$KEYSPACE" -q >/dev/null 2>&1
done
redis-benchmark -h 127.0.0.1 -p "$PROXY_PORT" -n 5000 -c 10 -r 100000000 -q \
  BF.ADD "$BF_KEY" __rand_int__ >/dev/null 2>&1

# The kernel's softirq threads: loopback traffic runs the receiver's TCP stack in the sender's
# context (counted as that process's system time), or in these when it is deferred.
mapfile -t KSOFTIRQD < <(pgrep -x 'ksoftirqd/[0-9]+' || true)

# cpu_ticks PID... -> "TOTAL BUSY T1 T2 ... KSOFTIRQD": machine-wide CPU time (/proc/stat; busy
# = user+nice+system+irq+softirq), each PID's utime and stime (0 0 for PID 0), and the CPU time
# of the softirq threads, in clock ticks.
cpu_ticks() {
  local pid line stat ksoft=0
  read -ra line </proc/stat
  printf '%s %s' "$((line[1] + line[2] + line[3] + line[4] + line[5] + line[6] + line[7] + line[8]))" \
    "$((line[1] + line[2] + line[3] + line[6] + line[7]))"
  for pid in "$@"; do
    if ((pid == 0)); then printf ' 0 0'; continue; fi
    stat="$(cat "/proc/$pid/stat")"
    read -ra line <<<"${stat##*) }"
    printf ' %s %s' "${line[11]}" "${line[12]}"
  done
  for pid in "${KSOFTIRQD[@]}"; do
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
    read -ra line <<<"${stat##*) }"
    ksoft=$((ksoft + line[11] + line[12]))
  done
  echo " $ksoft"
}

# run_one ROUND CASE TARGET CLIENTS PIPELINE REQUESTS [redis-benchmark args...]: one run against
# PORT[TARGET], its req/s and CPU ticks appended to the CSV.
run_one() {
  local r="$1" case="$2" t="$3" c="$4" p="$5" n="$6" rc=0 before after rows bench_ticks
  local out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" times="$BENCH_TMP/run.times"
  shift 6
  [[ " ${CASES:-$case} " == *" $case "* ]] || return 0
  RUN=$((RUN + 1))
  before="$(cpu_ticks "$REDIS_PID" "${MIDDLE[$t]}")"
  # (times, in the subshell: the CPU time of its children, here redis-benchmark.)
  ( timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" redis-benchmark \
      -h 127.0.0.1 -p "${PORT[$t]}" -n "$n" -c "$c" -P "$p" -q --csv "$@" >"$out" 2>"$err" \
      || exit $?
    times >"$times" ) || rc=$?
  after="$(cpu_ticks "$REDIS_PID" "${MIDDLE[$t]}")"
  exit_if_interrupted "$rc"
  rows="$(tr -d '"\r' <"$out" | awk -F, '$1 != "test" && NF >= 8 && $2 + 0 > 0 {print $2}')"
  if run_failed "$rc" "$rows" "$out" "$err" "round $r case $case $t"; then return 0; fi
  # `times` prints "0m1.230s 0m0.450s" for the shell, then for its children.
  bench_ticks="$(sed -n 2p "$times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.0f", s * 100 }')"
  echo "$r,$case,$t,$c,$p,$n,$rows,$bench_ticks,$before,$after" | tr ' ' ',' >>"$CSV"
  log "[$RUN/$TOTAL] round $r case $case c$c P$p n=$n $t: $rows req/s"
}

echo "round,case,target,clients,pipeline,requests,rps,bench_ticks,total0,busy0,redis_u0,redis_s0,mid_u0,mid_s0,ksoftirqd0,total1,busy1,redis_u1,redis_s1,mid_u1,mid_s1,ksoftirqd1" >"$CSV"
declare -A RUNS_OF=([1]=3 [2]=3 [3]=3 [4]=2 [5]=2)
RUN=0 FAILED=0 TOTAL=0
for c in "${!RUNS_OF[@]}"; do
  [[ " ${CASES:-$c} " == *" $c "* ]] && TOTAL=$((TOTAL + ROUNDS * RUNS_OF[$c]))
done
START_SECONDS=$SECONDS
for ((r = 1; r <= ROUNDS; r++)); do
  for t in direct proxy twemproxy; do run_one "$r" 1 "$t" 50 1 "$N_P1" -t get -r "$KEYSPACE"; done
  for t in direct proxy twemproxy; do run_one "$r" 2 "$t" 50 16 "$N_P16" -t get -r "$KEYSPACE"; done
  for t in direct proxy twemproxy; do run_one "$r" 3 "$t" 1 1 "$N_SERIAL" -t get -r "$KEYSPACE"; done
  run_one "$r" 4 proxy 50 16 "$N_BF" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
  run_one "$r" 4 floor 50 16 "$N_BF" "${FLOOR_ADD[@]}"
  run_one "$r" 5 proxy 50 1 "$N_BF_P1" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
  run_one "$r" 5 floor 50 1 "$N_BF_P1" "${FLOOR_ADD[@]}"
done
ELAPSED=$((SECONDS - START_SECONDS))
check_bench_filter proxy

{
  echo "## Where the CPU goes ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /')," \
    "$("$NUTCRACKER_BIN" --version 2>&1 | head -1 | sed 's/^This is //'), $(nproc) CPU(s)," \
    "$ROUNDS interleaved round(s), proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}; host CPU busy before" \
    "start: ${HOST_BUSY}%; $ELAPSED s of runs; $FAILED failed run(s)"
  echo
  "$BENCH_PY" "$BENCH_DIR/cpu_cost_report.py" "$CSV" "$(nproc)" "$(getconf CLK_TCK)"
} | tee "$MD"
log "report: ${MD#"$REPO_ROOT"/}, raw runs: ${CSV#"$REPO_ROOT"/}"
