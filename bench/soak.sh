#!/usr/bin/env bash
# Soak: a long mixed load through bloomproxy (SET/GET pipelined and not, BF.ADD/BF.EXISTS
# through bf_client, new connections all the time), sampling the proxy's RSS every SAMPLE
# seconds. Reports RSS over time and whether it kept growing after the warm-up, and the errors
# the load generators saw.
#
#   bench/soak.sh                # 10 minutes
#   DURATION=120 bench/soak.sh   # shorter
#
# Verdict: RSS after the warm-up (first 20 % of the run) may move within SLACK_KB (default
# 2048 KiB) of its warm-up level; more is reported as growth.
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

DURATION="${DURATION:-600}"
SAMPLE="${SAMPLE:-10}"
SLACK_KB="${SLACK_KB:-2048}"

bench_init
start_redis
start_bloomproxy "$REDIS_PORT"
build_bf_client
redis-cli -p "$PROXY_PORT" BF.RESERVE soak:bf 0.01 10000000 >/dev/null

errors_file="$BENCH_TMP/errors"
: >"$errors_file"
deadline=$(( $(date +%s) + DURATION ))

# Load generators, each looping until the deadline; every iteration opens new connections.
load_passthrough() {
  while (( $(date +%s) < deadline )); do
    out="$(redis-benchmark -p "$PROXY_PORT" -t set,get -n 20000 -c 20 -P "$1" -r 100000 -q 2>&1)" \
      || echo "redis-benchmark exit $?" >>"$errors_file"
    grep -qi "err" <<<"$out" && echo "redis-benchmark: $out" >>"$errors_file"
    sleep 0.2
  done
}
load_bf() {
  while (( $(date +%s) < deadline )); do
    "$BF_CLIENT" -p "$PROXY_PORT" -m "$1" -c 10 -P 8 -t 5 -k soak:bf >/dev/null 2>>"$errors_file" \
      || echo "bf_client $1 exit $?" >>"$errors_file"
    sleep 0.2
  done
}
load_pids=()
load_passthrough 1 & load_pids+=($!); track_pid $! "load P1"
load_passthrough 16 & load_pids+=($!); track_pid $! "load P16"
load_bf proxy-add & load_pids+=($!); track_pid $! "load BF.ADD"
load_bf proxy-exists & load_pids+=($!); track_pid $! "load BF.EXISTS"

log "soak for ${DURATION}s, RSS every ${SAMPLE}s"
printf '| elapsed s | proxy RSS KiB | connections |\n|---:|---:|---:|\n'
start=$(date +%s)
samples=()
while (( $(date +%s) < deadline )); do
  sleep "$SAMPLE"
  rss="$(rss_kb "$PROXY_PID")"
  conns="$(ls "/proc/$PROXY_PID/fd" 2>/dev/null | wc -l)"
  samples+=("$rss")
  printf '| %d | %d | %d |\n' "$(( $(date +%s) - start ))" "$rss" "$conns"
done
# The load loops end at the deadline (the servers, also children, keep running until cleanup).
for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done

n=${#samples[@]}
warm=$(( n / 5 > 0 ? n / 5 : 1 ))
base="${samples[$((warm - 1))]}"
max="$base"
for (( i = warm; i < n; i++ )); do (( samples[i] > max )) && max="${samples[i]}"; done
final="${samples[$((n - 1))]}"
errors="$(grep -cv '^$' "$errors_file" || true)"
printf '\nRSS after warm-up %d KiB, max after %d KiB, final %d KiB; load errors: %s\n' \
  "$base" "$max" "$final" "$errors"
if (( max - base > SLACK_KB )); then
  echo "verdict: RSS grew by $(( max - base )) KiB after the warm-up"
else
  echo "verdict: no growth (within ${SLACK_KB} KiB of the warm-up level)"
fi
[[ "$errors" == 0 ]] || head -5 "$errors_file"
