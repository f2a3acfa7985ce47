#!/usr/bin/env bash
# The measurements of the next performance issue ("round 2"): every case below in one script,
# with redis-benchmark, in interleaved rounds (each round runs every case once, in the same
# order). Per case it reports the medians of the rounds and bloomproxy's ratio to its baseline,
# computed within each round and then medianed, against the issue's target. See bench/README.md.
#
# Usage: bench/round2.sh [--rounds N] [--quick] [--publish] [--help]
#   --rounds N   rounds (default 3)
#   --quick      smoke run: 1 round, a tenth of the requests (a few tens of seconds)
#   --publish    also copy the chart (gnuplot PNG, next to the CSV) to docs/img/round2.png
#
# Cases (c50 unless said; bloomproxy vs. its baseline in the same round)    issue's target
#    1  BF.ADD -P 16 vs. the floor: BITFIELD 8x SET u1 (fixed offsets) -> redis      >= 1.0
#    2  BF.EXISTS -P 16 vs. BITFIELD_RO 8x GET u1 (fixed offsets) -> redis           >= 1.0
#    3  BF.ADD -P 1 vs. the same floor at -P 1                                       >= 0.8
#    4  BF.MADD of 100 items -P 1 vs. BITFIELD 800x SET u1 (fixed offsets) -> redis,
#       in items/s (requests/s x 100 for both)                                       >= 1.3
#    5  SET, GET -P 1 vs. direct redis                                               >= 0.95
#    6  GET -c 1 -P 1: bloomproxy/direct vs. twemproxy/direct    bloomproxy's >= twemproxy's
#    7  SET, GET -P 16 vs. direct redis / vs. twemproxy                      >= 0.6 / >= 1.5
#    8  SET, GET -P 16 through bloomproxy --upstream-cluster vs. redis-benchmark --cluster
#       straight to the masters of a 3-master Redis Cluster                          >= 0.7
#    9  SET, GET -P 16 with TLS on both sides (redis-benchmark --tls -> bloomproxy TLS port,
#       upstream TLS) vs. redis-benchmark --tls straight to the TLS-only redis-server  >= 0.6
#   10  CMS.INCRBY -P 16 vs. its floor: the BITFIELD the proxy sends upstream for one call
#       (captured with MONITOR, as bench/cms.sh does), straight to redis               >= 1.0
#   11  RSS of each bloomproxy (standalone, cluster, TLS) after the whole run        <= 8 MiB
#
# Environment (requests per run; --quick takes a tenth of each):
#   N_BF         cases 1, 2 (default 500000)
#   N_BF_P1      case 3 (default 200000)
#   N_MADD       case 4, BF.MADD commands of 100 items (default 10000: 1M items)
#   N_P1         case 5 (default 200000)
#   N_SERIAL     case 6 (default 40000)
#   N_P16        case 7 (default 1000000)
#   N_CLUSTER    case 8 (default 2000000: redis-benchmark --cluster times in 250 ms steps)
#   N_TLS        case 9 (default 1000000)
#   N_CMS        case 10 (default 500000)
#   KEYSPACE     redis-benchmark -r of the SET/GET cases (default 100000)
#   DATASIZE     redis-benchmark -d (default 3)
#   RSS_LIMIT_KB case 11's target in KiB (default 8192)
#   ROUNDS       rounds (default 3; --rounds wins)
#   CASES        the cases to run, e.g. "1 2 4" (default: all; for working on one path)
#   RUN_TIMEOUT  seconds before one redis-benchmark run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, REDIS_SERVER_BIN, NUTCRACKER_BIN   see bench/lib.sh
#
# Needs redis-server (with TLS), redis-benchmark (with --tls), redis-cli, nutcracker and openssl.
# One bloomproxy per upstream kind, each started once for the whole run: in front of a
# standalone redis-server (cases 1-7, 10; twemproxy and the floors use the same redis-server),
# in front of the cluster (8), and with TLS on both sides (9). Exit status 1 if a run failed
# (targets not met do not change it).
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

WITH_PUBLISH=1 parse_round_args "$@"   # ROUNDS, QUICK, PUBLISH

N_BF="${N_BF:-500000}"
N_BF_P1="${N_BF_P1:-200000}"
N_MADD="${N_MADD:-10000}"
N_P1="${N_P1:-200000}"
N_SERIAL="${N_SERIAL:-40000}"
N_P16="${N_P16:-1000000}"
N_CLUSTER="${N_CLUSTER:-2000000}"
N_TLS="${N_TLS:-1000000}"
N_CMS="${N_CMS:-500000}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
RSS_LIMIT_KB="${RSS_LIMIT_KB:-8192}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
N_VARS=(N_BF N_BF_P1 N_MADD N_P1 N_SERIAL N_P16 N_CLUSTER N_TLS N_CMS)
require_positive_ints "${N_VARS[@]}" KEYSPACE DATASIZE RSS_LIMIT_KB RUN_TIMEOUT
if ((QUICK)); then
  for v in "${N_VARS[@]}"; do printf -v "$v" '%s' $(((${!v} + 9) / 10)); done
fi
CLIENTS=50
MASTERS=3
MADD_BATCH=100
KEY_TYPE=rsa:2048 NEWKEY=(-newkey rsa:2048)   # for make_certs

for tool in redis-benchmark redis-cli openssl "$NUTCRACKER_BIN" "$REDIS_SERVER_BIN"; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
redis-benchmark --help 2>&1 | grep -q -- '--cacert' || die "this redis-benchmark has no --tls / --cacert"

# The filters and the floors (as compare.sh): bfk for BF.ADD / BF.EXISTS, bfkm for BF.MADD, both
# reserved through the proxy big enough never to scale during the runs; the floors write a plain
# string bfk2 straight in Redis, allocated up front at the size of such a filter (95,850,000 bits
# at 9.585 bits per item). redis-benchmark cannot randomise BITFIELD offsets (it replaces
# __rand_int__ with a 12-digit zero-padded number, which Redis rejects as a bit offset), so
# they are fixed: for one item the middle of each eighth of the key (k = 8); for BF.MADD's 100
# items 800 offsets, the middle of each 800th. The same cache lines on every request: an
# optimistic floor.
BF_KEY=bfk MADD_KEY=bfkm FLOOR_KEY=bfk2 BF_ERROR=0.01 BF_CAPACITY=10000000
FLOOR_BITS=95850000 FLOOR_K=8
bf_floor_commands
FLOOR_MADD=(BITFIELD "$FLOOR_KEY")
MADD_OPS=$((MADD_BATCH * FLOOR_K))
seg=$((FLOOR_BITS / MADD_OPS))
for ((i = 0; i < MADD_OPS; i++)); do
  FLOOR_MADD+=(SET u1 $((seg * i + seg / 2)) 1)
done
MADD_CMD=(BF.MADD "$MADD_KEY")
for ((i = 0; i < MADD_BATCH; i++)); do MADD_CMD+=(__rand_int__); done
# (More items than a filter's capacity would make it scale: more work for the proxy's runs.)
((ROUNDS * (N_BF + N_BF_P1) < BF_CAPACITY * 9 / 10)) \
  || log "warning: $((ROUNDS * (N_BF + N_BF_P1))) BF.ADDs will make $BF_KEY scale (capacity $BF_CAPACITY): fewer rounds or N_BF"
((ROUNDS * N_MADD * MADD_BATCH < BF_CAPACITY * 9 / 10)) \
  || log "warning: $((ROUNDS * N_MADD * MADD_BATCH)) items of BF.MADD will make $MADD_KEY scale (capacity $BF_CAPACITY): fewer rounds or N_MADD"
# The sketches (as cms.sh): cmsk for the proxy's runs, cmsf for capturing the floor.
CMS_KEY=cmsk CMS_FLOOR_KEY=cmsf CMS_ERROR=0.001 CMS_PROB=0.01

results_files round2   # STAMP, CSV, MD
bench_init
check_host_idle
START_SECONDS=$SECONDS
[[ "$BENCH_TMP" != *[[:space:]]* ]] || die "the temp dir ($BENCH_TMP) has a space: set TMPDIR"
rcli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

# --- servers: one redis-server with bloomproxy and nutcracker in front of it; a cluster and
# bloomproxy --upstream-cluster; a TLS-only redis-server and bloomproxy with TLS on both sides.
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
PORT[proxy]="$PROXY_PORT"
declare -A PROXY_PIDS=([proxy]="$PROXY_PID")
start_nutcracker "$REDIS_PORT"
PORT[direct]="$REDIS_PORT" PORT[floor]="$REDIS_PORT" PORT[twemproxy]="$TWEM_PORT"
# (node ports <= 55535, so that port + 10000 would still be a port; the buses use cluster-port)
start_cluster "$MASTERS" 55535
SEEDS="$(printf '127.0.0.1:%s,' "${CLUSTER_PORTS[@]}")"
start_bloomproxy_cluster "${SEEDS%,}"
PORT[cluster-proxy]="$PROXY_PORT" PROXY_PIDS[cluster-proxy]="$PROXY_PID"
# (--cluster: redis-benchmark asks this node for the others and sends each key to its master.)
PORT[cluster-direct]="${CLUSTER_PORTS[0]}" TARGET_ARGS[cluster-direct]="--cluster"
make_certs "$BENCH_TMP/certs"
start_tls_redis
start_tls_bloomproxy "$TLS_REDIS_PORT"
PORT[tls-direct]="$TLS_REDIS_PORT" PORT[tls-proxy]="$TLS_PROXY_PORT" PROXY_PIDS[tls-proxy]="$PROXY_PID"
TLS_ARGS="--tls --cacert $CA_CRT"
TARGET_ARGS[tls-direct]="$TLS_ARGS" TARGET_ARGS[tls-proxy]="$TLS_ARGS"
PROXIES=(proxy cluster-proxy tls-proxy)

# --- functional checks: a SET/GET round trip on every target (TLS ones with a verified
# certificate), no plaintext answer on the TLS ports, BF.* and CMS.* through the proxy.
for t in direct proxy twemproxy cluster-proxy tls-direct tls-proxy; do
  # shellcheck disable=SC2086  # TARGET_ARGS holds words
  sanity_check "${PORT[$t]}" "$t" ${TARGET_ARGS[$t]:-} || die "$t does not pass a SET/GET round trip; not benchmarking"
done
got="$(redis-cli -c -h 127.0.0.1 -p "${PORT[cluster-direct]}" SET bloombench:sanity ok 2>&1)"
[[ "$got" == OK ]] || die "SET through redis-cli -c on the cluster: $got"
got="$(redis-cli -c -h 127.0.0.1 -p "${PORT[cluster-direct]}" GET bloombench:sanity 2>&1)"
[[ "$got" == ok ]] || die "GET through redis-cli -c on the cluster: $got"
tls_targets_checked tls-direct tls-proxy   # CIPHER_REDIS, CIPHER_PROXY

why="$(bf_supported "${PORT[proxy]}")" || die "bloomproxy does not answer BF.* ($why)"
for key in "$BF_KEY" "$MADD_KEY"; do
  got="$(rcli "${PORT[proxy]}" BF.RESERVE "$key" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $key $BF_ERROR $BF_CAPACITY through bloomproxy: $got"
done
create_bf_floor "$REDIS_PORT"
got="$(rcli "$REDIS_PORT" "${FLOOR_MADD[@]}" 2>&1 | grep -cx '[01]')" || true
((got == MADD_OPS)) || die "the BF.MADD floor straight to redis did not reply $MADD_OPS integers"
madd_check=(BF.MADD "$MADD_KEY")
for ((i = 0; i < MADD_BATCH; i++)); do madd_check+=("bloombench:check:$i"); done
got="$(rcli "${PORT[proxy]}" "${madd_check[@]}" 2>&1 | grep -cx '[01]')" || true
((got == MADD_BATCH)) || die "BF.MADD of $MADD_BATCH items through bloomproxy did not reply $MADD_BATCH integers"
log "reserved $BF_KEY and $MADD_KEY ($BF_ERROR, $BF_CAPACITY) through bloomproxy; floor key" \
  "$FLOOR_KEY: $FLOOR_BITS bits, fixed offsets ${FLOOR_OFFSETS[*]} (BF.MADD floor: $MADD_OPS offsets)"

for key in "$CMS_KEY" "$CMS_FLOOR_KEY"; do
  got="$(rcli "${PORT[proxy]}" CMS.INITBYPROB "$key" "$CMS_ERROR" "$CMS_PROB" 2>&1)"
  [[ "$got" == OK ]] || die "CMS.INITBYPROB $key $CMS_ERROR $CMS_PROB through bloomproxy: $got"
done
CMS_DIMS="$(rcli "${PORT[proxy]}" CMS.INFO "$CMS_KEY" | paste -sd' ')"

# capture_cms_floor -> CMS_FLOOR (array), CMS_UPSTREAM (what the proxy sent, readable): as
# bench/cms.sh, the data command bloomproxy sends upstream for CMS.INCRBY cmsf item 1. The call
# runs twice through the proxy: once to fill its metadata cache, once under MONITOR on the
# upstream. The validation HMGET the proxy sends beside it is left out (redis-benchmark sends one
# command per request).
capture_cms_floor() {
  local dir="$BENCH_TMP/cms-capture" got
  capture_data_command "$dir" "${PORT[proxy]}" "$REDIS_PORT" "$CMS_FLOOR_KEY" \
    CMS.INCRBY "$CMS_FLOOR_KEY" item:0 1
  got="$(cat "$dir/reply")"
  [[ "$got" =~ ^[0-9]+$ ]] || die "CMS.INCRBY $CMS_FLOOR_KEY item:0 1 through bloomproxy replied '$got'"
  grep -qx 1 "$dir/data_commands" || die "CMS.INCRBY sent more than one data command upstream"
  mapfile -d '' -t CMS_FLOOR <"$dir/floor"
  CMS_UPSTREAM="$(paste -sd';' "$dir/upstream.txt" | sed 's/;/; /g')"
  log "CMS.INCRBY $CMS_FLOOR_KEY item:0 1 through bloomproxy sent upstream: $CMS_UPSTREAM"
  got="$(rcli "$REDIS_PORT" "${CMS_FLOOR[@]}" 2>&1 | paste -sd' ')"
  [[ "$got" =~ ^[0-9\ ]+$ ]] || die "the CMS floor straight to redis replied '$got'"
}
capture_cms_floor
CMS_CMD=(CMS.INCRBY "$CMS_KEY" __rand_int__ 1)

# --- keyspaces: ~95% of KEYSPACE keys in every redis (the standalone one serves direct, proxy
# and twemproxy; redis-benchmark --cluster names its keys key:{tag}:N, the others key:N, so the
# cluster is filled both ways), so GETs hit from the first round on.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE): standalone, cluster (both key forms), TLS"
prefill_keyspace direct cluster-direct cluster-proxy tls-direct

# --- short unrecorded warm-up of every target and command (connections, allocator, caches).
# (redis-benchmark spins forever on a port that refuses connections: hence the timeouts.)
warm() {  # warm TARGET [redis-benchmark args...]
  local t="$1"
  shift
  _target_args "$t"
  timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" \
    "${_TARGET_ARGS[@]}" -q --csv -c 10 "$@" >/dev/null 2>&1 || log "warning: warm-up of $t ($*) failed"
}
for t in direct proxy twemproxy cluster-direct cluster-proxy tls-direct tls-proxy; do
  warm "$t" -t set,get -n 5000 -r "$KEYSPACE" -d "$DATASIZE"
done
warm proxy -n 5000 -r 100000000 BF.ADD "$BF_KEY" __rand_int__
warm proxy -n 5000 -r 100000000 BF.EXISTS "$BF_KEY" __rand_int__
warm proxy -n 200 -r 100000000 "${MADD_CMD[@]}"
warm proxy -n 5000 -r 100000000 "${CMS_CMD[@]}"
warm floor -n 5000 "${FLOOR_ADD[@]}"
warm floor -n 5000 "${FLOOR_EXISTS[@]}"
warm floor -n 200 "${FLOOR_MADD[@]}"
warm floor -n 5000 "${CMS_FLOOR[@]}"
services_alive
declare -A RSS_SETUP=()
for t in "${PROXIES[@]}"; do RSS_SETUP[$t]="$(rss_kb "${PROXY_PIDS[$t]}")"; done
log "bloomproxy RSS after setup: $(for t in "${PROXIES[@]}"; do printf '%s %s KiB; ' "$t" "${RSS_SETUP[$t]}"; done)"

# --- the rounds
# run_one ROUND CASE TEST TARGET CLIENTS PIPELINE REQUESTS [redis-benchmark args...]: one
# redis-benchmark run against PORT[TARGET] (plus TARGET_ARGS[TARGET]), killed after RUN_TIMEOUT
# s, appended to the CSV (TEST empty: one row per test redis-benchmark reports, e.g. -t
# set,get). A failed run is counted in FAILED and left out; if a server is gone, the script stops.
run_one() {
  local r="$1" case="$2" test="$3" t="$4" c="$5" p="$6" n="$7"
  shift 7
  local out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0 snap0 snap1 other steal rows load=""
  [[ " ${CASES:-$case} " == *" $case "* ]] || return 0
  RUN=$((RUN + 1))
  _target_args "$t"
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" "${_TARGET_ARGS[@]}" -n "$n" -c "$c" -P "$p" \
    -q --csv "$@" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # Lines look like "SET","93457.95","0.309","0.080","0.255",... (a custom command: the whole
  # command line first; --cluster first lists the masters, in lines with fewer fields).
  rows="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$RUN,$r,$case" -v t="$t" -v name="$test" \
    -v mid="$c,$p,$n" -v post="$other,$steal" \
    '$1 != "test" && NF >= 8 && $2 + 0 > 0 {print pre, (name != "" ? name : $1), t, mid, $2, $5, post}')"
  if run_failed "$rc" "$rows" "$out" "$err" "round $r case $case ${test:-SET/GET} $t"; then
    return 0
  fi
  printf '%s\n' "$rows" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
  log "[$RUN/$TOTAL] round $r case $case c$c P$p n=$n $t: $(awk -F, '{printf "%s%s %.0f", (NR > 1 ? ", " : ""), $4, $9}' <<<"$rows") req/s$load"
}

echo "run,round,case,test,target,clients,pipeline,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
RUN=0
FAILED=0
TOTAL=$((ROUNDS * 22))
log "benchmark: $ROUNDS round(s) x 11 cases (22 redis-benchmark runs per round); raw results -> ${CSV#"$REPO_ROOT"/}"
SETGET=(-t "set,get" -r "$KEYSPACE" -d "$DATASIZE")
for ((r = 1; r <= ROUNDS; r++)); do
  run_one "$r" 1 BF.ADD proxy 50 16 "$N_BF" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
  run_one "$r" 1 BF.ADD floor 50 16 "$N_BF" "${FLOOR_ADD[@]}"
  run_one "$r" 2 BF.EXISTS proxy 50 16 "$N_BF" -r 100000000 BF.EXISTS "$BF_KEY" __rand_int__
  run_one "$r" 2 BF.EXISTS floor 50 16 "$N_BF" "${FLOOR_EXISTS[@]}"
  run_one "$r" 3 BF.ADD proxy 50 1 "$N_BF_P1" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
  run_one "$r" 3 BF.ADD floor 50 1 "$N_BF_P1" "${FLOOR_ADD[@]}"
  run_one "$r" 4 BF.MADD proxy 50 1 "$N_MADD" -r 100000000 "${MADD_CMD[@]}"
  run_one "$r" 4 BF.MADD floor 50 1 "$N_MADD" "${FLOOR_MADD[@]}"
  run_one "$r" 5 "" proxy 50 1 "$N_P1" "${SETGET[@]}"
  run_one "$r" 5 "" direct 50 1 "$N_P1" "${SETGET[@]}"
  for t in proxy direct twemproxy; do
    run_one "$r" 6 "" "$t" 1 1 "$N_SERIAL" -t get -r "$KEYSPACE" -d "$DATASIZE"
  done
  for t in proxy direct twemproxy; do
    run_one "$r" 7 "" "$t" 50 16 "$N_P16" "${SETGET[@]}"
  done
  run_one "$r" 8 "" cluster-proxy 50 16 "$N_CLUSTER" "${SETGET[@]}"
  run_one "$r" 8 "" cluster-direct 50 16 "$N_CLUSTER" "${SETGET[@]}"
  run_one "$r" 9 "" tls-proxy 50 16 "$N_TLS" "${SETGET[@]}"
  run_one "$r" 9 "" tls-direct 50 16 "$N_TLS" "${SETGET[@]}"
  run_one "$r" 10 CMS.INCRBY proxy 50 16 "$N_CMS" -r 100000000 "${CMS_CMD[@]}"
  run_one "$r" 10 CMS.INCRBY floor 50 16 "$N_CMS" "${CMS_FLOOR[@]}"
  # Case 11: the proxies' RSS at the end of the round (the last round's is "after the whole run").
  for t in "${PROXIES[@]}"; do
    echo "-,$r,11,RSS_KB,$t,,,,$(rss_kb "${PROXY_PIDS[$t]}"),,," >>"$CSV"
  done
done
ELAPSED=$((SECONDS - START_SECONDS))

# The filters must not have scaled (more items than their capacity would add a sub-filter).
BF_STATE=""
for key in "$BF_KEY" "$MADD_KEY"; do
  nf="$(rcli "${PORT[proxy]}" BF.INFO "$key" FILTERS)"
  items="$(rcli "${PORT[proxy]}" BF.INFO "$key" ITEMS)"
  [[ "$nf" == 1 ]] || log "warning: $key now has $nf sub-filters (more items than its capacity)"
  BF_STATE+="$key: $items items, $nf sub-filter(s); "
done
CONN_ERRORS=""
for t in "${PROXIES[@]}"; do
  # shellcheck disable=SC2086  # TARGET_ARGS holds words
  e="$(info_field "${PORT[$t]}" upstream_connection_errors proxy ${TARGET_ARGS[$t]:-})" || e="?"
  [[ "$e" == 0 ]] || log "warning: $t lost upstream connections: upstream_connection_errors:$e"
  CONN_ERRORS+="$t $e, "
done

# --- the report
fmt_bits() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$1"; }
{
  echo "## Round 2: the issue's measurements ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /')," \
    "$("$NUTCRACKER_BIN" --version 2>&1 | head -1 | sed 's/^This is //'), $(openssl version | cut -d' ' -f1-2)," \
    "$(nproc) CPU(s), $ROUNDS interleaved round(s)$( ((QUICK)) && echo " (--quick: a tenth of the requests)")," \
    "proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}; host CPU busy before start:" \
    "${HOST_BUSY}%; $ELAPSED s from start to the end of the last round"
  echo
  rounds_args=("$CSV" "${BUSY_WARN_PCT:-15}" "$RSS_LIMIT_KB")
  for t in "${PROXIES[@]}"; do rounds_args+=("$t=${PROXY_PIDS[$t]}:${RSS_SETUP[$t]}"); done
  "$BENCH_PY" - "${rounds_args[@]}" <<'PY'
import csv, statistics, sys
from collections import defaultdict

path, busy_warn, rss_limit = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
proxies = [a.split("=", 1) for a in sys.argv[4:]]  # (target, "pid:rss after setup")
rps, p50, by_round, noisy, n_of = (defaultdict(list), defaultdict(list), defaultdict(dict),
                                   defaultdict(dict), {})
rss = defaultdict(dict)  # target -> {round: KiB}
loads = {}  # run -> other + steal
for row in csv.DictReader(open(path)):
    r = int(row["round"])
    if row["test"] == "RSS_KB":
        rss[row["target"]][r] = int(row["rps"])
        continue
    k = (row["case"], row["test"], row["target"])
    rps[k].append(float(row["rps"]))
    p50[k].append(float(row["p50_latency_ms"]))
    by_round[k][r] = float(row["rps"])
    n_of[k] = int(row["requests"])
    load = float(row["other_cpu_pct"]) + float(row["steal_pct"])
    loads[row["run"]] = load
    noisy[k][r] = load >= busy_warn

def med(k):
    v = rps.get(k)  # (not rps[k]: a case CASES left out must not become an empty entry)
    return statistics.median(v) if v else None

def per_round(a, b):
    """a/b within each round both were measured, in round order."""
    return [by_round[a][r] / by_round[b][r] for r in sorted(by_round[a]) if r in by_round[b]]

def pr_med(a, b):
    rs = per_round(a, b)
    return statistics.median(rs) if rs else None

def f2(x):
    return "n/a" if x is None else f"{x:.2f}"

def num(x, scale=1):
    return "n/a" if x is None else f"{x * scale:,.0f}"

FLOOR1 = "floor: BITFIELD 8×SET u1 → redis"
# (case, test, label, numerator target, denominator target, what, goal, scale)
ROWS = [
    ("1", "BF.ADD", "1. BF.ADD c50 P16", "proxy", "floor", "bloomproxy / " + FLOOR1, 1.0, 1),
    ("2", "BF.EXISTS", "2. BF.EXISTS c50 P16", "proxy", "floor",
     "bloomproxy / floor: BITFIELD_RO 8×GET u1 → redis", 1.0, 1),
    ("3", "BF.ADD", "3. BF.ADD c50 P1", "proxy", "floor", "bloomproxy / " + FLOOR1, 0.8, 1),
    ("4", "BF.MADD", "4. BF.MADD ×100 c50 P1 (items/s)", "proxy", "floor",
     "bloomproxy / floor: BITFIELD 800×SET u1 → redis", 1.3, 100),
    ("5", "SET", "5. SET c50 P1", "proxy", "direct", "bloomproxy / direct", 0.95, 1),
    ("5", "GET", "5. GET c50 P1", "proxy", "direct", "bloomproxy / direct", 0.95, 1),
    ("6", "GET", "6. GET c1 P1", "proxy", "direct", None, None, 1),
    ("7", "SET", "7. SET c50 P16", "proxy", "direct", "bloomproxy / direct", 0.6, 1),
    ("7", "SET", "7. SET c50 P16", "proxy", "twemproxy", "bloomproxy / twemproxy", 1.5, 1),
    ("7", "GET", "7. GET c50 P16", "proxy", "direct", "bloomproxy / direct", 0.6, 1),
    ("7", "GET", "7. GET c50 P16", "proxy", "twemproxy", "bloomproxy / twemproxy", 1.5, 1),
    ("8", "SET", "8. SET c50 P16, cluster", "cluster-proxy", "cluster-direct",
     "bloomproxy --upstream-cluster / redis-benchmark --cluster", 0.7, 1),
    ("8", "GET", "8. GET c50 P16, cluster", "cluster-proxy", "cluster-direct",
     "bloomproxy --upstream-cluster / redis-benchmark --cluster", 0.7, 1),
    ("9", "SET", "9. SET c50 P16, TLS", "tls-proxy", "tls-direct", "bloomproxy TLS↔TLS / TLS redis-server", 0.6, 1),
    ("9", "GET", "9. GET c50 P16, TLS", "tls-proxy", "tls-direct", "bloomproxy TLS↔TLS / TLS redis-server", 0.6, 1),
    ("10", "CMS.INCRBY", "10. CMS.INCRBY c50 P16", "proxy", "floor",
     "bloomproxy / floor: the upstream BITFIELD → redis", 1.0, 1),
]

def met(ratio, goal):
    if ratio is None or goal is None:
        return "n/a"
    return "yes" if round(ratio, 2) >= round(goal, 2) else "no"

print("| case | target | median req/s | ratio | issue's target | met |")
print("|---|---|---:|---:|---|---|")
for case, test, label, a, b, what, goal, scale in ROWS:
    ka, kb = (case, test, a), (case, test, b)
    if case == "6":
        kt = (case, test, "twemproxy")
        ratio, twem = pr_med(ka, kb), pr_med(kt, kb)
        print(f"| {label} | bloomproxy / direct vs. twemproxy / direct (req/s: bloomproxy / direct / twemproxy)"
              f" | {num(med(ka))} / {num(med(kb))} / {num(med(kt))} | {f2(ratio)}"
              f" | >= twemproxy / direct ({f2(twem)}) | {met(ratio, twem)} |")
        continue
    ratio = pr_med(ka, kb)
    print(f"| {label} | {what} | {num(med(ka), scale)} / {num(med(kb), scale)} | {f2(ratio)}"
          f" | >= {goal:.2f} | {met(ratio, goal)} |")
for t, info in proxies:
    pid, setup = info.split(":")
    last = rss[t][max(rss[t])] if rss[t] else None
    kind = {"proxy": "standalone", "cluster-proxy": "cluster", "tls-proxy": "TLS"}.get(t, t)
    value = "n/a" if last is None else f"{last / 1024:.1f} MiB"
    print(f"| 11. RSS after the run | bloomproxy {kind} (pid {pid}; {int(setup) / 1024:.1f} MiB after setup)"
          f" | | {value} | <= {rss_limit / 1024:g} MiB"
          f" | {'n/a' if last is None else ('yes' if last <= rss_limit else 'no')} |")

# The chart's data (drawn below with gnuplot): per row, the per-round ratios and the target.
with open(path[:-len(".csv")] + ".ratios", "w") as out:
    for case, test, label, a, b, what, goal, scale in ROWS:
        ka, kb = (case, test, a), (case, test, b)
        if case == "6":
            goal = pr_med((case, test, "twemproxy"), kb)
        rs = per_round(ka, kb)
        if not rs or goal is None:
            continue
        name = label.split(" (")[0] + (" vs twemproxy" if b == "twemproxy" else "")
        out.write(f"{name}\t{statistics.median(rs):.4f}\t{min(rs):.4f}\t{max(rs):.4f}\t{goal:.4f}\n")

print()
print("ratio = the median over the rounds of bloomproxy's req/s (case 4: items/s) divided by its baseline's"
      " in the same round; median req/s = bloomproxy / baseline (medians of the rounds); met compares"
      " the ratio as shown (2 decimals) with the target. Case 6: the median of the per-round bloomproxy / direct"
      " against the median of the per-round twemproxy / direct. Case 11: VmRSS after the last round.")
print()
print("Every run (req/s; * = NOISY: other processes used >= "
      f"{busy_warn:.0f}% of the CPUs during the run):")
print()
print("| case | test | target | requests | median req/s | runs (req/s) | median p50 ms |")
print("|---|---|---|---:|---:|---|---:|")
for k in rps:
    case, test, t = k
    runs = " / ".join(f"{by_round[k][r]:.0f}{'*' if noisy[k].get(r) else ''}" for r in sorted(by_round[k]))
    print(f"| {case} | {test} | {t} | {n_of[k]} | {num(med(k))} | {runs} | {statistics.median(p50[k]):.3f} |")
print()
print("Ratios per round (in round order), their median, and the ratio of the medians:")
print()
print("| case | test | ratio | per round | median per-round | of the medians |")
print("|---|---|---|---|---:|---:|")
pairs = [(c, t, a, b) for c, t, _, a, b, _, _, _ in ROWS] + [("6", "GET", "twemproxy", "direct"),
                                                               ("6", "GET", "proxy", "twemproxy")]
pairs.sort(key=lambda x: int(x[0]))
for case, test, a, b in pairs:
    ka, kb = (case, test, a), (case, test, b)
    rs = per_round(ka, kb)
    mo = med(ka) / med(kb) if med(ka) and med(kb) else None
    print(f"| {case} | {test} | {a} / {b} | {' / '.join(f'{x:.2f}' for x in rs)} | {f2(pr_med(ka, kb))} | {f2(mo)} |")
print()
print("RSS of the proxies at the end of each round (KiB): "
      + "; ".join(f"{t} " + " / ".join(str(rss[t][r]) for r in sorted(rss[t])) for t, _ in proxies))
if ("8", "SET", "cluster-direct") in n_of:
    worst = max(250.0 * med(("8", t, "cluster-direct")) / n_of[("8", t, "cluster-direct")] / 10
                for t in ("SET", "GET") if rps[("8", t, "cluster-direct")])
    print()
    print(f"Case 8: redis-benchmark --cluster measures time in 250 ms steps, rounded up; at these run"
          f" lengths that understates cluster-direct by up to {worst:.0f}% (N_CLUSTER more requests make it smaller).")
if loads:
    v = list(loads.values())
    n_noisy = sum(1 for x in v if x >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. hypervisor steal) during the runs: mean {statistics.mean(v):.0f}%,"
          f" max {max(v):.0f}% of the machine; {n_noisy} of {len(v)} runs at >= {busy_warn:.0f}%"
          + ("" if not n_noisy else " (marked * above; the medians absorb a few such runs)"
             if n_noisy * 5 <= len(v) else " - too many disturbed runs: these numbers are noisy, rerun on a quiet machine"))
PY
  echo
  echo "Notes:"
  echo
  echo "- Targets: proxy = bloomproxy in front of one redis-server (which direct, twemproxy and the floors use too: nutcracker with one pool, that server, \`preconnect: true\`, \`server_connections: 1\`); cluster-proxy = bloomproxy \`--upstream-cluster\` in front of $MASTERS masters without replicas (node ports <= 55535, buses on \`cluster-port\`), cluster-direct = \`redis-benchmark --cluster\` straight to the masters; tls-proxy = bloomproxy with only a TLS port and \`--upstream-tls yes\` to a TLS-only redis-server ($CIPHER_PROXY), tls-direct = \`redis-benchmark --tls --cacert CA\` straight to that server ($CIPHER_REDIS), $KEY_TYPE certificates."
  echo "- SET/GET: \`redis-benchmark -t set,get -r $KEYSPACE -d $DATASIZE\` (~95% of the keys filled before the rounds). Requests per run: case 1-2 $N_BF, 3 $N_BF_P1, 4 $N_MADD (×$MADD_BATCH items), 5 $N_P1, 6 $N_SERIAL, 7 $N_P16, 8 $N_CLUSTER, 9 $N_TLS, 10 $N_CMS."
  echo "- BF: \`redis-benchmark -r 100000000 BF.ADD $BF_KEY __rand_int__\` (and BF.EXISTS) and \`BF.MADD $MADD_KEY\` with $MADD_BATCH \`__rand_int__\` arguments (each its own random number) through bloomproxy, on filters reserved with \`BF.RESERVE … $BF_ERROR $BF_CAPACITY\`. The floors go straight to redis-server on a plain $(fmt_bits "$FLOOR_BITS")-bit string \`$FLOOR_KEY\` allocated up front: \`${FLOOR_ADD[*]:0:6} …\` ($FLOOR_K SET ops) resp. \`${FLOOR_EXISTS[*]:0:5} …\` ($FLOOR_K GETs) per item, and for BF.MADD one \`BITFIELD $FLOOR_KEY\` with $MADD_OPS \`SET u1\` ops per request (the bits of $MADD_BATCH items at k = $FLOOR_K). redis-benchmark cannot randomise BITFIELD offsets (\`__rand_int__\` becomes a 12-digit zero-padded number, which Redis rejects as a bit offset), so the floors' offsets are FIXED: $FLOOR_K offsets (${FLOOR_OFFSETS[*]}) for one item, $MADD_OPS evenly spread ones for BF.MADD; the same cache lines every request, an optimistic floor. Filters after the run: ${BF_STATE%; }."
  echo "- CMS: \`redis-benchmark -r 100000000 CMS.INCRBY $CMS_KEY __rand_int__ 1\` through bloomproxy (CMS.INITBYPROB $CMS_ERROR $CMS_PROB: $CMS_DIMS); floor = the data command the proxy sent upstream for one call on a sketch of the same size, captured with MONITOR and replayed as it is (the same cells every request, without the validation HMGET the proxy sends beside it). The proxy sent: $CMS_UPSTREAM"
  echo "- upstream_connection_errors at the end: ${CONN_ERRORS%, } (must be 0)."
} | tee "$MD"

# The chart: each case's ratio (median of the rounds, the range over the rounds) and its target.
PNG="${CSV%.csv}.png"
if command -v gnuplot >/dev/null && [[ -s "${CSV%.csv}.ratios" ]]; then
  term="$(gnuplot_term)"
  gnuplot <<GP 2>"$BENCH_TMP/gnuplot.err" || _show_log "$BENCH_TMP/gnuplot.err"
set terminal $term size 1400,680 noenhanced
set output "$PNG"
set datafile separator "\t"
set title "bloomproxy / its baseline in the same round, $ROUNDS round(s), $STAMP (bench/round2.sh)"
set style fill solid 0.75 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
set ylabel "ratio"
set xtics rotate by -35 left
set bmargin 11
set rmargin 14
set key top right
plot "${CSV%.csv}.ratios" using 0:2:xtic(1) with boxes lc rgb '#dd8452' title "ratio (median of the rounds)", \
     "" using 0:2:3:4 with yerrorbars lc rgb 'black' pt -1 title "range over the rounds", \
     "" using 0:5 with points pt 7 ps 1.6 lc rgb '#c44e52' title "issue's target"
GP
  [[ -s "$PNG" ]] && log "chart: ${PNG#"$REPO_ROOT"/}"
  if ((PUBLISH)) && [[ -s "$PNG" ]]; then
    cp "$PNG" "$REPO_ROOT/docs/img/round2.png"
    log "published to docs/img/round2.png"
  fi
else
  log "no chart (gnuplot not installed: scripts/deps.sh --bench)"
fi

finish_runs
