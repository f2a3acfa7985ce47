#!/usr/bin/env bash
# Throughput of bloomproxy's TDIGEST.ADD against its BF.ADD, all through the same proxy in front
# of one redis-server, in interleaved rounds: TDIGEST.ADD of 1 value and of BATCH (100) values
# per call (calls/s and values/s) against BF.ADD of 1 item, c50 P16. Then the latency of
# TDIGEST.QUANTILE (one connection, one call at a time, the digests taking turns: p50 and p99) on
# digests of 1k, 100k and 10M observations, which must not grow with the count. See
# bench/sketches.md.
#
# Usage: bench/tdigest.sh [--rounds N] [--quick] [--help]
#
#   --rounds N   rounds (default 3); medians are over rounds, ratios also per round
#   --quick      smoke run: 1 round, a tenth of the requests, digests of 1k, 100k and 1M
#
# Environment:
#   CLIENTS, PIPELINE   redis-benchmark -c / -P of the ADD runs (default 50, 16)
#   N            requests per single-value run (BF.ADD, TDIGEST.ADD of 1 value; default 500000)
#   BATCH        values per call of the batched TDIGEST.ADD run and of the fills (default 100)
#   BATCH_N      requests per batched run (default N / 20: as many values as the single runs
#                send five times over)
#   SIZES        observations of the digests QUANTILE reads (default "1000 100000 10000000";
#                each a multiple of BATCH), filled with TDIGEST.ADD of BATCH values per call,
#                FILL_WINDOW (32) calls at a time on one connection
#   LAT_N        QUANTILE calls per digest and round (default 20000)
#   QUANTILES    the quantiles each QUANTILE call asks for (default "0.5 0.9 0.99")
#   CAPACITY     the Bloom filter's capacity (default 20000000, error 0.01)
#   RUN_TIMEOUT  seconds before one run (or one fill) is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"   # ROUNDS, QUICK
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
N="${N:-500000}"
BATCH="${BATCH:-100}"
BATCH_N="${BATCH_N:-$(((N + 19) / 20))}"
LAT_N="${LAT_N:-20000}"
QUANTILES="${QUANTILES:-0.5 0.9 0.99}"
CAPACITY="${CAPACITY:-20000000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
FILL_WINDOW="${FILL_WINDOW:-32}"
if ((QUICK)); then
  SIZES="${SIZES:-1000 100000 1000000}"
else
  SIZES="${SIZES:-1000 100000 10000000}"
fi
require_positive_ints CLIENTS PIPELINE N BATCH BATCH_N LAT_N CAPACITY RUN_TIMEOUT FILL_WINDOW
read -r -a SIZE_LIST <<<"$SIZES"
((${#SIZE_LIST[@]})) || die "SIZES is empty"
for s in "${SIZE_LIST[@]}"; do
  if ! [[ "$s" =~ ^[1-9][0-9]*$ ]] || ((s % BATCH)); then
    die "each of SIZES must be a positive multiple of BATCH ($BATCH): $s"
  fi
done
read -r -a Q_LIST <<<"$QUANTILES"
((${#Q_LIST[@]})) || die "QUANTILES is empty"
if ((QUICK)); then
  N=$(((N + 9) / 10)) BATCH_N=$(((BATCH_N + 9) / 10)) LAT_N=$(((LAT_N + 9) / 10))
fi
command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
command -v redis-cli >/dev/null || die "redis-cli not found"

results_files tdigest   # STAMP, CSV, MD
LAT_CSV="${CSV%.csv}-quantile.csv"
bench_init
check_host_idle
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
sanity_check "$PROXY_PORT" bloomproxy || die "bloomproxy does not pass a SET/GET round trip"
rcli() { redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }
# td_info KEY FIELD: one field of TDIGEST.INFO KEY through the proxy.
td_info() { rcli TDIGEST.INFO "$1" | paste -d'\t' - - | awk -F'\t' -v f="$2" '$1 == f {print $2}'; }

BF_KEY=bfk TD_KEY=tdk
got="$(rcli BF.RESERVE "$BF_KEY" 0.01 "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY 0.01 $CAPACITY: $got"
got="$(rcli TDIGEST.CREATE "$TD_KEY" 2>&1)"
[[ "$got" == OK ]] || die "TDIGEST.CREATE $TD_KEY: $got"
mapfile -t check_values < <(seq 1 "$BATCH")
got="$(rcli TDIGEST.ADD "$TD_KEY" "${check_values[@]}" 2>&1)"
[[ "$got" == OK ]] || die "TDIGEST.ADD of $BATCH values through the proxy answered: $got"
got="$(td_info "$TD_KEY" Observations)"
[[ "$got" == "$BATCH" ]] || die "TDIGEST.INFO $TD_KEY after $BATCH values: Observations $got"
log "made $BF_KEY (BF, 1%, $CAPACITY) and $TD_KEY (TDIGEST, compression 100)"

BATCH_VALUES=()
for ((i = 0; i < BATCH; i++)); do BATCH_VALUES+=(__rand_int__); done

# fill_digest KEY COUNT: COUNT random values (0 .. 10^8 - 1, as __rand_int__) into KEY through
# the proxy, BATCH per TDIGEST.ADD call, FILL_WINDOW calls at a time on one connection: exactly
# COUNT values, where redis-benchmark with a pipeline sends whole pipelines past -n. (Not
# redis-cli --pipe: 100,000 calls queued at once on one upstream connection keep the oldest
# waiting past upstream-timeout-ms, and the stall check fails most of them.)
fill_digest() {
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    "$BENCH_PY" - "$PROXY_PORT" "$1" "$2" "$BATCH" "$FILL_WINDOW" <<'PY'
import random, socket, sys
port, key, count, batch, window = sys.argv[1], sys.argv[2].encode(), *map(int, sys.argv[3:])
rng = random.Random(count)
sock = socket.create_connection(("127.0.0.1", int(port)), timeout=60)
head = b"*%d\r\n$11\r\nTDIGEST.ADD\r\n$%d\r\n%s\r\n" % (batch + 2, len(key), key)
left, buf = count // batch, b""
while left:
    n = min(window, left)
    calls = []
    for _ in range(n):
        vals = [b"%d" % rng.randrange(100000000) for _ in range(batch)]
        calls.append(head + b"".join(b"$%d\r\n%s\r\n" % (len(v), v) for v in vals))
    sock.sendall(b"".join(calls))
    while buf.count(b"\r\n") < n:
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("connection closed")
        buf += chunk
    replies, buf = buf.split(b"\r\n")[:n], b"\r\n".join(buf.split(b"\r\n")[n:])
    bad = [r for r in replies if r != b"+OK"]
    if bad:
        sys.exit(f"TDIGEST.ADD answered {bad[0]!r}")
    left -= n
print(f"{count // batch} calls, {count} values")
PY
}

# The digests QUANTILE reads.
declare -A FILL_SECS=()
for s in "${SIZE_LIST[@]}"; do
  key="tdq:$s"
  got="$(rcli TDIGEST.CREATE "$key" 2>&1)"
  [[ "$got" == OK ]] || die "TDIGEST.CREATE $key: $got"
  start=$SECONDS
  fill_digest "$key" "$s" >"$BENCH_TMP/fill.out" 2>&1 \
    || { _show_log "$BENCH_TMP/fill.out"; die "filling $key failed"; }
  FILL_SECS[$s]=$((SECONDS - start))
  got="$(td_info "$key" Observations)"
  [[ "$got" == "$s" ]] || die "$key: $got observations after adding $s values"
  got="$(rcli TDIGEST.QUANTILE "$key" "${Q_LIST[@]}" 2>&1)"
  grep -qiE '^(\(error\) )?(ERR|WRONGTYPE)' <<<"$got" && die "TDIGEST.QUANTILE $key: $got"
  log "filled $key: $s observations in ${FILL_SECS[$s]} s; $(td_info "$key" 'Merged nodes')" \
    "centroids, $(td_info "$key" 'Total compressions') compressions"
done

# test name -> requests, values per call, command words (each __rand_int__ its own number)
declare -A REQS=([BF.ADD]="$N" [TDIGEST.ADD]="$N" ["TDIGEST.ADD x$BATCH"]="$BATCH_N")
declare -A VALUES=([BF.ADD]=1 [TDIGEST.ADD]=1 ["TDIGEST.ADD x$BATCH"]="$BATCH")
declare -A ARGS=([BF.ADD]="BF.ADD $BF_KEY __rand_int__"
                 [TDIGEST.ADD]="TDIGEST.ADD $TD_KEY __rand_int__"
                 ["TDIGEST.ADD x$BATCH"]="TDIGEST.ADD $TD_KEY ${BATCH_VALUES[*]}")
TESTS=(BF.ADD TDIGEST.ADD "TDIGEST.ADD x$BATCH")

# Warm-up: connections, the allocator, the proxy's caches.
for t in "${TESTS[@]}"; do
  # shellcheck disable=SC2086  # the command's words
  timeout --foreground --signal=INT --kill-after=5 60 redis-benchmark -h 127.0.0.1 \
    -p "$PROXY_PORT" -q -n $((20000 / ${VALUES[$t]})) -c 10 -P 16 -r 100000000 ${ARGS[$t]} \
    >/dev/null 2>&1 || log "warning: warm-up of $t failed"
done

# quantile_run ROUND: LAT_N calls of TDIGEST.QUANTILE on each digest of SIZES, one connection,
# one call at a time, the digests taking turns call by call (so that the machine's noise falls on
# each alike); appends "round,size,rps,p50,p99,other,steal" per digest to LAT_CSV.
quantile_run() {
  local r="$1" out="$BENCH_TMP/lat.out" rc=0 snap0 snap1 other steal rows
  RUN=$((RUN + 1))
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" "$BENCH_PY" - "$PROXY_PORT" \
    "$LAT_N" "$r" "$QUANTILES" "${SIZE_LIST[@]}" >"$out" 2>&1 <<'PY' || rc=$?
import socket, statistics, sys, time
port, n, r, qs, sizes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), \
    sys.argv[5:]
sizes = sizes[r % len(sizes):] + sizes[:r % len(sizes)]  # a different first digest per round
sock = socket.create_connection(("127.0.0.1", port), timeout=30)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def call(key):
    args = [b"TDIGEST.QUANTILE", key.encode()] + [q.encode() for q in qs]
    sock.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
    buf, lines = b"", 1 + 2 * len(qs)  # *N, then $len and the number per quantile
    while not (buf.startswith(b"-") and buf.endswith(b"\r\n")) and buf.count(b"\r\n") < lines:
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("connection closed")
        buf += chunk
    if not buf.startswith(b"*%d\r\n" % len(qs)):
        sys.exit(f"TDIGEST.QUANTILE {key}: {buf[:200]!r}")
lat = {s: [] for s in sizes}
for _ in range(n):
    for s in sizes:
        t0 = time.perf_counter()
        call(f"tdq:{s}")
        lat[s].append(time.perf_counter() - t0)
for s in sorted(lat, key=int):
    v = sorted(lat[s])
    print(f"{s},{len(v) / sum(v):.1f},{1e3 * v[len(v) // 2]:.3f},{1e3 * v[int(len(v) * 0.99)]:.3f}")
PY
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  rows="$(awk -F, -v OFS=, -v pre="$r" -v post="$other,$steal" 'NF == 4 {print pre, $0, post}' \
    "$out")"
  if run_failed "$rc" "$rows" "$out" "$out" "round $r QUANTILE"; then return 0; fi
  printf '%s\n' "$rows" >>"$LAT_CSV"
  log "[$RUN/$TOTAL] round $r QUANTILE (observations: calls/s, p50 ms, p99 ms):" \
    "$(awk -F, '{printf "%s%s: %.0f, %s, %s", (NR > 1 ? "; " : ""), $2, $3, $4, $5}' <<<"$rows")"
}

echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
echo "round,size,rps,p50_ms,p99_ms,other_cpu_pct,steal_pct" >"$LAT_CSV"
TOTAL=$((ROUNDS * (${#TESTS[@]} + 1)))
RUN=0
FAILED=0
declare -A PORT=([proxy]="$PROXY_PORT")
declare -A TARGET_ARGS=()
log "benchmark: $ROUNDS round(s) x ${#TESTS[@]} ADD runs (-c $CLIENTS -P $PIPELINE -r 100000000," \
  "-n $N (1 value per call) / $BATCH_N ($BATCH values per call)) and one QUANTILE run" \
  "($LAT_N calls per digest, one at a time); raw results -> ${CSV#"$REPO_ROOT"/}," \
  "${LAT_CSV#"$REPO_ROOT"/}"
for ((r = 1; r <= ROUNDS; r++)); do
  # Rotate the orders, so that no command always runs on a warmer (or busier) machine.
  for ((j = 0; j < ${#TESTS[@]}; j++)); do
    t="${TESTS[(j + r - 1) % ${#TESTS[@]}]}"
    # shellcheck disable=SC2086  # the command's words
    redis_bench_run "$r" "$t" proxy "${REQS[$t]}" -r 100000000 ${ARGS[$t]}
  done
  quantile_run "$r"
done

fills=""
for s in "${SIZE_LIST[@]}"; do fills+="${fills:+, }$s in ${FILL_SECS[$s]} s"; done
info="$(rcli TDIGEST.INFO "$TD_KEY" | paste -d' ' - - | paste -sd',' | sed 's/,/, /g')"
STATE="TDIGEST.INFO $TD_KEY: $info. Fills (TDIGEST.ADD x$BATCH, $FILL_WINDOW at a time): $fills."
rounds_report "$CSV" "$BATCH" "$LAT_CSV" "${Q_LIST[*]}" "$STATE" >"$MD" <<'EOF'
batch, lat_csv, quantiles, state = int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
big = f"TDIGEST.ADD x{batch}"
def values(test):
    return batch if test == big else 1
print("| command | values per call | median calls/s | median values/s | runs (calls/s) "
      "| median p50 ms |")
print("|---|---:|---:|---:|---|---:|")
for test in tests:
    k = (test, "proxy")
    runs = " / ".join(f"{x:.0f}" for x in rps[k])
    print(f"| {test} | {values(test)} | {med(k):,.0f} | {med(k) * values(test):,.0f} | {runs} | "
          f"{statistics.median(p50[k]):.3f} |")
print()
print("TDIGEST.ADD against BF.ADD through the same proxy (values/s; per round: the runs of one"
      " round; the issue's bar for single values: 0.5):")
print()
print("| ratio | of the medians | median of per-round |")
print("|---|---:|---:|")
for test, label in (("TDIGEST.ADD", "TDIGEST.ADD (1 value) / BF.ADD"),
                    (big, f"TDIGEST.ADD ({batch} values per call), values/s / BF.ADD")):
    a, b = med((test, "proxy")), med(("BF.ADD", "proxy"))
    a = a * values(test) if a else a
    per = [by_round[(test, "proxy")][r] * values(test) / by_round[("BF.ADD", "proxy")][r]
           for r in by_round[(test, "proxy")] if by_round[("BF.ADD", "proxy")].get(r)]
    print(f"| {label} | {ratio(a, b)} | {statistics.median(per):.2f} |" if per else
          f"| {label} | {ratio(a, b)} | |")
lat = defaultdict(lambda: defaultdict(list))
with open(lat_csv) as f:
    for row in csv.DictReader(f):
        for col in ("rps", "p50_ms", "p99_ms"):
            lat[int(row["size"])][col].append(float(row[col]))
        loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))
print()
print(f"TDIGEST.QUANTILE key {quantiles} through the proxy, one connection, one call at a time,"
      " the digests taking turns call by call (medians over rounds):")
print()
print("| observations | median p50 ms | median p99 ms | p50 runs (ms) | p99 runs (ms) "
      "| median calls/s |")
print("|---:|---:|---:|---|---|---:|")
for size in sorted(lat):
    d = lat[size]
    print(f"| {size:,} | {statistics.median(d['p50_ms']):.3f} | "
          f"{statistics.median(d['p99_ms']):.3f} | "
          + " / ".join(f"{x:.3f}" for x in d["p50_ms"]) + " | "
          + " / ".join(f"{x:.3f}" for x in d["p99_ms"])
          + f" | {statistics.median(d['rps']):,.0f} |")
if len(lat) > 1:
    lo, hi = min(lat), max(lat)
    print()
    print(f"p50 at {hi:,} / p50 at {lo:,} observations: "
          f"{statistics.median(lat[hi]['p50_ms']) / statistics.median(lat[lo]['p50_ms']):.2f}")
load_summary()
print()
print(state)
EOF
cat "$MD"
finish_runs
