#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, combined broker+controller)
# on 127.0.0.1 for the integration tests.
#
#   tests/servers/kafka.sh start    fetch (once), format, start, wait, write
#                                   tests/.run/kafka.env
#   tests/servers/kafka.sh stop     stop it by the PID in tests/.run/kafka.pid
#   tests/servers/kafka.sh status   exit 0 if that PID is alive and answering
#
# Environment: KAFKA_VERSION (default 3.9.2; "4.x" means 4.4.0, the newest
# 4.x tested, see "Tested Kafka versions" in README.md), KAFKA_HEAP
# (default -Xmx1g), KAFKA_START_TIMEOUT (seconds, default 60),
# KSNAP_RUN_DIR (default tests/.run). A second broker runs beside the
# first with its own run directory (its own ports, PID and env files):
#   KAFKA_VERSION=4.x KSNAP_RUN_DIR=tests/.run/kafka-4.x tests/servers/kafka.sh start
#
# The broker's data lives in $KSNAP_RUN_DIR/kafka-data and is wiped at
# every start: each start is a fresh cluster with a random cluster id.
# auto.create.topics.enable is false on purpose: tests create their topics
# (with the partition count they mean) through the Admin API, and a typo'd
# topic name fails loudly instead of silently creating a 1-partition topic.
#
# Kafka 3.x and 4.x differ here only in logging: 4.0 moved the broker from
# log4j 1 (reload4j) to log4j 2, so the jars and the logging configuration
# depend on the major version. The broker config and the StorageTool
# arguments are the same for both (no key used here was removed in 4.0);
# 4.x's StorageTool finalizes transaction.version=2 by default, which
# start logs with the other finalized features.
#
# KSNAP_KAFKA_SECURE=1: the secured mode of tests/servers/kafka_secure.sh
# (SASL_SSL, SCRAM users, ACLs); tests/servers/secure.sh starts it.
set -euo pipefail

KSNAP_SERVER=kafka
STOP_GRACE=30 # seconds between TERM and KILL
# shellcheck source=tests/servers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KAFKA_4X_VERSION=4.4.0
KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
if [[ "$KAFKA_VERSION" == 4.x ]]; then KAFKA_VERSION=$KAFKA_4X_VERSION; fi
KAFKA_MAJOR="${KAFKA_VERSION%%.*}"
# 1 GiB: a whole test run leaves thousands of topics on the broker (most
# suites name theirs uniquely and keep them for a failure's post-mortem),
# and 512 MiB ran out of heap at about 15k topics on a shared broker.
KAFKA_HEAP="${KAFKA_HEAP:--Xmx1g -Xms128m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-60}"
LIBS_DIR="$KSNAP_CACHE_DIR/kafka-$KAFKA_VERSION/libs"
PID_FILE="$KSNAP_RUN_DIR/kafka.pid"
ENV_FILE="$KSNAP_RUN_DIR/kafka.env"
CONF_FILE="$KSNAP_RUN_DIR/kafka-server.properties"
LOG4J_FILE="$KSNAP_RUN_DIR/kafka-log4j.properties"  # 3.x
LOG4J2_FILE="$KSNAP_RUN_DIR/kafka-log4j2.properties" # 4.x
DATA_DIR="$KSNAP_RUN_DIR/kafka-data"
LOG_DIR="$KSNAP_RUN_DIR/kafka-logs"
OUT_FILE="$KSNAP_RUN_DIR/kafka.out"
MARKER="kafka.Kafka $CONF_FILE" # in the broker's command line
SECURE="${KSNAP_KAFKA_SECURE:-0}"
if ((SECURE)); then
  # shellcheck source=tests/servers/kafka_secure.sh
  source "$(dirname "${BASH_SOURCE[0]}")/kafka_secure.sh"
fi

# Downloads kafka_2.13, kafka-tools and their runtime dependencies once
# (Maven Central). The marker records the pom's checksum: a changed pom
# fetches again.
fetch() {
  local stamp mvn_args=()
  stamp="$(sha256sum "$KSNAP_ROOT/tests/kafka/pom.xml" | cut -d' ' -f1)"
  [[ "$(cat "$LIBS_DIR/.complete" 2>/dev/null)" == "$stamp" ]] && return 0
  need mvn java
  if ((KAFKA_MAJOR >= 4)); then mvn_args+=(-Dkafka.log4j2); fi
  log "fetching Apache Kafka $KAFKA_VERSION from Maven Central into $LIBS_DIR"
  rm -rf "$LIBS_DIR"
  mkdir -p "$KSNAP_RUN_DIR"
  local mvn_log="$KSNAP_RUN_DIR/kafka-fetch.log"
  if ! mvn -B -Dstyle.color=never -f "$KSNAP_ROOT/tests/kafka/pom.xml" package \
    -Dkafka.version="$KAFKA_VERSION" -Dkafka.libs.dir="$LIBS_DIR" \
    "${mvn_args[@]}" >"$mvn_log" 2>&1; then
    tail -n 30 "$mvn_log" >&2
    die "mvn could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION (log: $mvn_log)"
  fi
  ls "$LIBS_DIR"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null ||
    die "kafka_2.13-$KAFKA_VERSION.jar missing from $LIBS_DIR"
  echo "$stamp" >"$LIBS_DIR/.complete"
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
  if ((KAFKA_MAJOR >= 4)); then write_log4j2; else write_log4j; fi
}

write_log4j() {
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

# The same logging for log4j 2 (its properties syntax).
write_log4j2() {
  cat >"$LOG4J2_FILE" <<PROPS
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOG_DIR/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
PROPS
}

# The java command line (without the main class) in array JAVA_CMD.
set_java_cmd() {
  local heap
  read -r -a heap <<<"$KAFKA_HEAP"
  JAVA_CMD=(java "${heap[@]}" -XX:+UseG1GC -Djava.awt.headless=true)
  if ((KAFKA_MAJOR >= 4)); then
    JAVA_CMD+=("-Dlog4j2.configurationFile=$LOG4J2_FILE")
  else
    JAVA_CMD+=("-Dlog4j.configuration=file:$LOG4J_FILE")
  fi
  JAVA_CMD+=("-Dkafka.logs.dir=$LOG_DIR" -cp "$LIBS_DIR/*")
}

show_logs() { tail_logs "$OUT_FILE" "$LOG_DIR/server.log"; }

address() { sed -n 's/^export KSNAP_TEST_BOOTSTRAP=//p' "$ENV_FILE" 2>/dev/null; }

# True if the broker at $1 answers a metadata request.
answers() {
  local sec=()
  ((SECURE)) && sec=(-F "$KSNAP_RUN_DIR/admin.kcat.conf")
  [[ -n "$1" ]] && kcat "${sec[@]}" -L -b "$1" -m 5 >/dev/null 2>&1
}

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
    echo "export KSNAP_TEST_KAFKA_LIBS=$LIBS_DIR"
  } >"$ENV_FILE"
  log "up (pid $(read_pid "$PID_FILE")) at $ADDR after $((SECONDS - t0))s;" \
    "log: $LOG_DIR/server.log"
  if ((SECURE)); then
    secure_acls
    echo "export KSNAP_TEST_KAFKA_SECURE_DIR=$KSNAP_RUN_DIR" >>"$ENV_FILE"
  else
    log_features
  fi
}

# Logs the cluster's finalized feature levels (transaction.version among
# them) as Kafka's own kafka-features tool reports them.
log_features() {
  local features
  # "Feature: NAME  SupportedMinVersion: ..  FinalizedVersionLevel: N .."
  features="$(java -cp "$LIBS_DIR/*" org.apache.kafka.tools.FeatureCommand \
    --bootstrap-server "$ADDR" describe 2>/dev/null | awk '$1 == "Feature:" {
      for (i = 3; i < NF; i++) if ($i == "FinalizedVersionLevel:")
        out = out (out ? " " : "") $2 "=" $(i + 1) }
      END { print out }')" || true
  log "Kafka $KAFKA_VERSION finalized features: ${features:-(none read)}"
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
  local format_args=()
  if ((SECURE)); then
    secure_passwords
    secure_config "$broker_port" "$controller_port"
    secure_client_files
    mapfile -t format_args < <(secure_format_args)
  fi

  set_java_cmd
  "${JAVA_CMD[@]}" kafka.tools.StorageTool format -t "$(cluster_id)" \
    -c "$CONF_FILE" "${format_args[@]}" >"$OUT_FILE" 2>&1 ||
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
