#!/usr/bin/env bash
# The README's "set up and run" demo: word count, exactly once, with a crash.
#
#  1. builds ksnap and starts a real Kafka 3.9 broker and an S3 server on
#     127.0.0.1 (tests/servers/up.sh; both stopped again at the end);
#  2. creates the topics `lines` and `counts`;
#  3. runs the job: `ksnap coordinator` and `ksnap worker` (split -> count,
#     libwordcount.so), checkpoints every second into the S3 server, while
#     40000 lines are written to `lines` at about 5000 a second;
#  4. kills the worker with kill -9 in mid-stream and starts it again: the
#     coordinator notices the missed heartbeats and restores the job from
#     its latest checkpoint in a new generation;
#  5. reads `counts` with isolation.level=read_committed and checks the
#     invariant: for every word the committed counts are exactly 1..n,
#     where n is the word's number of occurrences in the input (no
#     duplicate, no loss), then prints the checkpoints and the final counts.
#
# Needs the packages of scripts/install-deps.sh. Logs: build/demo/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
DEMO="$BUILD/demo"
KSNAP="$BUILD/bin/ksnap"
LINES=40000
pids=()

say() { printf '\n== %s\n' "$*"; }

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$ROOT/tests/servers/down.sh" >/dev/null 2>&1 || true
}

start() { # start NAME CMD...: runs CMD in the background, logs to DEMO/NAME.log
  local name=$1
  shift
  "$@" >"$DEMO/$name.log" 2>&1 &
  pids+=($!)
  last_pid=$!
}

# Number of records in `counts` that read_committed consumers see.
committed_count() {
  kcat -C -b "$KSNAP_TEST_BOOTSTRAP" -t counts -X isolation.level=read_committed \
    -e -q -f '%k %s\n' 2>/dev/null | wc -l
}

main() {
  say "building ksnap"
  cmake -S "$ROOT" -B "$BUILD" $(command -v ninja >/dev/null && [[ ! -f "$BUILD/CMakeCache.txt" ]] && echo -G Ninja) >/dev/null
  cmake --build "$BUILD" --parallel 2 >/dev/null
  rm -rf "$DEMO"
  mkdir -p "$DEMO"

  say "starting a real Kafka broker and an S3 server on 127.0.0.1"
  trap cleanup EXIT
  "$ROOT/tests/servers/up.sh" >"$DEMO/servers.log" 2>&1 || {
    cat "$DEMO/servers.log"
    exit 1
  }
  # shellcheck source=/dev/null
  source "$ROOT/tests/.run/env"

  cat >"$DEMO/wordcount.properties" <<EOF
# examples/wordcount as the demo runs it (see scripts/demo.sh)
job.name=wordcount
execution.checkpointing.interval=1s
execution.checkpointing.timeout=30s
heartbeat.interval=250ms
heartbeat.timeout=3s
state.checkpoints.dir=s3://$KSNAP_TEST_S3_BUCKET/demo
s3.endpoint=$KSNAP_TEST_S3_ENDPOINT
s3.access-key=\${KSNAP_TEST_S3_ACCESS_KEY}
s3.secret-key=\${KSNAP_TEST_S3_SECRET_KEY}
kafka.bootstrap.servers=$KSNAP_TEST_BOOTSTRAP
stage.split.operator=$BUILD/examples/wordcount/libwordcount.so:split
stage.split.parallelism=2
stage.split.input=source:lines
stage.count.operator=$BUILD/examples/wordcount/libwordcount.so:count
stage.count.parallelism=2
stage.count.input=stage:split
stage.count.output=sink:counts
EOF
  "$KSNAP" job describe "$DEMO/wordcount.properties"

  say "creating the topics"
  "$KSNAP" topics create "$DEMO/wordcount.properties" lines:3 counts:3
  python3 - "$LINES" >"$DEMO/input.txt" <<'EOF'
import random, sys
random.seed(2026)
words = "apple kiwi pear plum fig lime mango peach".split()
for _ in range(int(sys.argv[1])):
    print(" ".join(random.choice(words) for _ in range(5)))
EOF

  say "running the job: ksnap coordinator + ksnap worker; writing $LINES lines"
  start coordinator "$KSNAP" coordinator "$DEMO/wordcount.properties"
  start worker "$KSNAP" worker "$DEMO/wordcount.properties"
  local worker=$last_pid
  # the input at about 5000 lines a second, so the crash hits mid-stream
  start producer python3 -c '
import subprocess, sys, time
kcat = subprocess.Popen(["kcat", "-P", "-b", sys.argv[2], "-t", "lines"],
                        stdin=subprocess.PIPE)
for i, line in enumerate(open(sys.argv[1], "rb")):
    kcat.stdin.write(line)
    if i % 500 == 499:
        kcat.stdin.flush()
        time.sleep(0.1)
kcat.stdin.close()
sys.exit(kcat.wait())
' "$DEMO/input.txt" "$KSNAP_TEST_BOOTSTRAP"
  local expected=$((LINES * 5)) seen=0
  sleep 3

  seen=$(committed_count)
  say "kill -9 of the worker after $seen of $expected counts were committed, then a restart"
  kill -9 "$worker"
  wait "$worker" 2>/dev/null || true
  sleep 1
  start worker-restarted "$KSNAP" worker "$DEMO/wordcount.properties"

  say "waiting for all $expected counts to be committed"
  for _ in $(seq 1 240); do
    seen=$(committed_count)
    ((seen >= expected)) && break
    sleep 0.5
  done
  grep -h -E 'Restoring|restored from' "$DEMO"/coordinator.log \
    "$DEMO"/worker-restarted.log | head -3 || true

  say "checking exactly-once on the read_committed output"
  kcat -C -b "$KSNAP_TEST_BOOTSTRAP" -t counts -X isolation.level=read_committed \
    -e -q -f '%k %s\n' >"$DEMO/output.txt"
  python3 - "$DEMO/input.txt" "$DEMO/output.txt" <<'EOF'
import sys
from collections import Counter, defaultdict
expected = Counter(w for line in open(sys.argv[1]) for w in line.split())
got = defaultdict(list)
for line in open(sys.argv[2]):
    word, count = line.split()
    got[word].append(int(count))
bad = [w for w in expected
       if sorted(got[w]) != list(range(1, expected[w] + 1))]
print(f"{'word':8} {'occurrences':>11} {'last count':>10} {'committed':>9}")
for w in sorted(expected):
    print(f"{w:8} {expected[w]:11} {max(got[w], default=0):10} {len(got[w]):9}")
if bad or set(got) - set(expected):
    print("FAILED: duplicates or losses for", bad or sorted(set(got) - set(expected)))
    sys.exit(1)
print("OK: every word's committed counts are exactly 1..n: no duplicate, no loss")
EOF

  say "the job's checkpoints (ksnap checkpoints list)"
  "$KSNAP" checkpoints list "$DEMO/wordcount.properties" | tail -8
  say "done (logs in $DEMO)"
}

main "$@"
