#!/usr/bin/env bash
# The build step of docker/Dockerfile, also run outside Docker by
# tests/docker/test_build_steps.sh: a release build of SRC as a packager
# configures it (no test suites, no fault hooks) in BUILD, installed under
# PREFIX (libraries in PREFIX/lib, the example operators in
# PREFIX/lib/ksnap). DESTDIR is honoured, as by `cmake --install`.
#
#   docker/build.sh SRC BUILD PREFIX
# Environment: KSNAP_BUILD_JOBS (default 2).
set -euo pipefail

if (($# != 3)); then
  echo "usage: $0 SRC BUILD PREFIX" >&2
  exit 2
fi
src=$1 build=$2 prefix=$3

cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DKSNAP_BUILD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
cmake --build "$build" --parallel "${KSNAP_BUILD_JOBS:-2}"
cmake --install "$build"
