#!/usr/bin/env bash
# Starts the test servers (real Kafka broker, S3 server) and writes
# tests/.run/env, which the integration tests need:  source tests/.run/env
#
# A second set beside the first (e.g. a Kafka 4.x broker) takes its own
# run directory, where its env file is written:
#   KAFKA_VERSION=4.x KSNAP_RUN_DIR=tests/.run/kafka-4.x tests/servers/up.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_dir="${KSNAP_RUN_DIR:-$here/../.run}"

"$here/kafka.sh" start
"$here/s3.sh" start
cat "$run_dir/kafka.env" "$run_dir/s3.env" >"$run_dir/env.tmp"
mv "$run_dir/env.tmp" "$run_dir/env"
echo "servers up; environment in $run_dir/env:" >&2
sed 's/^/  /' "$run_dir/env" >&2
