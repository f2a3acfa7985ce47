#!/usr/bin/env bash
# What hash commands cost through bloomproxy: each one runs as a small Lua script that first
# checks that the name is no Bloom filter or count-min sketch (filters/common/key_scripts.h: EXISTS of
# the two markers, then the command itself, or WRONGTYPE on a structure). HSET and HGET through
# the proxy and straight to redis-server, with GET through both as the cost of a plain forwarded
# command, in interleaved rounds (every target runs each case in each round, back to back).
#
# Usage: bench/hash_commands.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   PIPELINES    redis-benchmark -P values (default "1 16")
#   CLIENTS      connections per run (default 50)
#   N            requests per run (default 200000)
#   KEYSPACE     hashes (and strings) the runs pick from at random (default 100000)
#   RUN_TIMEOUT  seconds before one run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
#
# Writes bench/results/hash_commands-<time>.{csv,md} and prints the table.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"   # ROUNDS, QUICK

PIPELINES="${PIPELINES:-1 16}"
CLIENTS="${CLIENTS:-50}"
N="${N:-200000}"
KEYSPACE="${KEYSPACE:-100000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
require_positive_ints CLIENTS N KEYSPACE RUN_TIMEOUT
for p in $PIPELINES; do [[ "$p" =~ ^[1-9][0-9]*$ ]] || die "bad pipeline '$p'"; done
((QUICK)) && N=$(((N + 9) / 10))
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

results_files hash_commands   # STAMP, CSV, MD
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
PORT[direct]="$REDIS_PORT"
PORT[proxy]="$PROXY_PORT"
TARGETS="direct proxy"

# The hashes and strings the reads find (straight in Redis: the same keys for both targets).
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n $((3 * KEYSPACE)) -r "$KEYSPACE" -c 20 -P 32 -q \
  HSET "h:__rand_int__" f __rand_int__ >/dev/null
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n $((3 * KEYSPACE)) -r "$KEYSPACE" -c 20 -P 32 -q \
  SET "key:__rand_int__" __rand_int__ >/dev/null
# The hash commands' path through the proxy (one script each) answers as Redis does.
got="$(redis-cli -h 127.0.0.1 -p "$PROXY_PORT" HSET hb:check f v)"
[[ "$got" == 1 ]] || die "HSET hb:check f v through bloomproxy: '$got'"
got="$(redis-cli -h 127.0.0.1 -p "$PROXY_PORT" HGET hb:check f)"
[[ "$got" == v ]] || die "HGET hb:check f through bloomproxy: '$got'"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" DEL hb:check >/dev/null

CASES=(hset hget get)
case_args() {
  case "$1" in
    hset) ARGS=(HSET "h:__rand_int__" f __rand_int__) ;;
    hget) ARGS=(HGET "h:__rand_int__" f) ;;
    get) ARGS=(GET "key:__rand_int__") ;;
  esac
}

RUN=0
FAILED=0
TOTAL=$((ROUNDS * $(wc -w <<<"$PIPELINES") * ${#CASES[@]} * 2))
echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
log "benchmark: $ROUNDS round(s); ${CASES[*]} -c $CLIENTS -P [$PIPELINES] -n $N -r $KEYSPACE" \
  "against [$TARGETS]"
for ((r = 1; r <= ROUNDS; r++)); do
  for PIPELINE in $PIPELINES; do
    for c in "${CASES[@]}"; do
      case_args "$c"
      for t in $TARGETS; do
        redis_bench_run "$r" "${c^^} P$PIPELINE" "$t" "$N" -r "$KEYSPACE" "${ARGS[@]}"
      done
    done
  done
done

{
  echo "# Hash commands through bloomproxy ($STAMP)"
  echo
  echo "redis-benchmark -c $CLIENTS -n $N -r $KEYSPACE, $ROUNDS interleaved round(s);" \
    "HSET h:<r> f <r>, HGET h:<r> f, GET key:<r> (a plain forwarded command);" \
    "redis-server $(redis-server --version | cut -d' ' -f3)."
  echo
  rounds_report "$CSV" <<'EOF'
targets_table(("direct", "proxy"), [("direct", ("proxy",))])
ratios_rows([("proxy", "direct", "proxy/direct")])
load_summary()
EOF
} | tee "$MD"

finish_runs
