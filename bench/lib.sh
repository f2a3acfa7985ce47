# shellcheck shell=bash
# Shared helpers for the bench/ scripts. Source it; do not execute it.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   bench_init                 # temp dir + cleanup trap (EXIT, INT, TERM, HUP)
#   start_redis                # -> REDIS_PORT, REDIS_PID, REDIS_DIR
#   start_bloomproxy "$REDIS_PORT"   # -> PROXY_PORT, PROXY_PID, PROXY_LOG
#   start_nutcracker "$REDIS_PORT"   # -> TWEM_PORT, TWEM_PID
#
# Everything listens on 127.0.0.1 only, on ports picked at run time (never fixed ports).
# Every process started through these helpers is killed, and the temp dir removed, on exit.
# Progress goes to stderr; stdout is left for the scripts' results.

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$BENCH_DIR/.." && pwd)"
BENCH_PY="${BENCH_PY:-/usr/bin/python3}"
BLOOMPROXY_BIN="${BLOOMPROXY_BIN:-$REPO_ROOT/build/bloomproxy}"
# Extra flags for bloomproxy (word-split), e.g. BLOOMPROXY_ARGS="--loglevel warning".
BLOOMPROXY_ARGS="${BLOOMPROXY_ARGS:-}"
REDIS_SERVER_BIN="${REDIS_SERVER_BIN:-redis-server}"
NUTCRACKER_BIN="${NUTCRACKER_BIN:-nutcracker}"
STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-10}"   # seconds to wait for a listener

BENCH_TMP=""
_BENCH_PIDS=()
_BENCH_NAMES=()
_BENCH_PORTS=()   # ports already handed out by free_port in this run
_BENCH_CLEANED=0

# (|| true: stderr may be a closed pipe, e.g. `bench/compare.sh 2>&1 | head`.)
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2 2>/dev/null || true; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Setup / cleanup

bench_init() {
  [[ -x "$BENCH_PY" ]] || die "python3 not found at $BENCH_PY (set BENCH_PY)"
  BENCH_TMP="$(mktemp -d "${TMPDIR:-/tmp}/bloombench.XXXXXX")"
  trap '_bench_cleanup' EXIT
  trap '_bench_signal INT 130' INT
  trap '_bench_signal TERM 143' TERM
  trap '_bench_signal HUP 129' HUP
  # Without this, writing to a closed pipe (`... | head`) would kill the script silently and
  # skip the cleanup, leaving the servers running.
  trap '_bench_signal PIPE 141' PIPE
}

_bench_signal() {
  trap '' PIPE   # from here on a closed stderr must not re-enter this handler
  log "caught SIG$1, cleaning up"
  exit "$2"   # runs the EXIT trap
}

# Remember a background process so cleanup kills it.
track_pid() { _BENCH_PIDS+=("$1"); _BENCH_NAMES+=("${2:-pid $1}"); }

# Forget a process the script has stopped (and reaped) itself, so cleanup never signals its pid,
# which the kernel may hand to another process by then.
untrack_pid() {
  local i
  for i in "${!_BENCH_PIDS[@]}"; do
    if [[ "${_BENCH_PIDS[i]}" == "$1" ]]; then
      unset '_BENCH_PIDS[i]' '_BENCH_NAMES[i]'
    fi
  done
  _BENCH_PIDS=("${_BENCH_PIDS[@]}")
  _BENCH_NAMES=("${_BENCH_NAMES[@]}")
}

# Is PID running (a zombie, exited but not reaped yet, does not count)?
pid_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# Stop one process: SIGTERM, wait up to ~5 s, then SIGKILL.
stop_pid() {
  local pid="$1" i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid did not exit on SIGTERM, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

_bench_cleanup() {
  local rc=$?
  ((_BENCH_CLEANED)) && return 0
  _BENCH_CLEANED=1
  trap '' INT TERM HUP PIPE   # do not let a second CTRL-C interrupt the cleanup
  local i
  for ((i = ${#_BENCH_PIDS[@]} - 1; i >= 0; i--)); do   # reverse start order: clients first
    if kill -0 "${_BENCH_PIDS[i]}" 2>/dev/null; then
      log "stopping ${_BENCH_NAMES[i]} (pid ${_BENCH_PIDS[i]})"
    fi
    stop_pid "${_BENCH_PIDS[i]}"
  done
  if [[ -n "$BENCH_TMP" && -d "$BENCH_TMP" ]]; then
    if ((rc != 0)) && [[ -n "${KEEP_TMP_ON_ERROR:-}" ]]; then
      log "keeping $BENCH_TMP (KEEP_TMP_ON_ERROR set)"
    else
      rm -rf -- "$BENCH_TMP"
    fi
  fi
  return "$rc"
}

# ---------------------------------------------------------------------------------------------
# Ports

# free_port VAR: set VAR to a currently free TCP port on 127.0.0.1 (kernel-chosen ephemeral
# port), never one this run has already handed out. (Sets a variable rather than printing, so the
# list of handed-out ports survives: $(...) would run in a subshell.)
free_port() {
  local -n _fp_out="$1"
  local p tries
  for ((tries = 0; tries < 50; tries++)); do
    p="$("$BENCH_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()')"
    if [[ " ${_BENCH_PORTS[*]} " != *" $p "* ]]; then
      _BENCH_PORTS+=("$p")
      _fp_out="$p"
      return 0
    fi
  done
  die "could not find a free port"
}

# free_port_stable VAR: like free_port, but below the kernel's ephemeral port range
# (net.ipv4.ip_local_port_range), for a server the script stops and starts again on the same
# port: while it is down, no outgoing connection (a client's or the proxy's own reconnect
# attempts) can be given that port as its local port and keep the server from binding it again,
# or connect to itself.
free_port_stable() {
  local -n _fps_out="$1"
  local p
  p="$("$BENCH_PY" - "${_BENCH_PORTS[@]}" <<'EOF'
import random, socket, sys
used = set(int(x) for x in sys.argv[1:])
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo = int(f.read().split()[0])
except OSError:
    lo = 32768
lo = max(lo, 2048)
for _ in range(200):
    p = random.randrange(1024 if lo < 12000 else 10000, lo)
    if p in used:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
EOF
)"
  [[ -n "$p" ]] || die "could not find a free port below the ephemeral range"
  _BENCH_PORTS+=("$p")
  _fps_out="$p"
}

# Is something accepting TCP connections on 127.0.0.1:PORT?
port_open() {
  "$BENCH_PY" - "$1" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket()
s.settimeout(0.5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

# wait_for_port PORT PID NAME LOGFILE: wait until PORT accepts connections; fail early (with the
# tail of LOGFILE) if PID dies, or after STARTUP_TIMEOUT seconds.
wait_for_port() {
  local port="$1" pid="$2" name="$3" logfile="${4:-}" deadline
  deadline=$((SECONDS + STARTUP_TIMEOUT))
  while ! port_open "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) exited before listening on 127.0.0.1:$port"
      _show_log "$logfile"
      die "$name failed to start"
    fi
    if ((SECONDS >= deadline)); then
      _show_log "$logfile"
      die "$name did not listen on 127.0.0.1:$port within ${STARTUP_TIMEOUT}s"
    fi
    sleep 0.05
  done
}

_show_log() {
  [[ -n "$1" && -s "$1" ]] || return 0
  log "last lines of $1:"
  tail -n 20 "$1" | sed 's/^/    /' >&2 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------
# Servers. Each sets <NAME>_PORT and <NAME>_PID globals (call directly, not in $(...), so the
# background process stays a child of the script).

# start_redis [extra redis-server args...] -> REDIS_PORT, REDIS_PID, REDIS_DIR
start_redis() {
  local port
  free_port port
  start_redis_on "$port" "$@"
}

# start_redis_on PORT [extra redis-server args...] -> REDIS_PORT, REDIS_PID, REDIS_DIR: as
# start_redis, on a given port (e.g. from free_port_stable).
start_redis_on() {
  REDIS_PORT="$1"; shift
  REDIS_DIR="$BENCH_TMP/redis-$RANDOM$RANDOM"
  mkdir -p "$REDIS_DIR"
  launch_redis "$REDIS_PORT" "$REDIS_DIR" "$@"
  wait_for_port "$REDIS_PORT" "$REDIS_PID" redis-server "$REDIS_DIR/redis.log"
  log "redis-server pid $REDIS_PID on 127.0.0.1:$REDIS_PORT"
}

# launch_redis PORT DIR [extra args...] -> REDIS_PID (tracked): start redis-server in DIR (its
# log is appended to DIR/redis.log) without waiting for it to listen. For restarting a server on
# its port: launch_redis "$REDIS_PORT" "$REDIS_DIR".
launch_redis() {
  local port="$1" dir="$2"; shift 2
  command -v "$REDIS_SERVER_BIN" >/dev/null || die "redis-server not found"
  "$REDIS_SERVER_BIN" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir" --daemonize no --logfile "$dir/redis.log" "$@" \
    >>"$dir/stdout.log" 2>&1 &
  REDIS_PID=$!
  track_pid "$REDIS_PID" "redis-server :$port"
}

# start_bloomproxy UPSTREAM_PORT [extra args...] -> PROXY_PORT, PROXY_PID, PROXY_LOG (its stderr)
start_bloomproxy() {
  local upstream_port="$1"; shift
  [[ -x "$BLOOMPROXY_BIN" ]] || die "bloomproxy binary not found at $BLOOMPROXY_BIN (build it, or set BLOOMPROXY_BIN)"
  local dir="$BENCH_TMP/bloomproxy-$RANDOM$RANDOM"
  mkdir -p "$dir"
  free_port PROXY_PORT
  # shellcheck disable=SC2086  # BLOOMPROXY_ARGS is deliberately word-split
  "$BLOOMPROXY_BIN" --bind 127.0.0.1 --port "$PROXY_PORT" --upstream "127.0.0.1:$upstream_port" \
    $BLOOMPROXY_ARGS "$@" >"$dir/bloomproxy.log" 2>&1 &
  PROXY_PID=$!
  # shellcheck disable=SC2034  # for the scripts (soak.sh)
  PROXY_LOG="$dir/bloomproxy.log"
  track_pid "$PROXY_PID" "bloomproxy :$PROXY_PORT"
  wait_for_port "$PROXY_PORT" "$PROXY_PID" bloomproxy "$dir/bloomproxy.log"
  log "bloomproxy pid $PROXY_PID on 127.0.0.1:$PROXY_PORT -> 127.0.0.1:$upstream_port ($BLOOMPROXY_BIN)"
}

# start_nutcracker UPSTREAM_PORT -> TWEM_PORT, TWEM_PID
# One pool, one server, hash/distribution left at their defaults, one preconnected server
# connection. The stats listener is also put on a free loopback port (default is 0.0.0.0:22222).
start_nutcracker() {
  local upstream_port="$1"
  command -v "$NUTCRACKER_BIN" >/dev/null || die "nutcracker not found"
  local dir="$BENCH_TMP/nutcracker-$RANDOM$RANDOM" stats_port
  mkdir -p "$dir"
  free_port TWEM_PORT
  free_port stats_port
  cat >"$dir/nutcracker.yml" <<EOF
bench:
  listen: 127.0.0.1:$TWEM_PORT
  redis: true
  preconnect: true
  server_connections: 1
  auto_eject_hosts: false
  servers:
   - 127.0.0.1:$upstream_port:1
EOF
  "$NUTCRACKER_BIN" -t -c "$dir/nutcracker.yml" >"$dir/conftest.log" 2>&1 \
    || { _show_log "$dir/conftest.log"; die "nutcracker rejected its generated config"; }
  "$NUTCRACKER_BIN" -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -p "$dir/nutcracker.pid" \
    -a 127.0.0.1 -s "$stats_port" -v "${NUTCRACKER_VERBOSITY:-4}" >"$dir/stdout.log" 2>&1 &
  TWEM_PID=$!
  track_pid "$TWEM_PID" "nutcracker :$TWEM_PORT"
  wait_for_port "$TWEM_PORT" "$TWEM_PID" nutcracker "$dir/nutcracker.log"
  log "nutcracker pid $TWEM_PID on 127.0.0.1:$TWEM_PORT -> 127.0.0.1:$upstream_port"
}

# ---------------------------------------------------------------------------------------------
# Misc

# Resident set size of PID in KiB (VmRSS from /proc/PID/status).
rss_kb() {
  local v
  v="$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null)" || true
  [[ -n "$v" ]] || die "cannot read VmRSS of pid $1 (process gone?)"
  printf '%s\n' "$v"
}

# Functional check: SET then GET a key through 127.0.0.1:PORT. Returns non-zero on failure.
sanity_check() {
  local port="$1" name="$2" key="bloombench:sanity:$RANDOM" got
  if ! got="$(redis-cli -h 127.0.0.1 -p "$port" SET "$key" ok 2>&1)" || [[ "$got" != "OK" ]]; then
    log "$name: SET through 127.0.0.1:$port failed: $got"
    return 1
  fi
  if ! got="$(redis-cli -h 127.0.0.1 -p "$port" GET "$key" 2>&1)" || [[ "$got" != "ok" ]]; then
    log "$name: GET through 127.0.0.1:$port returned '$got', expected 'ok'"
    return 1
  fi
  redis-cli -h 127.0.0.1 -p "$port" DEL "$key" >/dev/null 2>&1 || true
}

# Raise the open-files limit (soft, and hard if we may) to at least $1.
raise_nofile() {
  local want="$1" cur hard
  cur="$(ulimit -Sn)"
  [[ "$cur" == unlimited ]] && return 0
  ((cur >= want)) && return 0
  hard="$(ulimit -Hn)"
  if [[ "$hard" != unlimited ]] && ((hard < want)); then
    ulimit -Hn "$want" 2>/dev/null || log "cannot raise hard nofile limit to $want (is $hard)"
  fi
  ulimit -Sn "$want" 2>/dev/null || ulimit -Sn "$(ulimit -Hn)" || true
  log "open files limit: $(ulimit -Sn)"
}

# Percentage of all CPUs busy (anything, not just us) over the next second, from /proc/stat.
host_busy_pct() {
  "$BENCH_PY" - <<'PY'
import time
def snap():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait
t0, i0 = snap(); time.sleep(1); t1, i1 = snap()
print(round(100 * (1 - (i1 - i0) / max(1, t1 - t0))))
PY
}

# Warn (and set HOST_BUSY) if other work is using the machine; benchmark numbers get noisy then.
check_host_idle() {
  HOST_BUSY="$(host_busy_pct)"
  if ((HOST_BUSY > ${BUSY_WARN_PCT:-15})); then
    log "WARNING: the host is already ${HOST_BUSY}% busy before the benchmark starts" \
      "(other processes: $(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 10 {printf "%s ", $2}'))" \
      "- expect noisy numbers"
  fi
}

# cpu_snapshot: print "TOTAL BUSY STEAL OURS" in clock ticks: machine-wide CPU time from
# /proc/stat (busy = user+nice+system+irq+softirq) and the CPU time of this script, its reaped
# children (e.g. finished redis-benchmark runs) and the servers it started. Two snapshots give
# how much of the machine *other* processes used in between: see other_load.
cpu_snapshot() {
  "$BENCH_PY" - "$$" "${_BENCH_PIDS[@]}" <<'PY'
import sys
with open("/proc/stat") as f:
    v = [int(x) for x in f.readline().split()[1:9]]
user, nice, system, idle, iowait, irq, softirq, steal = v
ours = 0
for i, pid in enumerate(sys.argv[1:]):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    ours += int(fields[11]) + int(fields[12])          # utime + stime (all threads)
    if i == 0:
        ours += int(fields[13]) + int(fields[14])      # + reaped children of the script
print(sum(v), user + nice + system + irq + softirq, steal, ours)
PY
}

# other_load "SNAPSHOT_BEFORE" "SNAPSHOT_AFTER": print "OTHER STEAL": the percentage of the
# machine's CPU time used by processes that are not ours, and stolen by the hypervisor.
other_load() {
  local t0 b0 s0 o0 t1 b1 s1 o1
  read -r t0 b0 s0 o0 <<<"$1"
  read -r t1 b1 s1 o1 <<<"$2"
  awk -v dt=$((t1 - t0)) -v other=$(((b1 - b0) - (o1 - o0))) -v st=$((s1 - s0)) \
    'BEGIN { if (dt <= 0) dt = 1; if (other < 0) other = 0; printf "%.0f %.0f\n", 100 * other / dt, 100 * st / dt }'
}

# ---------------------------------------------------------------------------------------------
# BF.* benchmarks (bf_compare.sh, bf_memory.sh)

# build_bf_client: compile bench/bf_client.c into the temp dir -> BF_CLIENT (path). Needs cc and
# libhiredis-dev.
build_bf_client() {
  command -v "${CC:-cc}" >/dev/null || die "no C compiler (${CC:-cc}); install gcc"
  [[ -f /usr/include/hiredis/hiredis.h ]] || die "hiredis headers missing; install libhiredis-dev"
  BF_CLIENT="$BENCH_TMP/bf_client"
  "${CC:-cc}" -O2 "$BENCH_DIR/bf_client.c" -o "$BF_CLIENT" -lhiredis -lpthread -lm \
    2>"$BENCH_TMP/bf_client.build.log" \
    || { _show_log "$BENCH_TMP/bf_client.build.log"; die "cannot build bench/bf_client.c"; }
}

# bf_supported PORT: does the server on 127.0.0.1:PORT answer BF.* (BF.EXISTS on a missing key
# must reply 0)? Prints the reply when not.
bf_supported() {
  local got
  got="$(redis-cli -h 127.0.0.1 -p "$1" BF.EXISTS "bloombench:probe:$RANDOM$RANDOM" x 2>&1)" || true
  [[ "$got" == 0 ]] && return 0
  printf '%s\n' "$got"
  return 1
}

# info_field PORT FIELD [SECTION]: one field of INFO (e.g. used_memory) of 127.0.0.1:PORT.
info_field() {
  redis-cli -h 127.0.0.1 -p "$1" INFO "${3:-everything}" | tr -d '\r' \
    | awk -F: -v f="$2" '$1 == f {print $2; found = 1} END {exit !found}'
}
