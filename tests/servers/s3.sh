#!/usr/bin/env bash
# tests/servers/s3.sh start|stop|status
# Runs @20minutes/s3rver 4.0.4 (checks SigV4; keys S3RVER/S3RVER) on a free
# 127.0.0.1 port with bucket ksnap-test. Started and stopped by PID
# (tests/.run/s3.pid), never by name. `start` writes tests/.run/s3.env.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=$ROOT/tests/.cache/s3rver
RUN=$ROOT/tests/.run
PIDFILE=$RUN/s3.pid
ENVFILE=$RUN/s3.env
DATA=$RUN/s3-data
LOG=$RUN/s3.log

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {
  if running; then echo "s3rver already running (pid $(cat "$PIDFILE"))"; return 0; fi
  mkdir -p "$RUN" "$DATA/ksnap-test"
  if [ ! -f "$CACHE/node_modules/@20minutes/s3rver/lib/cli.js" ]; then
    npm install --silent --no-audit --no-fund --prefix "$CACHE" @20minutes/s3rver@4.0.4 >&2
  fi
  cat > "$CACHE/run.js" <<'JS'
require('@20minutes/s3rver/lib/cli.js').parseAsync(process.argv)
JS
  local port; port=$(free_port)
  # -d DIR: an existing subdirectory of DIR is a bucket (ksnap-test above).
  (cd "$CACHE" && exec node --openssl-legacy-provider run.js \
      -d "$DATA" -a 127.0.0.1 -p "$port" -s) >"$LOG" 2>&1 &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
      cat > "$ENVFILE" <<ENV
export KSNAP_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export KSNAP_TEST_S3_BUCKET=ksnap-test
export KSNAP_TEST_S3_ACCESS_KEY=S3RVER
export KSNAP_TEST_S3_SECRET_KEY=S3RVER
export KSNAP_TEST_S3_REGION=us-east-1
export KSNAP_TEST_S3_DATA_DIR=$DATA
ENV
      echo "s3rver up on 127.0.0.1:$port (pid $(cat "$PIDFILE"))"
      return 0
    fi
    running || break
    sleep 0.1
  done
  echo "s3rver did not start; see $LOG" >&2
  tail -20 "$LOG" >&2 || true
  stop
  return 1
}

stop() {
  if running; then
    local pid; pid=$(cat "$PIDFILE")
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" || true
  fi
  rm -f "$PIDFILE" "$ENVFILE"
}

status() {
  if running; then echo "s3rver running (pid $(cat "$PIDFILE"))"; cat "$ENVFILE"; else echo "s3rver not running"; return 1; fi
}

case "${1:-}" in
  start) start ;; stop) stop ;; status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
