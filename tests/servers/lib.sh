# shellcheck shell=bash
# Shared helpers for tests/servers/*.sh (sourced, not run).
#
# Servers are tracked by the PID files in tests/.run/ and stopped by PID,
# never by process name, so two worktrees (or two engineers) never stop
# each other's servers.

KSNAP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Absolute: the servers run in other directories and the env files name
# paths in these.
KSNAP_RUN_DIR="$(realpath -m "${KSNAP_RUN_DIR:-$KSNAP_ROOT/tests/.run}")"
KSNAP_CACHE_DIR="$(realpath -m "${KSNAP_CACHE_DIR:-$KSNAP_ROOT/tests/.cache}")"

log() { printf '%s: %s\n' "$KSNAP_SERVER" "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 ||
      die "'$tool' is not installed (run scripts/install-deps.sh)"
  done
}

# Prints N distinct free TCP ports on 127.0.0.1 (one per line). The sockets
# are held open together so the ports differ, then released; a server
# started right after binds them (the usual small race is acceptable here).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}

# Reads the PID stored in file $1 (empty if none).
read_pid() {
  if [[ -f "$1" ]]; then tr -dc '0-9' <"$1"; fi
}

# True if PID $1 is alive and its command line contains $2 (guards against
# a PID that was recycled by an unrelated process after a crash).
pid_is_ours() {
  local pid="$1" marker="$2"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker"
}

# Stops PID $1 (checked with marker $2): TERM, wait up to $3 seconds, KILL.
stop_pid() {
  local pid="$1" marker="$2" grace="$3" i
  pid_is_ours "$pid" "$marker" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "pid $pid did not stop within ${grace}s after TERM: sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  die "pid $pid survived KILL"
}

# wait_until TIMEOUT_S PID MARKER CHECK_FN...: polls CHECK_FN until it
# succeeds. Prints the server's logs (each script defines show_logs) and
# returns 1 if the process exits, 2 if the timeout passes (it is stopped).
wait_until() {
  local timeout="$1" pid="$2" marker="$3"
  shift 3
  local deadline=$((SECONDS + timeout))
  while ! "$@" >/dev/null 2>&1; do
    if ! pid_is_ours "$pid" "$marker"; then
      log "process $pid exited during startup"
      show_logs
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "not answering after ${timeout}s"
      show_logs
      stop_pid "$pid" "$marker" 10
      return 2
    fi
    sleep 0.2
  done
}

# Prints the error lines and the last lines of each non-empty file given.
tail_logs() {
  local file
  for file in "$@"; do
    [[ -s "$file" ]] || continue
    if grep -qE '(ERROR|FATAL|Error|Exception)' "$file"; then
      printf -- '--- errors in %s ---\n' "$file" >&2
      grep -E '(ERROR|FATAL|Error|Exception)' "$file" | head -n 10 >&2
    fi
    printf -- '--- last lines of %s ---\n' "$file" >&2
    tail -n 15 "$file" >&2
  done
}

# The commands every server script shares. They use the script's
# PID_FILE, MARKER, ENV_FILE and STOP_GRACE (seconds between TERM and
# KILL), and its address() function (the address written to ENV_FILE).

# shellcheck disable=SC2153  # MARKER is set by the sourcing script
stop_quietly() {
  stop_pid "$(read_pid "$PID_FILE")" "$MARKER" "$STOP_GRACE"
  rm -f "$PID_FILE" "$ENV_FILE"
}

stop() {
  local pid
  pid="$(read_pid "$PID_FILE")"
  if pid_is_ours "$pid" "$MARKER"; then
    log "stopping pid $pid"
  else
    log "not running"
  fi
  stop_quietly
}

status() {
  local pid
  pid="$(read_pid "$PID_FILE")"
  if ! pid_is_ours "$pid" "$MARKER"; then
    echo "$KSNAP_SERVER: not running"
    return 1
  fi
  if answers "$(address)"; then
    echo "$KSNAP_SERVER: running (pid $pid) at $(address), answering"
  else
    echo "$KSNAP_SERVER: pid $pid alive but not answering at $(address)"
    return 1
  fi
}
