#!/bin/sh
# Builds libksnap and the state suites with ThreadSanitizer in build-tsan/
# and runs the suites whose tests run snapshot iteration on another thread
# while the processing thread writes (state_map, state, state_snapshot).
#
#   tests/tsan.sh            build + run; exit status 0 only if every suite
#                            passed and TSan reported nothing
#
# Notes: the suites run unforked (CK_FORK=no) so a TSan report cannot hide
# in a Check child; halt_on_error makes the first report fail the run.
# ASLR is disabled for the run (setarch -R) because some kernels map
# memory where TSan's shadow layout does not expect it.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-tsan}
cmake -S . -B "$BUILD" -G Ninja -DKSNAP_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target test_state_map test_state test_state_snapshot
export CK_FORK=no
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
status=0
for suite in test_state_map test_state test_state_snapshot; do
  echo "== $suite (ThreadSanitizer)"
  if setarch "$(uname -m)" -R "./$BUILD/tests/$suite"; then
    echo "== $suite: OK"
  else
    echo "== $suite: FAILED (exit $?)"
    status=1
  fi
done
exit $status
