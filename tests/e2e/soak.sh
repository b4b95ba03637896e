#!/usr/bin/env bash
# Soak: N more seeded kill runs of the whole word-count job (the same
# harness as the e2e_kill_* ctest entries, other seeds).
#
#   tests/e2e/soak.sh N [FIRST_SEED] [CASE]
#
# N runs of CASE (default random; also coordinator, outage, meta-window,
# commit-window, early, zombie; see tests/e2e/killrun.py --help) with seeds FIRST_SEED.. (default 1000). Needs the
# servers (tests/servers/up.sh) and a build in BUILD_DIR (default build).
# Each run takes 10-20 s. Failed runs keep their directory under
# $BUILD_DIR/e2e-runs/soak (logs, input, committed output) and print the
# seed; the exit status is 1 if any run failed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
n="${1:?usage: soak.sh N [FIRST_SEED] [CASE]}"
seed="${2:-1000}"
case="${3:-random}"
# shellcheck source=/dev/null
source "$ROOT/tests/.run/env"
exec python3 "$ROOT/tests/e2e/killrun.py" \
  --ksnap "$BUILD_DIR/bin/ksnap" \
  --lib "$BUILD_DIR/examples/wordcount/libwordcount.so" \
  --case "$case" --seed "$seed" --runs "$n" \
  --run-root "$BUILD_DIR/e2e-runs/soak"
