#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs bloomproxy on port 6380.
# Without --upstream (or a config file naming one) it first starts a local redis-server on a
# free loopback port, and stops it when the proxy exits. Extra arguments go to bloomproxy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh

args=("$@")
has_upstream=0
for a in "${args[@]}"; do
  case "$a" in --upstream|--upstream=*|--upstream-cluster|--upstream-cluster=*|--config|--config=*|*.conf) has_upstream=1 ;; esac
done

port=6380
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --port) port="${args[$((i + 1))]}" ;;
    --port=*) port="${args[$i]#--port=}" ;;
  esac
done

redis_pid=""
cleanup() { [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true; }
trap cleanup EXIT

if [ $has_upstream -eq 0 ]; then
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rdir=$(mktemp -d -t bloomproxy-redis.XXXXXX)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$rdir" \
    --logfile "$rdir/redis.log" &
  redis_pid=$!
  for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "Started redis-server on 127.0.0.1:$rport (log: $rdir/redis.log)" >&2
  args=(--upstream "127.0.0.1:$rport" "${args[@]}")
fi

echo "bloomproxy on 127.0.0.1:$port — connect with: redis-cli -p $port   (Ctrl-C stops it)" >&2
build/bloomproxy --port "$port" "${args[@]}"
