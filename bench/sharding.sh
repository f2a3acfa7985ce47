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

parse_round_args "$@"
SERVERS="${SERVERS:-2}"
# CLIENTS, PIPELINE, N, BF_N, ..., and the one filter the BF.* runs use, BF_KEY (bfk): see lib.sh.
# The filter's name has no braces, so behind nutcracker all its keys ({bfk}:bf:...) are on one
# server.
redis_bench_settings 1000000 SERVERS
((SERVERS >= 2)) || die "SERVERS must be at least 2 (is $SERVERS): nothing is sharded with one"
# The nutcracker pool: what the integration tests' fixture (tests/integration/bp_nutcracker.py)
# and typical sharded fleets use.
TW_HASH=fnv1a_64 TW_DISTRIBUTION=ketama
results_files sharding

# start_nutcracker_sharded PORT... -> TWEM_PORT, TWEM_PID: as lib.sh's start_nutcracker (one
# preconnected server connection, no ejection, stats on a free loopback port), but one pool over
# all the given redis-servers, sharded by hash tag ({...}) with TW_HASH / TW_DISTRIBUTION.
start_nutcracker_sharded() {
  free_port TWEM_PORT
  launch_nutcracker < <(
    i=0
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
  )
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
  start_standalone_target
  BF_TARGETS+=" standalone"
fi

# Functional checks: a SET/GET round trip on every target, the proxy in sharding-proxy mode,
# BF.* through every proxy.
for t in $TARGETS; do
  sanity_check "${PORT[$t]}" "$t" || die "$t does not pass a SET/GET round trip; not benchmarking"
done
kind="$(info_field "${PORT[proxy]}" upstream_kind proxy)" || kind="(INFO proxy failed)"
[[ "$kind" == sharding-proxy ]] || die "bloomproxy :${PORT[proxy]} says upstream_kind:$kind, expected sharding-proxy"
# shellcheck disable=SC2086  # BF_TARGETS is a list of words
reserve_bench_filter $BF_TARGETS
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
prefill_keyspace twemproxy direct
SPREAD=""
for i in "${!SHARD_PORTS[@]}"; do
  n="$(redis-cli -h 127.0.0.1 -p "${SHARD_PORTS[i]}" DBSIZE)"
  ((n > 0)) || die "server$i holds no keys after the prefill through nutcracker: nothing is sharded"
  SPREAD+="${SPREAD:+, }server$i $n"
done
log "keys per server: $SPREAD (server0 is also the direct target)"

run_rounds BF.ADD BF.EXISTS

# shellcheck disable=SC2086  # BF_TARGETS is a list of words
check_bench_filter $BF_TARGETS
conn_errors="$(info_field "${PORT[proxy]}" upstream_connection_errors proxy)" || conn_errors="?"
refused="$(info_field "${PORT[proxy]}" sharding_proxy_refused_commands proxy)" || refused="?"
[[ "$conn_errors" == 0 ]] || log "warning: bloomproxy -> nutcracker lost upstream connections: upstream_connection_errors:$conn_errors"

{
  echo "## bloomproxy in front of twemproxy ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $("$NUTCRACKER_BIN" --version 2>&1 | head -1 | sed 's/^This is //') over $SERVERS redis-servers (hash $TW_HASH, distribution $TW_DISTRIBUTION, hash_tag \"{}\", server_connections 1), $(nproc) CPU(s), $ROUNDS interleaved round(s), -c $CLIENTS -P $PIPELINE; twemproxy = straight to nutcracker, proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/} --upstream-kind sharding-proxy --upstream nutcracker${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}, direct = straight to server0$( ((STANDALONE)) && echo ", standalone = the same binary --upstream one other redis-server"); SET/GET -n $N -r $KEYSPACE -d $DATASIZE; BF.ADD/BF.EXISTS -n $BF_N -r 100000000 on one filter (\`BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY\`, so on one server behind nutcracker); host CPU busy before start: ${HOST_BUSY}%"
  echo
  rounds_report "$CSV" <<'EOF'
targets_table(("twemproxy", "proxy", "direct", "standalone"),
              [("twemproxy", ("proxy",)), ("direct", ("proxy", "twemproxy")), ("standalone", ("proxy",))])

# (numerator, denominator, label) per test: SET/GET vs. twemproxy and direct; BF.* through the
# proxy in front of nutcracker vs. the proxy in front of one redis-server.
RATIOS = [("proxy", "twemproxy", "proxy/twemproxy"), ("proxy", "direct", "proxy/direct"),
          ("twemproxy", "direct", "twemproxy/direct"), ("proxy", "standalone", "sharding/standalone")]

ratios_rows(RATIOS)
load_summary()
EOF
  echo
  echo "Keys per server after the prefill: $SPREAD; filter $BF_KEY on server$BF_SERVER. bloomproxy (sharding-proxy) at the end: upstream_connection_errors:$conn_errors, sharding_proxy_refused_commands:$refused (redis-benchmark's CONFIG GET at the start of each run)."
} | tee "$MD"

finish_runs
