#!/usr/bin/env bash
# Throughput of bloomproxy vs. direct Redis vs. twemproxy (nutcracker), all in front of the same
# redis-server, measured with redis-benchmark in interleaved rounds; plus bloomproxy's BF.ADD /
# BF.EXISTS against the one-BITFIELD-per-item floor straight to Redis. See bench/README.md.
#
# Usage: bench/compare.sh [--rounds N] [--quick] [--publish] [--help]
#   --publish    also copy the chart to docs/img/compare.png
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
#   BF           1 = also run the BF cases (default 1; BF=0 skips them; needs the proxy target):
#                BF.ADD / BF.EXISTS bfk __rand_int__ (-c 50 -P 16 -r 100000000) through bloomproxy
#                vs. BITFIELD / BITFIELD_RO with 8 fixed offsets straight to redis-server
#   BF_N         requests per BF run (default: N, else 200000)
#   PLOT         1 = draw the chart with bench/plot.sh at the end (default 1; needs gnuplot)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

WITH_PUBLISH=1 parse_round_args "$@"   # ROUNDS, QUICK, PUBLISH

CASES="${CASES:-50:1 50:16 1:1}"
TESTS="${TESTS:-set,get}"
KEYSPACE="${KEYSPACE:-100000}"
DATASIZE="${DATASIZE:-3}"
TARGETS="${TARGETS:-direct proxy twemproxy}"
N_SERIAL="${N_SERIAL:-20000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
BF="${BF:-1}"
BF_N="${BF_N:-${N:-200000}}"
PLOT="${PLOT:-1}"
[[ "$BF" =~ ^[01]$ ]] || die "BF must be 0 or 1"
[[ "$BF_N" =~ ^[1-9][0-9]*$ ]] || die "bad BF_N '$BF_N'"
((QUICK)) && BF_N=$(((BF_N + 9) / 10))

# BF cases: fixed shape (the redis-benchmark reference of bf_compare.sh), one filter.
BF_CLIENTS=50 BF_PIPE=16
BF_KEY=bfk FLOOR_KEY=bfk2
BF_ERROR=0.01 BF_CAPACITY=10000000
# The floor: what a proxy must send at least per item, one BITFIELD with k = 8 bit operations.
# redis-benchmark cannot randomise BITFIELD offsets (it replaces __rand_int__ with a 12-digit
# zero-padded number, which Redis rejects as a bit offset), so the 8 offsets are fixed, one in
# the middle of each eighth of a 95,850,000-bit key (0.01 / 10M at 9.585 bits per item): the
# same 8 cache lines on every request, hence an optimistic floor.
FLOOR_BITS=95850000 FLOOR_K=8
bf_floor_commands

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
# (redis-benchmark spins forever on a port that refuses connections: hence the timeouts.)
WARM=(timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 -q --csv)
for t in $TARGETS; do
  "${WARM[@]}" -p "${PORT[$t]}" -t "$TESTS" -n 5000 -c 10 -r "$KEYSPACE" \
    -d "$DATASIZE" >/dev/null 2>&1 || log "warning: warm-up against $t failed"
done
services_alive

# BF cases: reserve the filter through the proxy and allocate the floor's key at full size (as
# BF.RESERVE does for its bits), check both commands once, warm them up.
if ((BF)) && [[ " $TARGETS " != *" proxy "* ]]; then
  log "BF cases skipped: they need the proxy target (TARGETS=\"$TARGETS\")"
  BF=0
fi
BF_SKIPPED=""
if ((BF)); then
  if ! why="$(bf_supported "${PORT[proxy]}")"; then
    BF_SKIPPED="bloomproxy does not answer BF.* ($why)"
    log "WARNING: BF cases skipped: $BF_SKIPPED"
    BF=0
  fi
fi
if ((BF)); then
  got="$(redis-cli -h 127.0.0.1 -p "${PORT[proxy]}" BF.RESERVE "$BF_KEY" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY through bloomproxy: $got (BF=0 skips the BF cases)"
  create_bf_floor "$REDIS_PORT"
  log "reserved $BF_KEY ($BF_ERROR, $BF_CAPACITY) through bloomproxy; floor key $FLOOR_KEY:" \
    "$FLOOR_BITS bits, fixed offsets ${FLOOR_OFFSETS[*]}"
  for cmd in BF.ADD BF.EXISTS; do
    "${WARM[@]}" -p "${PORT[proxy]}" -r 100000000 -n 5000 -c 10 "$cmd" "$BF_KEY" __rand_int__ \
      >/dev/null 2>&1 || log "warning: $cmd warm-up through bloomproxy failed"
  done
  "${WARM[@]}" -p "$REDIS_PORT" -n 5000 -c 10 "${FLOOR_ADD[@]}" >/dev/null 2>&1 \
    || log "warning: BITFIELD warm-up failed"
  "${WARM[@]}" -p "$REDIS_PORT" -n 5000 -c 10 "${FLOOR_EXISTS[@]}" >/dev/null 2>&1 \
    || log "warning: BITFIELD_RO warm-up failed"
  services_alive
fi

echo "round,case,clients,pipeline,requests,test,target,rps,avg_latency_ms,p50_latency_ms,p99_latency_ms,other_cpu_pct,steal_pct" >"$CSV"

TOTAL=$((ROUNDS * (${#C_NAME[@]} * $(wc -w <<<"$TARGETS") + (BF ? 4 : 0))))
RUN=0
FAILED=0
log "benchmark: $ROUNDS round(s) x ${#C_NAME[@]} case(s) x targets [$TARGETS]; tests $TESTS;" \
  "-r $KEYSPACE -d $DATASIZE$( ((BF)) && echo "; + BF.ADD/BF.EXISTS vs. BITFIELD floor, c$BF_CLIENTS P$BF_PIPE n=$BF_N");" \
  "raw results -> ${CSV#"$REPO_ROOT"/}"

# run_one ROUND CASE CLIENTS PIPELINE REQUESTS TARGET PORT TEST [redis-benchmark args...]
# One redis-benchmark run, appended to the CSV. TEST empty: one row per test redis-benchmark
# reports (-t set,get); else one row named TEST (a custom command).
run_one() {
  local r="$1" case="$2" c="$3" p="$4" n="$5" t="$6" port="$7" test="$8"
  shift 8
  local out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0 snap0 snap1 other steal rows
  local summary="" load="" cmd_desc=""
  [[ "$t" == floor ]] && cmd_desc=" ($1 $2, ${FLOOR_K} fixed offsets)"
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" -c "$c" -P "$p" -q --csv "$@" \
    >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  # CTRL-C reaches redis-benchmark too (exit 130). Our INT trap normally fires as well, but
  # not if SIGINT was ignored when the script started (launched in the background)...
  exit_if_interrupted "$rc"
  # Lines look like: "SET","93457.95","0.309","0.080","0.279","0.479","1.023","1.751"
  # (for a custom command the first field is the whole command line).
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  rows="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$r,$case,$c,$p,$n" -v t="$t" -v name="$test" \
    -v post="$other,$steal" 'NR > 1 && NF >= 8 && $2 + 0 > 0 {print pre, (name != "" ? name : $1), t, $2, $3, $5, $7, post}')"
  if [[ -n "$rows" ]]; then
    printf '%s\n' "$rows" >>"$CSV"
    summary="$(awk -F, '{printf "%s%s %.0f", (NR > 1 ? ", " : ""), $6, $8}' <<<"$rows")"
  fi
  # (redis-benchmark 7 exits non-zero at the first error reply: "Error from server: ...")
  if ((rc != 0)) || [[ -z "$rows" ]] || grep -qiE '^(error|err )|error from server' "$err" "$out"; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r $case ${test:+$test }$t: FAILED (exit $rc)"
    _show_log "$err"
    services_alive
  else
    ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
    log "[$RUN/$TOTAL] round $r $case n=$n $t${cmd_desc}: $summary req/s$load"
  fi
}

BF_CASE="c$BF_CLIENTS P$BF_PIPE"
for ((r = 1; r <= ROUNDS; r++)); do
  for i in "${!C_NAME[@]}"; do
    for t in $TARGETS; do
      run_one "$r" "${C_NAME[i]}" "${C_CLIENTS[i]}" "${C_PIPE[i]}" "${C_N[i]}" "$t" "${PORT[$t]}" "" \
        -t "$TESTS" -r "$KEYSPACE" -d "$DATASIZE"
    done
  done
  if ((BF)); then
    # BF.ADD vs. its floor, then BF.EXISTS vs. its floor (target "floor" = straight to redis).
    run_one "$r" "$BF_CASE" "$BF_CLIENTS" "$BF_PIPE" "$BF_N" proxy "${PORT[proxy]}" BF.ADD \
      -r 100000000 BF.ADD "$BF_KEY" __rand_int__
    run_one "$r" "$BF_CASE" "$BF_CLIENTS" "$BF_PIPE" "$BF_N" floor "$REDIS_PORT" BF.ADD "${FLOOR_ADD[@]}"
    run_one "$r" "$BF_CASE" "$BF_CLIENTS" "$BF_PIPE" "$BF_N" proxy "${PORT[proxy]}" BF.EXISTS \
      -r 100000000 BF.EXISTS "$BF_KEY" __rand_int__
    run_one "$r" "$BF_CASE" "$BF_CLIENTS" "$BF_PIPE" "$BF_N" floor "$REDIS_PORT" BF.EXISTS "${FLOOR_EXISTS[@]}"
  fi
done

# The filter must not have scaled (more items than its capacity would add a sub-filter).
BF_STATE=""
if ((BF)); then
  BF_STATE="$(redis-cli -h 127.0.0.1 -p "${PORT[proxy]}" BF.INFO "$BF_KEY" | paste -d'\t' - - \
    | awk -F'\t' '{printf "%s%s: %s", (NR > 1 ? ", " : ""), $1, $2}')"
  nf="$(redis-cli -h 127.0.0.1 -p "${PORT[proxy]}" BF.INFO "$BF_KEY" FILTERS)"
  [[ "$nf" == 1 ]] || log "warning: $BF_KEY now has $nf sub-filters (more items than its capacity)"
fi

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
  BF_NOTE=""
  if ((BF)); then
    BF_NOTE="BF cases (c$BF_CLIENTS P$BF_PIPE, $BF_N requests per run): \`redis-benchmark -r 100000000 BF.ADD $BF_KEY __rand_int__\` (and BF.EXISTS) through bloomproxy, on a filter reserved with \`BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY\` through the proxy; floor = one command per item straight to redis-server: \`${FLOOR_ADD[*]:0:6} … (${FLOOR_K} SET ops)\` resp. \`${FLOOR_EXISTS[*]:0:5} … (${FLOOR_K} GETs)\`. redis-benchmark cannot randomise BITFIELD offsets (\`__rand_int__\` becomes a 12-digit zero-padded number, which Redis rejects as a bit offset), so the floor uses ${FLOOR_K} FIXED offsets (${FLOOR_OFFSETS[*]}) spread over a $(sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$FLOOR_BITS")-bit key: the same ${FLOOR_K} cache lines every request, an optimistic floor. twemproxy does not do BF.*. Filter after the run: $BF_STATE"
  elif [[ -n "$BF_SKIPPED" ]]; then
    BF_NOTE="BF cases skipped: $BF_SKIPPED"
  fi
  BF_NOTE="$BF_NOTE" "$BENCH_PY" - "$CSV" "$TARGETS" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, os, statistics, sys
from collections import OrderedDict, defaultdict

path, targets, busy_warn = sys.argv[1], sys.argv[2].split(), float(sys.argv[3])
rps = defaultdict(list)
p50 = defaultdict(list)
by_round = defaultdict(dict)  # (case, test, n, target) -> {round: rps}
keys = OrderedDict()  # (case, test, n) in first-seen order
rows_first_test = None
loads = []
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["case"], row["test"], row["requests"])
        keys[k] = None
        if not row["test"].startswith("BF."):
            rows_first_test = rows_first_test or row["test"]
        if row["test"] == rows_first_test or row["test"].startswith("BF."):  # one figure per run
            loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))
        rps[k + (row["target"],)].append(float(row["rps"]))
        p50[k + (row["target"],)].append(float(row["p50_latency_ms"]))
        by_round[k + (row["target"],)][row["round"]] = float(row["rps"])

def is_bf(k):
    return k[1].startswith("BF.")

def med(xs):
    return statistics.median(xs) if xs else None

def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else ""

def paired(k, a, b):
    """Median over rounds of a/b within the same round (robust to the machine's slow phases)."""
    ra, rb = by_round[k + (a,)], by_round[k + (b,)]
    rs = [ra[r] / rb[r] for r in ra if rb.get(r)]
    return f"{statistics.median(rs):.2f}" if rs else ""

def runs(xs):
    return " / ".join(f"{x:.0f}" for x in xs)

print("| case | test | target | median req/s | runs (req/s) | median p50 ms | vs direct | vs twemproxy |")
print("|---|---|---|---:|---|---:|---:|---:|")
summary = []
for k in keys:
    if is_bf(k):
        continue
    case, test, n = k
    m = {t: med(rps[k + (t,)]) for t in targets}
    for t in targets:
        if not rps[k + (t,)]:
            print(f"| {case} | {test} | {t} | n/a | (all runs failed) | | | |")
            continue
        vs_direct = ratio(m[t], m.get("direct")) if t != "direct" else ""
        vs_twem = ratio(m[t], m.get("twemproxy")) if t == "proxy" else ""
        print(f"| {case} | {test} | {t} | {m[t]:,.0f} | {runs(rps[k + (t,)])} "
              f"| {med(p50[k + (t,)]):.3f} | {vs_direct} | {vs_twem} |")
    summary.append((case, test, n, ratio(m.get("proxy"), m.get("direct")),
                    ratio(m.get("proxy"), m.get("twemproxy")),
                    ratio(m.get("twemproxy"), m.get("direct")),
                    paired(k, "proxy", "direct"), paired(k, "proxy", "twemproxy")))

bf_keys = [k for k in keys if is_bf(k)]
if bf_keys:
    sent = {("BF.ADD", "proxy"): "BF.ADD key __rand_int__ → bloomproxy",
            ("BF.ADD", "floor"): "BITFIELD key 8×SET u1 (fixed offsets) → redis",
            ("BF.EXISTS", "proxy"): "BF.EXISTS key __rand_int__ → bloomproxy",
            ("BF.EXISTS", "floor"): "BITFIELD_RO key 8×GET u1 (fixed offsets) → redis"}
    print()
    print("BF.* through bloomproxy vs. the one-BITFIELD-per-item floor straight to Redis:")
    print()
    print("| case | test | target | sent | median req/s | runs (req/s) | median p50 ms | bloomproxy / floor |")
    print("|---|---|---|---|---:|---|---:|---:|")
    for k in bf_keys:
        case, test, n = k
        m = {t: med(rps[k + (t,)]) for t in ("proxy", "floor")}
        for t in ("proxy", "floor"):
            if not rps[k + (t,)]:
                print(f"| {case} | {test} | {t} | {sent.get((test, t), '')} | n/a | (all runs failed) | | |")
                continue
            print(f"| {case} | {test} | {t} | {sent.get((test, t), '')} | {m[t]:,.0f} | {runs(rps[k + (t,)])} "
                  f"| {med(p50[k + (t,)]):.3f} | {ratio(m['proxy'], m['floor']) if t == 'proxy' else ''} |")
        summary.append((case, f"{test} vs. floor", n, ratio(m["proxy"], m["floor"]), "n/a", "n/a",
                        paired(k, "proxy", "floor"), "n/a"))

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

if "proxy" in targets and (len(targets) > 1 or bf_keys):
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
    if bf_keys:
        print()
        print("In the `BF.* vs. floor` rows, direct = the floor sent straight to redis-server"
              " (BITFIELD 8×SET u1 for BF.ADD, BITFIELD_RO 8×GET u1 for BF.EXISTS), so proxy/direct"
              " is bloomproxy BF.ADD / BITFIELD floor resp. BF.EXISTS / BITFIELD_RO floor"
              " (twemproxy does not do BF.*).")

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
    "$BENCH_DIR/plot.sh" "${plot_args[@]}" \
      || log "warning: plot.sh failed; the results are in ${CSV#"$REPO_ROOT"/}"
  else
    log "gnuplot not installed (scripts/deps.sh --bench): no chart; PLOT=0 silences this"
  fi
fi

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
