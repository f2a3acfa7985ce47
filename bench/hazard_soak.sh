#!/usr/bin/env bash
# Hazard soak: for DURATION seconds, HAZARDS clients send, at random, the commands that change
# what a connection is (replication streams: SYNC, PSYNC, REPLCONF, redis-cli --rdb; MONITOR;
# pub/sub; client tracking; CLIENT REPLY modes; CLIENT NO-EVICT; SELECT; WATCH/MULTI;
# SUBSCRIBE inside MULTI; blocking commands; WAIT; scripts; DEBUG SLEEP; CLIENT PAUSE;
# READONLY/ASKING; RESET and QUIT mid-pipeline; disconnects mid-command), each checking its own
# replies, while LOAD clients run checked pipelined SET/GET/INCR and BF.ADD/BF.EXISTS through the
# same proxy. The mix is tests/integration/hazard_mix.py (the CI test runs it for 20 s).
#
#   bench/hazard_soak.sh                     # 60 s, 8 hazard clients, 4 load clients
#   DURATION=600 HAZARDS=16 bench/hazard_soak.sh
#   THREADS=2 bench/hazard_soak.sh           # the proxy with two event loops
#
# Prints the actions run, the load's batches and longest stall, and the proxy's RSS before and
# after. Exit status 1 if a load client saw an error, a wrong reply or a stall over MAX_STALL
# seconds, if a hazard client got a wrong reply or hung, or if the proxy died.
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

DURATION="${DURATION:-60}"
HAZARDS="${HAZARDS:-8}"
LOAD="${LOAD:-4}"
THREADS="${THREADS:-1}"
MAX_STALL="${MAX_STALL:-2.0}"
SEED="${SEED:-}"
for v in DURATION HAZARDS LOAD THREADS; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a whole number (is '${!v}')"
done

bench_init
start_redis --enable-debug-command yes --repl-diskless-sync-delay 0
start_bloomproxy "$REDIS_PORT" --threads "$THREADS"
rss_before=$(rss_kb "$PROXY_PID")
log "hazard mix for ${DURATION}s: $HAZARDS hazard clients, $LOAD load clients, $THREADS loop(s)"
status=0
PYTHONPATH="$REPO_ROOT/tests/integration" "$BENCH_PY" - "$PROXY_PORT" "$DURATION" "$HAZARDS" \
  "$LOAD" "$MAX_STALL" "$SEED" <<'PY' || status=1
import sys
import hazard_mix
port, seconds, hazards, load, max_stall, seed = sys.argv[1:]
try:
    report = hazard_mix.run_mix(int(port), seconds=int(seconds), hazard_clients=int(hazards),
                                load_clients=int(load), max_stall=float(max_stall),
                                seed=int(seed) if seed else None)
except AssertionError as exc:
    print(f"FAILED: {exc}")
    sys.exit(1)
print(f"seed={report['seed']} load_batches={report['batches']} "
      f"longest_stall_s={report['longest_stall']:.3f}")
print("actions: " + " ".join(f"{k}={v}" for k, v in sorted(report["actions"].items())))
print(f"actions_total={sum(report['actions'].values())}")
PY
if pid_alive "$PROXY_PID"; then
  echo "proxy_alive=yes rss_kb_before=$rss_before rss_kb_after=$(rss_kb "$PROXY_PID")"
else
  echo "proxy_alive=no"
  status=1
fi
if grep -q "protocol error from upstream" "$PROXY_LOG"; then
  echo "the proxy logged protocol errors from the upstream"
  status=1
fi
exit "$status"
