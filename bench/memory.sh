#!/usr/bin/env bash
# Memory cost of idle client connections: RSS of bloomproxy (and of twemproxy, and redis-server
# itself for reference) idle after startup, with K idle clients connected, after they close, and
# after BATCHES batches of K have connected and closed (leak check).
# See bench/README.md.
#
# Usage: bench/memory.sh [K] [--help]          K = number of idle clients (default 1000)
#
# Environment:
#   TARGETS   subset/order of "proxy twemproxy direct" (default all three; "direct" measures
#             redis-server itself, with the clients connected straight to it)
#   SETTLE    seconds to wait before each RSS reading (default 1)
#   BATCHES   how many times K clients connect and close in all (default 3; leak check)
#   BLOOMPROXY_BIN, BLOOMPROXY_ARGS   see bench/lib.sh (for K near or above bloomproxy's default
#             maxclients, 10000, the script passes --maxclients K+100 itself)
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }

K=1000
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    *) [[ "$1" =~ ^[1-9][0-9]*$ ]] || { usage; die "bad argument: $1"; }; K="$1"; shift ;;
  esac
done
TARGETS="${TARGETS:-proxy twemproxy direct}"
SETTLE="${SETTLE:-1}"
BATCHES="${BATCHES:-3}"
[[ "$BATCHES" =~ ^[1-9][0-9]*$ ]] || die "BATCHES must be a positive integer"
for t in $TARGETS; do
  [[ "$t" == direct || "$t" == proxy || "$t" == twemproxy ]] || die "unknown target '$t'"
done

# Every process started below inherits this: the servers need K + a few fds, the client helper K.
want_fds=$((K + 1024))
((want_fds < 20000)) && want_fds=20000
raise_nofile "$want_fds"
(($(ulimit -Sn) >= K + 64)) || die "open files limit $(ulimit -Sn) is too low for $K clients"

mkdir -p "$BENCH_DIR/results"
STAMP="$(date +%Y%m%d-%H%M%S)"
CSV="$BENCH_DIR/results/memory-$STAMP.csv"
MD="$BENCH_DIR/results/memory-$STAMP.md"

bench_init

# Client helper: open K connections one by one, PING on each and expect +PONG, then report and
# hold them open until killed.
HOLD_PY="$BENCH_TMP/hold_clients.py"
cat >"$HOLD_PY" <<'EOF'
import os, signal, socket, sys, time

port, count, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def report(msg):
    tmp = ready + ".tmp"
    with open(tmp, "w") as f:
        f.write(msg + "\n")
    os.rename(tmp, ready)

socks = []
try:
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        buf = b""
        while not buf.endswith(b"\r\n"):
            chunk = s.recv(64)
            if not chunk:
                raise RuntimeError(f"connection {i + 1} closed by server (got {buf!r})")
            buf += chunk
        if buf != b"+PONG\r\n":
            raise RuntimeError(f"connection {i + 1}: expected +PONG, got {buf!r}")
        socks.append(s)
except Exception as e:  # noqa: BLE001 - report anything to the driver script
    report(f"ERR after {len(socks)} connections: {e}")
    sys.exit(1)
report(f"OK {len(socks)}")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    signal.pause()
EOF

start_redis --maxclients $((K + 100))
# bloomproxy refuses clients beyond --maxclients (default 10000).
PROXY_EXTRA=()
((K + 100 > 10000)) && PROXY_EXTRA=(--maxclients $((K + 100)))
declare -A PID=([direct]="$REDIS_PID") PORT=([direct]="$REDIS_PORT")
declare -A LABEL=([direct]="redis-server (direct)" [proxy]="bloomproxy" [twemproxy]="twemproxy")

echo "target,clients,rss_idle_kb,rss_clients_kb,rss_after_close_kb,rss_after_batches_kb,bytes_per_client,fds_idle,fds_clients" >"$CSV"

# open_clients TARGET BATCH: start the helper against TARGET and wait until its K clients are
# connected and answered; sets HOLD_PID.
open_clients() {
  local t="$1" batch="$2" ready="$BENCH_TMP/ready-$1-$2" deadline status
  "$BENCH_PY" "$HOLD_PY" "${PORT[$t]}" "$K" "$ready" >"$BENCH_TMP/hold-$t-$batch.log" 2>&1 &
  HOLD_PID=$!
  track_pid "$HOLD_PID" "client helper ($t)"
  deadline=$((SECONDS + 60 + K / 100))
  while [[ ! -f "$ready" ]]; do
    if ! kill -0 "$HOLD_PID" 2>/dev/null; then
      _show_log "$BENCH_TMP/hold-$t-$batch.log"
      die "client helper for $t exited without reporting"
    fi
    ((SECONDS < deadline)) || die "client helper for $t did not finish connecting in time"
    sleep 0.1
  done
  status="$(<"$ready")"
  [[ "$status" == OK* ]] || die "${LABEL[$t]}: $status"
  kill -0 "${PID[$t]}" 2>/dev/null || die "${LABEL[$t]} died while clients connected"
}

fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

measure() {
  local t="$1" pid idle with after again fds0 fds1
  case "$t" in
    proxy) start_bloomproxy "$REDIS_PORT" "${PROXY_EXTRA[@]}"; PID[proxy]="$PROXY_PID"; PORT[proxy]="$PROXY_PORT" ;;
    twemproxy) start_nutcracker "$REDIS_PORT"; PID[twemproxy]="$TWEM_PID"; PORT[twemproxy]="$TWEM_PORT" ;;
  esac
  pid="${PID[$t]}"
  sleep "$SETTLE"
  idle="$(rss_kb "$pid")"
  fds0="$(fd_count "$pid")"
  log "${LABEL[$t]} (pid $pid): idle RSS ${idle} KiB, $fds0 fds; opening $K idle clients"

  open_clients "$t" 1
  sleep "$SETTLE"
  with="$(rss_kb "$pid")"
  fds1="$(fd_count "$pid")"
  log "${LABEL[$t]}: with $K clients RSS ${with} KiB, $fds1 fds"
  stop_pid "$HOLD_PID"
  sleep "$SETTLE"
  after="$(rss_kb "$pid")"
  log "${LABEL[$t]}: after the clients closed RSS ${after} KiB"

  # Further batches of the same size should reuse the memory freed by the first; RSS growing
  # by a similar amount with every batch points at a leak.
  local b
  again="$after"
  for ((b = 2; b <= BATCHES; b++)); do
    open_clients "$t" "$b"
    stop_pid "$HOLD_PID"
    sleep "$SETTLE"
    again="$(rss_kb "$pid")"
    log "${LABEL[$t]}: after batch $b of $K clients closed RSS ${again} KiB"
  done
  echo "$t,$K,$idle,$with,$after,$again,$(((with - idle) * 1024 / K)),$fds0,$fds1" >>"$CSV"
}

for t in $TARGETS; do
  measure "$t"
done

{
  echo "## Idle-client memory, $K clients ($STAMP)"
  echo
  echo "RSS = VmRSS of the server process; bytes/client = (RSS with clients - RSS idle) / $K;" \
    "proxy = ${BLOOMPROXY_BIN#"$REPO_ROOT"/}${BLOOMPROXY_ARGS:+ $BLOOMPROXY_ARGS}"
  echo
  echo "| target | RSS idle | RSS with $K clients | RSS after close | RSS after $BATCHES batches | bytes/client | fds idle → with clients |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  while IFS=, read -r t _ idle with after again per fds0 fds1; do
    printf '| %s | %s KiB | %s KiB | %s KiB | %s KiB | %s | %s → %s |\n' \
      "${LABEL[$t]}" "$idle" "$with" "$after" "$again" "$per" "$fds0" "$fds1"
  done < <(tail -n +2 "$CSV")
} | tee "$MD"
log "results: ${CSV#"$REPO_ROOT"/}, ${MD#"$REPO_ROOT"/}"
