#!/usr/bin/env bash
# THE test command: configures and builds ksnap into build/, makes sure the
# test servers (real Kafka broker, S3 server) are up, and runs ctest.
#
#   tests/run.sh                 all suites (unit + integration)
#   tests/run.sh -L unit         extra arguments go to ctest; with -L unit
#                                alone no server is started
#   KSNAP_TEST_KAFKA_VERSION=4.x tests/run.sh -L integration
#                                the same against a Kafka 4.x broker: a
#                                second set of servers in tests/.run/kafka-4.x
#
# If the servers are already up (tests/servers/up.sh, tests/.run/env) they
# are used and left running; otherwise this script starts them and stops
# them on exit, also when tests fail or the run is interrupted.
# The build is a test build: it has the fault hooks the crash tests need
# (-DKSNAP_FAULT_INJECTION=ON); do not install or ship it.
# Without arguments the unit suites run KSNAP_BUILD_JOBS at a time.
# Environment: BUILD_DIR (default build), KSNAP_BUILD_JOBS (default 2),
# CMAKE_ARGS (extra configure arguments, e.g. -DKSNAP_ASAN=ON; they come
# last, so -DKSNAP_FAULT_INJECTION=OFF tests a build without the hooks).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${KSNAP_BUILD_JOBS:-2}"
SERVERS="$ROOT/tests/servers"
ENV_FILE="${KSNAP_RUN_DIR:-$ROOT/tests/.run}/env"
started_servers=0

# Kafka 4.x (KSNAP_TEST_KAFKA_VERSION=4.x or 4.y.z): its own run directory,
# so it runs beside the default 3.9 servers (tests/servers/kafka.sh).
if [[ "${KSNAP_TEST_KAFKA_VERSION:-}" == 4* ]]; then
  export KAFKA_VERSION="$KSNAP_TEST_KAFKA_VERSION"
  export KSNAP_RUN_DIR="$ROOT/tests/.run/kafka-4.x"
  ENV_FILE="$KSNAP_RUN_DIR/env"
fi

log() { printf 'run.sh: %s\n' "$*" >&2; }

build() {
  local configure=(cmake -S "$ROOT" -B "$BUILD_DIR")
  if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
    configure+=(-G Ninja)
  fi
  configure+=(-DKSNAP_FAULT_INJECTION=ON)
  # shellcheck disable=SC2206  # CMAKE_ARGS is a list of words
  configure+=(${CMAKE_ARGS:-})
  "${configure[@]}"
  cmake --build "$BUILD_DIR" --parallel "$JOBS"
}

# True if the ctest arguments select only the unit label.
unit_only() {
  local prev=""
  for arg in "$@"; do
    if [[ "$prev" == "-L" || "$prev" == "--label-regex" ]]; then
      [[ "$arg" == "unit" || "$arg" == "^unit$" ]] && return 0
    fi
    prev="$arg"
  done
  return 1
}

stop_servers() {
  if ((started_servers)); then
    log "stopping the servers this run started"
    "$SERVERS/down.sh" || log "warning: down.sh failed"
  fi
}

ensure_servers() {
  if [[ -f "$ENV_FILE" ]] && "$SERVERS/status.sh" >/dev/null 2>&1; then
    log "using the running servers (${ENV_FILE#"$ROOT/"})"
    return 0
  fi
  started_servers=1
  trap stop_servers EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "$SERVERS/up.sh"
}

main() {
  build
  if unit_only "$@"; then
    log "unit tests only: no servers needed"
  else
    ensure_servers
    # shellcheck source=/dev/null
    source "$ENV_FILE"
  fi
  local status=0
  if (($# == 0)); then
    # Everything: the unit suites (no servers, nothing timed) in parallel,
    # then the rest one at a time, since they share one broker and time
    # heartbeats and restores.
    ctest --test-dir "$BUILD_DIR" --output-on-failure -L unit \
      --parallel "$JOBS" || status=$?
    ctest --test-dir "$BUILD_DIR" --output-on-failure -LE unit || status=$?
  else
    ctest --test-dir "$BUILD_DIR" --output-on-failure "$@" || status=$?
  fi
  return "$status"
}

main "$@"
