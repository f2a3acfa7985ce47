#!/usr/bin/env bash
# Throughput of bloomproxy's BF.ADD / BF.EXISTS / BF.MADD vs. the client-side ways of keeping a
# bloom filter in plain Redis (k SETBIT/GETBIT pipelined per item; one EVALSHA per item; and one
# BITFIELD per item as the floor), all against the same redis-server, in interleaved rounds,
# with bench/bf_client.c (built into a temp dir). See bench/sketches.md.
#
# Usage: bench/bf_compare.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds
#   --quick      smoke run: 1 round, 1 s per run, a tenth of the redis-benchmark requests
#
# Environment:
#   TARGETS      subset/order of "proxy setbit lua bitfield" (default all four; without
#                "proxy" no bloomproxy is started, e.g. before the proxy answers BF.*)
#   CASES        space-separated "KIND:PIPELINE", KIND = add, exists or madd
#                (default "add:1 add:16 exists:1 exists:16 madd:1")
#   CLIENTS      connections per run (default 50)
#   DURATION     seconds per bf_client run (default 3)
#   MADD_BATCH   items per BF.MADD / per setbit-madd batch (default 100)
#   REFS         1 = also run the redis-benchmark references every round (default 1)
#   BENCH_N      requests per redis-benchmark reference run (default 200000)
#   FILTER_ERROR, FILTER_CAPACITY   the filters' BF.RESERVE parameters (default 0.01 10000000)
#   RUN_TIMEOUT  seconds before one run is killed (default 120)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, CC   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"   # ROUNDS, QUICK (which also makes ROUNDS 1)

TARGETS="${TARGETS:-proxy setbit lua bitfield}"
CASES="${CASES:-add:1 add:16 exists:1 exists:16 madd:1}"
CLIENTS="${CLIENTS:-50}"
DURATION="${DURATION:-3}"
MADD_BATCH="${MADD_BATCH:-100}"
REFS="${REFS:-1}"
BENCH_N="${BENCH_N:-200000}"
FILTER_ERROR="${FILTER_ERROR:-0.01}"
FILTER_CAPACITY="${FILTER_CAPACITY:-10000000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-120}"
if ((QUICK)); then
  DURATION=1
  BENCH_N=$(((BENCH_N + 9) / 10))
fi

for t in $TARGETS; do
  [[ "$t" =~ ^(proxy|setbit|lua|bitfield)$ ]] || die "unknown target '$t'"
done
[[ "$CLIENTS" =~ ^[1-9][0-9]*$ ]] || die "bad CLIENTS '$CLIENTS'"
[[ "$MADD_BATCH" =~ ^[1-9][0-9]*$ ]] || die "bad MADD_BATCH '$MADD_BATCH'"
[[ "$BENCH_N" =~ ^[1-9][0-9]*$ ]] || die "bad BENCH_N '$BENCH_N'"
[[ "$DURATION" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad DURATION '$DURATION'"
C_KIND=() C_PIPE=()
for spec in $CASES; do
  IFS=: read -r kind p extra <<<"$spec"
  [[ -z "${extra:-}" && "$kind" =~ ^(add|exists|madd)$ && "${p:-}" =~ ^[1-9][0-9]*$ ]] \
    || die "bad case '$spec' (want add|exists|madd:PIPELINE)"
  C_KIND+=("$kind") C_PIPE+=("$p")
done
((${#C_KIND[@]})) || die "no cases"
has_target() { [[ " $TARGETS " == *" $1 "* ]]; }

command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/bf-compare-$STAMP.csv"
MD="$BENCH_DIR/results/bf-compare-$STAMP.md"

bench_init
check_host_idle
build_bf_client
GEOMETRY="$("$BF_CLIENT" --geometry --capacity "$FILTER_CAPACITY" --error "$FILTER_ERROR")"
BITS="$(sed -n 's/.* bits=\([0-9]*\).*/\1/p' <<<"$GEOMETRY")"
K="$(sed -n 's/.* k=\([0-9]*\).*/\1/p' <<<"$GEOMETRY")"
[[ -n "$BITS" && -n "$K" ]] || die "cannot read the filter geometry from bf_client: $GEOMETRY"
log "first sub-filter of BF.RESERVE $FILTER_ERROR $FILTER_CAPACITY: $GEOMETRY"

# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
if has_target proxy; then
  start_bloomproxy "$REDIS_PORT"
  sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
  if ! why="$(bf_supported "$PROXY_PORT")"; then
    die "bloomproxy does not answer BF.* ($why); run without it: TARGETS='setbit lua bitfield'"
  fi
fi
rcli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

# Keys: each target writes its own filter, the MADD case a second one, so that no filter goes
# past its capacity (a scaling filter would then add a sub-filter and change the workload).
declare -A KEY_ADD=([proxy]=bfk [setbit]=bfk_cs [lua]=bfk_lua [bitfield]=bfk_bf)
declare -A KEY_MADD=([proxy]=bfkm [setbit]=bfk_csm [lua]=bfk_luam [bitfield]=bfk_bfm)
FLOOR_KEY=bfk2   # redis-benchmark BITFIELD reference

if has_target proxy; then
  for key in "${KEY_ADD[proxy]}" "${KEY_MADD[proxy]}"; do
    got="$(rcli "$PROXY_PORT" BF.RESERVE "$key" "$FILTER_ERROR" "$FILTER_CAPACITY" 2>&1)"
    [[ "$got" == OK ]] || die "BF.RESERVE $key $FILTER_ERROR $FILTER_CAPACITY through bloomproxy: $got"
  done
  log "reserved ${KEY_ADD[proxy]} and ${KEY_MADD[proxy]} ($FILTER_ERROR, $FILTER_CAPACITY) through bloomproxy"

  # Do the client-side modes set the same bits as bloomproxy? Add items through the proxy, then
  # look them up with GETBIT straight in the proxy's bits key (its layout: "{name}:bf:<id>:0.0").
  check=bloombench_check seed=$((RANDOM * 32768 + RANDOM))
  got="$(rcli "$PROXY_PORT" BF.RESERVE "$check" "$FILTER_ERROR" "$FILTER_CAPACITY" 2>&1)"
  [[ "$got" == OK ]] || die "BF.RESERVE $check: $got"
  "$BF_CLIENT" -p "$PROXY_PORT" -m proxy-add -k "$check" -c 1 -n 2000 --seed "$seed" >/dev/null \
    || die "BF.ADD through bloomproxy failed"
  bits_key="$(rcli "$REDIS_PORT" --scan --pattern "{$check}:bf:*:0.0" | head -1)"
  if [[ -z "$bits_key" ]]; then
    log "warning: cannot find the bits key of '$check' upstream (layout changed?); skipping the check that the client-side modes hash like bloomproxy"
  else
    found() {  # found SEED: % of 2000 items of that seed whose k bits are all set in $bits_key
      "$BF_CLIENT" -p "$REDIS_PORT" -m getbit -k "$bits_key" -c 1 -n 2000 --seed "$1" \
        --capacity "$FILTER_CAPACITY" --error "$FILTER_ERROR" | sed -n 's/.*positive_pct=//p'
    }
    same="$(found "$seed")" || true
    other="$(found $((seed + 1)))" || true
    if ! [[ "$same" == 100.00 && "${other%.*}" =~ ^[0-9]+$ ]] || ((${other%.*} >= 5)); then
      die "client-side GETBIT positions disagree with bloomproxy's bits in $bits_key: found ${same:-?}% of 2000 items added with BF.ADD (want 100%) and ${other:-?}% of 2000 others (want ~0%)"
    fi
    log "hashing check: the client-side GETBIT positions find all 2000 items added with BF.ADD in $bits_key, and ${other}% of 2000 others"
  fi
  rcli "$PROXY_PORT" DEL "$check" >/dev/null
fi

# Client-side filters: allocate the whole string up front, as BF.RESERVE does.
for t in setbit lua bitfield; do
  has_target "$t" || continue
  for key in "${KEY_ADD[$t]}" "${KEY_MADD[$t]}"; do rcli "$REDIS_PORT" SETBIT "$key" $((BITS - 1)) 0 >/dev/null; done
done
rcli "$REDIS_PORT" SETBIT "$FLOOR_KEY" $((BITS - 1)) 0 >/dev/null

# mode_for TARGET KIND -> bf_client mode
mode_for() {
  case "$1:$2" in
    proxy:add) echo proxy-add ;;        proxy:exists) echo proxy-exists ;;   proxy:madd) echo proxy-madd ;;
    setbit:add) echo setbit ;;          setbit:exists) echo getbit ;;        setbit:madd) echo setbit-madd ;;
    lua:add|lua:madd) echo lua-add ;;   lua:exists) echo lua-exists ;;
    bitfield:add|bitfield:madd) echo bitfield-add ;;                      bitfield:exists) echo bitfield-exists ;;
  esac
}
port_for() { if [[ "$1" == proxy ]]; then echo "$PROXY_PORT"; else echo "$REDIS_PORT"; fi; }

# Short unrecorded warm-up of every target (connections, allocator, script cache).
for t in $TARGETS; do
  "$BF_CLIENT" -p "$(port_for "$t")" -m "$(mode_for "$t" add)" -k "${KEY_ADD[$t]}" -c 10 -t 0.3 \
    --capacity "$FILTER_CAPACITY" --error "$FILTER_ERROR" >/dev/null \
    || die "warm-up of target $t failed"
done

echo "round,case,target,tool,mode,clients,pipeline,ops,secs,ops_per_sec,cmds_per_sec,errors,positive_pct,other_cpu_pct,steal_pct" >"$CSV"

N_TARGETS=$(wc -w <<<"$TARGETS")
N_REFS=0
if ((REFS)); then
  N_REFS=1
  has_target proxy && N_REFS=2
fi
TOTAL=$((ROUNDS * (${#C_KIND[@]} * N_TARGETS + N_REFS)))
RUN=0
FAILED=0
log "benchmark: $ROUNDS round(s) x ${#C_KIND[@]} case(s) x targets [$TARGETS], ${DURATION}s per run," \
  "c$CLIENTS; $((ROUNDS * N_REFS)) redis-benchmark reference run(s) of $BENCH_N requests;" \
  "about $(awk -v r="$((ROUNDS * ${#C_KIND[@]} * N_TARGETS))" -v d="$DURATION" -v rb="$((ROUNDS * N_REFS))" \
    'BEGIN {printf "%.1f", (r * (d + 0.3) + rb * 2) / 60}') min; raw results -> ${CSV#"$REPO_ROOT"/}"

# record ROUND CASE TARGET TOOL MODE PIPELINE OPS SECS OPS_PER_SEC CMDS_PER_SEC ERRORS POS SNAP0 SNAP1
record() {
  local other steal load=""
  read -r other steal <<<"$(other_load "${13}" "${14}")"
  echo "$1,$2,$3,$4,$5,$CLIENTS,$6,$7,$8,$9,${10},${11},${12},$other,$steal" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
  log "[$RUN/$TOTAL] round $1 $2 $3 ($5): $(printf "%.0f" "$9") items/s, $(printf "%.0f" "${10}") cmds/s$load"
}

# run_client ROUND KIND PIPELINE TARGET
run_client() {
  local r="$1" kind="$2" p="$3" t="$4" mode key case out err rc=0 snap0 snap1 line
  mode="$(mode_for "$t" "$kind")"
  case "$kind" in
    add) case="BF.ADD c$CLIENTS P$p"; key="${KEY_ADD[$t]}" ;;
    exists) case="BF.EXISTS c$CLIENTS P$p"; key="${KEY_ADD[$t]}" ;;
    madd) case="BF.MADD x$MADD_BATCH c$CLIENTS P$p"; key="${KEY_MADD[$t]}"
          # Lua and BITFIELD have no multi-item form: pipeline the same number of items.
          [[ "$t" == lua || "$t" == bitfield ]] && p=$((p * MADD_BATCH)) ;;
  esac
  RUN=$((RUN + 1))
  out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err"
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    "$BF_CLIENT" -p "$(port_for "$t")" -m "$mode" -k "$key" -c "$CLIENTS" -P "$p" -t "$DURATION" \
    -b "$MADD_BATCH" --capacity "$FILTER_CAPACITY" --error "$FILTER_ERROR" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  line="$(grep '^mode=' "$out" || true)"
  if ((rc != 0)) || [[ -z "$line" ]]; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r $case $t ($mode): FAILED (exit $rc)"
    _show_log "$err"
    services_alive
    return 0
  fi
  # mode=M clients=C pipeline=P ops=N secs=S ops_per_sec=X cmds=N cmds_per_sec=X errors=E positive_pct=F
  local -A f=()
  local kv
  for kv in $line; do f["${kv%%=*}"]="${kv#*=}"; done
  record "$r" "$case" "$t" bf_client "$mode" "$p" "${f[ops]}" "${f[secs]}" "${f[ops_per_sec]}" \
    "${f[cmds_per_sec]}" "${f[errors]}" "${f[positive_pct]}" "$snap0" "$snap1"
}

# run_rb ROUND TARGET PORT ARGS...: a redis-benchmark reference run (c CLIENTS, P16)
run_rb() {
  local r="$1" t="$2" port="$3" out="$BENCH_TMP/rb.out" err="$BENCH_TMP/rb.err" rc=0 snap0 snap1
  local case="redis-benchmark c$CLIENTS P16" rps
  shift 3
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "$port" -r 100000000 -n "$BENCH_N" -c "$CLIENTS" -P 16 -q --csv \
    "$@" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  # "BF.ADD bfk __rand_int__","171821.30","4.360",...
  rps="$(tr -d '"\r' <"$out" | awk -F, 'NR > 1 && $2 + 0 > 0 {print $2; exit}')"
  if ((rc != 0)) || [[ -z "$rps" ]] || grep -qiE '^(error|err )|error from server' "$err"; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r $case $t: FAILED (exit $rc)"
    _show_log "$err"
    services_alive
    return 0
  fi
  record "$r" "$case" "$t" redis-benchmark "$1" 16 "$BENCH_N" \
    "$(awk -v n="$BENCH_N" -v r="$rps" 'BEGIN {printf "%.3f", n / r}')" "$rps" \
    "$rps" 0 "" "$snap0" "$snap1"
}

# BITFIELD floor for redis-benchmark: k fixed offsets spread over the filter. redis-benchmark
# replaces __rand_int__ with a 12-digit zero-padded number, which BITFIELD/SETBIT reject as an
# offset ("bit offset is not an integer"), so random offsets are not possible there.
FLOOR_ARGS=(BITFIELD "$FLOOR_KEY")
for ((i = 0; i < K; i++)); do FLOOR_ARGS+=(SET u1 $((i * (BITS / K) + 7)) 1); done

for ((r = 1; r <= ROUNDS; r++)); do
  for i in "${!C_KIND[@]}"; do
    for t in $TARGETS; do
      run_client "$r" "${C_KIND[i]}" "${C_PIPE[i]}" "$t"
    done
  done
  if ((REFS)); then
    has_target proxy && run_rb "$r" proxy "$PROXY_PORT" BF.ADD "${KEY_ADD[proxy]}" __rand_int__
    run_rb "$r" bitfield-fixed "$REDIS_PORT" "${FLOOR_ARGS[@]}"
  fi
done

# What the filters hold now (a filter past its capacity would have scaled).
FILTER_STATE=""
if has_target proxy; then
  for key in "${KEY_ADD[proxy]}" "${KEY_MADD[proxy]}"; do
    info="$(rcli "$PROXY_PORT" BF.INFO "$key" | paste -d'\t' - - | awk -F'\t' '{printf "%s%s: %s", (NR > 1 ? ", " : ""), $1, $2}')"
    nf="$(rcli "$PROXY_PORT" BF.INFO "$key" FILTERS)"
    FILTER_STATE+="${FILTER_STATE:+; }$key: $info"
    [[ "$nf" == 1 ]] || log "warning: $key now has $nf sub-filters (more items than its capacity): its later runs did more work"
  done
fi

{
  echo "## BF.* throughput: bloomproxy vs. client-side bloom filters in plain Redis ($STAMP)"
  echo
  proxy_desc=""
  has_target proxy && proxy_desc="; proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}"
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /')," \
    "$(nproc) CPU(s), $ROUNDS interleaved round(s) of ${DURATION}s per run, $CLIENTS connections;" \
    "filters BF.RESERVE $FILTER_ERROR $FILTER_CAPACITY (first sub-filter: $BITS bits, k=$K)$proxy_desc;" \
    "host CPU busy before start: ${HOST_BUSY}%"
  [[ -n "$FILTER_STATE" ]] && { echo; echo "Filters after the run (BF.INFO): $FILTER_STATE"; }
  echo
  "$BENCH_PY" - "$CSV" "$K" "$MADD_BATCH" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, k, batch, busy_warn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
runs = defaultdict(list)          # (case, target) -> [row]
cases = OrderedDict()             # case -> [targets in first-seen order]
loads = []
with open(path) as f:
    for row in csv.DictReader(f):
        c, t = row["case"], row["target"]
        cases.setdefault(c, [])
        if t not in cases[c]:
            cases[c].append(t)
        runs[(c, t)].append(row)
        loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))

def what(row):
    m, p = row["mode"], row["pipeline"]
    if row["tool"] == "redis-benchmark":
        return {"BF.ADD": "redis-benchmark BF.ADD key __rand_int__ → bloomproxy",
                "BITFIELD": f"redis-benchmark BITFIELD key {k}×SET u1 (fixed offsets) → redis"}[m]
    return {
        "proxy-add": "BF.ADD → bloomproxy",
        "proxy-exists": "BF.EXISTS → bloomproxy",
        "proxy-madd": f"BF.MADD ×{batch} → bloomproxy",
        "setbit": f"{k}×SETBIT pipelined → redis",
        "getbit": f"{k}×GETBIT pipelined → redis",
        "setbit-madd": f"{batch}×{k} SETBIT pipelined → redis",
        "lua-add": f"EVALSHA ({k} SETBIT in Lua) per item → redis",
        "lua-exists": f"EVALSHA ({k} GETBIT in Lua) per item → redis",
        "bitfield-add": f"BITFIELD {k}×SET u1 per item → redis",
        "bitfield-exists": f"BITFIELD_RO {k}×GET u1 per item → redis",
    }[m] + (f" (P{p})" if m in ("lua-add", "bitfield-add") and "MADD" in row["case"] else "")

med = lambda xs: statistics.median(xs) if xs else None
reference = {"redis-benchmark": "proxy"}

print("| case | target | what | median items/s | runs (items/s) | median cmds/s | positive % | bloomproxy / this | per-round |")
print("|---|---|---|---:|---|---:|---:|---:|---:|")
ratios = []
for c, targets in cases.items():
    by_round = {t: {r["round"]: float(r["ops_per_sec"]) for r in runs[(c, t)]} for t in targets}
    m = {t: med([float(r["ops_per_sec"]) for r in runs[(c, t)]]) for t in targets}
    for t in targets:
        rs = runs[(c, t)]
        vals = [float(r["ops_per_sec"]) for r in rs]
        cmds = med([float(r["cmds_per_sec"]) for r in rs])
        pos = [float(r["positive_pct"]) for r in rs if r["positive_pct"] != ""]
        ratio = per_round = ""
        if t != "proxy" and m.get("proxy"):
            ratio = f"{m['proxy'] / m[t]:.2f}"
            pr = [by_round["proxy"][x] / by_round[t][x] for x in by_round[t] if x in by_round["proxy"]]
            per_round = f"{statistics.median(pr):.2f}" if pr else ""
            ratios.append((c, t, what(rs[0]), ratio, per_round))
        print(f"| {c} | {t} | {what(rs[0])} | {m[t]:,.0f} | {' / '.join(f'{v:.0f}' for v in vals)} "
              f"| {cmds:,.0f} | {f'{med(pos):.2f}' if pos else ''} | {ratio} | {per_round} |")

if loads:
    noisy = sum(1 for x in loads if x >= busy_warn)
    print()
    print(f"CPU used by other processes (incl. hypervisor steal) during the runs: mean"
          f" {statistics.mean(loads):.0f}%, max {max(loads):.0f}% of the machine;"
          f" {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%"
          + ("" if not noisy else
             " (marked NOISY in the progress output)" if noisy * 5 <= len(loads) else
             " - too many disturbed runs: these numbers are noisy, rerun on a quiet machine"))
if ratios:
    print()
    print("bloomproxy / alternative (items/s; > 1.00 = bloomproxy faster); per-round = median of"
          " the ratios within each round:")
    print()
    print("| case | alternative | bloomproxy / it | per-round |")
    print("|---|---|---:|---:|")
    for c, t, w, a, b in ratios:
        print(f"| {c} | {t}: {w} | {a} | {b} |")
EOF
} | tee "$MD"

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
