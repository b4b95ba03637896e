#!/usr/bin/env bash
# A real S3-compatible server that checks SigV4 signatures
# (@20minutes/s3rver 4.0.4 from npm) on 127.0.0.1, with bucket ksnap-test.
#
#   tests/servers/s3.sh start    install (once), start, wait, write
#                                tests/.run/s3.env
#   tests/servers/s3.sh stop     stop it by the PID in tests/.run/s3.pid
#   tests/servers/s3.sh status   exit 0 if that PID is alive and answering
#
# Keys are s3rver's fixed S3RVER/S3RVER; a wrong secret gets 403. Data lives
# in tests/.run/s3-data and is wiped at every start.
#
# KSNAP_S3_TLS_DIR=DIR: HTTPS instead of HTTP, with s3rver's own TLS
# option and the key and certificate DIR/server.key, DIR/server.crt
# (signed by DIR/ca.pem; tests/servers/secure.sh makes them).
set -euo pipefail

KSNAP_SERVER=s3
STOP_GRACE=10 # seconds between TERM and KILL
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S3RVER_VERSION=4.0.4
S3_BUCKET=ksnap-test
S3_KEY=S3RVER
S3_REGION=us-east-1
S3_START_TIMEOUT="${S3_START_TIMEOUT:-30}"
PREFIX="$KSNAP_CACHE_DIR/s3rver"
LAUNCHER="$PREFIX/run-s3rver.js"
PID_FILE="$KSNAP_RUN_DIR/s3.pid"
ENV_FILE="$KSNAP_RUN_DIR/s3.env"
DATA_DIR="$KSNAP_RUN_DIR/s3-data"
LOG_FILE="$KSNAP_RUN_DIR/s3.log"
MARKER="$LAUNCHER" # in the server's command line
TLS_DIR="${KSNAP_S3_TLS_DIR:-}"

# Installs s3rver once into tests/.cache/s3rver (npm registry).
install() {
  local pkg="$PREFIX/node_modules/@20minutes/s3rver/package.json"
  if [[ ! -f "$pkg" ]] || ! grep -q "\"version\": \"$S3RVER_VERSION\"" "$pkg"; then
    need npm
    log "installing @20minutes/s3rver@$S3RVER_VERSION into $PREFIX"
    mkdir -p "$PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error \
      "@20minutes/s3rver@$S3RVER_VERSION" >&2 ||
      die "npm could not install @20minutes/s3rver@$S3RVER_VERSION"
  fi
  # The package ships no bin file: a one-line launcher runs its CLI.
  echo "require('@20minutes/s3rver/lib/cli.js').parseAsync(process.argv);" \
    >"$LAUNCHER"
}

show_logs() { tail_logs "$LOG_FILE"; }

address() { sed -n 's/^export KSNAP_TEST_S3_ENDPOINT=//p' "$ENV_FILE" 2>/dev/null; }

# True if the server at $1 lists the bucket for a SigV4-signed request.
answers() {
  local tls=()
  [[ -n "$TLS_DIR" ]] && tls=(--cacert "$TLS_DIR/ca.pem")
  [[ -n "$1" ]] &&
    curl "${tls[@]}" -sf -o /dev/null --max-time 5 --aws-sigv4 "aws:amz:$S3_REGION:s3" \
      --user "$S3_KEY:$S3_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
      "$1/$S3_BUCKET?list-type=2"
}

is_up() {
  pid_is_ours "$(read_pid "$PID_FILE")" "$MARKER" && answers "$(address)"
}

start() {
  need node curl python3
  if is_up; then
    log "already running (pid $(read_pid "$PID_FILE")) at $(address)"
    return 0
  fi
  stop_quietly
  install
  local t0=$SECONDS rc
  # A free port can be taken before s3rver binds it: if the server exits
  # during startup, try once more with a new port.
  launch || {
    rc=$?
    ((rc == 1)) || die "could not start (logs in $KSNAP_RUN_DIR)"
    log "retrying once with a new port"
    launch || die "could not start (logs in $KSNAP_RUN_DIR)"
  }
  {
    echo "export KSNAP_TEST_S3_ENDPOINT=$URL"
    echo "export KSNAP_TEST_S3_BUCKET=$S3_BUCKET"
    echo "export KSNAP_TEST_S3_ACCESS_KEY=$S3_KEY"
    echo "export KSNAP_TEST_S3_SECRET_KEY=$S3_KEY"
    echo "export KSNAP_TEST_S3_REGION=$S3_REGION"
    echo "export KSNAP_TEST_S3_DATA_DIR=$DATA_DIR"
  } >"$ENV_FILE"
  log "up (pid $(read_pid "$PID_FILE")) at $URL after $((SECONDS - t0))s," \
    "bucket $S3_BUCKET"
}

# Starts s3rver on a free port with a fresh data directory and waits for
# it; sets URL. Returns 0, 1 if the server exited during startup, or 2 if
# it did not answer in time (then it has been stopped).
launch() {
  local port pid
  mkdir -p "$KSNAP_RUN_DIR"
  rm -rf "$DATA_DIR"
  mkdir -p "$DATA_DIR"
  port="$(free_ports 1)"
  URL="http://127.0.0.1:$port"
  local tls=()
  if [[ -n "$TLS_DIR" ]]; then
    URL="https://127.0.0.1:$port"
    tls=(--key "$TLS_DIR/server.key" --cert "$TLS_DIR/server.crt")
  fi
  log "starting s3rver $S3RVER_VERSION at $URL"
  # --openssl-legacy-provider: without it paginated ListObjectsV2 fails (500).
  (cd "$PREFIX" && exec nohup node --openssl-legacy-provider "$LAUNCHER" \
    -d "$DATA_DIR" -a 127.0.0.1 -p "$port" -s "${tls[@]}" \
    --configure-bucket "$S3_BUCKET" >"$LOG_FILE" 2>&1 </dev/null) &
  pid=$!
  echo "$pid" >"$PID_FILE"
  wait_until "$S3_START_TIMEOUT" "$pid" "$MARKER" answers "$URL" || {
    local rc=$?
    rm -f "$PID_FILE"
    return "$rc"
  }
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*)
  echo "Usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
