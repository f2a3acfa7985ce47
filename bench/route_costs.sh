#!/usr/bin/env bash
# What the connection rules cost: throughput of the commands whose route is not the plain shared
# one, through bloomproxy and straight to Redis, and optionally through a second bloomproxy
# binary (BASE_BIN, e.g. a build of an earlier commit) in the same interleaved rounds:
#
#   set        SET (shared: the baseline)
#   del        DEL of random keys (a Lua script that says which keys were filters)
#   expire     EXPIRE of random keys (the same script, plus PEXPIRETIME)
#   type       TYPE of random keys (EVAL_RO: TYPE, then the filter marker)
#   eval       EVAL "return 1" 0 (a dedicated connection per script in flight)
#
#   bench/route_costs.sh
#   BASE_BIN=/tmp/old/build/bloomproxy ROUNDS=5 bench/route_costs.sh
#
# Environment: ROUNDS (3), CLIENTS (50), PIPELINES ("1 16"), N (100000 requests per run),
# KEYSPACE (100000), BASE_BIN (unset: no second proxy), BLOOMPROXY_BIN / BLOOMPROXY_ARGS (lib.sh).
# Prints requests per second per run and the medians, and each target's median as a ratio of
# direct Redis measured in the same rounds.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS="${ROUNDS:-3}"
CLIENTS="${CLIENTS:-50}"
PIPELINES="${PIPELINES:-1 16}"
N="${N:-100000}"
KEYSPACE="${KEYSPACE:-100000}"
BASE_BIN="${BASE_BIN:-}"
for v in ROUNDS CLIENTS N KEYSPACE; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (is '${!v}')"
done

bench_init
start_redis
start_bloomproxy "$REDIS_PORT"
targets=("direct:$REDIS_PORT" "proxy:$PROXY_PORT")
if [[ -n "$BASE_BIN" ]]; then
  [[ -x "$BASE_BIN" ]] || die "BASE_BIN $BASE_BIN is not executable"
  new_port=$PROXY_PORT
  BLOOMPROXY_BIN="$BASE_BIN" start_bloomproxy "$REDIS_PORT"
  targets+=("base:$PROXY_PORT")
  PROXY_PORT=$new_port
fi
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n "$KEYSPACE" -r "$KEYSPACE" -t set -q >/dev/null

# bench CASE PORT PIPELINE -> requests per second
bench() {
  local what="$1" port="$2" p="$3" args
  case "$what" in
    set) args=(-t set) ;;
    del) args=(DEL "key:__rand_int__") ;;
    expire) args=(EXPIRE "key:__rand_int__" 1000) ;;
    type) args=(TYPE "key:__rand_int__") ;;
    eval) args=(EVAL "return 1" 0) ;;
  esac
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P "$p" -n "$N" -r "$KEYSPACE" --csv \
    "${args[@]}" 2>/dev/null | awk -F'","' 'NR == 2 { gsub(/"/, "", $2); print $2 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A runs
for p in $PIPELINES; do
  for what in set del expire type eval; do
    for ((r = 1; r <= ROUNDS; r++)); do
      for t in "${targets[@]}"; do
        name="${t%%:*}" port="${t##*:}"
        # DEL empties the keyspace: refill it before every DEL and EXPIRE run.
        if [[ "$what" == del || "$what" == expire ]]; then
          redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n "$KEYSPACE" -r "$KEYSPACE" -t set -q \
            -P 16 >/dev/null
        fi
        rps=$(bench "$what" "$port" "$p")
        runs["$what:$p:$name"]+="$rps "
      done
    done
  done
done

printf '%-8s %-3s %-7s %12s   %s\n' case P target median runs
for p in $PIPELINES; do
  for what in set del expire type eval; do
    direct=$(tr ' ' '\n' <<<"${runs[$what:$p:direct]}" | grep . | median)
    for t in "${targets[@]}"; do
      name="${t%%:*}"
      m=$(tr ' ' '\n' <<<"${runs[$what:$p:$name]}" | grep . | median)
      printf '%-8s %-3s %-7s %12.0f   %s (x%.2f of direct)\n' "$what" "$p" "$name" "$m" \
        "${runs[$what:$p:$name]}" "$(awk -v a="$m" -v b="$direct" 'BEGIN { print a / b }')"
    done
  done
done
