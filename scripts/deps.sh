#!/usr/bin/env bash
# Installs, from Debian's archive, what building, running and testing bloomproxy needs; with
# --tests also a JDK, Guava and the node-redis packages of the integration tests
# (tests/integration/node, from the npm registry); with --bench gnuplot. Only what is missing is
# installed; runs apt-get through sudo when not root.
set -euo pipefail
node_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/integration/node"

packages=(
  build-essential cmake pkg-config
  libuv1-dev libhiredis-dev robin-map-dev libgtest-dev libssl-dev openssl
  redis-server redis-tools nutcracker
  python3 python3-redis python3-pytest python3-prometheus-client
  python3-yaml podman ca-certificates
  faketime
)
tests=false
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(gnuplot-nox) ;;
    # The Guava layout tests compile a Java helper against Debian's Guava (docs/java-layouts.md).
    --tests) tests=true; packages+=(openjdk-17-jdk-headless libguava-java) ;;
  esac
done
# Node.js and npm run the node-redis client test. Asked for by command, not by package: a
# machine's own Node.js (NodeSource's bundles npm) conflicts with Debian's npm package.
if $tests; then
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "Installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# node_modules as package-lock.json pins it; `npm ci` again only when the lock changed since.
$tests || exit 0
stamp="$node_dir/node_modules/.bloomproxy-lock"
if ! cmp -s "$node_dir/package-lock.json" "$stamp" 2>/dev/null; then
  echo "Installing the node-redis test packages (npm ci)" >&2
  npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error >/dev/null
  cp "$node_dir/package-lock.json" "$stamp"
fi
