#!/usr/bin/env bash
# Exit 0 if both test servers are alive and answering (those of
# $KSNAP_RUN_DIR if set, as for up.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0
"$here/kafka.sh" status || status=1
"$here/s3.sh" status || status=1
exit "$status"
