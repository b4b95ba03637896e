# shellcheck shell=bash
# The secured mode of tests/servers/kafka.sh (sourced by it when
# KSNAP_KAFKA_SECURE=1; tests/servers/secure.sh sets it up): the broker's
# one client listener is SASL_SSL (SCRAM-SHA-512 over TLS, the server
# certificate signed by the CA of $KSNAP_TLS_DIR, made by secure.sh with
# openssl), the SCRAM users are written into the fresh metadata log by
# the StorageTool's --add-scram, and the StandardAuthorizer denies what no
# ACL allows (allow.everyone.if.no.acl.found=false).
#
# Users (passwords in $KSNAP_RUN_DIR/secrets/, made at start):
#   admin        super user (the broker's own inter-broker login too)
#   ksnap        the job's user: topics, consumer groups and transactional
#                ids starting with one of $KSNAP_SECURE_PREFIXES, and
#                IdempotentWrite on the cluster; nothing else
#   ksnap-notxn  the same topics and groups, but no transactional id
# The controller listener stays PLAINTEXT on 127.0.0.1 (its principal,
# ANONYMOUS, is a super user so the broker can talk to its controller).

KSNAP_TLS_DIR="${KSNAP_TLS_DIR:-$KSNAP_RUN_DIR/tls}"
SECRETS_DIR="$KSNAP_RUN_DIR/secrets"
KSNAP_SECURE_PREFIXES="${KSNAP_SECURE_PREFIXES:-e2e- sec-}"
SECURE_USERS="admin ksnap ksnap-notxn"

# Random passwords, one file per user, made once per start.
secure_passwords() {
  local user
  rm -rf "$SECRETS_DIR"
  mkdir -p "$SECRETS_DIR"
  chmod 700 "$SECRETS_DIR"
  for user in $SECURE_USERS; do
    python3 -c 'import secrets; print(secrets.token_hex(16), end="")' \
      >"$SECRETS_DIR/$user.password"
  done
}

password() { cat "$SECRETS_DIR/$1.password"; }

# Appended to the broker's configuration (later keys win in Java's
# Properties).
secure_config() {
  local broker_port="$1" controller_port="$2"
  cat >>"$CONF_FILE" <<PROPS
# Secured mode (tests/servers/kafka_secure.sh)
listeners=SASL_SSL://127.0.0.1:$broker_port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=SASL_SSL://127.0.0.1:$broker_port
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(password admin)";
ssl.keystore.type=PEM
ssl.keystore.location=$KSNAP_TLS_DIR/server.pem
ssl.truststore.type=PEM
ssl.truststore.location=$KSNAP_TLS_DIR/ca.pem
ssl.client.auth=none
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
allow.everyone.if.no.acl.found=false
PROPS
}

# The StorageTool's arguments that create the SCRAM users.
secure_format_args() {
  local user
  for user in $SECURE_USERS; do
    printf '%s\n' --add-scram \
      "SCRAM-SHA-512=[name=$user,password=$(password "$user")]"
  done
}

# librdkafka properties of a client logged in as user $1 (one per line).
client_props() {
  cat <<PROPS
security.protocol=SASL_SSL
sasl.mechanisms=SCRAM-SHA-512
sasl.username=$1
sasl.password=$(password "$1")
ssl.ca.location=$KSNAP_TLS_DIR/ca.pem
PROPS
}

# A Java client's properties file for the admin (the ACL tool).
admin_java_props() {
  cat >"$KSNAP_RUN_DIR/admin-client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(password admin)";
ssl.truststore.type=PEM
ssl.truststore.location=$KSNAP_TLS_DIR/ca.pem
PROPS
}

acl() {
  local main=kafka.admin.AclCommand
  ((KAFKA_MAJOR >= 4)) && main=org.apache.kafka.tools.AclCommand
  "${JAVA_CMD[@]}" "$main" --bootstrap-server "$ADDR" \
    --command-config "$KSNAP_RUN_DIR/admin-client.properties" --add --force \
    "$@" >>"$OUT_FILE" 2>&1 || die "kafka-acls $* failed (log: $OUT_FILE)"
}

# The ACLs of the users above (after the broker answers).
secure_acls() {
  local p res=() topics=()
  admin_java_props
  for p in $KSNAP_SECURE_PREFIXES; do
    res+=(--topic "$p" --group "$p" --transactional-id "$p")
    topics+=(--topic "$p" --group "$p")
  done
  acl --allow-principal User:ksnap --operation All \
    --resource-pattern-type prefixed "${res[@]}"
  acl --allow-principal User:ksnap --operation IdempotentWrite --cluster
  acl --allow-principal User:ksnap-notxn --operation All \
    --resource-pattern-type prefixed "${topics[@]}"
  log "ACLs: ksnap on prefixes ($KSNAP_SECURE_PREFIXES) of topics, groups," \
    "transactional ids; ksnap-notxn without transactional ids"
}

# Files of client properties for kcat -F and the job files (written to
# the run directory; the passwords also stay in their own files).
secure_client_files() {
  local user
  for user in $SECURE_USERS; do
    { echo "bootstrap.servers=$ADDR"; client_props "$user"; } \
      >"$KSNAP_RUN_DIR/$user.kcat.conf"
  done
}
