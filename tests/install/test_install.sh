#!/usr/bin/env bash
# Installs the built ksnap into a temporary prefix, then builds a consumer
# project against the installed headers and library twice (CMake's
# find_package(ksnap), and pkg-config) and runs both programs: a version
# check, then, with the test broker, a word count that each program runs
# in its own process with operators it registers by function pointer
# (tests/install/consumer/main.c). This script creates each job's topics
# with the installed `ksnap topics create`, produces the input with kcat
# and checks the read_committed output: every word's counts are exactly
# 1..n.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
# Without KSNAP_TEST_BOOTSTRAP (source tests/.run/env) it stops after the
# version checks with exit status 77 (skipped), saying so.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d /tmp/ksnap-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name ksnap.pc)
grep -q "^prefix=$tmp/prefix\$" "$pc" || { echo "ksnap.pc has a wrong prefix:"; cat "$pc"; exit 1; }

export PKG_CONFIG_PATH="$(dirname "$pc")"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" \
      -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
export LD_LIBRARY_PATH="$(dirname "$(find "$tmp/prefix" -name 'libksnap.so' | head -1)")"
"$tmp/consumer/consumer_cmake"
"$tmp/consumer/consumer_pkgconfig"

if [ -z "${KSNAP_TEST_BOOTSTRAP:-}" ]; then
  echo "skipped: KSNAP_TEST_BOOTSTRAP is not set, so the consumers did not" \
       "run their embedded job (it needs the test broker: tests/servers/up.sh," \
       "then source tests/.run/env); installing, building and the version" \
       "checks passed" >&2
  exit 77
fi
command -v kcat >/dev/null || { echo "kcat not found on PATH"; exit 1; }

# 400 lines of 1..6 words from a small vocabulary, the same every run
awk 'BEGIN { srand(7); split("alpha bravo charlie delta echo foxtrot golf hotel", w, " ");
             for (i = 0; i < 400; i++) { n = 1 + int(rand() * 6); l = "";
               for (j = 0; j < n; j++) l = l (j ? " " : "") w[1 + int(rand() * 8)];
               print l } }' > "$tmp/input.txt"
tr ' ' '\n' < "$tmp/input.txt" | grep -v '^$' | sort | uniq -c |
  awk '{ for (i = 1; i <= $1; i++) print $2, i }' | sort > "$tmp/expected.txt"

for c in cmake pkgconfig; do
  job="install-$c-$$-$(date +%s%N | tail -c 7)"
  cat > "$tmp/$c.properties" <<JOB
job.name=$job
kafka.bootstrap.servers=$KSNAP_TEST_BOOTSTRAP
execution.checkpointing.timeout=20s
kafka.transaction.timeout.ms=60000
heartbeat.interval=200ms
heartbeat.timeout=5s
state.checkpoints.dir=file://$tmp/checkpoints-$c
stage.split.parallelism=2
stage.split.input=source:$job.lines
stage.count.parallelism=2
stage.count.input=stage:split
stage.count.output=sink:$job.counts
JOB
  "$tmp/prefix/bin/ksnap" topics create "$tmp/$c.properties" \
      "$job.lines:2" "$job.counts:2" >/dev/null
  kcat -P -b "$KSNAP_TEST_BOOTSTRAP" -t "$job.lines" < "$tmp/input.txt"
  timeout 120 "$tmp/consumer/consumer_$c" "$tmp/$c.properties" \
      "$(wc -l < "$tmp/input.txt")" 2> "$tmp/$c.log" ||
    { echo "consumer_$c failed:"; tail -50 "$tmp/$c.log"; exit 1; }
  kcat -C -b "$KSNAP_TEST_BOOTSTRAP" -t "$job.counts" -o beginning -e -q \
       -X isolation.level=read_committed -f '%k %s\n' | sort > "$tmp/$c.out"
  if ! diff -q "$tmp/expected.txt" "$tmp/$c.out" >/dev/null; then
    echo "consumer_$c: the read_committed output of $job.counts is not" \
         "every word's counts 1..n:"
    diff "$tmp/expected.txt" "$tmp/$c.out" | head -20
    exit 1
  fi
  echo "consumer_$c: $(wc -l < "$tmp/$c.out") committed counts, as expected"
done
