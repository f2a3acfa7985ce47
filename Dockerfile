# bloomproxy's container image (docs/operations.md, "Deployment").
#
#   docker build -t bloomproxy .          (or: podman build -t bloomproxy .)
#
# Stage 1 builds bloomproxy on Debian 12 with Debian's packages; stage 2 holds only what the
# binary needs to run: itself, the shared libraries ldd finds for it, the dynamic loader, a
# passwd/group for its non-root user, nsswitch.conf and the system CA bundle (for upstream TLS
# verified against the system store). No shell, no package manager: nothing to exec into.
# deploy/image/rootfs.sh assembles that file system; scripts/image.sh builds the same final stage
# from a binary built on the host (deploy/image/Containerfile.prebuilt) and checks it.

ARG DEBIAN_IMAGE=debian:12-slim

FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libuv1-dev libhiredis-dev robin-map-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBLOOMPROXY_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target bloomproxy \
 && /build/bloomproxy --version \
 && sh deploy/image/rootfs.sh /build/bloomproxy /rootfs

# The final stage: keep it identical to deploy/image/Containerfile.prebuilt's (apart from where
# the file system comes from); tests/integration/test_deploy.py compares them.
FROM scratch
COPY --from=build /rootfs/ /
USER 10001:10001
# 6380: clients (`port`); 9380: the admin port the manifests set (`admin-port`; off by default).
EXPOSE 6380 9380
ENTRYPOINT ["/usr/local/bin/bloomproxy"]
