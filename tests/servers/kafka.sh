#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, combined broker+controller)
# on 127.0.0.1 for the integration tests.
#
#   tests/servers/kafka.sh start    fetch (once), format, start, wait, write
#                                   tests/.run/kafka.env
#   tests/servers/kafka.sh stop     stop it by the PID in tests/.run/kafka.pid
#   tests/servers/kafka.sh status   exit 0 if that PID is alive and answering
#
# Environment: KAFKA_VERSION (default 3.9.2; stay on 3.9.x with Debian's
# librdkafka 2.0.2, see FACTS.md), KAFKA_HEAP (default -Xmx512m),
# KAFKA_START_TIMEOUT (seconds, default 60).
#
# The broker's data lives in tests/.run/kafka-data and is wiped at every
# start: each start is a fresh cluster with a random cluster id.
# auto.create.topics.enable is false on purpose: tests create their topics
# (with the partition count they mean) through the Admin API, and a typo'd
# topic name fails loudly instead of silently creating a 1-partition topic.
set -euo pipefail

KSNAP_SERVER=kafka
STOP_GRACE=30 # seconds between TERM and KILL
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
KAFKA_HEAP="${KAFKA_HEAP:--Xmx512m -Xms128m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-60}"
LIBS_DIR="$KSNAP_CACHE_DIR/kafka-$KAFKA_VERSION/libs"
PID_FILE="$KSNAP_RUN_DIR/kafka.pid"
ENV_FILE="$KSNAP_RUN_DIR/kafka.env"
CONF_FILE="$KSNAP_RUN_DIR/kafka-server.properties"
LOG4J_FILE="$KSNAP_RUN_DIR/kafka-log4j.properties"
DATA_DIR="$KSNAP_RUN_DIR/kafka-data"
LOG_DIR="$KSNAP_RUN_DIR/kafka-logs"
OUT_FILE="$KSNAP_RUN_DIR/kafka.out"
MARKER="kafka.Kafka $CONF_FILE" # in the broker's command line

# Downloads kafka_2.13 and its runtime dependencies once (Maven Central).
fetch() {
  [[ -f "$LIBS_DIR/.complete" ]] && return 0
  need mvn java
  log "fetching Apache Kafka $KAFKA_VERSION from Maven Central into $LIBS_DIR"
  rm -rf "$LIBS_DIR"
  mkdir -p "$KSNAP_RUN_DIR"
  local mvn_log="$KSNAP_RUN_DIR/kafka-fetch.log"
  if ! mvn -B -Dstyle.color=never -f "$KSNAP_ROOT/tests/kafka/pom.xml" package \
    -Dkafka.version="$KAFKA_VERSION" -Dkafka.libs.dir="$LIBS_DIR" \
    >"$mvn_log" 2>&1; then
    tail -n 30 "$mvn_log" >&2
    die "mvn could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION (log: $mvn_log)"
  fi
  ls "$LIBS_DIR"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null ||
    die "kafka_2.13-$KAFKA_VERSION.jar missing from $LIBS_DIR"
  touch "$LIBS_DIR/.complete"
}

# A random cluster id as Kafka writes them (base64url of 16 bytes, no
# padding). Kafka's own Uuid never starts with '-' (it would read as an
# option); neither does ours.
cluster_id() {
  python3 -c 'import base64, os
while True:
    s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not s.startswith("-"):
        print(s); break'
}

write_config() {
  local broker_port="$1" controller_port="$2"
  cat >"$CONF_FILE" <<PROPS
# Written by tests/servers/kafka.sh: single-node KRaft for tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$broker_port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$broker_port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA_DIR
num.network.threads=2
num.io.threads=4
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
delete.topic.enable=true
# Internal topics on one node: replication 1, few partitions (fast start).
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
# Abort timed-out transactions within ~1 s instead of 10 s (timeout tests).
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
group.initial.rebalance.delay.ms=0
# Small segments: tests write little data.
log.segment.bytes=8388608
log.retention.check.interval.ms=60000
PROPS
  cat >"$LOG4J_FILE" <<PROPS
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$LOG_DIR/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
PROPS
}

# The java command line (without the main class) in array JAVA_CMD.
set_java_cmd() {
  local heap
  read -r -a heap <<<"$KAFKA_HEAP"
  JAVA_CMD=(java "${heap[@]}" -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$LOG4J_FILE" "-Dkafka.logs.dir=$LOG_DIR"
    -cp "$LIBS_DIR/*")
}

show_logs() { tail_logs "$OUT_FILE" "$LOG_DIR/server.log"; }

address() { sed -n 's/^export KSNAP_TEST_BOOTSTRAP=//p' "$ENV_FILE" 2>/dev/null; }

# True if the broker at $1 answers a metadata request.
answers() { [[ -n "$1" ]] && kcat -L -b "$1" -m 5 >/dev/null 2>&1; }

is_up() {
  local pid addr
  pid="$(read_pid "$PID_FILE")"
  addr="$(address)"
  pid_is_ours "$pid" "$MARKER" && [[ -n "$addr" ]] && answers "$addr"
}

start() {
  need java python3 kcat
  if is_up; then
    log "already running (pid $(read_pid "$PID_FILE")) at $(address)"
    return 0
  fi
  stop_quietly
  fetch
  local t0=$SECONDS rc
  # A free port can be taken between choosing it and the broker binding
  # it: if the broker exits during startup, try once more with new ports.
  launch || {
    rc=$?
    ((rc == 1)) || die "could not start (logs in $KSNAP_RUN_DIR)"
    log "retrying once with new ports"
    launch || die "could not start (logs in $KSNAP_RUN_DIR)"
  }
  {
    echo "export KSNAP_TEST_BOOTSTRAP=$ADDR"
    echo "export KSNAP_TEST_KAFKA_VERSION=$KAFKA_VERSION"
  } >"$ENV_FILE"
  log "up (pid $(read_pid "$PID_FILE")) at $ADDR after $((SECONDS - t0))s;" \
    "log: $LOG_DIR/server.log"
}

# Formats a fresh data directory, starts the broker on free ports and waits
# for it; sets ADDR. Returns 0, 1 if the broker exited during startup, or
# 2 if it did not answer in time (then it has been stopped).
launch() {
  local ports broker_port controller_port pid
  mkdir -p "$KSNAP_RUN_DIR"
  rm -rf "$DATA_DIR" "$LOG_DIR"
  mkdir -p "$DATA_DIR" "$LOG_DIR"
  ports="$(free_ports 2)"
  broker_port="$(sed -n 1p <<<"$ports")"
  controller_port="$(sed -n 2p <<<"$ports")"
  ADDR="127.0.0.1:$broker_port"
  write_config "$broker_port" "$controller_port"

  set_java_cmd
  "${JAVA_CMD[@]}" kafka.tools.StorageTool format -t "$(cluster_id)" \
    -c "$CONF_FILE" >"$OUT_FILE" 2>&1 ||
    { tail -n 20 "$OUT_FILE" >&2; die "formatting $DATA_DIR failed"; }

  log "starting Kafka $KAFKA_VERSION at $ADDR (controller :$controller_port)"
  nohup "${JAVA_CMD[@]}" kafka.Kafka "$CONF_FILE" >>"$OUT_FILE" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PID_FILE"
  wait_until "$KAFKA_START_TIMEOUT" "$pid" "$MARKER" answers "$ADDR" || {
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
