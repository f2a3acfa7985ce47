#!/usr/bin/env bash
# Installs what is missing, builds (with the tests), and runs the whole test suite:
# unit tests and integration tests against real redis-server processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --tests
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@"
