#!/usr/bin/env bash
# The secured test servers, a server set of their own beside the plain
# ones (which keep running): a Kafka broker whose only client listener is
# SASL_SSL with SCRAM-SHA-512 users and ACLs (tests/servers/kafka_secure.sh)
# and the S3 server over HTTPS, both with certificates of a CA made here
# at every start with openssl.
#
#   tests/servers/secure.sh start    CA and certificates, both servers,
#                                    $KSNAP_RUN_DIR/env
#   tests/servers/secure.sh stop
#   tests/servers/secure.sh status
#
# KSNAP_RUN_DIR defaults to tests/.run/secure. The env file adds to the
# usual KSNAP_TEST_* variables KSNAP_TEST_KAFKA_SECURE_DIR (the run
# directory: secrets/USER.password, USER.kcat.conf, tls/ca.pem) that the
# secured suites read (tests/secure/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KSNAP_RUN_DIR="$(realpath -m "${KSNAP_RUN_DIR:-$here/../.run/secure}")"
export KSNAP_RUN_DIR
TLS="$KSNAP_RUN_DIR/tls"

log() { printf 'secure: %s\n' "$*" >&2; }

# A CA and a server certificate for 127.0.0.1 and localhost, valid 2 days.
make_certs() {
  rm -rf "$TLS"
  mkdir -p "$TLS"
  (
    cd "$TLS"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ksnap test CA" \
      -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
      -CAcreateserial -days 2 -extfile san.ext -out server.crt 2>/dev/null
    # Kafka's PEM key store: the PKCS#8 key, then the certificate chain.
    cat server.key server.crt ca.pem >server.pem
    rm -f ca.key server.csr san.ext
  ) || { log "error: openssl could not make the certificates"; exit 1; }
  log "CA and server certificate in $TLS"
}

start() {
  command -v openssl >/dev/null || { log "error: openssl is not installed"; exit 1; }
  mkdir -p "$KSNAP_RUN_DIR"
  if ! status >/dev/null 2>&1; then
    stop >/dev/null 2>&1 || true
    make_certs
  fi
  KSNAP_KAFKA_SECURE=1 KSNAP_TLS_DIR="$TLS" "$here/kafka.sh" start
  KSNAP_S3_TLS_DIR="$TLS" "$here/s3.sh" start
  cat "$KSNAP_RUN_DIR/kafka.env" "$KSNAP_RUN_DIR/s3.env" >"$KSNAP_RUN_DIR/env.tmp"
  mv "$KSNAP_RUN_DIR/env.tmp" "$KSNAP_RUN_DIR/env"
  log "secured servers up; environment in $KSNAP_RUN_DIR/env"
}

stop() {
  local rc=0
  rm -f "$KSNAP_RUN_DIR/env"
  KSNAP_S3_TLS_DIR="$TLS" "$here/s3.sh" stop || rc=1
  KSNAP_KAFKA_SECURE=1 KSNAP_TLS_DIR="$TLS" "$here/kafka.sh" stop || rc=1
  return "$rc"
}

status() {
  local rc=0
  KSNAP_KAFKA_SECURE=1 KSNAP_TLS_DIR="$TLS" "$here/kafka.sh" status || rc=1
  KSNAP_S3_TLS_DIR="$TLS" "$here/s3.sh" status || rc=1
  return "$rc"
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
