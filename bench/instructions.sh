#!/usr/bin/env bash
# User-space instructions per request of bloomproxy, measured with callgrind (valgrind): a
# figure the shared machine's noise does not move, for comparing two binaries. The virtual
# machines this project runs on expose no hardware counters (perf stat says "not supported").
#
# Usage: bench/instructions.sh [--help]
#
# For each case: bloomproxy runs under callgrind in front of its own redis-server; a warm-up of
# 2,000 requests, then the counters are zeroed, N requests of the case are sent with
# redis-benchmark, and the counters dumped: instructions / N. Cases (c50):
#   BF.ADD -P 16, BF.EXISTS -P 16, BF.ADD -P 1 (random items, a filter of 10M at 1%),
#   SET -P 16, GET -P 16, GET -P 1 (100,000 keys, 3-byte values)
# The kernel's share (the read and write system calls, most of a forwarded GET) is not counted.
#
# Environment:
#   BLOOMPROXY_BIN   the binary (default build/bloomproxy)
#   BASE_BIN         a second binary measured the same way, e.g. a build of an older commit
#   N                requests per case (default 20000)
# Needs valgrind, redis-server, redis-benchmark and redis-cli.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) usage; die "unknown argument: $1" ;;
esac
N="${N:-20000}"
require_positive_ints N
for tool in valgrind callgrind_control redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
BINS=("$BLOOMPROXY_BIN")
[[ -n "${BASE_BIN:-}" ]] && BINS+=("$BASE_BIN")
for b in "${BINS[@]}"; do [[ -x "$b" ]] || die "no binary at $b"; done

CASES=(
  "BF.ADD P16|-c 50 -P 16 -r 100000000 BF.ADD bfk __rand_int__"
  "BF.EXISTS P16|-c 50 -P 16 -r 100000000 BF.EXISTS bfk __rand_int__"
  "BF.ADD P1|-c 50 -P 1 -r 100000000 BF.ADD bfk __rand_int__"
  "SET P16|-c 50 -P 16 -r 100000 -d 3 -t set"
  "GET P16|-c 50 -P 16 -r 100000 -d 3 -t get"
  "GET P1|-c 50 -P 1 -r 100000 -d 3 -t get"
)

bench_init
start_redis
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c 50 -P 16 -n 100000 -r 100000 -d 3 -t set -q >/dev/null

# measure BIN CASE_ARGS -> instructions per request on stdout
measure() {
  local bin="$1" args="$2" port dir pid out ir
  free_port port
  dir="$BENCH_TMP/callgrind-$RANDOM$RANDOM"
  mkdir -p "$dir"
  valgrind --tool=callgrind --callgrind-out-file="$dir/out.%p" "$bin" --bind 127.0.0.1 \
    --port "$port" --upstream "127.0.0.1:$REDIS_PORT" >"$dir/log" 2>&1 &
  pid=$!
  track_pid "$pid" "bloomproxy under callgrind :$port"
  wait_for_port "$port" "$pid" "bloomproxy (callgrind)" "$dir/log"
  redis-cli -p "$port" DEL bfk >/dev/null
  [[ "$(redis-cli -p "$port" BF.RESERVE bfk 0.01 10000000)" == OK ]] || die "BF.RESERVE failed"
  # shellcheck disable=SC2086  # the case's arguments are words
  redis-benchmark -h 127.0.0.1 -p "$port" -q -n 2000 $args >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  # shellcheck disable=SC2086
  redis-benchmark -h 127.0.0.1 -p "$port" -q -n "$N" $args >/dev/null
  callgrind_control -d "$pid" >/dev/null 2>&1
  stop_pid "$pid"
  untrack_pid "$pid"
  out="$(ls -t "$dir"/out.*.* 2>/dev/null | head -n 1)"
  [[ -n "$out" ]] || die "callgrind wrote no dump ($dir)"
  ir="$(awk '/^summary:/ {print $2; exit}' "$out")"
  echo $((ir / N))
}

header="| case |"
sep="|---|"
for b in "${BINS[@]}"; do header+=" ${b#"$REPO_ROOT"/} |"; sep+="---:|"; done
echo "User-space instructions per request (callgrind), $N requests per case after 2,000 of warm-up:"
echo
echo "$header"
echo "$sep"
for c in "${CASES[@]}"; do
  line="| ${c%%|*} |"
  for b in "${BINS[@]}"; do
    log "${c%%|*}: ${b#"$REPO_ROOT"/}"
    line+=" $(measure "$b" "${c#*|}") |"
  done
  echo "$line"
done
