#!/bin/sh
# Assembles the file system of bloomproxy's container image: the binary, the shared libraries
# `ldd` resolves for it, the dynamic loader, a passwd/group naming the non-root user, an
# nsswitch.conf, and the system CA bundle (for upstream-tls without upstream-tls-ca-cert-*).
# Nothing else: no shell, no package manager.
#
#   deploy/image/rootfs.sh BINARY DEST
#
# The Dockerfile's build stage and scripts/image.sh both call it, so the image built from the
# Dockerfile and the one built from a binary built on the host (deploy/image/Containerfile.prebuilt)
# have the same files at the same paths.
set -eu
umask 022

if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY DEST" >&2
  exit 2
fi
binary=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)
ca_bundle=/etc/ssl/certs/ca-certificates.crt

[ -x "$binary" ] || { echo "$0: $binary is not an executable" >&2; exit 1; }
[ -f "$ca_bundle" ] || { echo "$0: $ca_bundle missing (install ca-certificates)" >&2; exit 1; }
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
  echo "$0: $dest is not empty" >&2
  exit 1
fi
mkdir -p "$dest"

install -D -m 0755 "$binary" "$dest/usr/local/bin/bloomproxy"

# Every library at the path ldd found it (e.g. /lib/x86_64-linux-gnu/libuv.so.1), symlinks
# resolved, and the loader at the path written in the binary (/lib64/ld-linux-x86-64.so.2 on
# amd64): with no ld.so.cache in the image, the loader finds the libraries in its built-in
# directories, which are these. A library ldd cannot find fails the build here, not at run time.
libs=$(ldd "$binary" | awk '
  /=> not found/ { print "MISSING " $1; next }
  $2 == "=>" && $3 ~ /^\// { print $3; next }
  $1 ~ /^\// { print $1 }')
if echo "$libs" | grep -q '^MISSING'; then
  echo "$0: ldd cannot resolve: $(echo "$libs" | grep '^MISSING' | cut -d' ' -f2 | tr '\n' ' ')" >&2
  exit 1
fi
for lib in $libs; do
  mkdir -p "$dest$(dirname "$lib")"
  cp -L "$lib" "$dest$lib"
  chmod 0644 "$dest$lib"
done
loader=$(echo "$libs" | grep '/ld-linux' || true)
[ -n "$loader" ] || { echo "$0: ldd named no dynamic loader" >&2; exit 1; }
chmod 0755 "$dest$loader"

install -D -m 0644 "$here/passwd" "$dest/etc/passwd"
install -D -m 0644 "$here/group" "$dest/etc/group"
install -D -m 0644 "$here/nsswitch.conf" "$dest/etc/nsswitch.conf"
install -D -m 0644 "$ca_bundle" "$dest$ca_bundle"
# OpenSSL's default verify file on Debian (OPENSSLDIR/cert.pem), as the ca-certificates
# package links it: SSL_CTX_set_default_verify_paths then finds the bundle with no variable set.
mkdir -p "$dest/usr/lib/ssl"
ln -s "$ca_bundle" "$dest/usr/lib/ssl/cert.pem"
