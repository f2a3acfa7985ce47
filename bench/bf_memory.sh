#!/usr/bin/env bash
# Redis memory taken by a filter that bloomproxy keeps in plain strings, vs. the size RedisBloom
# reports for the same filter (BF.INFO Size): used_memory of the redis-server (INFO memory)
# before and after BF.RESERVE through bloomproxy, and after adding items with BF.MADD; the
# filter's upstream keys. With --big, the same for a filter of capacity 2^30 (about 1.4 GB),
# spread over shard keys of at most bf-max-shard-bytes. See bench/sketches.md.
#
# Usage: bench/bf_memory.sh [--big] [--help]
#
#   --big        also reserve a filter of BIG_CAPACITY (default 1073741824) at ERROR: needs about
#                1.5 GB of free memory (checked first) and takes a few seconds
#
# Environment:
#   CAPACITY     capacity of the small filter (default 1000000)
#   ERROR        error rate of both filters (default 0.01)
#   ITEMS        items added to the small filter with BF.MADD (default = CAPACITY)
#   BIG_CAPACITY capacity of the --big filter (default 1073741824 = 2^30, BF.RESERVE's maximum)
#   BIG_ITEMS    items added to the --big filter (default 1000000; 0 = none)
#   MADD_BATCH   items per BF.MADD (default 1000)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, CC   see bench/lib.sh (e.g. BLOOMPROXY_ARGS=
#                "--bf-max-shard-bytes 16mb" to see another shard size)
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

BIG=0
while (($#)); do
  case "$1" in
    --big) BIG=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument: $1" ;;
  esac
done
CAPACITY="${CAPACITY:-1000000}"
ERROR="${ERROR:-0.01}"
ITEMS="${ITEMS:-$CAPACITY}"
BIG_CAPACITY="${BIG_CAPACITY:-1073741824}"
BIG_ITEMS="${BIG_ITEMS:-1000000}"
MADD_BATCH="${MADD_BATCH:-1000}"
for v in CAPACITY BIG_CAPACITY MADD_BATCH; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
for v in ITEMS BIG_ITEMS; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer"
done

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/bf-memory-$STAMP.csv"
MD="$BENCH_DIR/results/bf-memory-$STAMP.md"

bench_init
build_bf_client
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
if ! why="$(bf_supported "$PROXY_PORT")"; then
  die "bloomproxy does not answer BF.* ($why)"
fi
pcli() { redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
used_memory() { info_field "$REDIS_PORT" used_memory memory; }
# Redis counts client buffers in used_memory, and keeps a big request's query buffer (BF.RESERVE
# sends the zeroed bits with SET; for an argument of 32 KB or more Redis even allocates another
# buffer of that size for the next one) until the connection has been idle ~2 s. Wait until the
# clients' buffers (CLIENT LIST tot-mem, other than the asking connection's own) are back to
# their size before the step (at most 10 s), so that the deltas are the filter's own memory.
clients_mem() {
  rcli CLIENT LIST | tr -d '\r' | awk '!/ cmd=client\|list / {
    for (i = 1; i <= NF; i++) if ($i ~ /^tot-mem=/) { sub(/^tot-mem=/, "", $i); s += $i } }
    END {print s + 0}'
}
CLIENTS_BASE=""
settle() {
  local i cur
  for ((i = 0; i < 100; i++)); do
    cur="$(clients_mem)"
    ((cur <= CLIENTS_BASE + 65536)) && return 0
    sleep 0.1
  done
  log "warning: client buffers still take $cur bytes (were $CLIENTS_BASE); used_memory includes them"
}
# keys_memory FILTER: sum of MEMORY USAGE of its upstream keys
keys_memory() {
  local k sum=0
  while IFS= read -r k; do
    sum=$((sum + $(rcli MEMORY USAGE "$k" SAMPLES 0)))
  done < <(filter_keys "$1")
  echo "$sum"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b - a}'; }
bf_info() { pcli BF.INFO "$1" "$2"; }   # one field: SIZE, CAPACITY, ITEMS, FILTERS

# Upstream keys of filter NAME (bloomproxy's layout: the name itself, then "{name}:bf:..." —
# the name is its own hash tag when it has none).
filter_keys() {
  local name="$1"
  { [[ "$(rcli EXISTS "$name")" == 1 ]] && echo "$name"; rcli --scan --pattern "{$name}:bf:*"; } | sort
}

echo "filter,capacity,error,step,upstream_keys,used_memory,delta_used_memory,keys_memory_usage,bf_info_size,ratio,items,sub_filters,seconds" >"$CSV"
# Warm-up: a small filter reserved, filled past its capacity (so it scales), and deleted, so that
# Redis's one-time allocations for commands it had not run yet (e.g. Redis 7's per-command latency
# histograms, ~10 KB each) are in the baseline rather than counted as the filter's memory.
got="$(pcli BF.RESERVE warmup "$ERROR" 1000 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE warmup $ERROR 1000: $got"
"$BF_CLIENT" -p "$PROXY_PORT" -m proxy-madd -k warmup -c 2 -b 100 -n 3000 >/dev/null || die "BF.MADD warmup failed"
pcli BF.ADD warmup x >/dev/null && pcli BF.EXISTS warmup x >/dev/null && pcli BF.INFO warmup >/dev/null
pcli DEL warmup >/dev/null
[[ -z "$(filter_keys warmup)" ]] || die "DEL warmup left upstream keys: $(filter_keys warmup | tr '\n' ' ')"
CLIENTS_BASE="$(clients_mem)"
settle
BASE="$(used_memory)"
log "redis used_memory with no filter: $BASE bytes"

# step FILTER CAPACITY STEP SECONDS: record the state after a step.
step() {
  local f="$1" cap="$2" what="$3" secs="$4" used keys size items nf delta ratio kmem
  settle
  used="$(used_memory)"
  keys="$(filter_keys "$f" | wc -l)"
  kmem="$(keys_memory "$f")"
  size="$(bf_info "$f" SIZE)" items="$(bf_info "$f" ITEMS)" nf="$(bf_info "$f" FILTERS)"
  delta=$((used - BASE))
  ratio="$(awk -v d="$delta" -v s="$size" 'BEGIN {printf "%.3f", d / s}')"
  echo "$f,$cap,$ERROR,$what,$keys,$used,$delta,$kmem,$size,$ratio,$items,$nf,$secs" >>"$CSV"
  log "$f: $what: used_memory $used (+$delta; its keys' MEMORY USAGE $kmem), BF.INFO Size $size, ratio $ratio, $keys upstream key(s), $items item(s), $nf sub-filter(s)"
}
# after_del FILTER CAPACITY SECONDS: record the state after DEL
after_del() {
  local used left
  settle
  used="$(used_memory)"
  left="$(filter_keys "$1" | wc -l)"
  echo "$1,$2,$ERROR,DEL,$left,$used,$((used - BASE)),,,,,,$3" >>"$CSV"
  log "$1: after DEL ($3 s): used_memory $used (+$((used - BASE))), $left upstream key(s) left"
}

# add FILTER N: BF.MADD N random items in batches of MADD_BATCH; sets ADD_SECS
add_items() {
  local f="$1" n="$2" t0 out
  t0="$(now)"
  out="$("$BF_CLIENT" -p "$PROXY_PORT" -m proxy-madd -k "$f" -c 4 -b "$MADD_BATCH" -n "$n")" \
    || die "BF.MADD into $f failed: $out"
  ADD_SECS="$(elapsed "$t0" "$(now)")"
  log "$out"
}

# --- the small filter ---------------------------------------------------------------------------
F=m1
t0="$(now)"
got="$(pcli BF.RESERVE "$F" "$ERROR" "$CAPACITY" 2>&1)"
[[ "$got" == OK ]] || die "BF.RESERVE $F $ERROR $CAPACITY: $got"
step "$F" "$CAPACITY" "BF.RESERVE" "$(elapsed "$t0" "$(now)")"
if ((ITEMS > 0)); then
  add_items "$F" "$ITEMS"
  step "$F" "$CAPACITY" "+ $ITEMS items (BF.MADD x$MADD_BATCH)" "$ADD_SECS"
fi
KEYLIST="$BENCH_TMP/keys.md"
{
  echo "| upstream key | type | length (STRLEN) | MEMORY USAGE |"
  echo "|---|---|---:|---:|"
  while IFS= read -r k; do
    t="$(rcli TYPE "$k")"
    len=""
    [[ "$t" == string ]] && len="$(rcli STRLEN "$k")"
    # shellcheck disable=SC2016  # the backquotes are markdown
    printf '| `%s` | %s | %s | %s |\n' "$k" "$t" "$len" "$(rcli MEMORY USAGE "$k" SAMPLES 0)"
  done < <(filter_keys "$F")
} >"$KEYLIST"
t0="$(now)"
pcli DEL "$F" >/dev/null
after_del "$F" "$CAPACITY" "$(elapsed "$t0" "$(now)")"

# --- the big filter -----------------------------------------------------------------------------
BIG_NOTE=""
if ((BIG)); then
  geo="$("$BF_CLIENT" --geometry --capacity "$BIG_CAPACITY" --error "$ERROR")"
  need="$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' <<<"$geo")"
  avail_kb="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)"
  # The filter, jemalloc's rounding, and 1 GB to spare for everything else.
  if ((avail_kb * 1024 < need * 11 / 10 + (1 << 30))); then
    BIG_NOTE="--big skipped: the filter needs about $((need >> 20)) MiB, and only $((avail_kb >> 10)) MiB are available"
    log "$BIG_NOTE"
  else
    F=big
    settle
    BASE="$(used_memory)"
    log "reserving $F ($ERROR, $BIG_CAPACITY): first sub-filter $((need >> 20)) MiB"
    t0="$(now)"
    got="$(pcli BF.RESERVE "$F" "$ERROR" "$BIG_CAPACITY" 2>&1)"
    [[ "$got" == OK ]] || die "BF.RESERVE $F $ERROR $BIG_CAPACITY: $got"
    step "$F" "$BIG_CAPACITY" "BF.RESERVE" "$(elapsed "$t0" "$(now)")"
    if ((BIG_ITEMS > 0)); then
      add_items "$F" "$BIG_ITEMS"
      step "$F" "$BIG_CAPACITY" "+ $BIG_ITEMS items (BF.MADD x$MADD_BATCH)" "$ADD_SECS"
    fi
    SHARDS="$(filter_keys "$F" | grep -c ':bf:.*\.[0-9]*$' || true)"
    SHARD_MAX="$(filter_keys "$F" | grep ':bf:.*\.[0-9]*$' | while IFS= read -r k; do rcli STRLEN "$k"; done | sort -n | tail -1)"
    BIG_NOTE="$F: $SHARDS shard key(s) of bits upstream (largest $SHARD_MAX bytes)"
    log "$BIG_NOTE"
    t0="$(now)"
    pcli DEL "$F" >/dev/null
    after_del "$F" "$BIG_CAPACITY" "$(elapsed "$t0" "$(now)")"
  fi
fi

{
  echo "## Redis memory of a bloomproxy filter vs. RedisBloom's size ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3,5 | sed 's/Redis server v=/redis-server /');" \
    "proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}." \
    "Δ used_memory = INFO used_memory minus its value before the filter was reserved;" \
    "ratio = Δ / BF.INFO Size (RedisBloom's size of the same filter: 32 + 64 × sub-filters + bytes of bits)."
  echo
  echo "| filter | capacity | step | upstream keys | used_memory | Δ used_memory | keys' MEMORY USAGE | BF.INFO Size | Δ / Size | items | sub-filters | seconds |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  tail -n +2 "$CSV" | while IFS=, read -r f cap _ what keys used delta kmem size ratio items nf secs; do
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$f" "$cap" "$what" "$keys" \
      "$used" "$delta" "$kmem" "$size" "$ratio" "$items" "$nf" "$secs"
  done
  echo
  echo "Upstream keys of m1 (after adding the items):"
  echo
  cat "$KEYLIST"
  [[ -n "$BIG_NOTE" ]] && { echo; echo "$BIG_NOTE"; }
} | tee "$MD"
log "results: ${CSV#"$REPO_ROOT"/}, ${MD#"$REPO_ROOT"/}"
