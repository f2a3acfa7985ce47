#!/usr/bin/env bash
# Builds bloomproxy's container image with podman and checks its file system and config
# (deploy/image/image_check.py: only the binary, its libraries, the loader, passwd/group,
# nsswitch.conf and CA certificates; the binary runs from them as the non-root user).
#
#   scripts/image.sh [--tag NAME] [--store DIR]
#       builds bloomproxy (build/, or takes $BLOOMPROXY_BIN), assembles the image's file system
#       on the host and builds deploy/image/Containerfile.prebuilt (the Dockerfile's final
#       stage, no RUN step: works where containers cannot run), then checks it.
#   scripts/image.sh --dockerfile [--debootstrap] [--tag NAME] [--store DIR]
#       builds the multi-stage Dockerfile itself (its RUN steps in a chroot: no container
#       runtime needed, root needed), then checks it. Its base, debian:12-slim, must be in
#       podman's storage or pullable; --debootstrap makes it locally from Debian's archive
#       (debootstrap --variant=minbase bookworm; $DEBIAN_MIRROR, default deb.debian.org).
#
# --store DIR: a private podman storage (vfs) under DIR instead of the system's.
# The image is tagged localhost/bloomproxy:VERSION unless --tag says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

dockerfile=no
debootstrap=no
tag=""
store=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dockerfile) dockerfile=yes ;;
    --debootstrap) debootstrap=yes ;;
    --tag) tag=$2; shift ;;
    --store) store=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
command -v podman >/dev/null || { echo "podman missing: apt-get install podman" >&2; exit 1; }

podman=(podman --cgroup-manager cgroupfs --events-backend none)
store_args=()
if [ -n "$store" ]; then
  podman+=(--root "$store/root" --runroot "$store/run" --tmpdir "$store/tmp" --storage-driver vfs)
  store_args=(--store "$store")
fi
version=$(sed -n 's/^project(bloomproxy VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
tag=${tag:-localhost/bloomproxy:$version}

if [ "$dockerfile" = no ]; then
  binary=${BLOOMPROXY_BIN:-}
  if [ -z "$binary" ]; then
    scripts/build.sh
    binary=build/bloomproxy
  fi
  exec python3 deploy/image/image_check.py --binary "$binary" --tag "$tag" "${store_args[@]}"
fi

if [ "$debootstrap" = yes ]; then
  base=$(mktemp -d)
  trap 'rm -rf "$base"' EXIT
  debootstrap --variant=minbase bookworm "$base" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  tar -C "$base" -c . | "${podman[@]}" import - docker.io/library/debian:12-slim
fi
# --isolation chroot: RUN steps run chrooted in the build stage's file system, where an OCI
# runtime (crun, runc) cannot start containers. --pull=missing keeps a local base.
"${podman[@]}" build --isolation chroot --pull=missing -t "$tag" .
exec python3 deploy/image/image_check.py --image "$tag" "${store_args[@]}"
