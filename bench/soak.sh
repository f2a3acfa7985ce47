#!/usr/bin/env bash
# Soak: a long mixed load through bloomproxy (SET/GET pipelined and not, BF.ADD/BF.EXISTS
# through bf_client, a SET-then-GET correctness check, new connections all the time), sampling
# the proxy's RSS every SAMPLE seconds, while the upstream redis-server is stopped and started
# again on its port every RESTART_EVERY seconds. Reports RSS over time and whether it kept
# growing after the warm-up, each restart (how long the proxy took to serve again once Redis
# was back), the errors the load generators saw (expected while the upstream was down or
# restarting, or unexpected), and whether the proxy is still alive at the end.
#
#   bench/soak.sh                              # 10 minutes, upstream restarted every 60 s
#   DURATION=150 RESTART_EVERY=30 bench/soak.sh
#   RESTART_EVERY=0 bench/soak.sh              # no restarts: the plain memory soak
#
# Verdict: RSS after the warm-up (first 20 % of the run) may move within SLACK_KB (default
# 2048 KiB) of its warm-up level; more is reported as growth. Exit status 1 if there were
# unexpected errors, the proxy did not serve again after a restart, or the proxy died.
# See bench/README.md ("soak.sh") for the settings and how the output is read.
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"

DURATION="${DURATION:-600}"
SAMPLE="${SAMPLE:-10}"
SLACK_KB="${SLACK_KB:-2048}"
RESTART_EVERY="${RESTART_EVERY:-60}"       # seconds between upstream restarts; 0 = none
RESTART_HOW="${RESTART_HOW:-kill shutdown kill term}"   # cycled: kill = SIGKILL, term =
                                           # SIGTERM, shutdown = redis-cli SHUTDOWN NOSAVE
DOWN_MS="${DOWN_MS:-1000}"                 # how long Redis stays down
POLL_MS="${POLL_MS:-50}"                   # probe interval through the proxy
RESUME_TIMEOUT="${RESUME_TIMEOUT:-30}"     # seconds to wait for the first OK through the proxy
RESUME_GRACE="${RESUME_GRACE:-5}"          # seconds after that OK still counted as restarting
RUN_TIMEOUT="${RUN_TIMEOUT:-120}"          # a load-generator run taking longer is killed (hung)
SHOW_MAX="${SHOW_MAX:-20}"                 # unexpected error lines printed

for v in DURATION SAMPLE SLACK_KB RESTART_EVERY DOWN_MS POLL_MS RESUME_TIMEOUT RESUME_GRACE \
  RUN_TIMEOUT SHOW_MAX; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a whole number (is '${!v}')"
done
((SAMPLE > 0 && DURATION > 0 && POLL_MS > 0)) || die "DURATION, SAMPLE and POLL_MS must be > 0"
read -r -a HOW <<<"$RESTART_HOW"
for h in "${HOW[@]}"; do
  [[ "$h" == kill || "$h" == term || "$h" == shutdown ]] \
    || die "RESTART_HOW: '$h' is not kill, term or shutdown"
done
((${#HOW[@]} > 0)) || die "RESTART_HOW is empty"

# Microseconds since the epoch, without forking (EPOCHREALTIME, bash 5).
now_us() { NOW_US="${EPOCHREALTIME//[!0-9]/}"; }
# Sleep until the absolute time $1 (microseconds since the epoch), if it is still ahead.
sleep_until_us() {
  now_us
  local left=$(($1 - NOW_US))
  if ((left > 0)); then sleep "$(printf '%d.%06d' $((left / 1000000)) $((left % 1000000)))"; fi
}

bench_init
if ((RESTART_EVERY > 0)); then
  # The port must be free again a second after Redis stopped: keep it out of the range the
  # kernel gives outgoing connections (the load generators open thousands).
  port=""
  free_port_stable port
  start_redis_on "$port"
else
  # shellcheck disable=SC2119  # no extra redis-server args here
  start_redis
fi
start_bloomproxy "$REDIS_PORT"
build_bf_client
redis-cli -h 127.0.0.1 -p "$PROXY_PORT" BF.RESERVE soak:bf 0.01 10000000 >/dev/null

T="$BENCH_TMP/soak"
mkdir -p "$T"
# Every error a load generator or probe sees goes to $T/events.* as
#   TIME_US <TAB> RESOLUTION_US <TAB> COUNT <TAB> SOURCE <TAB> MESSAGE
# (bf_client aggregates per tenth of a second: resolution 0.1 s). Every run goes to $T/runs.* as
#   END_TIME_S <TAB> EXIT_STATUS
# Every restart goes to $T/restarts as
#   N <TAB> HOW <TAB> STOP_US <TAB> GONE_US <TAB> BACK_US <TAB> OK_US (0 = never) <TAB>
#   DOWN_PROBES <TAB> DOWN_PROBE_ERRORS <TAB> DOWN_PROBE_MAX_MS <TAB> PROBES_UNTIL_OK <TAB> EXIT
: >"$T/restarts"
now_us
start_us="$NOW_US"
start_s="$EPOCHSECONDS"
deadline=$((start_s + DURATION))

# --- load generators (background loops until the deadline; every run opens new connections) ---

# Timestamp the message lines of redis-benchmark's output (progress lines, which it rewrites
# with \r, and result lines are dropped).
rb_messages() {
  local src="$1" line
  while IFS= read -r line; do
    line="${line##*$'\r'}"
    line="${line%"${line##*[![:space:]]}"}"
    [[ -z "$line" || "$line" =~ ^[A-Za-z_.-]+:\ rps= || "$line" == *"requests per second"* ]] && continue
    now_us
    printf '%s\t0\t1\t%s\t%s\n' "$NOW_US" "$src" "$line"
  done
}

load_redis_benchmark() {
  local src="$1" pipe="$2" rc run="$T/run.$1"
  while ((EPOCHSECONDS < deadline)); do
    set +e
    timeout -k 5 "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 -p "$PROXY_PORT" -t set,get \
      -n 20000 -c 20 -P "$pipe" -r 100000 -q 2>&1 </dev/null | rb_messages "$src" >"$run"
    rc="${PIPESTATUS[0]}"
    set -e
    cat "$run" >>"$T/events.$src"
    if ((rc == 124 || rc == 137)); then
      now_us
      printf '%s\t0\t1\t%s\thung: killed after %s s (timeout)\n' "$NOW_US" "$src" "$RUN_TIMEOUT" \
        >>"$T/events.$src"
    elif ((rc != 0)) && [[ ! -s "$run" ]]; then
      now_us
      printf '%s\t0\t1\t%s\texit status %s without a message\n' "$NOW_US" "$src" "$rc" \
        >>"$T/events.$src"
    fi
    printf '%s\t%s\n' "$EPOCHSECONDS" "$rc" >>"$T/runs.$src"
    sleep 0.2
  done
}

load_bf_client() {
  local src="$1" rc; shift
  local elog="$T/errlog.$src" out="$T/out.$src" err="$T/err.$src"
  while ((EPOCHSECONDS < deadline)); do
    rm -f "$elog"
    set +e
    timeout -k 5 "$RUN_TIMEOUT" "$BF_CLIENT" -p "$PROXY_PORT" -t 5 --keep-going \
      --error-log "$elog" "$@" >"$out" 2>"$err" </dev/null
    rc=$?
    set -e
    if [[ -s "$elog" ]]; then
      awk -F'\t' -v src="$src" '{ printf "%.0f\t100000\t%s\t%s\t%s\n", $1 * 1000000, $2, src, $3 }' \
        "$elog" >>"$T/events.$src"
    fi
    # 0 = no error, 1 = errors (itemised in the error log); anything else is a failure of its own
    if ((rc > 1)); then
      now_us
      printf '%s\t0\t1\t%s\texit status %s: %s\n' "$NOW_US" "$src" "$rc" \
        "$( (grep -v '^bf_client: [0-9]* error(s); first:' "$err" || true) | head -1)" \
        >>"$T/events.$src"
    fi
    printf '%s\t%s\n' "$EPOCHSECONDS" "$rc" >>"$T/runs.$src"
    sleep 0.2
  done
}

LOADS=("redis-benchmark SET/GET P1" "redis-benchmark SET/GET P16" "bf_client BF.ADD"
  "bf_client BF.EXISTS" "bf_client SET+GET check")
SRCS=(rb-p1 rb-p16 bf-add bf-exists set-get)
load_pids=()
load_redis_benchmark rb-p1 1 &
load_pids+=($!); track_pid $! "load P1"
load_redis_benchmark rb-p16 16 &
load_pids+=($!); track_pid $! "load P16"
load_bf_client bf-add -m proxy-add -c 10 -P 8 -k soak:bf &
load_pids+=($!); track_pid $! "load BF.ADD"
load_bf_client bf-exists -m proxy-exists -c 10 -P 8 -k soak:bf &
load_pids+=($!); track_pid $! "load BF.EXISTS"
load_bf_client set-get -m set-get -c 4 -P 4 -k soak:sg &
load_pids+=($!); track_pid $! "load SET+GET check"

# --- RSS sampler (background; prints the table as it goes) ---
sampler() {
  local rss fds
  while ((EPOCHSECONDS < deadline)); do
    sleep "$SAMPLE"
    pid_alive "$PROXY_PID" || { printf '%s\tdead\n' "$((EPOCHSECONDS - start_s))" >>"$T/rss"; return 0; }
    rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$PROXY_PID/status" 2>/dev/null)" || rss=""
    fds=("/proc/$PROXY_PID/fd/"*)
    [[ -n "$rss" ]] || continue
    printf '%s\t%s\t%s\t%s\n' "$((EPOCHSECONDS - start_s))" "$rss" "${#fds[@]}" \
      "$(wc -l <"$T/restarts")" >>"$T/rss"
    printf '| %d | %d | %d | %d |\n' "$((EPOCHSECONDS - start_s))" "$rss" "${#fds[@]}" \
      "$(wc -l <"$T/restarts")"
  done
}
: >"$T/rss"
if ((RESTART_EVERY > 0)); then
  log "soak for ${DURATION}s, RSS every ${SAMPLE}s, upstream restart every ${RESTART_EVERY}s" \
    "(${HOW[*]}, cycled; ${DOWN_MS} ms down)"
else
  log "soak for ${DURATION}s, RSS every ${SAMPLE}s, no upstream restarts"
fi
printf '| elapsed s | proxy RSS KiB | proxy open fds | upstream restarts so far |\n|---:|---:|---:|---:|\n'
sampler &
sampler_pid=$!
track_pid "$sampler_pid" "RSS sampler"

# --- upstream restarts ---

# probe: one SET through the proxy -> PROBE_OK (1/0), PROBE_OUT, PROBE_MS; a reply other than OK
# is recorded as an event (source "probe").
probe_n=0
probe() {
  local t0 rc=0
  probe_n=$((probe_n + 1))
  now_us
  t0="$NOW_US"
  PROBE_OUT="$(timeout -k 2 5 redis-cli -h 127.0.0.1 -p "$PROXY_PORT" SET soak:probe "$probe_n" \
    2>&1 </dev/null)" || rc=$?
  now_us
  PROBE_MS=$(((NOW_US - t0) / 1000))
  PROBE_OUT="${PROBE_OUT//$'\n'/ }"
  if [[ "$PROBE_OUT" == OK ]]; then
    PROBE_OK=1
  else
    PROBE_OK=0
    ((rc == 124 || rc == 137)) && PROBE_OUT="hung: no reply within 5 s (timeout)"
    [[ -n "$PROBE_OUT" ]] || PROBE_OUT="exit status $rc without a reply"
    printf '%s\t0\t1\tprobe\t%s\n' "$t0" "$PROBE_OUT" >>"$T/events.probe"
  fi
}

# stop_redis HOW PID: stop the upstream that way, wait until it has exited (SIGKILL after 10 s)
# -> STOP_STATUS (its exit status), STOP_FORCED (1 if it needed the SIGKILL). Call it with
# 2>/dev/null: bash would report a job killed by a signal ("Killed ...") on stderr.
stop_redis() {
  local how="$1" pid="$2" i
  STOP_STATUS=0
  STOP_FORCED=0
  case "$how" in
    kill) kill -KILL "$pid" || true ;;
    term) kill -TERM "$pid" || true ;;
    shutdown)
      timeout -k 2 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SHUTDOWN NOSAVE >/dev/null \
        </dev/null || true ;;
  esac
  for ((i = 0; i < 1000; i++)); do   # 10 s
    pid_alive "$pid" || break
    sleep 0.01
  done
  if pid_alive "$pid"; then
    STOP_FORCED=1
    kill -KILL "$pid" || true
  fi
  wait "$pid" || STOP_STATUS=$?
}

restart_upstream() {
  local n="$1" how="${HOW[$((($1 - 1) % ${#HOW[@]}))]}" pid="$REDIS_PID" i status
  local stop_us gone_us back_us ok_us=0 slot down_probes=0 down_errs=0 down_max=0 up_probes=0
  now_us
  stop_us="$NOW_US"
  stop_redis "$how" "$pid" 2>/dev/null
  status="$STOP_STATUS"
  if ((STOP_FORCED)); then
    log "redis-server (pid $pid) was still running 10 s after '$how'; sent SIGKILL"
    status="$status (SIGKILL after 10 s)"
  fi
  untrack_pid "$pid"
  now_us
  gone_us="$NOW_US"

  # Down: the proxy must answer at once (with an error), not hang.
  slot="$gone_us"
  while :; do
    now_us
    ((NOW_US - gone_us < DOWN_MS * 1000)) || break
    probe
    down_probes=$((down_probes + 1))
    ((PROBE_OK)) || down_errs=$((down_errs + 1))
    ((PROBE_MS > down_max)) && down_max="$PROBE_MS"
    slot=$((slot + POLL_MS * 1000))
    sleep_until_us "$slot"
  done

  # Start it again on the same port (same directory); "back" = it answers PING itself.
  for ((i = 1; ; i++)); do
    launch_redis "$REDIS_PORT" "$REDIS_DIR"
    while ! [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" PING 2>/dev/null </dev/null)" == PONG ]]; do
      pid_alive "$REDIS_PID" || break
      now_us
      ((NOW_US - gone_us < (STARTUP_TIMEOUT + 1) * 1000000 * i)) \
        || die "redis-server did not answer PING within ${STARTUP_TIMEOUT}s of its restart"
      sleep 0.01
    done
    pid_alive "$REDIS_PID" && break
    wait "$REDIS_PID" 2>/dev/null || true
    untrack_pid "$REDIS_PID"
    _show_log "$REDIS_DIR/redis.log"
    ((i < 5)) || die "redis-server does not start again on port $REDIS_PORT"
    log "redis-server exited at once (port $REDIS_PORT not free yet?); trying again in 1 s"
    sleep 1
  done
  now_us
  back_us="$NOW_US"

  # Back: probe through the proxy every POLL_MS until a SET succeeds.
  slot="$back_us"
  while :; do
    probe
    up_probes=$((up_probes + 1))
    if ((PROBE_OK)); then
      now_us
      ok_us="$NOW_US"
      break
    fi
    now_us
    ((NOW_US - back_us < RESUME_TIMEOUT * 1000000)) || break
    slot=$((slot + POLL_MS * 1000))
    sleep_until_us "$slot"
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$how" "$stop_us" "$gone_us" \
    "$back_us" "$ok_us" "$down_probes" "$down_errs" "$down_max" "$up_probes" "$status" \
    >>"$T/restarts"
  if ((ok_us)); then
    log "restart $n ($how, redis exit $status): down $(((back_us - stop_us) / 1000)) ms;" \
      "proxy while down: $down_errs/$down_probes probes got errors, slowest ${down_max} ms;" \
      "first OK through the proxy $(((ok_us - back_us) / 1000)) ms after Redis was back"
  else
    log "restart $n ($how): NO successful SET through the proxy within ${RESUME_TIMEOUT}s" \
      "after Redis was back (last reply: $PROBE_OUT)"
  fi
}

proxy_died=""
n_restarts=0
next_restart=$((start_s + RESTART_EVERY))
while ((EPOCHSECONDS < deadline)); do
  if ! pid_alive "$PROXY_PID"; then
    proxy_died="$((EPOCHSECONDS - start_s))"
    log "bloomproxy (pid $PROXY_PID) DIED after ${proxy_died}s"
    break
  fi
  # (no restart in the last DOWN + 10 s: the run should end with the proxy serving again)
  if ((RESTART_EVERY > 0 && EPOCHSECONDS >= next_restart \
    && deadline - EPOCHSECONDS > DOWN_MS / 1000 + 10)); then
    n_restarts=$((n_restarts + 1))
    restart_upstream "$n_restarts"
    next_restart=$((next_restart + RESTART_EVERY))
  else
    sleep 0.2
  fi
done

if [[ -n "$proxy_died" ]]; then
  proxy_status=0
  wait "$PROXY_PID" 2>/dev/null || proxy_status=$?
  untrack_pid "$PROXY_PID"
  for pid in "${load_pids[@]}" "$sampler_pid"; do stop_pid "$pid"; untrack_pid "$pid"; done
else
  # The loops end at the deadline (their last run may take a few more seconds).
  for pid in "${load_pids[@]}" "$sampler_pid"; do
    wait "$pid" 2>/dev/null || true
    untrack_pid "$pid"
  done
fi
now_us
end_us="$NOW_US"

# --- report ---

# Classify the events: "expected" = a message that an upstream outage explains (the proxy's
# "upstream unavailable" error, a connection reset or closed, redis-benchmark not getting its
# CONFIG, a SET+GET check whose write was lost with the upstream's data) seen between the
# moment a restart began and RESUME_GRACE s after the first OK through the proxy; everything
# else is unexpected.
shopt -s nullglob
events=("$T"/events.*)
cat /dev/null "${events[@]}" >"$T/all_events"
awk -F'\t' -v OFS='\t' -v grace_us=$((RESUME_GRACE * 1000000)) \
  -v resume_us=$((RESUME_TIMEOUT * 1000000)) -v start_us="$start_us" -v out="$T" '
  FILENAME == ARGV[1] {
    nw++; wn[nw] = $1; ws[nw] = $3; wok[nw] = $6
    we[nw] = ($6 > 0 ? $6 : $5 + resume_us) + grace_us
    next
  }
  {
    t = $1; res = $2; c = $3; src = $4; msg = $5
    explained = (msg ~ /upstream unavailable/ ||
                 msg ~ /^(Error|connection error|Writing to socket): (Connection reset by peer|Server closed the connection|Broken pipe)/ ||
                 msg ~ /Could not fetch server CONFIG|failed to fetch CONFIG/ ||
                 msg ~ /^write lost: /)
    win = 0
    for (i = 1; i <= nw; i++) if (t <= we[i] && t + res >= ws[i]) { win = i; break }
    if (explained && win) {
      ex[src] += c
      if (wok[win] > 0 && t > wok[win]) after[win] += c; else during[win] += c
      key = src "\t" msg; msgs[key] += c
    } else {
      unexp[src] += c
      printf "%.1f\t%s\t%s\t%s\t%s\n", (t - start_us) / 1e6, src, c, \
        (win ? "during restart " wn[win] : "outside restarts"), msg > (out "/unexpected")
    }
  }
  END {
    for (s in ex) print s, ex[s] > (out "/by_src_expected")
    for (s in unexp) print s, unexp[s] > (out "/by_src_unexpected")
    for (i = 1; i <= nw; i++) print wn[i], during[i] + 0, after[i] + 0 > (out "/by_restart")
    for (k in msgs) print msgs[k], k > (out "/expected_msgs")
  }' "$T/restarts" "$T/all_events"
touch "$T/by_src_expected" "$T/by_src_unexpected" "$T/by_restart" "$T/expected_msgs" "$T/unexpected"

lookup() { awk -F'\t' -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
fmt_int() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"${1:-0}"; }

if ((RESTART_EVERY > 0)); then
  echo
  echo "Upstream restarts (down = from the stop to Redis answering PING again; probes = SET through the proxy every ${POLL_MS} ms):"
  echo
  echo '| # | at s | how | redis exit | down ms | probes while down: errors / sent, slowest ms | first OK through the proxy after Redis was back, ms | probes until OK | load errors during restart / after the first OK |'
  echo '|---:|---:|---|---:|---:|---|---:|---:|---|'
  while IFS=$'\t' read -r n how stop _gone back ok dp de dmax up status; do
    if ((ok > 0)); then resume="$(((ok - back) / 1000))"; else resume="**none within ${RESUME_TIMEOUT}s**"; fi
    printf '| %s | %s | %s | %s | %s | %s / %s, %s | %s | %s | %s / %s |\n' "$n" \
      "$(((stop - start_us) / 1000000))" "$how" "$status" "$(((back - stop) / 1000))" \
      "$de" "$dp" "$dmax" "$resume" "$up" \
      "$(fmt_int "$(awk -v n="$n" '$1 == n { print $2 }' "$T/by_restart")")" \
      "$(fmt_int "$(awk -v n="$n" '$1 == n { print $3 }' "$T/by_restart")")"
  done <"$T/restarts"
  awk -F'\t' '$6 > 0 { print int(($6 - $5) / 1000) }' "$T/restarts" | sort -n \
    | awk '{ v[++n] = $1 } END { if (n) printf "\nfirst OK through the proxy after Redis was back: min %d ms, median %d ms, max %d ms (%d restarts)\n", v[1], v[int((n + 1) / 2)], v[n], n }'
fi

echo
echo "Load (each run opens new connections; redis-benchmark exits at its first error, so its errors are failed runs; bf_client keeps going and counts every error reply and broken connection):"
echo
echo '| load | runs | runs with errors | errors: expected (upstream down or restarting) | errors: unexpected |'
echo '|---|---:|---:|---:|---:|'
total_exp=0
total_unexp=0
for i in "${!SRCS[@]}"; do
  s="${SRCS[i]}"
  touch "$T/runs.$s"
  runs="$(wc -l <"$T/runs.$s")"
  bad="$(awk -F'\t' '$2 != 0' "$T/runs.$s" | wc -l)"
  e="$(lookup "$T/by_src_expected" "$s")"
  u="$(lookup "$T/by_src_unexpected" "$s")"
  total_exp=$((total_exp + e))
  total_unexp=$((total_unexp + u))
  printf '| %s | %d | %d | %s | %s |\n' "${LOADS[i]}" "$runs" "$bad" "$(fmt_int "$e")" "$(fmt_int "$u")"
done
pe="$(lookup "$T/by_src_expected" probe)"
pu="$(lookup "$T/by_src_unexpected" probe)"
total_exp=$((total_exp + pe))
total_unexp=$((total_unexp + pu))
if ((RESTART_EVERY > 0)); then
  printf '| probes (redis-cli SET) | %d | | %s | %s |\n' "$probe_n" "$(fmt_int "$pe")" "$(fmt_int "$pu")"
fi
printf '| **total** | | | %s | %s |\n' "$(fmt_int "$total_exp")" "$(fmt_int "$total_unexp")"

if [[ -s "$T/expected_msgs" ]]; then
  echo
  echo "Expected errors by message:"
  echo
  echo '| count | source | message |'
  echo '|---:|---|---|'
  sort -t$'\t' -k1,1nr "$T/expected_msgs" | head -15 \
    | awk -F'\t' '{ printf "| %d | %s | %s |\n", $1, $2, $3 }'
fi
if [[ -s "$T/unexpected" ]]; then
  echo
  echo "UNEXPECTED errors, by message (first $SHOW_MAX, in order of first appearance; at = seconds into the run):"
  echo
  echo '| count | source | first at s | last at s | first seen | message |'
  echo '|---:|---|---:|---:|---|---|'
  sort -t$'\t' -k1,1n "$T/unexpected" | awk -F'\t' -v OFS='\t' '
    { k = $2 OFS $5
      if (!(k in c)) { order[++n] = k; first[k] = $1; when[k] = $4 }
      c[k] += $3; last[k] = $1 }
    END { for (i = 1; i <= n; i++) { k = order[i]; split(k, p, OFS)
      printf "| %d | %s | %s | %s | %s | %s |\n", c[k], p[1], first[k], last[k], when[k], p[2] } }' \
    | head -"$SHOW_MAX"
fi

# RSS verdict (as before restarts existed: warm-up = first 20 % of the samples)
mapfile -t samples < <(awk -F'\t' '$2 != "dead" { print $2 }' "$T/rss")
n=${#samples[@]}
echo
if ((n == 0)); then
  echo "RSS: no samples"
else
  warm=$((n / 5 > 0 ? n / 5 : 1))
  base="${samples[$((warm - 1))]}"
  max="$base"
  for ((i = warm; i < n; i++)); do
    if ((samples[i] > max)); then max="${samples[i]}"; fi
  done
  final="${samples[$((n - 1))]}"
  printf 'RSS after warm-up %d KiB, max after %d KiB, final %d KiB (%d samples)\n' \
    "$base" "$max" "$final" "$n"
  if ((max - base > SLACK_KB)); then
    echo "verdict: RSS grew by $((max - base)) KiB after the warm-up"
  else
    echo "verdict: no growth (within ${SLACK_KB} KiB of the warm-up level)"
  fi
fi

# Is the proxy still alive, and serving?
rc=0
if [[ -n "$proxy_died" ]]; then
  echo "proxy: DIED after ${proxy_died}s (exit status $proxy_status)"
  rc=1
elif pid_alive "$PROXY_PID"; then
  if sanity_check "$PROXY_PORT" bloomproxy 2>/dev/null; then
    echo "proxy: alive at the end (pid $PROXY_PID, up $(((end_us - start_us) / 1000000))s of load), SET/GET through it works"
  else
    echo "proxy: alive at the end (pid $PROXY_PID) but a SET/GET through it FAILED"
    rc=1
  fi
else
  echo "proxy: DIED at the end of the run"
  rc=1
fi
if [[ -s "$PROXY_LOG" ]]; then
  echo "proxy log: $(wc -l <"$PROXY_LOG") lines; most frequent (numbers replaced by N):"
  sed -E 's/^[0-9]+:[A-Z] [0-9]+ [A-Za-z]+ [0-9]+ [0-9:.]+ //; s/[0-9]+/N/g' "$PROXY_LOG" \
    | sort | uniq -c | sort -rn | head -8 | sed 's/^/    /'
fi
if ((total_unexp > 0)); then rc=1; fi
if awk -F'\t' '$6 == 0 { f = 1 } END { exit !f }' "$T/restarts"; then rc=1; fi
exit "$rc"
