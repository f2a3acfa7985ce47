#!/usr/bin/env bash
# Throughput of bloomproxy vs. direct Redis vs. twemproxy (nutcracker), all in front of the same
# redis-server, measured with redis-benchmark in interleaved rounds. See bench/README.md.
#
# Usage: bench/compare.sh [--rounds N] [--quick] [--help]
#
# Environment:
#   CASES        space-separated cases "CLIENTS:PIPELINE[:REQUESTS]"   (default "50:1 50:16 1:1")
#   N            requests per run for cases with more than one client  (default: 200000 if
#                PIPELINE > 1, else 100000)
#   N_SERIAL     requests per run for -c 1 cases                      (default 20000)
#   ROUNDS       rounds (default 3; --rounds wins)
#   TESTS        redis-benchmark -t list (default set,get)
#   KEYSPACE     redis-benchmark -r (default 100000)
#   DATASIZE     redis-benchmark -d (default 3)
#   TARGETS      subset/order of "direct proxy twemproxy" (default all three)
#   RUN_TIMEOUT  seconds before one redis-benchmark run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
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

CASES="${CASES:-50:1 50:16 1:1}"
TESTS="${TESTS:-set,get}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
TARGETS="${TARGETS:-direct proxy twemproxy}"
N_SERIAL="${N_SERIAL:-20000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"

command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

# Parse the cases into parallel arrays.
C_CLIENTS=() C_PIPE=() C_N=() C_NAME=()
for spec in $CASES; do
  IFS=: read -r c p n extra <<<"$spec"
  [[ -z "${extra:-}" && "$c" =~ ^[1-9][0-9]*$ && "$p" =~ ^[1-9][0-9]*$ ]] \
    || die "bad case '$spec' (want CLIENTS:PIPELINE[:REQUESTS])"
  if [[ -z "${n:-}" ]]; then
    if ((c == 1)); then n="$N_SERIAL"
    elif [[ -n "${N:-}" ]]; then n="$N"
    elif ((p > 1)); then n=200000
    else n=100000
    fi
  fi
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "bad request count '$n' in case '$spec'"
  ((QUICK)) && n=$(((n + 9) / 10))
  C_CLIENTS+=("$c") C_PIPE+=("$p") C_N+=("$n") C_NAME+=("c${c} P${p}")
done
((${#C_NAME[@]})) || die "no cases"
for t in $TARGETS; do
  [[ "$t" == direct || "$t" == proxy || "$t" == twemproxy ]] || die "unknown target '$t'"
done

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/compare-$STAMP.csv"
MD="$BENCH_DIR/results/compare-$STAMP.md"

bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
declare -A PORT=([direct]="$REDIS_PORT")
for t in $TARGETS; do
  case "$t" in
    proxy) start_bloomproxy "$REDIS_PORT"; PORT[proxy]="$PROXY_PORT" ;;
    twemproxy) start_nutcracker "$REDIS_PORT"; PORT[twemproxy]="$TWEM_PORT" ;;
  esac
done
for t in $TARGETS; do
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done

# Fill the keyspace (directly) so GETs hit from the first round on: 3 x KEYSPACE random SETs
# cover ~95% of the keys.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) directly in redis"
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t set -n $((3 * KEYSPACE)) -c 20 -P 32 \
  -r "$KEYSPACE" -d "$DATASIZE" -q --csv >/dev/null 2>"$BENCH_TMP/prefill.err" \
  || { _show_log "$BENCH_TMP/prefill.err"; die "prefill failed"; }
log "redis now holds $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" DBSIZE) keys"

# Short unrecorded warm-up through every target (first connections, allocator growth, caches).
for t in $TARGETS; do
  redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" -t "$TESTS" -n 5000 -c 10 -r "$KEYSPACE" \
    -d "$DATASIZE" -q --csv >/dev/null 2>&1 || log "warning: warm-up against $t failed"
done

echo "round,case,clients,pipeline,requests,test,target,rps,avg_latency_ms,p50_latency_ms,p99_latency_ms,other_cpu_pct,steal_pct" >"$CSV"

TOTAL=$((ROUNDS * ${#C_NAME[@]} * $(wc -w <<<"$TARGETS")))
RUN=0
FAILED=0
log "benchmark: $ROUNDS round(s) x ${#C_NAME[@]} case(s) x targets [$TARGETS]; tests $TESTS;" \
  "-r $KEYSPACE -d $DATASIZE; raw results -> ${CSV#"$REPO_ROOT"/}"
for ((r = 1; r <= ROUNDS; r++)); do
  for i in "${!C_NAME[@]}"; do
    c="${C_CLIENTS[i]}" p="${C_PIPE[i]}" n="${C_N[i]}"
    for t in $TARGETS; do
      RUN=$((RUN + 1))
      out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err"
      rc=0
      snap0="$(cpu_snapshot)"
      timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
        redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" -t "$TESTS" -n "$n" -c "$c" -P "$p" \
        -r "$KEYSPACE" -d "$DATASIZE" -q --csv >"$out" 2>"$err" || rc=$?
      snap1="$(cpu_snapshot)"
      # CTRL-C reaches redis-benchmark too (exit 130). Our INT trap normally fires as well, but
      # not if SIGINT was ignored when the script started (launched in the background)...
      if ((rc == 130 || rc == 143)); then
        log "interrupted; partial raw results in ${CSV#"$REPO_ROOT"/}"
        exit 130
      fi
      # Lines look like: "SET","93457.95","0.309","0.080","0.279","0.479","1.023","1.751"
      read -r other steal <<<"$(other_load "$snap0" "$snap1")"
      rows="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$r,${C_NAME[i]},$c,$p,$n" -v t="$t" \
        -v post="$other,$steal" 'NR > 1 && NF >= 8 && $2 + 0 > 0 {print pre, $1, t, $2, $3, $5, $7, post}')"
      if [[ -n "$rows" ]]; then
        printf '%s\n' "$rows" >>"$CSV"
        summary="$(awk -F, '{printf "%s%s %.0f", (NR > 1 ? ", " : ""), $6, $8}' <<<"$rows")"
      fi
      if ((rc != 0)) || [[ -z "$rows" ]] || grep -qiE '^(error|err )|error from server' "$err"; then
        FAILED=$((FAILED + 1))
        log "[$RUN/$TOTAL] round $r ${C_NAME[i]} $t: FAILED (exit $rc)"
        _show_log "$err"
        for svc in "${!_BENCH_PIDS[@]}"; do
          kill -0 "${_BENCH_PIDS[svc]}" 2>/dev/null \
            || die "${_BENCH_NAMES[svc]} (pid ${_BENCH_PIDS[svc]}) is gone; aborting"
        done
      else
        load=""
        ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
        log "[$RUN/$TOTAL] round $r ${C_NAME[i]} n=$n $t: $summary req/s$load"
      fi
    done
  done
done

# Render the markdown table (stdout + results/compare-*.md) from the CSV.
{
  echo "## bloomproxy vs. direct Redis vs. twemproxy ($STAMP)"
  echo
  proxy_desc=""
  if [[ " $TARGETS " == *" proxy "* ]]; then
    proxy_desc="; proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}"
  fi
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /')," \
    "$(nutcracker --version 2>&1 | head -1 | sed 's/^This is //'), $(nproc) CPU(s)," \
    "$ROUNDS interleaved round(s), -r $KEYSPACE -d $DATASIZE$proxy_desc;" \
    "host CPU busy before start: ${HOST_BUSY}%"
  echo
  "$BENCH_PY" - "$CSV" "$TARGETS" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, targets, busy_warn = sys.argv[1], sys.argv[2].split(), float(sys.argv[3])
rps = defaultdict(list)
p50 = defaultdict(list)
by_round = defaultdict(dict)  # (case, test, n, target) -> {round: rps}
keys = OrderedDict()  # (case, test, n) in first-seen order
rows_first_test = None
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["case"], row["test"], row["requests"])
        keys[k] = None
        rows_first_test = rows_first_test or row["test"]  # one load figure per run
        rps[k + (row["target"],)].append(float(row["rps"]))
        p50[k + (row["target"],)].append(float(row["p50_latency_ms"]))
        by_round[k + (row["target"],)][row["round"]] = float(row["rps"])

def med(xs):
    return statistics.median(xs) if xs else None

def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else ""

def paired(k, a, b):
    """Median over rounds of a/b within the same round (robust to the machine's slow phases)."""
    ra, rb = by_round[k + (a,)], by_round[k + (b,)]
    rs = [ra[r] / rb[r] for r in ra if rb.get(r)]
    return f"{statistics.median(rs):.2f}" if rs else ""

print("| case | test | target | median req/s | runs (req/s) | median p50 ms | vs direct | vs twemproxy |")
print("|---|---|---|---:|---|---:|---:|---:|")
summary = []
for k in keys:
    case, test, n = k
    m = {t: med(rps[k + (t,)]) for t in targets}
    for t in targets:
        runs = rps[k + (t,)]
        if not runs:
            print(f"| {case} | {test} | {t} | n/a | (all runs failed) | | | |")
            continue
        vs_direct = ratio(m[t], m.get("direct")) if t != "direct" else ""
        vs_twem = ratio(m[t], m.get("twemproxy")) if t == "proxy" else ""
        print(f"| {case} | {test} | {t} | {m[t]:,.0f} | {' / '.join(f'{x:.0f}' for x in runs)} "
              f"| {med(p50[k + (t,)]):.3f} | {vs_direct} | {vs_twem} |")
    summary.append((case, test, n, ratio(m.get("proxy"), m.get("direct")),
                    ratio(m.get("proxy"), m.get("twemproxy")),
                    ratio(m.get("twemproxy"), m.get("direct")),
                    paired(k, "proxy", "direct"), paired(k, "proxy", "twemproxy")))

loads = []
with open(path) as f:
    for row in csv.DictReader(f):
        if row["test"] == rows_first_test:
            loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))
if loads:
    noisy = sum(1 for x in loads if x >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. hypervisor steal) during the runs: mean"
          f" {statistics.mean(loads):.0f}%, max {max(loads):.0f}% of the machine;"
          f" {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%"
          + ("" if not noisy else
             " (marked NOISY in the progress output; the medians absorb a few such runs)"
             if noisy * 5 <= len(loads) else
             " - too many disturbed runs: these numbers are noisy, rerun on a quiet machine"))

if "proxy" in targets and len(targets) > 1:
    print()
    print("Ratios of the medians (1.00 = same throughput; > 1 = proxy faster); the last two"
          " columns are the median of the per-round ratios (each round's pair measured"
          " back to back):")
    print()
    print("| case | test | requests | proxy/direct | proxy/twemproxy | twemproxy/direct "
          "| per-round proxy/direct | per-round proxy/twemproxy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case, test, n, a, b, c, pa, pb in summary:
        print(f"| {case} | {test} | {n} | {a} | {b} | {c} | {pa} | {pb} |")
EOF
} | tee "$MD"

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
