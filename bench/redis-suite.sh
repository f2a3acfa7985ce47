#!/usr/bin/env bash
# Runs Redis's own test suite (the units of the installed redis-server's version, from Debian's
# source package) in external-server mode twice per unit, with the same flags: once against a
# redis-server directly, once through bloomproxy in front of another, fresh redis-server. Prints
# one row per unit (tests ok / err each way, hangs, whether the proxy is still alive) and the
# names of the tests that pass directly but not through the proxy.
#
#   bench/redis-suite.sh                          # every unit/* of the suite
#   bench/redis-suite.sh unit/tracking unit/pubsub
#   BLOOMPROXY_ARGS="--threads 2" bench/redis-suite.sh unit/other
#
# Options (environment):
#   REDIS_SUITE_SRC    where the source package is unpacked (default ~/.cache/bloomproxy/redis-src)
#   REDIS_SUITE_OUT    where the logs go (default: a new dir under $TMPDIR, kept, printed at the end)
#   UNIT_TIMEOUT       seconds a unit may run before it counts as hung (default 900)
#   RUNTEST_ARGS       extra flags for ./runtest, both ways (e.g. "--tags -slow")
#
# The source comes from Debian's archive only: the script adds a deb-src line for the
# installed release (apt needs root) and runs `apt-get source redis=<installed version>`.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

UNIT_TIMEOUT="${UNIT_TIMEOUT:-900}"
RUNTEST_ARGS="${RUNTEST_ARGS:-}"
SRC_ROOT="${REDIS_SUITE_SRC:-$HOME/.cache/bloomproxy/redis-src}"

fetch_suite() {
  local pkgver upver
  pkgver="$(dpkg-query -W -f '${Version}' redis-server 2>/dev/null)" \
    || die "redis-server is not installed from Debian's package"
  upver="${pkgver#*:}"
  upver="${upver%%-*}"
  SUITE_DIR="$SRC_ROOT/redis-$upver"
  if [[ -x "$SUITE_DIR/runtest" ]]; then
    return 0
  fi
  command -v dpkg-source >/dev/null || apt-get install -y -q dpkg-dev >&2
  if ! grep -rqs '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/ ; then
    local codename
    codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
    log "adding deb-src lines for $codename to /etc/apt/sources.list.d/bloomproxy-src.list"
    cat >/etc/apt/sources.list.d/bloomproxy-src.list <<EOF
deb-src http://deb.debian.org/debian $codename main
deb-src http://deb.debian.org/debian $codename-updates main
deb-src http://deb.debian.org/debian-security $codename-security main
EOF
    apt-get update -q >&2
  fi
  mkdir -p "$SRC_ROOT"
  log "apt-get source redis=$pkgver into $SRC_ROOT"
  (cd "$SRC_ROOT" && apt-get source -q "redis=$pkgver" >&2)
  [[ -x "$SUITE_DIR/runtest" ]] || die "no runtest in $SUITE_DIR after apt-get source"
}

# The unit list: the suite's own (test_helper.tcl's ::all_tests), units under unit/ only (the
# integration/ ones start servers of their own and never run against an external server).
suite_units() {
  sed -n '/^set ::all_tests {/,/^}/p' "$SUITE_DIR/tests/test_helper.tcl" \
    | grep -oE '^\s+unit/\S+' | tr -d ' \t'
}

# start_upstream DIR -> prints "PORT PID": a redis-server with the suite's own default.conf.
start_upstream() {
  local dir="$1"
  free_port SU_PORT
  mkdir -p "$dir"
  "$REDIS_SERVER_BIN" "$SUITE_DIR/tests/assets/default.conf" --port "$SU_PORT" \
    --dir "$dir" --save '' --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" \
    >>"$dir/stdout.log" 2>&1 &
  SU_PID=$!
  track_pid "$SU_PID" "redis-server :$SU_PORT"
  wait_for_port "$SU_PORT" "$SU_PID" redis-server "$dir/redis.log"
}

# count PATTERN FILE: lines of a runtest log that start with PATTERN.
count() { grep -c "^\[$1\]" "$2" 2>/dev/null || true; }

# run_side UNIT WAY: runs UNIT one way ("direct" or "proxy"), writes WAY.log, WAY.status.
run_side() {
  local unit="$1" way="$2" dir="$3" port pid rc=0 alive=-
  start_upstream "$dir/$way-redis"
  port="$SU_PORT"
  if [[ "$way" == proxy ]]; then
    # The proxy runs with no options (BLOOMPROXY_ARGS adds some): the suite makes its users
    # upstream (ACL SETUSER) and logs in as them, which auth-mode auto, the default, sends there.
    start_bloomproxy "$SU_PORT"
    port="$PROXY_PORT"
    pid="$PROXY_PID"
  fi
  # runtest wants its own cwd (it writes tests/tmp); a copy per run keeps concurrent runs apart.
  local work="$dir/$way-suite" baseport=21111
  # Each runtest listens for its test clients near --baseport: the two ways must not share it.
  [[ "$way" == proxy ]] && baseport=13111
  cp -a "$SUITE_DIR" "$work"
  # shellcheck disable=SC2086  # RUNTEST_ARGS is deliberately word-split
  (cd "$work" && TERM=dumb timeout -k 10 "$UNIT_TIMEOUT" ./runtest --host 127.0.0.1 --port "$port" \
    --single "$unit" --clients 1 --baseport "$baseport" $RUNTEST_ARGS) >"$dir/$way.log" 2>&1 || rc=$?
  if [[ "$way" == proxy ]]; then
    if pid_alive "$pid" && redis-cli -p "$port" PING 2>/dev/null | grep -q PONG; then
      alive=yes
    else
      alive=NO
    fi
    stop_pid "$pid"
    untrack_pid "$pid"
  fi
  stop_pid "$SU_PID"
  untrack_pid "$SU_PID"
  rm -rf "$work"
  local hung=no
  ((rc == 124 || rc == 137)) && hung=yes
  echo "$(count ok "$dir/$way.log") $(( $(count err "$dir/$way.log") + $(count exception "$dir/$way.log") )) $hung $alive" \
    >"$dir/$way.status"
}

run_unit() {
  local unit="$1" dir="$OUT/${1//\//_}"
  mkdir -p "$dir"
  run_side "$unit" direct "$dir" &
  local d=$!
  run_side "$unit" proxy "$dir" &
  local p=$!
  wait "$d" || true
  wait "$p" || true
}

# Names of tests, "[ok]: NAME (12 ms)" -> "NAME".
ok_names() { sed -n 's/^\[ok\]: \(.*\) ([0-9]* ms)$/\1/p' "$1" | sort -u; }

main() {
  bench_init
  fetch_suite
  OUT="${REDIS_SUITE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/redis-suite.XXXXXX")}"
  mkdir -p "$OUT"
  local units=("$@")
  ((${#units[@]})) || mapfile -t units < <(suite_units)
  log "suite: $SUITE_DIR; ${#units[@]} units; logs in $OUT"
  local u
  for u in "${units[@]}"; do
    log "unit $u"
    run_unit "$u"
  done
  report "${units[@]}"
  log "logs in $OUT"
}

report() {
  local u dir d p tot_d_ok=0 tot_d_err=0 tot_p_ok=0 tot_p_err=0 hangs=0 dead=0 lost=0
  printf '| unit | direct ok | direct err | proxy ok | proxy err | hung (direct/proxy) | proxy alive | pass only directly |\n'
  printf '|---|---:|---:|---:|---:|---|---|---:|\n'
  : >"$OUT/lost.txt"
  for u in "$@"; do
    dir="$OUT/${u//\//_}"
    read -r d_ok d_err d_hung _ <"$dir/direct.status"
    read -r p_ok p_err p_hung p_alive <"$dir/proxy.status"
    local only
    only="$(comm -23 <(ok_names "$dir/direct.log") <(ok_names "$dir/proxy.log"))"
    local n=0
    [[ -n "$only" ]] && n="$(wc -l <<<"$only")"
    [[ -n "$only" ]] && sed "s|^|$u: |" <<<"$only" >>"$OUT/lost.txt"
    printf '| %s | %s | %s | %s | %s | %s/%s | %s | %s |\n' "$u" "$d_ok" "$d_err" "$p_ok" "$p_err" \
      "$d_hung" "$p_hung" "$p_alive" "$n"
    tot_d_ok=$((tot_d_ok + d_ok)); tot_d_err=$((tot_d_err + d_err))
    tot_p_ok=$((tot_p_ok + p_ok)); tot_p_err=$((tot_p_err + p_err)); lost=$((lost + n))
    [[ "$p_hung" == yes || "$d_hung" == yes ]] && hangs=$((hangs + 1))
    [[ "$p_alive" == yes ]] || dead=$((dead + 1))
  done
  printf '| **all** | %s | %s | %s | %s | %s units | %s dead | %s |\n' "$tot_d_ok" "$tot_d_err" \
    "$tot_p_ok" "$tot_p_err" "$hangs" "$dead" "$lost"
  if [[ -s "$OUT/lost.txt" ]]; then
    printf '\nPass directly, not through the proxy:\n'
    sed 's/^/- /' "$OUT/lost.txt"
  fi
}

main "$@"
