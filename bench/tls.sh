#!/usr/bin/env bash
# Throughput of bloomproxy with TLS on both sides (clients -> proxy's tls-port, proxy ->
# upstream-tls to a TLS-only redis-server) vs. redis-benchmark --tls straight to that
# redis-server; for reference the same without TLS (bloomproxy in front of a plain redis-server
# vs. that server direct); SET/GET in the same interleaved rounds. See bench/README.md and
# docs/tls.md.
#
# Usage: bench/tls.sh [--rounds N] [--quick] [--help]
#   --quick      smoke run: 1 round, a tenth of the requests
#
# Environment:
#   CLIENTS      redis-benchmark -c (default 50)
#   PIPELINE     redis-benchmark -P (default 16)
#   N            requests per SET/GET run (default 1000000)
#   KEYSPACE     redis-benchmark -r (default 100000)
#   DATASIZE     redis-benchmark -d (default 3)
#   KEY_TYPE     key of the CA and the server certificate: rsa:2048 (default), rsa:4096, ec
#                (P-256)
#   GOAL         the proxy-tls/direct-tls ratio the report checks against (default 0.6)
#   ROUNDS       rounds (default 3; --rounds wins)
#   RUN_TIMEOUT  seconds before one redis-benchmark run is killed (default 600)
#   BUSY_WARN_PCT  flag runs during which other processes used >= this % of the CPUs (default 15)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS, REDIS_SERVER_BIN   see bench/lib.sh
#
# redis-server must be built with TLS (Debian's is), redis-benchmark must take --tls, and the
# openssl command-line tool makes the certificates (a CA and one server certificate for
# 127.0.0.1, used by both servers) in the temp dir.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

parse_round_args "$@"
KEY_TYPE="${KEY_TYPE:-rsa:2048}"
GOAL="${GOAL:-0.6}"
redis_bench_settings 1000000   # CLIENTS, PIPELINE, N, KEYSPACE, DATASIZE, RUN_TIMEOUT: see lib.sh
[[ "$GOAL" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "GOAL must be a number (is '$GOAL')"
case "$KEY_TYPE" in
  rsa:2048 | rsa:4096) NEWKEY=(-newkey "$KEY_TYPE") ;;
  ec) NEWKEY=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
  *) die "KEY_TYPE must be rsa:2048, rsa:4096 or ec (is '$KEY_TYPE')" ;;
esac
command -v openssl >/dev/null || die "openssl not found (Debian: openssl)"
redis-benchmark --help 2>&1 | grep -q -- '--cacert' || die "this redis-benchmark has no --tls / --cacert"
results_files tls

# (make_certs, start_tls_redis, start_tls_bloomproxy, plaintext_refused, negotiated: see lib.sh.)
bench_init
check_host_idle
[[ "$BENCH_TMP" != *[[:space:]]* ]] || die "the temp dir ($BENCH_TMP) has a space: set TMPDIR"
make_certs "$BENCH_TMP/certs"
start_tls_redis
start_tls_bloomproxy "$TLS_REDIS_PORT"
# shellcheck disable=SC2119  # no extra redis-server args here
start_redis
start_bloomproxy "$REDIS_PORT"
declare -A PORT=([direct-tls]="$TLS_REDIS_PORT" [proxy-tls]="$TLS_PROXY_PORT"
                 [direct]="$REDIS_PORT" [proxy]="$PROXY_PORT")
TLS_ARGS="--tls --cacert $CA_CRT"
TARGET_ARGS[direct-tls]="$TLS_ARGS"
TARGET_ARGS[proxy-tls]="$TLS_ARGS"
TARGETS="direct-tls proxy-tls direct proxy"
BF_TARGETS=""

# Functional checks: a SET/GET round trip on every target (the TLS ones with a verified
# certificate); no plaintext answer on the TLS ports.
for t in $TARGETS; do
  # shellcheck disable=SC2086  # TARGET_ARGS holds words
  sanity_check "${PORT[$t]}" "$t" ${TARGET_ARGS[$t]:-} \
    || die "$t does not pass a SET/GET round trip; not benchmarking"
done
tls_targets_checked direct-tls proxy-tls   # CIPHER_REDIS, CIPHER_PROXY

# Fill ~95% of the keyspace of both redis-servers (the TLS one directly; the proxies read the
# same keys), so GETs hit from the first round on.
log "prefilling ~95% of $KEYSPACE keys (value size $DATASIZE) in both redis-servers"
prefill_keyspace direct-tls direct

# shellcheck disable=SC2119  # SET/GET only: no BF.* commands
run_rounds

# shellcheck disable=SC2086  # TLS_ARGS holds words
conn_errors="$(info_field "${PORT[proxy-tls]}" upstream_connection_errors proxy $TLS_ARGS)" || conn_errors="?"
[[ "$conn_errors" == 0 ]] || log "warning: bloomproxy (TLS) lost upstream connections: upstream_connection_errors:$conn_errors"

{
  echo "## bloomproxy with TLS on both sides ($STAMP)"
  echo
  echo "$(redis-server --version | cut -d' ' -f1-3 | sed 's/Redis server v=/redis-server /'), $(openssl version | cut -d' ' -f1-2), $KEY_TYPE certificates, $(nproc) CPU(s), $ROUNDS interleaved round(s), SET/GET -c $CLIENTS -P $PIPELINE -n $N -r $KEYSPACE -d $DATASIZE; direct-tls = \`redis-benchmark --tls --cacert CA\` to a TLS-only redis-server ($CIPHER_REDIS), proxy-tls = the same to \`${BLOOMPROXY_BIN#"$REPO_ROOT"/} --port 0 --tls-port Q --tls-auth-clients no --upstream-tls yes --upstream-tls-ca-cert-file CA${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}\` in front of that server ($CIPHER_PROXY); direct, proxy = without TLS, the same binary in front of another redis-server; host CPU busy before start: ${HOST_BUSY}%"
  echo
  rounds_report "$CSV" "$GOAL" <<'EOF'
goal = float(sys.argv[3])
targets_table(("direct-tls", "proxy-tls", "direct", "proxy"),
              [("direct-tls", ("proxy-tls",)), ("direct", ("proxy", "direct-tls")),
               ("proxy", ("proxy-tls",))])

RATIOS = [("proxy-tls", "direct-tls", "proxy-tls/direct-tls"), ("proxy", "direct", "proxy/direct"),
          ("direct-tls", "direct", "direct-tls/direct"), ("proxy-tls", "proxy", "proxy-tls/proxy")]

ratios_rows(RATIOS)
print()
for test in tests:
    a, b = med((test, "proxy-tls")), med((test, "direct-tls"))
    if a and b:
        print(f"{test}: proxy-tls/direct-tls {a / b:.2f}, goal >= {goal:.2f}: "
              + ("met" if a / b >= goal else "NOT met"))
load_summary()
EOF
  echo
  echo "bloomproxy (TLS) at the end: upstream_connection_errors:$conn_errors."
} | tee "$MD"

finish_runs
