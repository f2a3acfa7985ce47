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

# Die if a server this script started has exited (crashed).
services_alive() {
  local svc
  for svc in "${!_BENCH_PIDS[@]}"; do
    kill -0 "${_BENCH_PIDS[svc]}" 2>/dev/null \
      || die "${_BENCH_NAMES[svc]} (pid ${_BENCH_PIDS[svc]}) is gone; aborting"
  done
}

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
  free_port TWEM_PORT
  launch_nutcracker <<EOF
bench:
  listen: 127.0.0.1:$TWEM_PORT
  redis: true
  preconnect: true
  server_connections: 1
  auto_eject_hosts: false
  servers:
   - 127.0.0.1:$upstream_port:1
EOF
  log "nutcracker pid $TWEM_PID on 127.0.0.1:$TWEM_PORT -> 127.0.0.1:$upstream_port"
}

# launch_nutcracker <CONFIG -> TWEM_PID (tracked): start nutcracker with the configuration on
# stdin (checked first with nutcracker -t), which listens on 127.0.0.1:TWEM_PORT (from free_port),
# its stats listener on a free loopback port (the default is 0.0.0.0:22222); wait until it listens.
launch_nutcracker() {
  local dir="$BENCH_TMP/nutcracker-$RANDOM$RANDOM" stats_port
  command -v "$NUTCRACKER_BIN" >/dev/null || die "nutcracker not found"
  mkdir -p "$dir"
  cat >"$dir/nutcracker.yml"
  free_port stats_port
  "$NUTCRACKER_BIN" -t -c "$dir/nutcracker.yml" >"$dir/conftest.log" 2>&1 \
    || { _show_log "$dir/conftest.log"; die "nutcracker rejected its generated config"; }
  "$NUTCRACKER_BIN" -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -p "$dir/nutcracker.pid" \
    -a 127.0.0.1 -s "$stats_port" -v "${NUTCRACKER_VERBOSITY:-4}" >"$dir/stdout.log" 2>&1 &
  TWEM_PID=$!
  track_pid "$TWEM_PID" "nutcracker :$TWEM_PORT"
  wait_for_port "$TWEM_PORT" "$TWEM_PID" nutcracker "$dir/nutcracker.log"
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

# sanity_check PORT NAME [redis-cli args...]: functional check: SET then GET a key through
# 127.0.0.1:PORT (redis-cli args: e.g. --tls --cacert FILE). Returns non-zero on failure.
sanity_check() {
  local port="$1" name="$2" key="bloombench:sanity:$RANDOM" got
  shift 2
  if ! got="$(redis-cli -h 127.0.0.1 -p "$port" "$@" SET "$key" ok 2>&1)" || [[ "$got" != "OK" ]]; then
    log "$name: SET through 127.0.0.1:$port failed: $got"
    return 1
  fi
  if ! got="$(redis-cli -h 127.0.0.1 -p "$port" "$@" GET "$key" 2>&1)" || [[ "$got" != "ok" ]]; then
    log "$name: GET through 127.0.0.1:$port returned '$got', expected 'ok'"
    return 1
  fi
  redis-cli -h 127.0.0.1 -p "$port" "$@" DEL "$key" >/dev/null 2>&1 || true
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

# info_field PORT FIELD [SECTION [redis-cli args...]]: one field of INFO (e.g. used_memory) of
# 127.0.0.1:PORT (redis-cli args: e.g. --tls --cacert FILE).
info_field() {
  local port="$1" field="$2" section="${3:-everything}"
  shift $(($# < 3 ? $# : 3))
  redis-cli -h 127.0.0.1 -p "$port" "$@" INFO "$section" | tr -d '\r' \
    | awk -F: -v f="$field" '$1 == f {print $2; found = 1} END {exit !found}'
}

# ---------------------------------------------------------------------------------------------
# Command line and settings

# parse_round_args ARGS...: the command line of the benches that run in interleaved rounds:
# --rounds N (or --rounds=N), --quick (a smoke run: QUICK=1 and one round), -h/--help (prints the
# script's usage, then exits 0). Sets ROUNDS (--rounds, else the environment's ROUNDS, else 3) and
# QUICK; with WITH_PUBLISH=1 in its environment it also takes --publish (PUBLISH=1: the script
# plots its results into docs/img). The script defines usage() before calling it.
parse_round_args() {
  ROUNDS="${ROUNDS:-3}"
  QUICK=0
  PUBLISH=0
  while (($#)); do
    case "$1" in
      --rounds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die "--rounds needs a positive integer"
                ROUNDS="$2"; shift 2 ;;
      --rounds=*) ROUNDS="${1#*=}"; [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "bad --rounds"; shift ;;
      --quick) QUICK=1; shift ;;
      --publish) [[ "${WITH_PUBLISH:-0}" == 1 ]] || { usage; die "unknown argument: $1"; }
                 PUBLISH=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage; die "unknown argument: $1" ;;
    esac
  done
  if ((QUICK)); then ROUNDS=1; fi
}

# require_positive_ints VAR...: die unless every named variable holds a positive integer.
require_positive_ints() {
  local v
  for v in "$@"; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (is '${!v}')"
  done
}

# ---------------------------------------------------------------------------------------------
# redis-benchmark in interleaved rounds against named targets (cluster.sh, sharding.sh)
#
# The script sets PORT[target] (the target's port on 127.0.0.1) and may set TARGET_ARGS[target]
# (extra redis-benchmark arguments for that target, word-split, e.g. --cluster); TARGETS lists
# the targets of the SET/GET runs, BF_TARGETS those of the BF.* runs.
declare -gA PORT=() TARGET_ARGS=()

# redis_bench_settings N_DEFAULT [VAR...]: the settings these benches share, from the environment:
# CLIENTS (50), PIPELINE (16), N (N_DEFAULT; requests per SET/GET run), BF_N (500000; per BF.*
# run), KEYSPACE (100000), DATASIZE (3), STANDALONE (1: also a bloomproxy in front of one
# redis-server), RUN_TIMEOUT (600 s); checked, and with --quick N and BF_N cut to a tenth. Also
# the one filter the BF.* runs use (BF_KEY, BF_ERROR, BF_CAPACITY), as in compare.sh: big enough
# never to scale during the runs. Dies if redis-benchmark or redis-cli is missing. VARs: the
# script's own settings that must be positive integers too (checked first).
redis_bench_settings() {
  local n_default="$1"; shift
  CLIENTS="${CLIENTS:-50}"
  PIPELINE="${PIPELINE:-16}"
  N="${N:-$n_default}"
  BF_N="${BF_N:-500000}"
  KEYSPACE="${KEYSPACE:-100000}"
  DATASIZE="${DATASIZE:-3}"
  STANDALONE="${STANDALONE:-1}"
  RUN_TIMEOUT="${RUN_TIMEOUT:-600}"
  require_positive_ints "$@" CLIENTS PIPELINE N BF_N KEYSPACE DATASIZE RUN_TIMEOUT
  [[ "$STANDALONE" =~ ^[01]$ ]] || die "STANDALONE must be 0 or 1"
  if ((QUICK)); then N=$(((N + 9) / 10)) BF_N=$(((BF_N + 9) / 10)); fi
  BF_KEY=bfk BF_ERROR=0.01 BF_CAPACITY=10000000
  command -v redis-benchmark >/dev/null || die "redis-benchmark not found"
  command -v redis-cli >/dev/null || die "redis-cli not found"
}

# results_files NAME -> STAMP, CSV, MD: bench/results/NAME-<timestamp>.{csv,md}.
results_files() {
  mkdir -p "$BENCH_DIR/results"
  STAMP="$(date +%Y%m%d-%H%M%S)"
  CSV="$BENCH_DIR/results/$1-$STAMP.csv"
  MD="$BENCH_DIR/results/$1-$STAMP.md"
}

# start_standalone_target [extra redis-server args...]: the reference target "standalone",
# bloomproxy in front of one redis-server of its own -> PORT[standalone] (and REDIS_*, PROXY_*
# as start_redis and start_bloomproxy set them).
start_standalone_target() {
  start_redis "$@"
  start_bloomproxy "$REDIS_PORT"
  PORT[standalone]="$PROXY_PORT"
}

# _target_args TARGET -> _TARGET_ARGS (array): the words of TARGET_ARGS[TARGET].
_target_args() {
  read -ra _TARGET_ARGS <<<"${TARGET_ARGS[$1]:-}"
}

# reserve_bench_filter TARGET...: check that every TARGET answers BF.*, and BF.RESERVE the filter
# (BF_KEY) through it.
reserve_bench_filter() {
  local t why got
  for t in "$@"; do
    why="$(bf_supported "${PORT[$t]}")" || die "$t does not answer BF.* ($why)"
    got="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.RESERVE "$BF_KEY" "$BF_ERROR" "$BF_CAPACITY" 2>&1)"
    [[ "$got" == OK ]] || die "BF.RESERVE $BF_KEY through $t: $got"
  done
}

# bf_floor_commands -> FLOOR_OFFSETS, FLOOR_ADD, FLOOR_EXISTS (arrays): the BF floors of
# compare.sh, round2.sh and cpu_cost.sh, one BITFIELD (SET u1 ... 1) / BITFIELD_RO (GET u1 ...)
# on FLOOR_KEY per item, at FLOOR_K fixed offsets (the middle of each FLOOR_K-th of FLOOR_BITS).
# redis-benchmark cannot randomise BITFIELD offsets: __rand_int__ becomes a 12-digit zero-padded
# number, which Redis rejects as a bit offset.
bf_floor_commands() {
  local i o seg=$((FLOOR_BITS / FLOOR_K))
  FLOOR_OFFSETS=() FLOOR_ADD=(BITFIELD "$FLOOR_KEY") FLOOR_EXISTS=(BITFIELD_RO "$FLOOR_KEY")
  for ((i = 0; i < FLOOR_K; i++)); do
    o=$((seg * i + seg / 2))
    FLOOR_OFFSETS+=("$o") FLOOR_ADD+=(SET u1 "$o" 1) FLOOR_EXISTS+=(GET u1 "$o")
  done
}

# create_bf_floor REDIS_PORT: allocate FLOOR_KEY (FLOOR_BITS bits) straight in Redis and check
# that the floors (bf_floor_commands) answer FLOOR_K integers, the lookup all 1 after the add.
create_bf_floor() {
  local got
  redis-cli -h 127.0.0.1 -p "$1" SETBIT "$FLOOR_KEY" $((FLOOR_BITS - 1)) 0 >/dev/null
  got="$(redis-cli -h 127.0.0.1 -p "$1" "${FLOOR_ADD[@]}" 2>&1 | grep -cx '[01]')" || true
  ((got == FLOOR_K)) || die "${FLOOR_ADD[*]} straight to redis did not reply $FLOOR_K integers"
  got="$(redis-cli -h 127.0.0.1 -p "$1" "${FLOOR_EXISTS[@]}" 2>&1 | sort -u | paste -sd' ')"
  [[ "$got" == 1 ]] || die "${FLOOR_EXISTS[*]} straight to redis replied '$got', expected $FLOOR_K x 1"
}

# check_bench_filter TARGET...: warn if the filter (BF_KEY) scaled through any TARGET.
check_bench_filter() {
  local t nf
  for t in "$@"; do
    nf="$(redis-cli -h 127.0.0.1 -p "${PORT[$t]}" BF.INFO "$BF_KEY" FILTERS)"
    [[ "$nf" == 1 ]] || log "warning: $BF_KEY through $t now has $nf sub-filters (it scaled)"
  done
}

# prefill_keyspace TARGET...: SET ~95% of KEYSPACE keys (key:N, values of DATASIZE bytes) through
# every TARGET, so GETs hit from the first round on.
prefill_keyspace() {
  local t
  for t in "$@"; do
    _target_args "$t"
    redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" "${_TARGET_ARGS[@]}" -t set -n $((3 * KEYSPACE)) \
      -c 20 -P 32 -r "$KEYSPACE" -d "$DATASIZE" -q --csv >/dev/null 2>"$BENCH_TMP/prefill.err" \
      || { _show_log "$BENCH_TMP/prefill.err"; die "prefill of $t failed"; }
  done
}

# run_rounds [BF_COMMAND...]: start the CSV, then ROUNDS interleaved rounds: in each, SET/GET
# (-n N -r KEYSPACE -d DATASIZE) against every one of TARGETS, then each BF_COMMAND (on BF_KEY,
# -n BF_N -r 100000000) through every one of BF_TARGETS (none: SET/GET only). Counts the runs in RUN, the failed ones
# in FAILED.
run_rounds() {
  local r t cmd
  RUN=0
  FAILED=0
  TOTAL=$((ROUNDS * ($(wc -w <<<"$TARGETS") + $# * $(wc -w <<<"$BF_TARGETS"))))
  echo "round,test,target,requests,rps,p50_latency_ms,other_cpu_pct,steal_pct" >"$CSV"
  log "benchmark: $ROUNDS round(s); SET/GET -c $CLIENTS -P $PIPELINE -n $N -r $KEYSPACE -d $DATASIZE" \
    "against [$TARGETS]$( (($#)) && echo "; $(IFS=/; echo "$*") $BF_KEY __rand_int__ -n $BF_N through [$BF_TARGETS]")"
  for ((r = 1; r <= ROUNDS; r++)); do
    for t in $TARGETS; do
      redis_bench_run "$r" "" "$t" "$N" -t set,get -r "$KEYSPACE" -d "$DATASIZE"
    done
    for cmd in "$@"; do
      for t in $BF_TARGETS; do
        redis_bench_run "$r" "$cmd" "$t" "$BF_N" -r 100000000 "$cmd" "$BF_KEY" __rand_int__
      done
    done
  done
}

# exit_if_interrupted RC: a run that exited 130 or 143 (SIGINT or SIGTERM: the script was
# interrupted; a run that times out exits 124) stops the script, pointing to the partial CSV.
exit_if_interrupted() {
  if (($1 == 130 || $1 == 143)); then
    log "interrupted; partial raw results in ${CSV#"$REPO_ROOT"/}"
    exit 130
  fi
}

# run_failed RC ROWS OUT ERR WHAT: true (after counting it in FAILED and logging it) if a
# redis-benchmark run failed: a non-zero exit, no result rows, or an error reply in its output
# (redis-benchmark 7 exits non-zero at the first one: "Error from server: ..."). If a server the
# script started is gone, the script stops.
run_failed() {
  local rc="$1" rows="$2" out="$3" err="$4" what="$5" pid
  if ((rc == 0)) && [[ -n "$rows" ]] && ! grep -qiE '^(error|err )|error from server' "$err" "$out"; then
    return 1
  fi
  FAILED=$((FAILED + 1))
  log "[$RUN/$TOTAL] $what: FAILED (exit $rc)"
  _show_log "$err"
  for pid in "${_BENCH_PIDS[@]}"; do
    pid_alive "$pid" || die "a server this script started (pid $pid) is gone; aborting"
  done
  return 0
}

# redis_bench_run ROUND TEST TARGET REQUESTS [redis-benchmark args...]: one run against
# PORT[TARGET] (-c CLIENTS -P PIPELINE, killed after RUN_TIMEOUT s), appended to the CSV (TEST
# empty: one row per test redis-benchmark reports, e.g. -t set,get). A failed run is counted in
# FAILED and left out; if a server the script started is gone, the script stops.
redis_bench_run() {
  local r="$1" test="$2" t="$3" n="$4" out="$BENCH_TMP/run.out" err="$BENCH_TMP/run.err" rc=0
  local snap0 snap1 other steal rows load=""
  shift 4
  RUN=$((RUN + 1))
  _target_args "$t"
  snap0="$(cpu_snapshot)"
  timeout --foreground --signal=INT --kill-after=10 "$RUN_TIMEOUT" \
    redis-benchmark -h 127.0.0.1 -p "${PORT[$t]}" "${_TARGET_ARGS[@]}" -n "$n" -c "$CLIENTS" \
    -P "$PIPELINE" -q --csv "$@" >"$out" 2>"$err" || rc=$?
  snap1="$(cpu_snapshot)"
  exit_if_interrupted "$rc"
  read -r other steal <<<"$(other_load "$snap0" "$snap1")"
  # Lines look like "SET","93457.95","0.309",... (redis-benchmark --cluster first prints the
  # masters it found: those lines have fewer fields; in front of nutcracker or bloomproxy in
  # sharding-proxy mode it also warns on stderr that it could not fetch CONFIG: both refuse it).
  rows="$(tr -d '"\r' <"$out" | awk -F, -v OFS=, -v pre="$r" -v t="$t" -v n="$n" -v name="$test" \
    -v post="$other,$steal" '$1 != "test" && NF >= 8 && $2 + 0 > 0 {print pre, (name != "" ? name : $1), t, n, $2, $5, post}')"
  if run_failed "$rc" "$rows" "$out" "$err" "round $r ${test:-SET/GET} $t"; then return 0; fi
  printf '%s\n' "$rows" >>"$CSV"
  ((other + steal >= ${BUSY_WARN_PCT:-15})) && load=" (NOISY: other processes ${other}%, steal ${steal}%)"
  log "[$RUN/$TOTAL] round $r $t: $(awk -F, '{printf "%s%s %.0f", (NR > 1 ? ", " : ""), $2, $5}' <<<"$rows") req/s$load"
}

# rounds_report CSV [ARG...] <<'EOF' ... EOF: run the Python program on stdin (the ARGs are its
# sys.argv[3:]) after a prelude that has read CSV (as redis_bench_run writes it) and defines:
#   tests (in order of appearance), rps / p50 / by_round / n_of keyed by (test, target), loads
#   med(k), ratio(a, b), paired(test, a, b)   median req/s; "a/b" to 2 places; median per-round a/b
#   targets_table(order, vs)   one row per test and target, with a "vs D" column per (D, targets)
#                              in vs, filled for those targets
#   ratios_heading()           the sentence above a table of ratios
#   ratios_rows(ratios)        that sentence and a table: test, ratio label, of the medians, per round
#   load_summary()             the CPU other processes used during the runs
rounds_report() {
  { _rounds_report_py; cat; } | "$BENCH_PY" - "$1" "${BUSY_WARN_PCT:-15}" "${@:2}"
}

_rounds_report_py() {
  cat <<'EOF'
import csv, statistics, sys
from collections import OrderedDict, defaultdict

path, busy_warn = sys.argv[1], float(sys.argv[2])
rps, p50, by_round, tests, loads = defaultdict(list), defaultdict(list), defaultdict(dict), OrderedDict(), []
n_of = {}
with open(path) as f:
    for row in csv.DictReader(f):
        k = (row["test"], row["target"])
        tests[row["test"]] = None
        rps[k].append(float(row["rps"]))
        p50[k].append(float(row["p50_latency_ms"]))
        by_round[k][row["round"]] = float(row["rps"])
        n_of[k] = int(row["requests"])
        if row["test"] != "GET":  # one figure per run (SET and GET share one)
            loads.append(float(row["other_cpu_pct"]) + float(row["steal_pct"]))

def med(k):
    return statistics.median(rps[k]) if rps[k] else None

def ratio(a, b):
    return f"{a / b:.2f}" if a and b else ""

def paired(test, a, b):
    ra, rb = by_round[(test, a)], by_round[(test, b)]
    rs = [ra[r] / rb[r] for r in ra if rb.get(r)]
    return f"{statistics.median(rs):.2f}" if rs else ""

def targets_table(order, vs):
    print("| test | target | median req/s | runs (req/s) | median p50 ms | "
          + " | ".join(f"vs {d}" for d, _ in vs) + " |")
    print("|---|---|---:|---|---:|" + "---:|" * len(vs))
    for test in tests:
        for t in order:
            k = (test, t)
            if not rps[k]:
                continue
            cols = [ratio(med(k), med((test, d))) if t in of else "" for d, of in vs]
            runs = " / ".join(f"{x:.0f}" for x in rps[k])
            print(f"| {test} | {t} | {med(k):,.0f} | {runs} | {statistics.median(p50[k]):.3f} | "
                  + " | ".join(cols) + " |")

def ratios_heading():
    print()
    print("Ratios of the medians, and the median of the per-round ratios (each round's runs back to back):")
    print()

def ratios_rows(ratios):
    """One row per test and (numerator, denominator, label) of `ratios` both measured."""
    ratios_heading()
    print("| test | ratio | of the medians | median of per-round |")
    print("|---|---|---:|---:|")
    for test in tests:
        for a, b, label in ratios:
            if rps[(test, a)] and rps[(test, b)]:
                print(f"| {test} | {label} | {ratio(med((test, a)), med((test, b)))} | {paired(test, a, b)} |")

def load_summary():
    if loads:
        noisy = sum(1 for x in loads if x >= busy_warn)
        print()
        print(f"CPU used by other processes (incl. steal) during the runs: mean {statistics.mean(loads):.0f}%,"
              f" max {max(loads):.0f}% of the machine; {noisy} of {len(loads)} runs at >= {busy_warn:.0f}%")

EOF
}

# finish_runs: say where the results are; exit 1 if a run failed.
finish_runs() {
  log "raw results: ${CSV#"$REPO_ROOT"/}; table: ${MD#"$REPO_ROOT"/}"
  if ((FAILED)); then
    log "$FAILED run(s) failed; see above"
    exit 1
  fi
}

# ---------------------------------------------------------------------------------------------
# Redis Cluster and TLS servers (cluster.sh, tls.sh, round2.sh)

# start_cluster COUNT [MAX_NODE_PORT] -> CLUSTER_PORTS (array): COUNT masters on free ports (at
# most MAX_NODE_PORT if given, e.g. 55535 so that port + 10000 would still be a port), each with
# its cluster bus on a free port of its own (cluster-port, so no port + 10000 has to be free),
# joined by redis-cli --cluster create, waited for until every node says cluster_state:ok.
start_cluster() {
  local count="$1" max_port="${2:-65535}" i port bus dir addrs=() deadline tries
  CLUSTER_PORTS=()
  for ((i = 0; i < count; i++)); do
    free_port port
    for ((tries = 0; port > max_port; tries++)); do
      ((tries < 100)) || die "no free port <= $max_port for cluster node $i"
      free_port port
    done
    free_port bus
    dir="$BENCH_TMP/cluster-node$i"
    mkdir -p "$dir"
    launch_redis "$port" "$dir" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-port "$bus" --cluster-node-timeout 5000
    wait_for_port "$port" "$REDIS_PID" "cluster node $i" "$dir/redis.log"
    CLUSTER_PORTS+=("$port")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
    >"$BENCH_TMP/cluster-create.log" 2>&1 \
    || { _show_log "$BENCH_TMP/cluster-create.log"; die "redis-cli --cluster create failed"; }
  deadline=$((SECONDS + 3 * STARTUP_TIMEOUT))
  for port in "${CLUSTER_PORTS[@]}"; do
    until redis-cli -h 127.0.0.1 -p "$port" CLUSTER INFO | tr -d '\r' | grep -qx 'cluster_state:ok'; do
      ((SECONDS < deadline)) || die "cluster node :$port not cluster_state:ok in time"
      sleep 0.1
    done
  done
  log "redis cluster: $count masters on ${CLUSTER_PORTS[*]}"
}

# start_bloomproxy_cluster SEEDS -> PROXY_PORT, PROXY_PID (as start_bloomproxy, with
# --upstream-cluster SEEDS instead of --upstream).
start_bloomproxy_cluster() {
  local seeds="$1" dir
  [[ -x "$BLOOMPROXY_BIN" ]] || die "bloomproxy binary not found at $BLOOMPROXY_BIN (build it, or set BLOOMPROXY_BIN)"
  dir="$BENCH_TMP/bloomproxy-cluster-$RANDOM$RANDOM"
  mkdir -p "$dir"
  free_port PROXY_PORT
  # shellcheck disable=SC2086  # BLOOMPROXY_ARGS is deliberately word-split
  "$BLOOMPROXY_BIN" --bind 127.0.0.1 --port "$PROXY_PORT" --upstream-cluster "$seeds" \
    $BLOOMPROXY_ARGS >"$dir/bloomproxy.log" 2>&1 &
  PROXY_PID=$!
  track_pid "$PROXY_PID" "bloomproxy :$PROXY_PORT (cluster)"
  wait_for_port "$PROXY_PORT" "$PROXY_PID" bloomproxy "$dir/bloomproxy.log"
  log "bloomproxy pid $PROXY_PID on 127.0.0.1:$PROXY_PORT -> cluster $seeds ($BLOOMPROXY_BIN)"
}

# make_certs DIR -> CA_CRT, SERVER_CRT, SERVER_KEY: a self-signed CA, and a server certificate it
# signs for 127.0.0.1 (IP SAN) and localhost (DNS SAN), valid two days. The keys are made with
# openssl req's NEWKEY (array; default: -newkey rsa:2048), described as KEY_TYPE in the log.
make_certs() {
  local dir="$1"
  declare -p NEWKEY >/dev/null 2>&1 || NEWKEY=(-newkey rsa:2048)
  mkdir -p "$dir"
  CA_CRT="$dir/ca.crt" SERVER_CRT="$dir/server.crt" SERVER_KEY="$dir/server.key"
  {
    openssl req -x509 -new "${NEWKEY[@]}" -nodes -keyout "$dir/ca.key" -out "$CA_CRT" -days 2 \
      -subj "/CN=bloombench CA" \
      && openssl req -new "${NEWKEY[@]}" -nodes -keyout "$SERVER_KEY" -out "$dir/server.csr" \
        -subj "/CN=bloombench server" \
      && printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
        'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth,clientAuth' \
        >"$dir/server.ext" \
      && openssl x509 -req -in "$dir/server.csr" -CA "$CA_CRT" -CAkey "$dir/ca.key" \
        -CAcreateserial -out "$SERVER_CRT" -days 2 -extfile "$dir/server.ext" \
      && openssl verify -CAfile "$CA_CRT" "$SERVER_CRT"
  } >"$dir/openssl.log" 2>&1 || { _show_log "$dir/openssl.log"; die "making the certificates failed"; }
  log "certificates (${KEY_TYPE:-rsa:2048}) in $dir: CA + server certificate for 127.0.0.1"
}

# start_tls_redis -> TLS_REDIS_PORT, REDIS_PID, REDIS_DIR: a TLS-only redis-server (port 0,
# tls-port from free_port) with make_certs' server certificate, client certificates not asked for.
start_tls_redis() {
  free_port TLS_REDIS_PORT
  REDIS_DIR="$BENCH_TMP/redis-tls"
  mkdir -p "$REDIS_DIR"
  # launch_redis passes --port TLS_REDIS_PORT first; the later --port 0 wins: no plain listener.
  launch_redis "$TLS_REDIS_PORT" "$REDIS_DIR" --port 0 --tls-port "$TLS_REDIS_PORT" \
    --tls-cert-file "$SERVER_CRT" --tls-key-file "$SERVER_KEY" --tls-ca-cert-file "$CA_CRT" \
    --tls-auth-clients no
  wait_for_port "$TLS_REDIS_PORT" "$REDIS_PID" "redis-server (TLS)" "$REDIS_DIR/redis.log"
  log "redis-server pid $REDIS_PID, TLS only, on 127.0.0.1:$TLS_REDIS_PORT"
}

# start_tls_bloomproxy UPSTREAM_PORT -> TLS_PROXY_PORT, PROXY_PID, PROXY_LOG: bloomproxy with
# only a TLS listener (port 0, tls-port from free_port), make_certs' server certificate, client
# certificates not asked for, and TLS to the upstream verified with the CA (the upstream's
# name is its address, 127.0.0.1, checked against the certificate's IP SAN).
start_tls_bloomproxy() {
  local upstream_port="$1" dir="$BENCH_TMP/bloomproxy-tls"
  [[ -x "$BLOOMPROXY_BIN" ]] || die "bloomproxy binary not found at $BLOOMPROXY_BIN (build it, or set BLOOMPROXY_BIN)"
  mkdir -p "$dir"
  free_port TLS_PROXY_PORT
  # shellcheck disable=SC2086  # BLOOMPROXY_ARGS is deliberately word-split
  "$BLOOMPROXY_BIN" --bind 127.0.0.1 --port 0 --tls-port "$TLS_PROXY_PORT" \
    --tls-cert-file "$SERVER_CRT" --tls-key-file "$SERVER_KEY" --tls-auth-clients no \
    --upstream "127.0.0.1:$upstream_port" --upstream-tls yes --upstream-tls-ca-cert-file "$CA_CRT" \
    $BLOOMPROXY_ARGS >"$dir/bloomproxy.log" 2>&1 &
  PROXY_PID=$!
  # shellcheck disable=SC2034  # for the scripts
  PROXY_LOG="$dir/bloomproxy.log"
  track_pid "$PROXY_PID" "bloomproxy tls :$TLS_PROXY_PORT"
  wait_for_port "$TLS_PROXY_PORT" "$PROXY_PID" "bloomproxy (TLS)" "$PROXY_LOG"
  log "bloomproxy pid $PROXY_PID, TLS only, on 127.0.0.1:$TLS_PROXY_PORT -> TLS 127.0.0.1:$upstream_port ($BLOOMPROXY_BIN)"
}

# plaintext_refused PORT: a plain PING to a TLS port must not be answered as Redis would.
plaintext_refused() {
  local got
  got="$(timeout 10 redis-cli -h 127.0.0.1 -p "$1" PING 2>&1)" || true
  [[ "$got" != PONG && "$got" != *ERR* ]] || { log "plain PING to TLS port $1 answered: $got"; return 1; }
}

# tls_targets_checked DIRECT PROXY: both TLS targets (names in PORT) refuse plaintext; sets
# CIPHER_REDIS and CIPHER_PROXY to what a client negotiates with each, and logs them.
tls_targets_checked() {
  local t
  for t in "$1" "$2"; do
    plaintext_refused "${PORT[$t]}" || die "$t answers plaintext: not a TLS port"
  done
  CIPHER_REDIS="$(negotiated "${PORT[$1]}")"
  CIPHER_PROXY="$(negotiated "${PORT[$2]}")"
  log "TLS negotiated: $1 $CIPHER_REDIS, $2 $CIPHER_PROXY"
}

# negotiated PORT: "TLSv1.3 TLS_AES_256_GCM_SHA384" (the protocol and cipher a client gets,
# verified against make_certs' CA).
negotiated() {
  timeout 10 openssl s_client -connect "127.0.0.1:$1" -CAfile "$CA_CRT" -verify_return_error \
    </dev/null 2>/dev/null \
    | awk -F', ' '/^New, / {p = $2; c = $3; sub(/^Cipher is /, "", c)}
                   END {if (p != "" && c != "") print p, c; else print "?"}'
}

# gnuplot_term: the PNG terminal to draw with: $PLOT_TERM, else pngcairo if gnuplot has it, else png.
gnuplot_term() {
  if [[ -n "${PLOT_TERM:-}" ]]; then
    echo "$PLOT_TERM"
  elif gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo; then
    echo pngcairo
  else
    echo png
  fi
}

# capture_data_command DIR PROXY_PORT REDIS_PORT NAME CALL...: what bloomproxy sends upstream for
# one sketch command. CALL runs twice through the proxy: once to fill its metadata cache, once
# under MONITOR on the upstream (REDIS_PORT). Writes DIR/reply (the second call's reply),
# DIR/upstream.txt (each command the proxy sent on NAME's keys, one per line, long ones cut) and
# DIR/floor (the NUL-separated arguments of its first data command, a BITFIELD or BITFIELD_RO on
# one of NAME's ":cms:" parts); DIR/data_commands counts those. Dies if there is none.
capture_data_command() {
  local dir="$1" proxy_port="$2" redis_port="$3" name="$4" mon_pid marker i
  shift 4
  mkdir -p "$dir"
  redis-cli -h 127.0.0.1 -p "$proxy_port" "$@" >/dev/null
  redis-cli -h 127.0.0.1 -p "$redis_port" MONITOR >"$dir/monitor.txt" 2>&1 &
  mon_pid=$!
  track_pid "$mon_pid" "redis-cli MONITOR"
  for ((i = 0; i < 100; i++)); do grep -q '^OK' "$dir/monitor.txt" && break; sleep 0.05; done
  redis-cli -h 127.0.0.1 -p "$proxy_port" "$@" >"$dir/reply" 2>&1
  # The marker shows in MONITOR after everything the proxy sent for the call.
  marker="bench-capture-$RANDOM$RANDOM"
  redis-cli -h 127.0.0.1 -p "$redis_port" ECHO "$marker" >/dev/null
  for ((i = 0; i < 100; i++)); do grep -q "$marker" "$dir/monitor.txt" && break; sleep 0.05; done
  stop_pid "$mon_pid"
  untrack_pid "$mon_pid"
  "$BENCH_PY" - "$dir" "$name" "$marker" <<'EOF' || die "no data command captured for $* (see $dir/monitor.txt)"
import re, sys
d, name, marker = sys.argv[1:]
esc = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "\\": "\\", '"': '"'}
def unquote(s):  # MONITOR quotes arguments as sdscatrepr does
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and s[i + 1] == "x":
            out.append(chr(int(s[i + 2:i + 4], 16))); i += 4
        elif s[i] == "\\":
            out.append(esc.get(s[i + 1], s[i + 1])); i += 2
        else:
            out.append(s[i]); i += 1
    return "".join(out)
cmds = []
for line in open(f"{d}/monitor.txt", encoding="latin-1"):
    if marker in line:
        break
    m = re.match(r"^\d+\.\d+ \[[^\]]*\] (.*)$", line.rstrip("\n"))
    if not m:
        continue
    args = [unquote(a) for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
    if any(name in a for a in args[1:]):  # the sketch's commands only (its name is in every key)
        cmds.append(args)
data = [c for c in cmds if c[0].upper() in ("BITFIELD", "BITFIELD_RO") and ":cms:" in c[1]]
with open(f"{d}/upstream.txt", "w") as f:
    for c in cmds:
        shown = " ".join(c[:8]) + (f" ... ({len(c)} args)" if len(c) > 8 else "")
        f.write(shown + "\n")
with open(f"{d}/data_commands", "w") as f:
    f.write(f"{len(data)}\n")
if not data:
    sys.exit(1)
with open(f"{d}/floor", "wb") as f:
    f.write(b"\0".join(a.encode("latin-1") for a in data[0]) + b"\0")
EOF
}
