#!/usr/bin/env bash
# Stops the test servers started by up.sh (by PID) and removes tests/.run/env
# (those of $KSNAP_RUN_DIR if set, as for up.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
status=0
rm -f "${KSNAP_RUN_DIR:-$here/../.run}/env"
"$here/s3.sh" stop || status=1
"$here/kafka.sh" stop || status=1
exit "$status"
