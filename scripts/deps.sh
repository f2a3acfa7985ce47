#!/usr/bin/env bash
# Installs, from Debian's archive, what building, running and testing bloomproxy needs.
# Only missing packages are installed; runs apt-get through sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libuv1-dev libhiredis-dev robin-map-dev libgtest-dev libssl-dev openssl
  redis-server redis-tools nutcracker
  python3 python3-redis python3-pytest python3-prometheus-client
  python3-yaml podman ca-certificates
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(gnuplot-nox)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "Installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
