#!/usr/bin/env bash
# What counting costs: bloomproxy with the admin port off ("off") against the same binary with
# --admin-port on and a scraper fetching /metrics every 100 ms during the runs ("on"), each in
# front of a redis-server of its own; SET/GET and BF.ADD (pipelined) in the same interleaved
# rounds. The counters are updated either way (they are not behind the flag), so "off" is the
# baseline without scrapes. With BASELINE_BIN (a build without the metrics, e.g. of the commit
# before them) a third target "base" shows what counting itself costs: off/base.
# See docs/operations.md.
#
# Usage: bench/metrics.sh [--rounds N] [--quick] [--help]
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   CLIENTS, PIPELINE (default 16), N, BF_N, KEYSPACE, DATASIZE, RUN_TIMEOUT   see bench/lib.sh
#   SCRAPE_EVERY seconds between two scrapes of /metrics (default 0.1)
#   BASELINE_BIN a bloomproxy binary without the metrics: the target "base" (default none)
#   ROUNDS       rounds (default 3; --rounds wins)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, REDIS_SERVER_BIN   see bench/lib.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"
redis_bench_settings 1000000   # CLIENTS, PIPELINE, N, KEYSPACE, DATASIZE, RUN_TIMEOUT: see lib.sh
SCRAPE_EVERY="${SCRAPE_EVERY:-0.1}"
command -v curl >/dev/null || die "curl not found"
results_files metrics

# scraper PORT COUNTFILE: fetch /metrics every SCRAPE_EVERY s, counting the good answers.
scraper() {
  local port="$1" file="$2" n=0
  while :; do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"; then
      n=$((n + 1))
      echo "$n" >"$file"
    fi
    sleep "$SCRAPE_EVERY"
  done
}

# metric PORT LINE-PREFIX: the value of one sample of /metrics.
metric() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v p="$2" 'index($0, p " ") == 1 {print $2}'
}

bench_init
check_host_idle
declare -A PORT
# shellcheck disable=SC2119
start_redis
start_bloomproxy "$REDIS_PORT"
PORT[off]="$PROXY_PORT"
free_port ADMIN_PORT
# shellcheck disable=SC2119
start_redis
start_bloomproxy "$REDIS_PORT" --admin-port "$ADMIN_PORT"
PORT[on]="$PROXY_PORT"
curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null || die "the admin port does not answer"
TARGETS="off on"
if [[ -n "${BASELINE_BIN:-}" ]]; then
  [[ -x "$BASELINE_BIN" ]] || die "BASELINE_BIN=$BASELINE_BIN is not an executable"
  # shellcheck disable=SC2119
  start_redis
  BLOOMPROXY_BIN="$BASELINE_BIN" start_bloomproxy "$REDIS_PORT"
  PORT[base]="$PROXY_PORT"
  TARGETS="base off on"
fi
BF_TARGETS="$TARGETS"
for t in $TARGETS; do
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) through both proxies"
# shellcheck disable=SC2086  # TARGETS holds words
prefill_keyspace $TARGETS
# shellcheck disable=SC2086
reserve_bench_filter $TARGETS

SCRAPES="$BENCH_TMP/scrapes"
echo 0 >"$SCRAPES"
scraper "$ADMIN_PORT" "$SCRAPES" &
track_pid $! "scraper"
log "scraping http://127.0.0.1:$ADMIN_PORT/metrics every ${SCRAPE_EVERY}s during the runs"

run_rounds BF.ADD
# shellcheck disable=SC2086
check_bench_filter $TARGETS

scrapes="$(cat "$SCRAPES")"
sets="$(metric "$ADMIN_PORT" 'bloomproxy_commands_total{command="set"}')" || sets="?"
adds="$(metric "$ADMIN_PORT" 'bloomproxy_commands_total{command="bf.add"}')" || adds="?"
bytes="$(curl -sf "http://127.0.0.1:$ADMIN_PORT/metrics" | wc -c)"

{
  echo "## Metrics and the admin port: cost on throughput ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $(nproc) CPU(s), $ROUNDS interleaved round(s), SET/GET -c $CLIENTS -P $PIPELINE -n $N -r $KEYSPACE -d $DATASIZE, BF.ADD -n $BF_N; ${BASELINE_BIN:+base = \`$BASELINE_BIN\` (no metrics), }off = \`${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}\`, on = the same with \`--admin-port\` and /metrics scraped every ${SCRAPE_EVERY}s ($scrapes scrapes of $bytes bytes, the last one); each proxy in front of its own redis-server; host CPU busy before start: ${HOST_BUSY}%"
  echo
  rounds_report "$CSV" <<'EOF'
targets_table(("base", "off", "on"), [("base", ("off", "on")), ("off", ("on",))])
ratios_rows([("on", "off", "on/off"), ("off", "base", "off/base"), ("on", "base", "on/base")])
load_summary()
EOF
  echo
  echo "The \"on\" proxy counted set: $sets, bf.add: $adds commands (prefill and sanity checks included)."
} | tee "$MD"

finish_runs
