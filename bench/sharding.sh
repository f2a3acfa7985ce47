#!/usr/bin/env bash
# Throughput of bloomproxy in front of twemproxy (nutcracker) sharding over redis-servers
# (--upstream-kind sharding-proxy): SET/GET straight to nutcracker, through bloomproxy ->
# nutcracker, and straight to one of the redis-servers; BF.ADD / BF.EXISTS through bloomproxy ->
# nutcracker and, for reference, through the same proxy binary in front of one redis-server; all
# in the same interleaved rounds. See bench/README.md.
#
# Usage: bench/sharding.sh [--rounds N] [--quick] [--help]
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   SERVERS      redis-servers behind nutcracker (default 2)
#   CLIENTS      redis-benchmark -c (default 50)
#   PIPELINE     redis-benchmark -P (default 16)
#   N            requests per SET/GET run (default 1000000)
#   BF_N         requests per BF.ADD / BF.EXISTS run (default 500000)
#   KEYSPACE     redis-benchmark -r of the SET/GET runs (default 100000)
#   DATASIZE     redis-benchmark -d (default 3)
#   STANDALONE   1 = also BF.* through bloomproxy in front of one redis-server (default 1)
#   ROUNDS       rounds (default 3; --rounds wins)
#   RUN_TIMEOUT  seconds before one redis-benchmark run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, NUTCRACKER_BIN, NUTCRACKER_VERBOSITY   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

ROUNDS="${ROUNDS:-3}"
QUICK=0
while (($#)); do
  case "$1" in
    --rounds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die "--rounds needs a positive integer"
              ROUNDS="$2"; shift 2 ;;
    --rounds=*) ROUNDS="${1#*=}"; [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "bad --rounds"; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument: $1" ;;
  esac
done
((QUICK)) && ROUNDS=1

SERVERS="${SERVERS:-2}"
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
N="${N:-1000000}"
BF_N="${BF_N:-500000}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
STANDALONE="${STANDALONE:-1}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
for v in SERVERS CLIENTS PIPELINE N BF_N KEYSPACE DATASIZE RUN_TIMEOUT; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (is '${!v}')"
done
[[ "$STANDALONE" =~ ^[01]$ ]] || die "STANDALONE must be 0 or 1"
((SERVERS >= 2)) || die "SERVERS must be at least 2 (is $SERVERS): nothing is sharded with one"
((QUICK)) && N=$(((N + 9) / 10)) BF_N=$(((BF_N + 9) / 10))
# One filter, as in compare.sh and cluster.sh: big enough never to scale during the runs. Its name
# has no braces, so behind nutcracker all its keys ({bfk}:bf:...) are on one server.
BF_KEY=bfk BF_ERROR=0.01 BF_CAPACITY=10000000
# The nutcracker pool: what the integration tests' fixture (tests/integration/bp_nutcracker.py)
# and typical sharded fleets use.
TW_HASH=fnv1a_64 TW_DISTRIBUTION=ketama

command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/sharding-$STAMP.csv"
MD="$BENCH_DIR/results/sharding-$STAMP.md"

# start_nutcracker_sharded PORT... -> TWEM_PORT, TWEM_PID: as lib.sh's start_nutcracker (one
# preconnected server connection, no ejection, stats on a free loopback port), but one pool over
# all the given redis-servers, sharded by hash tag ({...}) with TW_HASH / TW_DISTRIBUTION.
start_nutcracker_sharded() {
  command -v "$NUTCRACKER_BIN" >/dev/null || die "nutcracker not found"
  local dir="$BENCH_TMP/nutcracker-sharded-$RANDOM$RANDOM" stats_port i=0 port
  mkdir -p "$dir"
  free_port TWEM_PORT
  free_port stats_port
  {
    echo "bench:"
    echo "  listen: 127.0.0.1:$TWEM_PORT"
    echo "  hash: $TW_HASH"
    echo '  hash_tag: "{}"'
    echo "  distribution: $TW_DISTRIBUTION"
    echo "  redis: true"
    echo "  preconnect: true"
    echo "  server_connections: 1"
    echo "  auto_eject_hosts: false"
    echo "  servers:"
    for port in "$@"; do
      echo "   - 127.0.0.1:$port:1 server$i"
      i=$((i + 1))
    done
  } >"$dir/nutcracker.yml"
  "$NUTCRACKER_BIN" -t -c "$dir/nutcracker.yml" >"$dir/conftest.log" 2>&1 \
    || { _show_log "$dir/conftest.log"; die "nutcracker rejected its generated config"; }
  "$NUTCRACKER_BIN" -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -p "$dir/nutcracker.pid" \
    -a 127.0.0.1 -s "$stats_port" -v "${NUTCRACKER_VERBOSITY:-4}" >"$dir/stdout.log" 2>&1 &
  TWEM_PID=$!
  track_pid "$TWEM_PID" "nutcracker :$TWEM_PORT"
  wait_for_port "$TWEM_PORT" "$TWEM_PID" nutcracker "$dir/nutcracker.log"
  log "nutcracker pid $TWEM_PID on 127.0.0.1:$TWEM_PORT -> $(printf '127.0.0.1:%s ' "$@")($TW_HASH, $TW_DISTRIBUTION, hash_tag {})"
}

# start_bloomproxy_sharding NUTCRACKER_PORT -> PROXY_PORT, PROXY_PID, PROXY_LOG (lib.sh's
# start_bloomproxy with --upstream-kind sharding-proxy).
start_bloomproxy_sharding() {
  start_bloomproxy "$1" --upstream-kind sharding-proxy
  log "bloomproxy :$PROXY_PORT runs with --upstream-kind sharding-proxy"
}

bench_init
check_host_idle
SHARD_PORTS=()
for ((i = 0; i < SERVERS; i++)); do
  # shellcheck disable=SC2119  # no extra redis-server args here
  start_redis
  SHARD_PORTS+=("$REDIS_PORT")
done
start_nutcracker_sharded "${SHARD_PORTS[@]}"
start_bloomproxy_sharding "$TWEM_PORT"
declare -A PORT=([twemproxy]="$TWEM_PORT" [proxy]="$PROXY_PORT" [direct]="${SHARD_PORTS[0]}")
TARGETS="twemproxy proxy direct"
BF_TARGETS="proxy"
if ((STANDALONE)); then
  # shellcheck disable=SC2119  # no extra redis-server args here
  start_redis
  start_bloomproxy "$REDIS_PORT"
  PORT[standalone]="$PROXY_PORT"
  BF_TARGETS+=" standalone"
fi

# Functional checks: a SET/GET round trip on every target, the proxy in sharding-proxy mode,
# BF.* through every proxy.
for t in $TARGETS; do
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done
kind="$(info_field "${PORT[proxy]}" upstream_kind proxy)" || kind="(INFO proxy failed)"
[[ "$kind" == sharding-proxy ]] || die "bloomproxy :${PORT[proxy]} says upstream_kind:$kind, expected sharding-proxy"
for t in $BF_TARGETS; do
  why="$(bf_supported "${PORT[$t]}")" || die "$t does not answer BF.* ($why)"
  got="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.RESERVE "$BF_KEY" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY through $t: $got"
done
# Behind nutcracker the filter (its metadata key and its {bfk}:bf:... keys) must be whole on one
# server; see which one (before the prefill, so KEYS is cheap).
BF_SERVER=""
for i in "${!SHARD_PORTS[@]}"; do
  meta="$(redis-cli -h 127.0.0.1 -p "${SHARD_PORTS[i]}" EXISTS "$BF_KEY")"
  nkeys="$(redis-cli -h 127.0.0.1 -p "${SHARD_PORTS[i]}" KEYS "{$BF_KEY}:bf:*" | grep -c . || true)"
  if ((meta > 0 || nkeys > 0)); then
    [[ -z "$BF_SERVER" ]] || die "filter $BF_KEY has keys on server$BF_SERVER and server$i"
    ((meta == 1 && nkeys > 0)) || die "server$i holds $meta metadata key(s) and $nkeys data key(s) of $BF_KEY"
    BF_SERVER="$i"
  fi
done
[[ -n "$BF_SERVER" ]] || die "filter $BF_KEY reserved through the proxy is on none of the servers"
log "filter $BF_KEY is on server$BF_SERVER (127.0.0.1:${SHARD_PORTS[BF_SERVER]})"

# Fill ~95% of the keyspace, so GETs hit from the first round on: through nutcracker (each server
# gets the keys nutcracker sends it; the proxy reads the same keys) and straight into the direct
# server (which then holds every key:N, also those nutcracker sends elsewhere).
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) through nutcracker and in the direct server"
for t in twemproxy direct; do
  redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" -t set -n $((3 * KEYSPACE)) \
    -c 20 -P 32 -r "$KEYSPACE" -d "$DATASIZE" -q --csv >/dev/null 2>"$BENCH_TMP/prefill.err" \
    || { _show_log "$BENCH_TMP/prefill.err"; die "prefill of $t failed"; }
done
SPREAD=""
for i in "${!SHARD_PORTS[@]}"; do
  n="$(redis-cli -h 127.0.0.1 -p "${SHARD_PORTS[i]}" DBSIZE)"
  ((n > 0)) || die "server$i holds no keys after the prefill through nutcracker: nothing is sharded"
  SPREAD+="${SPREAD:+, }server$i $n"
done
log "keys per server: $SPREAD (server0 is also the direct target)"

# run_one ROUND TEST TARGET REQUESTS [redis-benchmark args...]: one run, appended to the CSV
# (TEST empty: one row per test redis-benchmark reports, -t set,get).
RUN=0
FAILED=0
TOTAL=$((ROUNDS * ($(wc -w <<<"$TARGETS") + 2 * $(wc -w <<<"$BF_TARGETS"))))
run_one() {
  local r="$1" test="$2" t="$3" n="$4" out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0
  local snap0 snap1 other steal rows load=""
  shift 4
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" -n "$n" -c "$CLIENTS" \
    -P "$PIPELINE" -q --csv "$@" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  ((rc == 130 || rc == 143)) && { log "interrupted; partial raw results in ${CSV#"$REPO_ROOT"/}"; exit 130; }
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # Lines look like "SET","93457.95","0.309",... (redis-benchmark also warns on stderr that it
  # could not fetch CONFIG: nutcracker and bloomproxy in sharding-proxy mode refuse CONFIG).
  rows="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$r" -v t="$t" -v n="$n" -v name="$test" \
    -v post="$other,$steal" '$1 != "test" && NF >= 8 && $2 + 0 > 0 {print pre, (name != "" ? name : $1), t, n, $2, $5, post}')"
  if ((rc != 0)) || [[ -z "$rows" ]] || grep -qiE '^(error|err )|error from server' "$err" "$out"; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r ${test:-SET/GET} $t: FAILED (exit $rc)"
    _show_log "$err"
    for pid in "${_BENCH_PIDS[@]}"; do
      pid_alive "$pid" || die "a server this script started (pid $pid) is gone; aborting"
    done
    return 0
  fi
  printf '%s\n' "$rows" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}%)"
  log "[$RUN/$TOTAL] round $r $t: $(awk -F, '{printf "%s%s %.0f", (NR > 1 ? ", " : ""), $2, $5}' <<<"$rows") req/s$load"
}

echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
log "benchmark: $ROUNDS round(s); SET/GET -c $CLIENTS -P $PIPELINE -n $N -r $KEYSPACE -d $DATASIZE" \
  "against [$TARGETS]; BF.ADD/BF.EXISTS $BF_KEY __rand_int__ -n $BF_N through [$BF_TARGETS]"
for ((r = 1; r <= ROUNDS; r++)); do
  for t in $TARGETS; do
    run_one "$r" "" "$t" "$N" -t set,get -r "$KEYSPACE" -d "$DATASIZE"
  done
  for cmd in BF.ADD BF.EXISTS; do
    for t in $BF_TARGETS; do
      run_one "$r" "$cmd" "$t" "$BF_N" -r 100000000 "$cmd" "$BF_KEY" __rand_int__
    done
  done
done

for t in $BF_TARGETS; do
  nf="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.INFO "$BF_KEY" FILTERS)"
  [[ "$nf" == 1 ]] || log "warning: $BF_KEY through $t now has $nf sub-filters (it scaled)"
done
conn_errors="$(info_field "${PORT[proxy]}" upstream_connection_errors proxy)" || conn_errors="?"
refused="$(info_field "${PORT[proxy]}" sharding_proxy_refused_commands proxy)" || refused="?"
[[ "$conn_errors" == 0 ]] || log "warning: bloomproxy -> nutcracker lost upstream connections: upstream_connection_errors:$conn_errors"

{
  echo "## bloomproxy in front of twemproxy ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $("$NUTCRACKER_BIN" --version 2>&1 | head -1 | sed 's/^This is //') over $SERVERS redis-servers (hash $TW_HASH, distribution $TW_DISTRIBUTION, hash_tag \"{}\", server_connections 1), $(nproc) CPU(s), $ROUNDS interleaved round(s), -c $CLIENTS -P $PIPELINE; twemproxy = straight to nutcracker, proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/} --upstream-kind sharding-proxy --upstream nutcracker${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}, direct = straight to server0$( ((STANDALONE)) && echo ", standalone = the same binary --upstream one other redis-server"); SET/GET -n $N -r $KEYSPACE -d $DATASIZE; BF.ADD/BF.EXISTS -n $BF_N -r 100000000 on one filter (\`BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY\`, so on one server behind nutcracker); host CPU busy before start: ${HOST_BUSY}%"
  echo
  "$BENCH_PY" - "$CSV" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, busy_warn = sys.argv[1], float(sys.argv[2])
rps, p50, by_round, tests, loads = defaultdict(list), defaultdict(list), defaultdict(dict), OrderedDict(), []
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["test"], row["target"])
        tests[row["test"]] = None
        rps[k].append(float(row["rps"]))
        p50[k].append(float(row["p50_latency_ms"]))
        by_round[k][row["round"]] = float(row["rps"])
        if row["test"] != "GET":  # one figure per run (SET and GET share one)
            loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))

def med(k):
    return statistics.median(rps[k]) if rps[k] else None

def ratio(a, b):
    return f"{a / b:.2f}" if a and b else ""

def paired(test, a, b):
    ra, rb = by_round[(test, a)], by_round[(test, b)]
    rs = [ra[r] / rb[r] for r in ra if rb.get(r)]
    return f"{statistics.median(rs):.2f}" if rs else ""

# (numerator, denominator, label) per test: SET/GET vs. twemproxy and direct; BF.* through the
# proxy in front of nutcracker vs. the proxy in front of one redis-server.
RATIOS = [("proxy", "twemproxy", "proxy/twemproxy"), ("proxy", "direct", "proxy/direct"),
          ("twemproxy", "direct", "twemproxy/direct"), ("proxy", "standalone", "sharding/standalone")]

print("| test | target | median req/s | runs (req/s) | median p50 ms | vs twemproxy | vs direct | vs standalone |")
print("|---|---|---:|---|---:|---:|---:|---:|")
for test in tests:
    for t in ("twemproxy", "proxy", "direct", "standalone"):
        k = (test, t)
        if not rps[k]:
            continue
        vs_tw = ratio(med(k), med((test, "twemproxy"))) if t == "proxy" else ""
        vs_d = ratio(med(k), med((test, "direct"))) if t in ("proxy", "twemproxy") else ""
        vs_s = ratio(med(k), med((test, "standalone"))) if t == "proxy" else ""
        runs = " / ".join(f"{x:.0f}" for x in rps[k])
        print(f"| {test} | {t} | {med(k):,.0f} | {runs} | {statistics.median(p50[k]):.3f} | {vs_tw} | {vs_d} | {vs_s} |")

print()
print("Ratios of the medians, and the median of the per-round ratios (each round's runs back to back):")
print()
print("| test | ratio | of the medians | median of per-round |")
print("|---|---|---:|---:|")
for test in tests:
    for a, b, label in RATIOS:
        if rps[(test, a)] and rps[(test, b)]:
            print(f"| {test} | {label} | {ratio(med((test, a)), med((test, b)))} | {paired(test, a, b)} |")
if loads:
    noisy = sum(1 for x in loads if x >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. steal) during the runs: mean {statistics.mean(loads):.0f}%,"
          f" max {max(loads):.0f}% of the machine; {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%")
EOF
  echo
  echo "Keys per server after the prefill: $SPREAD; filter $BF_KEY on server$BF_SERVER. bloomproxy (sharding-proxy) at the end: upstream_connection_errors:$conn_errors, sharding_proxy_refused_commands:$refused (redis-benchmark's CONFIG GET at the start of each run)."
} | tee "$MD"

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
