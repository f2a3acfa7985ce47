#!/usr/bin/env bash
# Throughput of bloomproxy's CMS.INCRBY / CMS.QUERY vs. the BITFIELD floor: the very upstream
# command the proxy sends for one call (captured with MONITOR), sent straight to redis-server.
# redis-benchmark drives both, in interleaved rounds. See bench/sketches.md.
#
# Usage: bench/cms.sh [--rounds N] [--quick] [--publish] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds
#   --quick      smoke run: 1 round, a tenth of the requests
#   --publish    also write the result table into docs/count-min-sketches.md ("Measurements")
#
# Environment:
#   COMMANDS     subset/order of "incrby query" (default both)
#   PIPELINES    redis-benchmark -P values (default "1 16")
#   BATCHES      items per call (default "1 10": CMS.INCRBY k i 1 [i 1 ...], CMS.QUERY k i [i ...])
#   CLIENTS      connections per run (default 50)
#   N            requests per run (default: 100000 at P1, 200000 with a pipeline)
#   CMS_ERROR, CMS_PROB   the sketches' CMS.INITBYPROB parameters (default 0.001 0.01: 2000x7)
#   RUN_TIMEOUT  seconds before one run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

WITH_PUBLISH=1 parse_round_args "$@"   # ROUNDS, QUICK, PUBLISH

COMMANDS="${COMMANDS:-incrby query}"
PIPELINES="${PIPELINES:-1 16}"
BATCHES="${BATCHES:-1 10}"
CLIENTS="${CLIENTS:-50}"
CMS_ERROR="${CMS_ERROR:-0.001}"
CMS_PROB="${CMS_PROB:-0.01}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
require_positive_ints CLIENTS RUN_TIMEOUT
[[ -z "${N:-}" ]] || require_positive_ints N
for c in $COMMANDS; do [[ "$c" =~ ^(incrby|query)$ ]] || die "unknown command '$c'"; done
for p in $PIPELINES $BATCHES; do [[ "$p" =~ ^[1-9][0-9]*$ ]] || die "bad pipeline/batch '$p'"; done
[[ -n "$COMMANDS" && -n "$PIPELINES" && -n "$BATCHES" ]] || die "no cases"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

# requests_for PIPELINE -> requests per run
requests_for() {
  local n="${N:-}"
  [[ -n "$n" ]] || { if (($1 > 1)); then n=200000; else n=100000; fi; }
  ((QUICK)) && n=$(((n + 9) / 10))
  echo "$n"
}

results_files cms   # STAMP, CSV, MD
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
rcli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

# Two sketches of the same size, both made through the proxy: the proxy's runs use cmsk; the
# floor's runs write the data key of cmsf straight in Redis, so the two never share cells.
PROXY_KEY=cmsk FLOOR_NAME=cmsf
for key in "$PROXY_KEY" "$FLOOR_NAME"; do
  got="$(rcli "$PROXY_PORT" CMS.INITBYPROB "$key" "$CMS_ERROR" "$CMS_PROB" 2>&1)"
  [[ "$got" == OK ]] || die "CMS.INITBYPROB $key $CMS_ERROR $CMS_PROB through bloomproxy: $got"
done
DIMS="$(rcli "$PROXY_PORT" CMS.INFO "$PROXY_KEY" | paste -sd' ')"
log "created $PROXY_KEY and $FLOOR_NAME through bloomproxy (CMS.INFO: $DIMS)"

# call_args KIND BATCH KEY ITEM... -> CALL (array): the CMS command of one request.
call_args() {
  local kind="$1" batch="$2" key="$3" i
  shift 3
  if [[ "$kind" == incrby ]]; then CALL=(CMS.INCRBY "$key"); else CALL=(CMS.QUERY "$key"); fi
  for ((i = 0; i < batch; i++)); do
    CALL+=("${1:-item:$i}")
    if [[ "$kind" == incrby ]]; then CALL+=(1); fi
    if (($#)); then shift; fi
  done
}

# capture KIND BATCH -> FLOOR_<KIND>_<BATCH> (a file of NUL-separated arguments: the floor's
# command) and UPSTREAM_<KIND>_<BATCH> (what the proxy sent, readable). The call runs twice
# through the proxy, on cmsf: once to fill the proxy's metadata cache, once under MONITOR on the
# upstream. The floor is the data command (BITFIELD / BITFIELD_RO on a part); the validation
# HMGET the proxy sends beside it is left out, as bf_compare.sh leaves out BF.ADD's.
capture() {
  local kind="$1" batch="$2" dir="$BENCH_TMP/capture-$1-$2" got
  call_args "$kind" "$batch" "$FLOOR_NAME"
  capture_data_command "$dir" "$PROXY_PORT" "$REDIS_PORT" "$FLOOR_NAME" "${CALL[@]}"
  got="$(paste -sd' ' "$dir/reply")"
  [[ "$got" =~ ^[0-9\ ]+$ ]] || die "${CALL[*]} through bloomproxy replied '$got'"
  local parts
  parts="$(wc -l <"$dir/upstream.txt")"
  log "${CALL[*]:0:4}... (x$batch) through bloomproxy sent upstream: $(paste -sd';' "$dir/upstream.txt")"
  grep -qx 1 "$dir/data_commands" \
    || log "warning: more than one data command per call ($parts upstream commands); the floor is the first"
  printf -v "FLOOR_${kind}_${batch}" '%s' "$dir/floor"
  printf -v "UPSTREAM_${kind}_${batch}" '%s' "$(paste -sd';' "$dir/upstream.txt" | sed 's/;/; /g')"
}

# floor_args KIND BATCH -> FLOOR (array)
floor_args() {
  local file="FLOOR_$1_$2"
  mapfile -d '' -t FLOOR <"${!file}"
}

for kind in $COMMANDS; do
  for b in $BATCHES; do
    capture "$kind" "$b"
    floor_args "$kind" "$b"
    # The floor straight to Redis must answer as BITFIELD does: integers only.
    got="$(rcli "$REDIS_PORT" "${FLOOR[@]}" 2>&1 | paste -sd' ')"
    [[ "$got" =~ ^[0-9\ ]+$ ]] || die "the floor ${FLOOR[*]:0:6}... straight to redis replied '$got'"
  done
done

# Short unrecorded warm-up of every command on both sides (connections, allocator, caches).
# (redis-benchmark spins forever on a port that refuses connections: hence the timeouts.)
WARM=(timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 -q --csv -n 5000 -c 10)
rand_call() {  # rand_call KIND BATCH -> CALL with __rand_int__ items, on the proxy's sketch
  local items=() i
  for ((i = 0; i < $2; i++)); do items+=(__rand_int__); done
  call_args "$1" "$2" "$PROXY_KEY" "${items[@]}"
}
for kind in $COMMANDS; do
  for b in $BATCHES; do
    rand_call "$kind" "$b"
    "${WARM[@]}" -p "$PROXY_PORT" -r 100000000 "${CALL[@]}" >/dev/null 2>&1 \
      || log "warning: ${CALL[*]:0:3}... warm-up through bloomproxy failed"
    floor_args "$kind" "$b"
    "${WARM[@]}" -p "$REDIS_PORT" "${FLOOR[@]}" >/dev/null 2>&1 || log "warning: floor warm-up failed"
  done
done

echo "round,case,command,batch,clients,pipeline,requests,target,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
N_CASES=$(($(wc -w <<<"$COMMANDS") * $(wc -w <<<"$BATCHES") * $(wc -w <<<"$PIPELINES")))
TOTAL=$((ROUNDS * N_CASES * 2))
RUN=0
FAILED=0
log "benchmark: $ROUNDS round(s) x $N_CASES case(s) x [proxy floor], c$CLIENTS; raw results -> ${CSV#"$REPO_ROOT"/}"

# run_one ROUND KIND BATCH PIPELINE TARGET PORT [redis-benchmark args...]: one run, into the CSV.
run_one() {
  local r="$1" kind="$2" b="$3" p="$4" t="$5" port="$6" n
  shift 6
  local out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0 snap0 snap1 other steal row load=""
  local command="CMS.${kind^^}" case="c$CLIENTS P$p x$b"
  n="$(requests_for "$p")"
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" -c "$CLIENTS" -P "$p" -q --csv "$@" \
    >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # "CMS.INCRBY cmsk __rand_int__ 1","171821.30","0.270","0.080","0.255",...
  row="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, 'NR > 1 && NF >= 8 && $2 + 0 > 0 {print $2, $5; exit}')"
  # (redis-benchmark 7 exits non-zero at the first error reply: "Error from server: ...")
  if ((rc != 0)) || [[ -z "$row" ]] || grep -qiE '^(error|err )|error from server' "$err" "$out"; then
    FAILED=$((FAILED + 1))
    log "[$RUN/$TOTAL] round $r $command $case $t: FAILED (exit $rc)"
    _show_log "$err"
    services_alive
    return 0
  fi
  echo "$r,$case,$command,$b,$CLIENTS,$p,$n,$t,$row,$other,$steal" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}% of the CPUs)"
  log "[$RUN/$TOTAL] round $r $command $case $t: $(printf '%.0f' "${row%%,*}") req/s$load"
}

for ((r = 1; r <= ROUNDS; r++)); do
  for kind in $COMMANDS; do
    for b in $BATCHES; do
      for p in $PIPELINES; do
        rand_call "$kind" "$b"
        floor_args "$kind" "$b"
        # Alternate which side goes first, so neither always runs on a warmer machine.
        if ((r % 2)); then
          run_one "$r" "$kind" "$b" "$p" proxy "$PROXY_PORT" -r 100000000 "${CALL[@]}"
          run_one "$r" "$kind" "$b" "$p" floor "$REDIS_PORT" "${FLOOR[@]}"
        else
          run_one "$r" "$kind" "$b" "$p" floor "$REDIS_PORT" "${FLOOR[@]}"
          run_one "$r" "$kind" "$b" "$p" proxy "$PROXY_PORT" -r 100000000 "${CALL[@]}"
        fi
      done
    done
  done
done

STATE="$(rcli "$PROXY_PORT" CMS.INFO "$PROXY_KEY" | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"
SENT=""
for kind in $COMMANDS; do
  for b in $BATCHES; do
    u="UPSTREAM_${kind}_${b}"
    SENT+="- CMS.${kind^^} x$b: ${!u}"$'\n'
  done
done

{
  echo "## CMS.INCRBY / CMS.QUERY through bloomproxy vs. the BITFIELD floor ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /')," \
    "$(nproc) CPU(s), $ROUNDS interleaved round(s), $CLIENTS connections; sketches" \
    "CMS.INITBYPROB $CMS_ERROR $CMS_PROB ($DIMS); proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS};" \
    "host CPU busy before start: ${HOST_BUSY}%"
  echo
  "$BENCH_PY" - "$CSV" "${BUSY_WARN_PCT:-15}" <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, busy_warn = sys.argv[1], float(sys.argv[2])
rps, p50, by_round = defaultdict(list), defaultdict(list), defaultdict(dict)
keys = OrderedDict()  # (command, case, batch) in first-seen order
loads = []
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["command"], row["case"], int(row["batch"]))
        keys[k] = None
        rps[k + (row["target"],)].append(float(row["rps"]))
        p50[k + (row["target"],)].append(float(row["p50_latency_ms"]))
        by_round[k + (row["target"],)][row["round"]] = float(row["rps"])
        loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))

med = lambda xs: statistics.median(xs) if xs else None
sent = {"proxy": lambda c, b: f"{c} key {b}×item → bloomproxy",
        "floor": lambda c, b: ("BITFIELD part OVERFLOW … INCRBY" if c == "CMS.INCRBY" else "BITFIELD_RO part GET")
                              + f" ({b} item{'s' if b > 1 else ''}) → redis"}
print("| command | case | target | sent | median req/s | median items/s | runs (req/s) | median p50 ms | proxy / floor | per-round |")
print("|---|---|---|---|---:|---:|---|---:|---:|---:|")
summary = []
for k in keys:
    command, case, batch = k
    m = {t: med(rps[k + (t,)]) for t in ("proxy", "floor")}
    ratio = per_round = ""
    if m["proxy"] and m["floor"]:
        ratio = f"{m['proxy'] / m['floor']:.2f}"
        pr = [v / by_round[k + ("floor",)][r] for r, v in by_round[k + ("proxy",)].items()
              if by_round[k + ("floor",)].get(r)]
        per_round = f"{statistics.median(pr):.2f}" if pr else ""
    for t in ("proxy", "floor"):
        if not rps[k + (t,)]:
            print(f"| {command} | {case} | {t} | {sent[t](command, batch)} | n/a | n/a | (all runs failed) | | | |")
            continue
        print(f"| {command} | {case} | {t} | {sent[t](command, batch)} | {m[t]:,.0f} | {m[t] * batch:,.0f} "
              f"| {' / '.join(f'{v:.0f}' for v in rps[k + (t,)])} | {med(p50[k + (t,)]):.3f} "
              f"| {ratio if t == 'proxy' else ''} | {per_round if t == 'proxy' else ''} |")

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
EOF
  echo
  echo "proxy / floor: ratio of the medians (> 1.00 = bloomproxy faster); per-round: median of the"
  echo "ratios within each round. The proxy's items are random (\`redis-benchmark -r 100000000\`,"
  echo "one \`__rand_int__\` per item); the floor is the data command the proxy sent upstream for one"
  echo "call on a sketch of the same size (captured with MONITOR), replayed as it is: the same cells"
  echo "every request, an optimistic floor, and without the validation HMGET the proxy sends beside it."
  echo "What the proxy sent upstream per call:"
  echo
  printf '%s' "$SENT"
  echo
  echo "$PROXY_KEY after the run (CMS.INFO): $STATE"
} | tee "$MD"

if ((PUBLISH)); then
  DOC="$REPO_ROOT/docs/count-min-sketches.md"
  "$BENCH_PY" - "$DOC" "$MD" <<'EOF' || die "cannot publish into $DOC (markers missing?)"
import sys
doc, md = sys.argv[1:]
begin, end = "<!-- bench/cms.sh begin -->", "<!-- bench/cms.sh end -->"
text = open(doc).read()
a, b = text.index(begin) + len(begin), text.index(end)
table = open(md).read().split("\n", 2)[2].strip()  # without the title line
open(doc, "w").write(text[:a] + "\n" + table + "\n" + text[b:])
EOF
  log "published the table into ${DOC#"$REPO_ROOT"/}"
fi

log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
if ((FAILED)); then
  log "$FAILED run(s) failed; see above"
  exit 1
fi
