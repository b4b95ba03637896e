#!/usr/bin/env bash
# Installs the built ksnap into a temporary prefix, then builds and runs a
# consumer project against it with find_package(ksnap) and pkg-config.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d /tmp/ksnap-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name ksnap.pc)
grep -q "^prefix=$tmp/prefix\$" "$pc" || { echo "ksnap.pc has a wrong prefix:"; cat "$pc"; exit 1; }

export PKG_CONFIG_PATH="$(dirname "$pc")"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" \
      -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
export LD_LIBRARY_PATH="$(dirname "$(find "$tmp/prefix" -name 'libksnap.so' | head -1)")"
"$tmp/consumer/consumer_cmake"
"$tmp/consumer/consumer_pkgconfig"
