#!/usr/bin/env bash
# Throughput vs. number of clients and pipeline depth: GET straight to Redis and through
# bloomproxy (and their ratio), and BF.ADD through bloomproxy, measured with redis-benchmark in
# interleaved rounds against one redis-server. See bench/README.md.
#
# Usage: bench/scaling.sh [--rounds N] [--quick] [--publish] [--help]
#   --rounds N   rounds (default 3): every round runs every point (clients x pipeline), each
#                point as direct GET, proxy GET, proxy BF.ADD back to back
#   --quick      smoke run: 1 round, a tenth of the requests (~15 s)
#   --publish    also copy the chart to docs/img/scaling.png
#
# Environment:
#   CLIENTS_LIST   redis-benchmark -c values (default "1 10 50 200")
#   PIPELINES      redis-benchmark -P values (default "1 16 64")
#   SCALE          multiply every request count by this (default 1; e.g. 2 for steadier runs)
#   N_<C>_<P>      requests per run at C clients, pipeline P (e.g. N_200_64=800000); defaults
#                  are sized for ~1-2 s per run on 2 cores, see n_for below
#   BF             1 = also run BF.ADD through bloomproxy (default 1)
#   KEYSPACE / DATASIZE   redis-benchmark -r / -d for GET (default 100000 / 3)
#   ROUNDS, RUN_TIMEOUT (default 300), BUSY_WARN_PCT (default 15), PLOT (default 1)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

WITH_PUBLISH=1 parse_round_args "$@"   # ROUNDS, QUICK, PUBLISH

CLIENTS_LIST="${CLIENTS_LIST:-1 10 50 200}"
PIPELINES="${PIPELINES:-1 16 64}"
SCALE="${SCALE:-1}"
BF="${BF:-1}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
PLOT="${PLOT:-1}"
BF_KEY=bfs BF_ERROR=0.01 BF_CAPACITY=10000000
for v in $CLIENTS_LIST $PIPELINES; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "bad clients/pipeline value '$v'"; done
[[ "$SCALE" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "bad SCALE '$SCALE'"
[[ "$BF" =~ ^[01]$ ]] || die "BF must be 0 or 1"

# n_for C P: requests per run at C clients and pipeline depth P (the same for the three series
# of a point). Sized from a 2-core run so that the slowest series (BF.ADD through the proxy)
# takes ~2-3 s and the others ~0.5-2 s: about a minute per round, ~3-4 min for the default grid
# and 3 rounds.
n_for() {
  local c="$1" p="$2" n var="N_$1_$2"
  if [[ -n "${!var:-}" ]]; then
    n="${!var}"
  else
    case "$c:$p" in
      1:1) n=15000 ;;    10:1) n=60000 ;;    50:1) n=150000 ;;   200:1) n=200000 ;;
      1:16) n=100000 ;;  10:16) n=300000 ;;  50:16) n=500000 ;;  200:16) n=500000 ;;
      1:64) n=250000 ;;  10:64) n=600000 ;;  50:64) n=800000 ;;  200:64) n=800000 ;;
      *) # other points: ~10 k/s per connection at P1, growing with the pipeline, capped
         n=$((c * 10000 * (p < 16 ? p : 16))); ((n > 800000)) && n=800000; ((n < 15000)) && n=15000 ;;
    esac
  fi
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "bad request count '$n' for c$c P$p"
  n="$(awk -v n="$n" -v s="$SCALE" -v q="$QUICK" 'BEGIN { n *= s; if (q) n /= 10; printf "%d", n }')"
  # every connection should get a few full pipelines
  ((n < 4 * c * p)) && n=$((4 * c * p))
  echo "$n"
}

command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

POINTS=()
for p in $PIPELINES; do for c in $CLIENTS_LIST; do POINTS+=("$c:$p:$(n_for "$c" "$p")"); done; done

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/scaling-$STAMP.csv"
MD="$BENCH_DIR/results/scaling-$STAMP.md"

max_c=0
for c in $CLIENTS_LIST; do ((c > max_c)) && max_c=$c; done
raise_nofile $((max_c * 2 + 1024))

bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$REDIS_PORT" direct || die "redis-server does not pass a SET/GET round trip"
sanity_check "$PROXY_PORT" proxy || die "bloomproxy does not pass a SET/GET round trip; not benchmarking"

rcli() { redis-cli -h 127.0.0.1 -p "$@"; }

BF_SKIPPED=""
if ((BF)) && ! why="$(bf_supported "$PROXY_PORT")"; then
  BF_SKIPPED="bloomproxy does not answer BF.* ($why)"
  log "WARNING: BF.ADD skipped: $BF_SKIPPED"
  BF=0
fi
# (Re)create the filter. Called again before a BF.ADD run that would take it past its capacity
# (it would then scale: add a sub-filter, and every later BF.ADD would do more work).
BF_ADDED=0
BF_RESERVES=0
bf_reserve() {
  rcli "$PROXY_PORT" DEL "$BF_KEY" >/dev/null
  local got
  got="$(rcli "$PROXY_PORT" BF.RESERVE "$BF_KEY" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY through bloomproxy: $got"
  BF_ADDED=0
  BF_RESERVES=$((BF_RESERVES + 1))
}
((BF)) && bf_reserve

# Fill the keyspace (directly) so GETs hit: 3 x KEYSPACE random SETs cover ~95% of the keys.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) directly in redis"
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t set -n $((3 * KEYSPACE)) -c 20 -P 32 \
  -r "$KEYSPACE" -d "$DATASIZE" -q --csv >/dev/null 2>"$BENCH_TMP/prefill.err" \
  || { _show_log "$BENCH_TMP/prefill.err"; die "prefill failed"; }

# Short unrecorded warm-up (connections, allocator growth). redis-benchmark spins forever on a
# port that refuses connections: hence the timeouts.
WARM=(timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 -q --csv -n 5000 -c 10)
"${WARM[@]}" -p "$REDIS_PORT" -t get -r "$KEYSPACE" >/dev/null 2>&1 || log "warning: warm-up against redis failed"
"${WARM[@]}" -p "$PROXY_PORT" -t get -r "$KEYSPACE" >/dev/null 2>&1 || log "warning: warm-up against bloomproxy failed"
if ((BF)); then
  "${WARM[@]}" -p "$PROXY_PORT" -r 100000000 BF.ADD "$BF_KEY" __rand_int__ >/dev/null 2>&1 \
    || log "warning: BF.ADD warm-up failed"
  BF_ADDED=5000
fi
services_alive

echo "round,clients,pipeline,requests,test,target,rps,avg_latency_ms,p50_latency_ms,p99_latency_ms,other_cpu_pct,steal_pct" >"$CSV"

SERIES=("GET direct" "GET proxy")
((BF)) && SERIES+=("BF.ADD proxy")
TOTAL=$((ROUNDS * ${#POINTS[@]} * ${#SERIES[@]}))
RUN=0
FAILED=0
est="$(for pt in "${POINTS[@]}"; do echo "${pt##*:}"; done | awk -v r="$ROUNDS" -v s="${#SERIES[@]}" \
  '{ n += $1 } END { printf "%.0f", r * (n * s / 250000 + NR * s * 0.3) / 60 + 0.5 }')"
log "benchmark: $ROUNDS round(s) x ${#POINTS[@]} point(s) (clients [$CLIENTS_LIST] x pipeline [$PIPELINES])" \
  "x [${SERIES[*]}]; requests per run: $(printf '%s ' "${POINTS[@]}" | sed 's/\([0-9]*\):\([0-9]*\):/c\1P\2=/g');" \
  "roughly $est min; raw results -> ${CSV#"$REPO_ROOT"/}"

# run_one ROUND C P N TEST TARGET PORT [redis-benchmark args...]
run_one() {
  local r="$1" c="$2" p="$3" n="$4" test="$5" t="$6" port="$7"
  shift 7
  local out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0 snap0 snap1 other steal row load=""
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" -c "$c" -P "$p" -q --csv "$@" \
    >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # "GET","93457.95","0.309","0.080","0.279","0.479","1.023","1.751"
  row="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$r,$c,$p,$n,$test,$t" -v post="$other,$steal" \
    'NR > 1 && NF >= 8 && $2 + 0 > 0 {print pre, $2, $3, $5, $7, post; exit}')"
  if ((rc != 0)) || [[ -z "$row" ]] || grep -qiE '^(error|err )|error from server' "$err" "$out"; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r c$c P$p $test $t: FAILED (exit $rc)"
    _show_log "$err"
    services_alive
    return 0
  fi
  echo "$row" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
  log "[$RUN/$TOTAL] round $r c$c P$p n=$n $test $t: $(cut -d, -f7 <<<"$row" | xargs printf '%.0f') req/s$load"
}

for ((r = 1; r <= ROUNDS; r++)); do
  for pt in "${POINTS[@]}"; do
    IFS=: read -r c p n <<<"$pt"
    run_one "$r" "$c" "$p" "$n" GET direct "$REDIS_PORT" -t get -r "$KEYSPACE" -d "$DATASIZE"
    run_one "$r" "$c" "$p" "$n" GET proxy "$PROXY_PORT" -t get -r "$KEYSPACE" -d "$DATASIZE"
    if ((BF)); then
      if ((BF_ADDED + n > BF_CAPACITY)); then
        log "filter $BF_KEY would pass its capacity: recreating it"
        bf_reserve
      fi
      run_one "$r" "$c" "$p" "$n" BF.ADD proxy "$PROXY_PORT" -r 100000000 BF.ADD "$BF_KEY" __rand_int__
      BF_ADDED=$((BF_ADDED + n))
    fi
  done
done

BF_STATE=""
if ((BF)); then
  nf="$(rcli "$PROXY_PORT" BF.INFO "$BF_KEY" FILTERS 2>&1)"
  items="$(rcli "$PROXY_PORT" BF.INFO "$BF_KEY" ITEMS 2>&1)"
  BF_STATE="filter $BF_KEY: BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY through the proxy (created $BF_RESERVES time(s)), $items items and $nf sub-filter(s) at the end"
  [[ "$nf" == 1 ]] || log "warning: $BF_KEY has $nf sub-filters: it scaled, later BF.ADD runs did more work"
fi

{
  echo "## Throughput vs. clients and pipeline depth ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $(nproc) CPU(s)," \
    "$ROUNDS interleaved round(s); GET: -r $KEYSPACE -d $DATASIZE (keyspace ~95% filled);" \
    "BF.ADD: \`BF.ADD $BF_KEY __rand_int__\` -r 100000000;" \
    "proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}; host CPU busy before start: ${HOST_BUSY}%"
  echo
  BF_NOTE="${BF_STATE:-${BF_SKIPPED:+BF.ADD skipped: $BF_SKIPPED}}" \
    "$BENCH_PY" - "$CSV" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, os, statistics, sys
from collections import OrderedDict, defaultdict

path, busy_warn = sys.argv[1], float(sys.argv[2])
rps = defaultdict(list)
by_round = defaultdict(dict)
points = OrderedDict()
loads = []
with open(path) as f:
    for row in csv.DictReader(f):
        pt = (int(row["clients"]), int(row["pipeline"]), row["requests"])
        points[pt] = None
        s = (row["test"], row["target"])
        rps[pt + s].append(float(row["rps"]))
        by_round[pt + s][row["round"]] = float(row["rps"])
        loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))

def med(xs):
    return statistics.median(xs) if xs else None

def fmt(x):
    return f"{x:,.0f}" if x is not None else "n/a"

def runs(xs):
    return " / ".join(f"{x:.0f}" for x in xs) if xs else "(failed)"

has_bf = any(k[3] == "BF.ADD" for k in rps)
head = "| clients | pipeline | requests | GET direct | runs | GET bloomproxy | runs | proxy/direct | per-round proxy/direct |"
sep = "|---:|---:|---:|---:|---|---:|---|---:|---:|"
if has_bf:
    head += " BF.ADD bloomproxy | runs |"
    sep += "---:|---|"
print("Median req/s over the rounds, and the runs in round order:")
print()
print(head)
print(sep)
for pt in sorted(points, key=lambda k: (k[1], k[0])):
    c, p, n = pt
    d, x = rps[pt + ("GET", "direct")], rps[pt + ("GET", "proxy")]
    md, mx = med(d), med(x)
    ra, rb = by_round[pt + ("GET", "proxy")], by_round[pt + ("GET", "direct")]
    pr = [ra[r] / rb[r] for r in ra if rb.get(r)]
    line = (f"| {c} | {p} | {n} | {fmt(md)} | {runs(d)} | {fmt(mx)} | {runs(x)} "
            f"| {f'{mx / md:.2f}' if md and mx else ''} | {f'{statistics.median(pr):.2f}' if pr else ''} |")
    if has_bf:
        b = rps[pt + ("BF.ADD", "proxy")]
        line += f" {fmt(med(b))} | {runs(b)} |"
    print(line)

if loads:
    noisy = sum(1 for v in loads if v >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. hypervisor steal) during the runs: mean"
          f" {statistics.mean(loads):.0f}%, max {max(loads):.0f}% of the machine;"
          f" {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%"
          + ("" if not noisy else
             " (marked NOISY in the progress output; the medians absorb a few such runs)"
             if noisy * 5 <= len(loads) else
             " - too many disturbed runs: these numbers are noisy, rerun on a quiet machine"))
note = os.environ.get("BF_NOTE", "")
if note:
    print()
    print(note)
EOF
} | tee "$MD"

if ((PLOT)); then
  if command -v gnuplot >/dev/null; then
    plot_args=("$CSV")
    ((PUBLISH)) && plot_args=(--publish "$CSV")
    "$BENCH_DIR/plot.sh" "${plot_args[@]}" || log "warning: plot.sh failed; the results are in ${CSV#"$REPO_ROOT"/}"
  else
    log "gnuplot not installed (scripts/deps.sh --bench): no chart; PLOT=0 silences this"
  fi
fi

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
