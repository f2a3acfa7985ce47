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

parse_round_args "$@"
MASTERS="${MASTERS:-3}"
redis_bench_settings 2000000 MASTERS   # CLIENTS, PIPELINE, N, BF_N, ..., BF_KEY: see lib.sh
((MASTERS >= 3)) || die "redis-benchmark --cluster needs at least 3 masters (MASTERS=$MASTERS)"
results_files cluster

# (start_cluster, start_bloomproxy_cluster: see lib.sh.)
bench_init
check_host_idle
start_cluster "$MASTERS"
SEEDS="$(printf '127.0.0.1:%s,' "${CLUSTER_PORTS[@]}")"
start_bloomproxy_cluster "${SEEDS%,}"
declare -A PORT=([proxy]="$PROXY_PORT")
# (--cluster: redis-benchmark asks this node for the others and sends each key to its master.)
TARGET_ARGS[direct]="--cluster"
PORT[direct]="${CLUSTER_PORTS[0]}"
TARGETS="direct proxy"
BF_TARGETS="proxy"
if ((STANDALONE)); then
  # shellcheck disable=SC2119  # no extra redis-server args here
  start_standalone_target
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
# shellcheck disable=SC2086  # BF_TARGETS is a list of words
reserve_bench_filter $BF_TARGETS

# Fill ~95% of the keyspace of every target, so GETs hit from the first round on. redis-benchmark
# --cluster names its keys key:{tag}:N (a tag per master) and the others key:N, so the direct
# keys are set directly and the proxies' keys through the proxies.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) for every target"
# shellcheck disable=SC2086  # TARGETS is a list of words
prefill_keyspace $TARGETS
total=0
for port in "${CLUSTER_PORTS[@]}"; do
  total=$((total + $(redis-cli -h 127.0.0.1 -p "$port" DBSIZE)))
done
log "the cluster now holds $total keys"

run_rounds BF.ADD

# shellcheck disable=SC2086  # BF_TARGETS is a list of words
check_bench_filter $BF_TARGETS

{
  echo "## bloomproxy in front of a Redis Cluster ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $MASTERS masters (no replicas), $(nproc) CPU(s), $ROUNDS interleaved round(s), -c $CLIENTS -P $PIPELINE; direct = \`redis-benchmark --cluster\` to the masters, proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/} --upstream-cluster${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}$( ((STANDALONE)) && echo ", standalone = the same binary --upstream one redis-server"); BF.ADD on one filter (\`BF.RESERVE $BF_KEY $BF_ERROR $BF_CAPACITY\`, so on one master); host CPU busy before start: ${HOST_BUSY}%"
  echo
  rounds_report "$CSV" <<'EOF'
targets_table(("direct", "proxy", "standalone"),
              [("direct", ("proxy", "standalone")), ("standalone", ("proxy",))])

ratios_heading()
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
load_summary()
EOF
} | tee "$MD"

finish_runs
