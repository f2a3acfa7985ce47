#!/usr/bin/env bash
# Throughput of bloomproxy in front of a Redis Cluster vs. redis-benchmark --cluster straight to
# the cluster's masters (SET/GET), and BF.ADD through the proxy; for reference the same proxy
# binary in front of one standalone redis-server, in the same interleaved rounds. See
# bench/README.md.
#
# Usage: bench/cluster.sh [--rounds N] [--quick] [--help]
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   MASTERS      cluster masters, no replicas (default 3)
#   CLIENTS      redis-benchmark -c (default 50)
#   PIPELINE     redis-benchmark -P (default 16)
#   N            requests per SET/GET run (default 2000000: see the note on --cluster below)
#   BF_N         requests per BF.ADD run (default 500000)
#   KEYSPACE     redis-benchmark -r of the SET/GET runs (default 100000)
#   DATASIZE     redis-benchmark -d (default 3)
#   STANDALONE   1 = also bloomproxy in front of one redis-server (default 1)
#   ROUNDS       rounds (default 3; --rounds wins)
#   RUN_TIMEOUT  seconds before one redis-benchmark run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
#
# redis-benchmark --cluster runs a thread per master and measures its elapsed time in steps of
# 250 ms (rounded up), so a short direct run understates the cluster's rate: the runs are long
# by default, and the table says how much the rounding can cost at most.
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

MASTERS="${MASTERS:-3}"
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
N="${N:-2000000}"
BF_N="${BF_N:-500000}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
STANDALONE="${STANDALONE:-1}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
for v in MASTERS CLIENTS PIPELINE N BF_N KEYSPACE DATASIZE RUN_TIMEOUT; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (is '${!v}')"
done
[[ "$STANDALONE" =~ ^[01]$ ]] || die "STANDALONE must be 0 or 1"
((MASTERS >= 3)) || die "redis-benchmark --cluster needs at least 3 masters (MASTERS=$MASTERS)"
((QUICK)) && N=$(((N + 9) / 10)) BF_N=$(((BF_N + 9) / 10))
# One filter, as in compare.sh: big enough never to scale during the runs.
BF_KEY=bfk BF_ERROR=0.01 BF_CAPACITY=10000000

command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/cluster-$STAMP.csv"
MD="$BENCH_DIR/results/cluster-$STAMP.md"

# start_cluster COUNT -> CLUSTER_PORTS (array): COUNT masters on free ports, each with its cluster
# bus on a free port of its own (cluster-port, so no port + 10000 has to be free), joined by
# redis-cli --cluster create, waited for until every node says cluster_state:ok.
start_cluster() {
  local count="$1" i port bus dir addrs=() deadline
  CLUSTER_PORTS=()
  for ((i = 0; i < count; i++)); do
    free_port port
    free_port bus
    dir="$BENCH_TMP/cluster-node$i"
    mkdir -p "$dir"
    launch_redis "$port" "$dir" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-port "$bus" --cluster-node-timeout 5000
    wait_for_port "$port" "$REDIS_PID" "cluster node $i" "$dir/redis.log"
    CLUSTER_PORTS+=("$port")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
    >"$BENCH_TMP/cluster-create.log" 2>&1 \
    || { _show_log "$BENCH_TMP/cluster-create.log"; die "redis-cli --cluster create failed"; }
  deadline=$((SECONDS + 3 * STARTUP_TIMEOUT))
  for port in "${CLUSTER_PORTS[@]}"; do
    until redis-cli -h 127.0.0.1 -p "$port" CLUSTER INFO | tr -d '\r' | grep -qx 'cluster_state:ok'; do
      ((SECONDS < deadline)) || die "cluster node :$port not cluster_state:ok in time"
      sleep 0.1
    done
  done
  log "redis cluster: $count masters on ${CLUSTER_PORTS[*]}"
}

# start_bloomproxy_cluster SEEDS -> PROXY_PORT, PROXY_PID (as lib.sh's start_bloomproxy, with
# --upstream-cluster SEEDS instead of --upstream).
start_bloomproxy_cluster() {
  local seeds="$1" dir
  [[ -x "$BLOOMPROXY_BIN" ]] || die "bloomproxy binary not found at $BLOOMPROXY_BIN (build it, or set BLOOMPROXY_BIN)"
  dir="$BENCH_TMP/bloomproxy-cluster-$RANDOM$RANDOM"
  mkdir -p "$dir"
  free_port PROXY_PORT
  # shellcheck disable=SC2086  # BLOOMPROXY_ARGS is deliberately word-split
  "$BLOOMPROXY_BIN" --bind 127.0.0.1 --port "$PROXY_PORT" --upstream-cluster "$seeds" \
    $BLOOMPROXY_ARGS >"$dir/bloomproxy.log" 2>&1 &
  PROXY_PID=$!
  track_pid "$PROXY_PID" "bloomproxy :$PROXY_PORT (cluster)"
  wait_for_port "$PROXY_PORT" "$PROXY_PID" bloomproxy "$dir/bloomproxy.log"
  log "bloomproxy pid $PROXY_PID on 127.0.0.1:$PROXY_PORT -> cluster $seeds ($BLOOMPROXY_BIN)"
}

bench_init
check_host_idle
start_cluster "$MASTERS"
SEEDS="$(printf '127.0.0.1:%s,' "${CLUSTER_PORTS[@]}")"
start_bloomproxy_cluster "${SEEDS%,}"
declare -A PORT=([proxy]="$PROXY_PORT")
# (--cluster: redis-benchmark asks this node for the others and sends each key to its master.)
declare -A CLUSTER_ARG=([direct]="--cluster" [proxy]="" [standalone]="")
PORT[direct]="${CLUSTER_PORTS[0]}"
TARGETS="direct proxy"
BF_TARGETS="proxy"
if ((STANDALONE)); then
  # shellcheck disable=SC2119  # no extra redis-server args here
  start_redis
  start_bloomproxy "$REDIS_PORT"
  PORT[standalone]="$PROXY_PORT"
  TARGETS+=" standalone"
  BF_TARGETS+=" standalone"
fi

# Functional checks: a SET/GET round trip on every target, BF.* through every proxy.
got="$(redis-cli -c -h 127.0.0.1 -p "${PORT[direct]}" SET bloombench:sanity ok 2>&1)"
[[ "$got" == OK ]] || die "SET through redis-cli -c on the cluster: $got"
got="$(redis-cli -c -h 127.0.0.1 -p "${PORT[direct]}" GET bloombench:sanity 2>&1)"
[[ "$got" == ok ]] || die "GET through redis-cli -c on the cluster: $got"
for t in $TARGETS; do
  [[ "$t" == direct ]] && continue
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done
for t in $BF_TARGETS; do
  why="$(bf_supported "${PORT[$t]}")" || die "$t does not answer BF.* ($why)"
  got="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.RESERVE "$BF_KEY" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY through $t: $got"
done

# Fill ~95% of the keyspace of every target, so GETs hit from the first round on. redis-benchmark
# --cluster names its keys key:{tag}:N (a tag per master) and the others key:N, so the direct
# keys are set directly and the proxies' keys through the proxies.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) for every target"
for t in $TARGETS; do
  # shellcheck disable=SC2086  # CLUSTER_ARG is empty or one word
  redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" ${CLUSTER_ARG[$t]} -t set -n $((3 * KEYSPACE)) \
    -c 20 -P 32 -r "$KEYSPACE" -d "$DATASIZE" -q --csv >/dev/null 2>"$BENCH_TMP/prefill.err" \
    || { _show_log "$BENCH_TMP/prefill.err"; die "prefill of $t failed"; }
done
total=0
for port in "${CLUSTER_PORTS[@]}"; do
  total=$((total + $(redis-cli -h 127.0.0.1 -p "$port" DBSIZE)))
done
log "the cluster now holds $total keys"

# run_one ROUND TEST TARGET REQUESTS [redis-benchmark args...]: one run, appended to the CSV
# (TEST empty: one row per test redis-benchmark reports, -t set,get).
RUN=0
FAILED=0
TOTAL=$((ROUNDS * ($(wc -w <<<"$TARGETS") + $(wc -w <<<"$BF_TARGETS"))))
run_one() {
  local r="$1" test="$2" t="$3" n="$4" out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0
  local snap0 snap1 other steal rows load=""
  shift 4
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  # shellcheck disable=SC2086  # CLUSTER_ARG is empty or one word
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" ${CLUSTER_ARG[$t]} -n "$n" -c "$CLIENTS" \
    -P "$PIPELINE" -q --csv "$@" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  ((rc == 130 || rc == 143)) && { log "interrupted; partial raw results in ${CSV#"$REPO_ROOT"/}"; exit 130; }
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # Lines look like "SET","93457.95","0.309",... (redis-benchmark --cluster first prints the
  # masters it found: those lines have fewer fields).
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
  "against [$TARGETS]; BF.ADD $BF_KEY __rand_int__ -n $BF_N through [$BF_TARGETS]"
for ((r = 1; r <= ROUNDS; r++)); do
  for t in $TARGETS; do
    run_one "$r" "" "$t" "$N" -t set,get -r "$KEYSPACE" -d "$DATASIZE"
  done
  for t in $BF_TARGETS; do
    run_one "$r" BF.ADD "$t" "$BF_N" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
  done
done

for t in $BF_TARGETS; do
  nf="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.INFO "$BF_KEY" FILTERS)"
  [[ "$nf" == 1 ]] || log "warning: $BF_KEY through $t now has $nf sub-filters (it scaled)"
done

{
  echo "## bloomproxy in front of a Redis Cluster ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $MASTERS masters (no replicas), $(nproc) CPU(s), $ROUNDS interleaved round(s), -c $CLIENTS -P $PIPELINE; direct = \`redis-benchmark --cluster\` to the masters, proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/} --upstream-cluster${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}$( ((STANDALONE)) && echo ", standalone = the same binary --upstream one redis-server"); BF.ADD on one filter (\`BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY\`, so on one master); host CPU busy before start: ${HOST_BUSY}%"
  echo
  "$BENCH_PY" - "$CSV" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, busy_warn = sys.argv[1], float(sys.argv[2])
rps, p50, by_round, tests, loads = defaultdict(list), defaultdict(list), defaultdict(dict), OrderedDict(), []
n_of = {}
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["test"], row["target"])
        tests[row["test"]] = None
        rps[k].append(float(row["rps"]))
        p50[k].append(float(row["p50_latency_ms"]))
        by_round[k][row["round"]] = float(row["rps"])
        n_of[k] = int(row["requests"])
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

print("| test | target | median req/s | runs (req/s) | median p50 ms | vs direct | vs standalone |")
print("|---|---|---:|---|---:|---:|---:|")
for test in tests:
    for t in ("direct", "proxy", "standalone"):
        k = (test, t)
        if not rps[k]:
            continue
        vs_d = ratio(med(k), med((test, "direct"))) if t != "direct" else ""
        vs_s = ratio(med(k), med((test, "standalone"))) if t == "proxy" else ""
        runs = " / ".join(f"{x:.0f}" for x in rps[k])
        print(f"| {test} | {t} | {med(k):,.0f} | {runs} | {statistics.median(p50[k]):.3f} | {vs_d} | {vs_s} |")

print()
print("Ratios of the medians, and the median of the per-round ratios (each round's runs back to back):")
print()
print("| test | proxy/direct | per-round proxy/direct | proxy/standalone | per-round proxy/standalone |")
print("|---|---:|---:|---:|---:|")
for test in tests:
    print(f"| {test} | {ratio(med((test, 'proxy')), med((test, 'direct')))} "
          f"| {paired(test, 'proxy', 'direct')} "
          f"| {ratio(med((test, 'proxy')), med((test, 'standalone')))} "
          f"| {paired(test, 'proxy', 'standalone')} |")
if rps[("SET", "direct")]:
    worst = max(250.0 * med((test, "direct")) / n_of[(test, "direct")] / 10
                for test in tests if rps[(test, "direct")])
    print()
    print(f"direct: redis-benchmark --cluster measures time in 250 ms steps, rounded up; at"
          f" these run lengths that understates direct by up to {worst:.0f}% (more requests per"
          f" run, N, make it smaller)")
if loads:
    noisy = sum(1 for x in loads if x >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. steal) during the runs: mean {statistics.mean(loads):.0f}%,"
          f" max {max(loads):.0f}% of the machine; {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%")
EOF
} | tee "$MD"

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
