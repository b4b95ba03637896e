#!/usr/bin/env bash
# The release configuration has no fault hooks: configures ksnap in a
# scratch directory the way a packager does (-DCMAKE_BUILD_TYPE=Release
# -DKSNAP_BUILD_TESTS=OFF, KSNAP_FAULT_INJECTION left at its default),
# builds the libraries and the CLI, and checks that
#   - the option is OFF and fault.c is not among the library's sources;
#   - no ksnap__fault* symbol is in libksnap.so, libksnap.a or ksnap;
#   - neither "KSNAP_FAULT" nor any point name used by a hook in the
#     sources (sink.skip-repair, ...) is a string in them;
#   - `ksnap version` does not say "fault injection".
# The same string check is run on BUILD_DIR's own library: in a build with
# the hooks (tests/run.sh) it must find them, so the check can fail.
# Usage: test_no_fault_hooks.sh SOURCE_DIR BUILD_DIR. About 20 s.
set -euo pipefail
src=$1
outer=$2
tmp=$(mktemp -d /tmp/ksnap-release-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The point names passed to a hook anywhere in the library's sources.
mapfile -t points < <(grep -rhoE 'ksnap__fault(_id|_who|_on)?\("[^"]+"' \
  "$src/plugin/src" "$src/connectors/src" "$src/coordinator/src" |
  sed -E 's/.*\("//; s/"$//' | sort -u)
((${#points[@]} > 0)) || fail "no fault hook call found in the sources"
patterns=(-e KSNAP_FAULT)
for p in "${points[@]}"; do patterns+=(-e "$p"); done

# Prints the fault strings and symbols found in the files given.
hooks_in() {
  for f in "$@"; do
    strings -a "$f" | grep -F "${patterns[@]}" | sed "s|^|$f: string |" || true
    nm -A "$f" 2>/dev/null | grep 'ksnap__fault' || true
  done
}

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$tmp/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DKSNAP_BUILD_TESTS=OFF >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; fail "configure"; }
grep -qx 'KSNAP_FAULT_INJECTION:BOOL=OFF' "$tmp/build/CMakeCache.txt" ||
  fail "KSNAP_FAULT_INJECTION is not OFF by default"
cmake --build "$tmp/build" --parallel 2 --target ksnap ksnap_static ksnap_cli \
  >"$tmp/build.log" || { tail -50 "$tmp/build.log"; fail "build"; }
if find "$tmp/build" -name 'fault.c.o*' | grep -q .; then
  fail "fault.c was compiled in the release configuration"
fi

lib_so=$(find "$tmp/build/plugin" -name 'libksnap.so.*.*' | head -1)
bins=("$lib_so" "$tmp/build/plugin/libksnap.a" "$tmp/build/bin/ksnap")
for f in "${bins[@]}"; do [[ -s "$f" ]] || fail "missing $f"; done
found=$(hooks_in "${bins[@]}")
[[ -z "$found" ]] || fail "fault hooks in the release build:"$'\n'"$found"
if "$tmp/build/bin/ksnap" version | grep -i 'fault'; then
  fail "the release ksnap version mentions fault injection"
fi

# The check itself: it finds the hooks in a build that has them.
if grep -qsx 'KSNAP_FAULT_INJECTION:BOOL=ON' "$outer/CMakeCache.txt"; then
  [[ -n "$(hooks_in "$outer/plugin/libksnap.a")" ]] ||
    fail "the check finds no hook in $outer, a build with fault injection"
  "$outer/bin/ksnap" version | grep -qx \
    'fault injection: compiled in (test build)' ||
    fail "$outer/bin/ksnap version does not say fault injection is in"
fi
echo "release build: no fault hook (points checked: ${points[*]})"
