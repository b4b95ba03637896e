#!/usr/bin/env python3
"""Crash tests of a whole ksnap job on the real test servers (stdlib only).

Each run builds the wordcount job (examples/wordcount: lines -> split (P=2)
-> count (P=2) -> counts) under a unique name, produces a deterministic
input drawn from the run's seed, starts `ksnap coordinator` and `ksnap
worker` processes, injects the faults of its case, waits until every input
line is processed and committed, stops everything, and checks the
invariant of plugin/PROTOCOL.md on the read_committed content of the sink
topic: for every word the committed counts are exactly 1..n (n = the
word's occurrences in the input), which is the failure-free run's output,
and they come 1, 2, ..., n in offset order in the word's partition, with
or without kills (the sink's partition order).

Cases (--case):
  slow-restore   kill -9 of the sink tasks' worker, whose replacement takes
                 5 s per restore (longer than heartbeat.timeout): the job
                 restores once and the output completes
  happy          no fault: at least 20 checkpoints (every 250 ms), all
                 complete; each sink commit comes after its COMPLETE
  random         kill -9 a random worker or the coordinator at random
                 (seeded) times, 1 to 3 times, and restart it after a
                 random delay; topology (one worker for all tasks, one per
                 stage, one per task) chosen by the seed
  coordinator    kill -9 the coordinator twice; the new one must resume
                 (checkpoint ids continue) and the output stays exact
  outage         kill -9 the coordinator; while it is down kill -9 the
                 split worker and restart it; then restart the coordinator
  meta-window    the coordinator crashes (fault hook) right after writing
                 chk-N/_metadata and before COMPLETE(N)
  commit-window  the sink task count[0] crashes (fault hook) right after
                 COMPLETE(N) and before committing its transaction; needs
                 the epoch replay of plugin/PROTOCOL.md section 8
  early          kill -9 the split worker 0.2-0.7 s after its tasks run
                 (input waiting): it wrote records to the exchange topic
                 but its REGISTER may not have reached the coordinator;
                 and restart it at once: the replacement must not join the
                 generation the dead instance wrote in
  zombie         the worker of the count stage is SIGSTOPped, a new worker
                 takes over (before or after the coordinator missed the old
                 one's heartbeats), then the old one is SIGCONTed: it must
                 stop (its tasks are owned by the new instance), and its
                 output must never become visible to read_committed
                 consumers
  dlq            the poison word count (--poison-lib) with
                 errors.tolerance=all and a dead-letter topic, killed as in
                 random: the sink holds the word count of the good records,
                 and the dead-letter topic's read_committed content every
                 poison line (from split) and every poison word (from
                 count) exactly once; the checkpoint statistics count them
  dlq-commit-window  the same job; split[0] crashes (fault hook) after
                 COMPLETE(N) and before committing its transaction, which
                 holds only dead-letter records: the epoch replay must
                 produce them again
  savepoint      configured unaligned and incremental; `ksnap savepoint`
                 three times at random (seeded) moments while the job
                 runs; the coordinator is killed -9 once right after a
                 savepoint's TRIGGER (its alignment, acknowledgements and
                 copy window) and once at a random moment, in some seeds
                 a worker too, each restarted; in even seeds (with the
                 fault hooks) the first coordinator also crashes in the
                 copy of the first savepoint after one file (hook
                 coord.savepoint-copy); a last savepoint once the
                 output is complete must succeed: every URL the CLI
                 printed names a whole savepoint directory (ksnap inspect
                 --state reads it, its _metadata is a savepoint's, full,
                 each handle's file is there) that still exists at the
                 end, and an interrupted command exits non-zero or prints
                 such a URL
  buffer-limit   the word count of --slow-lib: split[0] sleeps per line
                 (3 ms, split[1] 1 ms), each reads one partition of a
                 backlog and answers a TRIGGER after its batch of up to
                 1000 lines, so split[0]'s barriers come seconds after
                 split[1]'s, whose padded
                 records (4 KB) the count tasks must buffer while they
                 align, aligned mode, alignment.max-buffered-bytes 1 MiB,
                 the input produced up front: checkpoints complete, the
                 statistics (`ksnap checkpoints list --json`) report a
                 switch to unaligned on the buffer limit and no task
                 buffering more than the limit and one record; in odd
                 seeds (no kill) at least one switch, and the count
                 worker's peak RSS (VmHWM in /proc) under RSS_MARGIN_MIB
                 above the limit; in even seeds the count worker, and in
                 some the split worker, are killed -9 while the switches
                 happen, and the output is still exact
  incremental    incremental checkpoints every 300 ms, compacted every 4
                 files (state.backend.incremental.max-chain-length=4);
                 three kill -9s of a random worker or the coordinator,
                 from 3.5 s on, 1.5-3 s apart (so kills fall before and after
                 compactions), each restarted 0.1-1 s later; the
                 topology as in random; then the count worker once four
                 more checkpoints completed; at least one restore of the
                 case's runs must read a chain (a full file and deltas)
  bounded        source.stop-at=latest: the input is written before the
                 job starts, and more lines (not in the model) once a
                 first checkpoint completed; kill -9 of workers and the
                 coordinator at random (seeded), some after the input
                 ended: the committed output is the input up to the end
                 taken at the first start, exactly once, and every task
                 whose input ended keeps taking its part of checkpoints
  trigger-catchup  unaligned with snapshot-on-trigger, the count tasks
                 slowed (--slow-lib, KSNAP_TEST_SLOW_COUNT_US: a sleep per
                 record) and the input produced up front, so a count
                 task's TRIGGER-time snapshot leaves seconds of channel
                 state in the log: kill -9 of the count worker once a
                 checkpoint on the TRIGGER completed, restart at once, and
                 kill -9 it again while the restore is still catching up
                 (processing the older generation's records up to the
                 restored checkpoint's barriers): at the first checkpoint
                 completed after the restore, or 2.5-3.5 s after its
                 tasks registered; a checkpoint taken on a TRIGGER then
                 would lose the older generation's records (the catch-up
                 rule)
  recovery       kill -9 the worker of the count stage (two tasks) once,
                 mid-stream, and start it again 0.1 s later: one RESTORE,
                 and the time from the kill to it and to the first
                 COMPLETE after it (printed as for every kill)

Options for any case: --snapshot-on-trigger configures the job unaligned
with snapshot-on-trigger; --backlog produces the whole input at once
(before the fault hook of meta-window and commit-window too); --slow-count
US (with --slow-lib) makes each count task sleep US microseconds a record,
so that the readers stay far behind their barriers, and with
snapshot-on-trigger checks that some completed checkpoint has a part taken
on the TRIGGER (`ksnap checkpoints list --json`).

Every case but happy also checks that each failure restores the job once
(check_restores): at every moment the RESTORE records written so far
(control topic timestamps) never outnumber the failures made so far: kills
-9 (or crashes at a fault hook, or SIGSTOPs) of a worker process, and
starts of the coordinator after its first (each restores the whole job
once). A failure during a restore under way may join it (fewer RESTOREs),
never make two. For each kill it also prints the time to the next RESTORE
and to the first COMPLETE after that RESTORE.

Environment: KSNAP_TEST_BOOTSTRAP, KSNAP_TEST_S3_ENDPOINT,
KSNAP_TEST_S3_BUCKET, KSNAP_TEST_S3_ACCESS_KEY, KSNAP_TEST_S3_SECRET_KEY
(source tests/.run/env); kcat on PATH. KSNAP_TEST_KAFKA_VERSION (set by
the env file) puts the run directories under RUN_ROOT/kafka-<version>
(--run-root), so the runs against one broker never remove those kept
from another.
With the secured servers' env file (tests/servers/secure.sh:
KSNAP_TEST_KAFKA_SECURE_DIR) every run is over SASL_SSL as the ACL-limited
user ksnap (its password read by ${file:...}) with S3 over HTTPS, and
kcat logs in the same way; --secure skips the case without them.
KSNAP_E2E_MAX_RUNS=N caps --runs at N (a shorter crash suite, as CI runs
on its second broker).

On failure the run directory (job file, input, every process's log, the
committed output) is kept and the seed is printed; exit status 1. The
cases meta-window, commit-window and slow-restore need the fault hooks
(KSNAP_FAULT): with a ksnap built without -DKSNAP_FAULT_INJECTION=ON
(`ksnap version` does not say "fault injection: compiled in") they are
skipped with exit status 77. The case savepoint uses its hook in even
seeds when it is compiled in, and only timed kills otherwise.
"""
import argparse
import collections
import datetime
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet "
         "kilo lima mike november oscar papa quebec romeo sierra tango "
         "uniform victor whiskey xray yankee zulu one two three four").split()
STAGE_TASKS = [("split", 2), ("count", 2)]
ALL_TASKS = ["%s:%d" % (s, i) for s, n in STAGE_TASKS for i in range(n)]
STALL_S = 12
STOP_TIMEOUT_S = 15  # ksnap savepoint --stop --timeout (stop_with_savepoint)
# KSNAP_FAULT=task.slow-restore makes every restore this much longer
# (plugin/src/base/fault.h): the stall limit of that case allows for it.
SLOW_RESTORE_S = 5
FAULT_CASES = ("meta-window", "commit-window", "slow-restore",
               "dlq-commit-window")
DLQ_CASES = ("dlq", "dlq-commit-window")
# case buffer-limit: the alignment limit, the slow writer's delay per line
# and the padding of its records (tests/data/operators/slow.c), and how
# far above the limit the count worker's peak RSS may go (its own memory,
# librdkafka's, and the consumer's prefetch, capped by the job file)
BUFFER_LIMIT_MIB = 1
SLOW_US, SLOW_OTHER_US, SLOW_PAD = 3000, 1000, 8000
# --slow-count's default: microseconds a count task sleeps per record
# (tests/data/operators/slow.c), for the cases of snapshot-on-trigger
SLOW_COUNT_US = 2000
RSS_MARGIN_MIB = 40
SKIPPED = 77  # CTest's SKIP_RETURN_CODE for the e2e tests
ENV_KEYS = ("KSNAP_TEST_BOOTSTRAP", "KSNAP_TEST_S3_ENDPOINT",
            "KSNAP_TEST_S3_BUCKET", "KSNAP_TEST_S3_ACCESS_KEY",
            "KSNAP_TEST_S3_SECRET_KEY")


class RunFailed(Exception):
    pass


def log(msg):
    print("killrun: %s" % msg, file=sys.stderr, flush=True)


class Proc:
    """One ksnap process (coordinator or worker), restartable; its logs
    accumulate in RUN_DIR/<name>.log across restarts."""

    def __init__(self, run, name, argv):
        self.run, self.name, self.argv = run, name, argv
        self.popen = None
        self.starts = 0

    def start(self, env_extra=None):
        env = dict(os.environ)
        env.pop("KSNAP_FAULT", None)
        env.update(env_extra or {})
        out = open(os.path.join(self.run.dir, self.name + ".log"), "ab")
        out.write(("==== start %d at %.3f s: %s %s\n" % (
            self.starts, self.run.elapsed(), " ".join(self.argv),
            " ".join("%s=%s" % kv for kv in (env_extra or {}).items())))
            .encode())
        out.flush()
        self.popen = subprocess.Popen(self.argv, stdout=out,
                                      stderr=subprocess.STDOUT, env=env)
        out.close()
        if self.starts and self is self.run.coord:
            self.run.cause("restart of the coordinator")
        self.starts += 1
        self.run.event("start %s (pid %d)" % (self.name, self.popen.pid))

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            self.run.event("%s %s (pid %d)" % (signal.Signals(sig).name,
                                               self.name, self.popen.pid))
            if sig == signal.SIGSTOP and self is not self.run.coord:
                self.run.cause("SIGSTOP of " + self.name)
            os.kill(self.popen.pid, sig)

    def kill9(self):
        if self.alive():
            if self is not self.run.coord:
                self.run.cause("kill -9 of " + self.name)
            self.signal(signal.SIGKILL)
            self.popen.wait()

    def stop(self, grace=10.0):
        """SIGTERM (SIGCONT first, in case it is stopped), then SIGKILL."""
        if not self.alive():
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill9()


def kcat():
    """kcat's command, logged in as the job's user on the secured servers
    (tests/servers/secure.sh: KSNAP_TEST_KAFKA_SECURE_DIR)."""
    sec = os.environ.get("KSNAP_TEST_KAFKA_SECURE_DIR")
    return ["kcat"] + (["-F", os.path.join(sec, "ksnap.kcat.conf")]
                       if sec else [])


def read_records(topic, isolation="read_committed"):
    """@p topic's records [(partition, offset, key, value, headers)] as a
    consumer of @p isolation reads them, in partition and offset order
    (kcat's %h: the headers as name=value,...)."""
    r = subprocess.run(
        kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t", topic,
                  "-o", "beginning", "-e", "-q", "-X",
                  "isolation.level=" + isolation,
                  "-f", "%p\t%o\t%k\t%s\t%h\\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    if r.returncode != 0:
        raise RunFailed("kcat -C: %s" % r.stderr.decode(errors="replace"))
    out = []
    for line in r.stdout.decode(errors="replace").splitlines():
        if line.strip():
            p, o, key, v, h = line.split("\t", 4)
            out.append((int(p), int(o), key, v, h))
    return sorted(out)


def secure_props():
    """The job's security settings on the secured servers: SASL_SSL as user
    ksnap, its password read from its file, the test CA for Kafka and S3."""
    sec = os.environ.get("KSNAP_TEST_KAFKA_SECURE_DIR")
    if not sec:
        return {}
    ca = os.path.join(sec, "tls", "ca.pem")
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanisms": "SCRAM-SHA-512",
        "kafka.sasl.username": "ksnap",
        "kafka.sasl.password": "${file:%s}" % os.path.join(
            sec, "secrets", "ksnap.password"),
        "kafka.ssl.ca.location": ca,
        "s3.ca-file": ca,
    }


class Run:
    def __init__(self, args, case, seed):
        self.args, self.case, self.seed = args, case, seed
        self.rng = random.Random("%s-%d" % (case, seed))
        self.t0 = time.monotonic()
        self.job = "e2e-%s-%d-%d-%d" % (case, seed, os.getpid(),
                                        int(time.time() * 1000) % 10**9)
        self.dir = tempfile.mkdtemp(prefix="%s-%d-" % (case, seed),
                                    dir=args.run_root)
        self.lines_topic = self.job + ".lines"
        self.counts_topic = self.job + ".counts"
        self.dlq_topic = self.job + ".dlq"
        self.dlq = case in DLQ_CASES
        self.procs = []
        self.coord = None
        self.causes = []  # [(wall clock ms, what)]: failures made
        self.events = open(os.path.join(self.dir, "events.log"), "w")

    def elapsed(self):
        return time.monotonic() - self.t0

    def cause(self, what):
        """A failure the run makes (check_restores), at this host's clock
        as the control records' timestamps are."""
        self.causes.append((time.time() * 1000.0, what))

    def event(self, msg):
        self.events.write("%8.3f %s\n" % (self.elapsed(), msg))
        self.events.flush()

    def deadline_check(self):
        if self.elapsed() > self.args.timeout:
            raise RunFailed("run did not finish in %d s" % self.args.timeout)

    # --- setup ---------------------------------------------------------
    def write_job(self):
        props = {
            "job.name": self.job,
            "execution.checkpointing.interval":
                {"happy": "250ms", "incremental": "300ms"}.get(self.case,
                                                                "1s"),
            "execution.checkpointing.timeout": "30s",
            "heartbeat.interval": "200ms",
            "heartbeat.timeout": "2s",
            **self.server_props(),
            "stage.split.operator": self.lib() + ":split",
            "stage.split.parallelism": "2",
            "stage.split.input": "source:" + self.lines_topic,
            "stage.count.operator": self.lib() + ":count",
            "stage.count.parallelism": "2",
            "stage.count.input": "stage:split",
            "stage.count.output": "sink:" + self.counts_topic,
        }
        if self.case == "bounded":
            props["source.stop-at"] = "latest"
        props.update(secure_props())
        if self.case == "savepoint":  # what a savepoint must override
            props.update({
                "execution.checkpointing.unaligned.enabled": "true",
                "execution.checkpointing.aligned-checkpoint-timeout": "0",
                "state.backend.incremental": "true",
                "state.savepoints.dir": "file://" + self.savepoint_dir()})
        if self.args.snapshot_on_trigger or self.case == "trigger-catchup":
            props.update({
                "execution.checkpointing.unaligned.enabled": "true",
                "execution.checkpointing.aligned-checkpoint-timeout": "0",
                "execution.checkpointing.unaligned.snapshot-on-trigger":
                    "true"})
        if self.case == "buffer-limit":
            props.update({
                "execution.checkpointing.interval": "500ms",
                "execution.checkpointing.alignment.max-buffered-bytes":
                    "%dMiB" % BUFFER_LIMIT_MIB,
                "kafka.queued.max.messages.kbytes": "4096"})
            os.environ.update({"KSNAP_TEST_SLOW_US": str(SLOW_US),
                               "KSNAP_TEST_SLOW_OTHER_US": str(SLOW_OTHER_US),
                               "KSNAP_TEST_SLOW_PAD": str(SLOW_PAD)})
        if self.slow_count():  # only the readers are slow
            os.environ.update({"KSNAP_TEST_SLOW_US": "0",
                               "KSNAP_TEST_SLOW_OTHER_US": "0",
                               "KSNAP_TEST_SLOW_PAD": "0",
                               "KSNAP_TEST_SLOW_COUNT_US":
                                   str(self.slow_count())})
        if self.case == "incremental":
            props.update({
                "state.backend.incremental": "true",
                "state.backend.incremental.max-chain-length": "4",
                "state.backend.incremental.max-delta-percent": "100000"})
        if self.dlq:
            props.update({
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": self.dlq_topic,
                "errors.deadletterqueue.context.headers.enable": "true"})
        self.job_file = os.path.join(self.dir, "job.properties")
        with open(self.job_file, "w") as f:
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))

    def quick_props(self):
        """The graph cases' job basics: checkpoints every 500 ms, a task
        that stops heartbeating found dead in 2 s, the test servers."""
        return {
            "job.name": self.job,
            "execution.checkpointing.interval": "500ms",
            "execution.checkpointing.timeout": "30s",
            "heartbeat.interval": "200ms",
            "heartbeat.timeout": "2s",
            **self.server_props(),
        }

    def example_env(self, lib):
        """The environment an example's job file expects: the test servers
        as its ${...} and @p lib's folder as the operator path."""
        e = os.environ
        return dict(e, KAFKA_BOOTSTRAP=e["KSNAP_TEST_BOOTSTRAP"],
                    S3_ENDPOINT=e["KSNAP_TEST_S3_ENDPOINT"],
                    S3_BUCKET=e["KSNAP_TEST_S3_BUCKET"],
                    AWS_ACCESS_KEY_ID=e["KSNAP_TEST_S3_ACCESS_KEY"],
                    AWS_SECRET_ACCESS_KEY=e["KSNAP_TEST_S3_SECRET_KEY"],
                    KSNAP_OPERATOR_PATH=os.path.dirname(lib))

    def server_props(self):
        """The job's test servers: its checkpoint directory on S3, Kafka."""
        e = os.environ
        return {
            "state.checkpoints.dir": "s3://%s/e2e/%s" % (
                e["KSNAP_TEST_S3_BUCKET"], self.job),
            "s3.endpoint": e["KSNAP_TEST_S3_ENDPOINT"],
            "s3.access-key": e["KSNAP_TEST_S3_ACCESS_KEY"],
            "s3.secret-key": e["KSNAP_TEST_S3_SECRET_KEY"],
            "kafka.bootstrap.servers": e["KSNAP_TEST_BOOTSTRAP"],
        }

    def savepoint_dir(self):
        return os.path.join(self.dir, "savepoints")

    def slow_count(self):
        """Microseconds a count task sleeps per record, 0: not slowed."""
        if self.args.slow_count is not None:
            return self.args.slow_count
        return SLOW_COUNT_US if self.case == "trigger-catchup" else 0

    def lib(self):
        if self.case == "buffer-limit" or self.slow_count():
            if not self.args.slow_lib:
                raise RunFailed("case %s needs --slow-lib" % self.case)
            return self.args.slow_lib
        if not self.dlq:
            return self.args.lib
        if not self.args.poison_lib:
            raise RunFailed("case %s needs --poison-lib" % self.case)
        return self.args.poison_lib

    def ksnap(self, *argv, timeout=60):
        r = subprocess.run([self.args.ksnap] + list(argv),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        if r.returncode != 0:
            raise RunFailed("ksnap %s: exit %d: %s" % (
                " ".join(argv), r.returncode, r.stdout.decode(errors="replace")))
        return r.stdout.decode(errors="replace")

    def make_input(self):
        """Deterministic input: self.batches (lists of lines) and the
        failure-free model (word -> occurrences)."""
        nlines = (self.rng.randint(3500, 4500) if self.case == "buffer-limit"
                  else self.rng.randint(1200, 1500) if self.slow_count()
                  else self.rng.randint(600, 1500))
        vocab = WORDS[:self.rng.randint(8, len(WORDS))]
        if self.dlq:  # words that fail in count
            vocab = vocab + ["poison1", "poison2", "poison3"]
        lines = [" ".join(self.rng.choice(vocab)
                          for _ in range(self.rng.randint(1, 8)))
                 for _ in range(nlines)]
        if self.dlq:  # lines that fail in split, each one unique
            lines = [l + " POISON%d" % i if self.rng.random() < 0.05 else l
                     for i, l in enumerate(lines)]
        nb = self.rng.randint(3, 6)
        step = (nlines + nb - 1) // nb
        self.batches = [lines[i:i + step] for i in range(0, nlines, step)]
        good = [l for l in lines if "POISON" not in l]
        self.model = collections.Counter(w for l in good for w in l.split()
                                         if not w.startswith("poison"))
        # the dead-letter topic: (stage, key or value) -> occurrences
        self.dlq_model = collections.Counter(
            [("split", l) for l in lines if "POISON" in l] +
            [("count", w) for l in good for w in l.split()
             if w.startswith("poison")])
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def produce(self, lines, partition=None):
        r = subprocess.run(kcat() + ["-P", "-b", os.environ[
            "KSNAP_TEST_BOOTSTRAP"], "-t", self.lines_topic] +
            (["-p", str(partition)] if partition is not None else []),
            input=("\n".join(lines) + "\n").encode(),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        if r.returncode != 0:
            raise RunFailed("kcat -P: %s" % r.stdout.decode(errors="replace"))
        self.event("produced %d lines" % len(lines))

    def committed(self):
        """The read_committed content of the sink topic: [(word, value,
        "partition@offset")], partition by partition in offset order (a
        word's records are all in the partition of its key)."""
        r = subprocess.run(
            kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
             self.counts_topic, "-o", "beginning", "-e", "-q",
             "-X", "isolation.level=read_committed", "-f", "%p %o %k %s\\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise RunFailed("kcat -C: %s" % r.stderr.decode(errors="replace"))
        out = []
        for line in r.stdout.decode(errors="replace").splitlines():
            if line.strip():
                p, o, kv = line.split(" ", 2)
                k, _, v = kv.partition(" ")
                out.append((int(p), int(o), k, v))
        out.sort()
        return [(k, v, "%d@%d" % (p, o)) for p, o, k, v in out]

    def dead_letters(self):
        """The read_committed content of the dead-letter topic:
        [(stage, key of a count record or value of a split one, headers)]."""
        r = subprocess.run(
            kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
             self.dlq_topic, "-o", "beginning", "-e", "-q",
             "-X", "isolation.level=read_committed", "-f", "%k\t%s\t%h\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise RunFailed("kcat -C: %s" % r.stderr.decode(errors="replace"))
        out = []
        for line in r.stdout.decode(errors="replace").splitlines():
            if not line.strip():
                continue
            k, v, h = line.split("\t", 2)
            hdrs = dict(kv.partition("=")[::2] for kv in h.split(","))
            stage = hdrs.get("ksnap.errors.stage", "?")
            out.append((stage, k if stage == "count" else v, hdrs))
        return out

    def check_dlq(self):
        """None if the dead-letter topic holds the model's records, each
        once, with their context headers, and the latest completed
        checkpoint counts them all; else a summary."""
        got = self.dead_letters()
        c = collections.Counter((s, x) for s, x, _ in got)
        problems = []
        for key in sorted(set(c) | set(self.dlq_model)):
            if c[key] != self.dlq_model[key]:
                problems.append("%s %r: %d times, model %d" % (
                    key[0], key[1], c[key], self.dlq_model[key]))
        for s, x, h in got:
            if h.get("ksnap.errors.code") != "OPERATOR" or \
                    "ksnap.errors.offset" not in h:
                problems.append("%s %r: headers %s" % (s, x, h))
        latest = json.loads(self.ksnap("checkpoints", "list", self.job_file,
                                       "--json"))["latest"]
        if latest["records_dead_lettered"] != len(got):
            problems.append("the latest completed checkpoint %s counts %d "
                            "dead-letter records, the topic holds %d" % (
                                latest["completed"],
                                latest["records_dead_lettered"], len(got)))
        self.event("dead-letter topic: %d records" % len(got))
        return "; ".join(problems[:8]) + (
            "; ..." if len(problems) > 8 else "") if problems else None

    # --- processes -----------------------------------------------------
    def start_stage_workers(self, stages, savepoint=None, fault=None,
                            coord_args=()):
        """Starts the coordinator (from @p savepoint if given, with
        @p coord_args more options) and one worker per stage of @p stages
        ({name: parallelism}), worker-NAME, running that stage's tasks: the
        graph harnesses' processes; @p fault: (stage, KSNAP_FAULT value) for
        the worker of that stage."""
        self.coord = Proc(self, "coordinator", [
            self.args.ksnap, "coordinator", self.job_file] + (
            ["--from-savepoint", savepoint] if savepoint else []) +
            list(coord_args))
        self.workers = [Proc(self, "worker-" + s, [
            self.args.ksnap, "worker", "--tasks",
            ",".join("%s:%d" % (s, i) for i in range(n)), self.job_file])
            for s, n in stages.items()]
        self.procs = [self.coord] + self.workers
        for p in self.procs:
            p.start({"KSNAP_FAULT": fault[1]} if fault and
                    p.name == "worker-" + fault[0] else None)

    def start_job(self, fault=None):
        """Starts the coordinator and the workers; @p fault: (task or
        "coordinator", KSNAP_FAULT value) for the process to crash."""
        self.coord = Proc(self, "coordinator",
                          [self.args.ksnap, "coordinator", self.job_file])
        topo = self.topology
        if topo == "one":
            groups = [ALL_TASKS]
        elif topo == "stage":
            groups = [[t for t in ALL_TASKS if t.startswith(s + ":")]
                      for s, _ in STAGE_TASKS]
        else:
            groups = [[t] for t in ALL_TASKS]
        self.workers = []
        for g in groups:
            name = "worker-" + "+".join(t.replace(":", "") for t in g)
            self.workers.append(Proc(self, name, [
                self.args.ksnap, "worker", "--tasks", ",".join(g),
                self.job_file]))
        self.procs = [self.coord] + self.workers
        target = fault and (self.coord if fault[0] == "coordinator"
                            else self.worker_of(fault[0]))
        for p in self.procs:
            p.start({"KSNAP_FAULT": fault[1]} if p is target else None)
        return target

    def worker_of(self, task):
        return next(w for w in self.workers
                    if task in w.argv[w.argv.index("--tasks") + 1].split(","))

    def sleep(self, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.deadline_check()
            time.sleep(min(0.1, end - time.monotonic()) if end >
                       time.monotonic() else 0)

    def stop_all(self):
        for p in self.procs:
            p.stop()

    # --- faults --------------------------------------------------------
    def faults_random(self):
        """1-3 kill -9s at random times while the input is being produced
        and processed; the victim restarts after a random delay."""
        self.produce_while(self.kill_plan(self.rng.randint(1, 3), 0.0,
                                          (0.5, 4.0), (0.1, 3.0)))

    def kill_plan(self, kills, t, gap, delay):
        """@p kills kill -9s of a random worker or (one time in four) the
        coordinator, each @p gap (range, s) after the previous one's
        restart (the first after @p t), restarted @p delay (range) later;
        the seed's draws in this order: gap, victim, delay."""
        plan = []
        for _ in range(kills):
            t += self.rng.uniform(*gap)
            victim = (self.coord if self.rng.random() < 0.25
                      else self.rng.choice(self.workers))
            d = self.rng.uniform(*delay)
            plan.append((t, victim, d))
            t += d
        self.event("plan: " + ", ".join("%.2fs kill %s restart +%.2fs" % (
            t, v.name, d) for t, v, d in plan))
        return plan

    def faults_bounded(self):
        """The input is in the topic before the start; once a checkpoint
        completed (every source task's end is then in it) lines past the
        end are written, which must never be read; 1-3 kill -9s at random
        as in random, the later ones after the input ended."""
        plan = self.kill_plan(self.rng.randint(1, 3), 0.0, (0.5, 4.0),
                              (0.1, 3.0))
        late = self.batches[0]  # the same words again: counts would grow

        def produce_late():
            with open(os.path.join(self.dir, "coordinator.log"),
                      errors="replace") as f:
                if "Completed checkpoint " not in f.read():
                    return [(0.2, produce_late)]
            self.produce(late)
            self.event("produced %d lines past the end" % len(late))
            return ()
        self.produce_while(plan, [(0.0, produce_late)], [])

    def produce_while(self, plan, calls=(), batches=None):
        """Produces the batches (or @p batches) one per second while
        running the kill plan [(time after start, proc, restart delay)]
        and @p calls [(time after start, function)]; a function returns
        more [(delay, function)] to run later (a wait that must not hold
        the plan back)."""
        start = self.elapsed()
        if batches is None and self.args.backlog:  # every line at once
            batches = [[l for b in self.batches for l in b]]
        todo = [(start + 0.5 + i * 1.0, "produce", b) for i, b in
                enumerate(self.batches if batches is None else batches)]
        for t, victim, delay in plan:
            todo.append((start + t, "kill", victim))
            todo.append((start + t + delay, "restart", victim))
        todo += [(start + t, "call", fn) for t, fn in calls]
        while todo:
            todo.sort(key=lambda x: x[0])
            when, what, arg = todo.pop(0)
            self.sleep(max(0.0, when - self.elapsed()))
            if what == "produce":
                self.produce(arg)
            elif what == "call":
                todo += [(self.elapsed() + d, "call", fn)
                         for d, fn in arg() or ()]
            elif what == "kill":
                arg.kill9()
            elif not arg.alive():
                arg.start()

    def faults_incremental(self):
        """Three kill -9s at random (the first checkpoints complete about
        3 s after the start), then one of the count tasks' worker once four
        more checkpoints completed after the last restart: with the chain
        grown again since, its restore reads incremental files however the
        random kills fell (a loaded machine can put them all before the
        first delta)."""
        plan = self.kill_plan(3, 2.0, (1.5, 3.0), (0.1, 1.0))
        end = max(t + d for t, _, d in plan)
        self.produce_while(plan, calls=[(end + 0.5, self.kill_after_chain)])

    def kill_after_chain(self):
        """A call of produce_while: polls the coordinator's log until four
        checkpoints completed after the call (or 30 s passed), then kill
        -9s the worker of count:0 and restarts it 0.5 s later."""
        victim, n0 = self.worker_of("count:0"), len(self.completed_ids())
        deadline = time.monotonic() + 30

        def poll():
            if len(self.completed_ids()) < n0 + 4 and \
                    time.monotonic() < deadline:
                return [(0.2, poll)]
            self.event("kill -9 %s after %d more checkpoints" % (
                victim.name, len(self.completed_ids()) - n0))
            victim.kill9()
            return [(0.5, restart)]

        def restart():
            if not victim.alive():
                victim.start()
        return poll()

    def faults_coordinator(self):
        """kill -9 the coordinator twice, mid-stream; checkpoint ids must
        continue after each restart (check_ids_continue)."""
        self.produce_while([(3.0 + self.rng.uniform(0, 1), self.coord, 0.5),
                            (5.0 + self.rng.uniform(0, 1), self.coord,
                             self.rng.uniform(0.1, 2.5))])

    def faults_savepoint(self):
        """`ksnap savepoint` three times while the input is produced (each
        once the job runs); the coordinator dies 0-200 ms after one
        savepoint's TRIGGER (alignment, acknowledgements, the copy into
        its directory; a savepoint of this job takes 100-200 ms) and at
        one random moment; in half the seeds a worker dies too; each
        restarts. A fourth savepoint once the output is complete
        (execute)."""
        self.savepoints = []  # [(Popen, output file)]
        times, t = [], 0.5
        for _ in range(3):
            t += self.rng.uniform(1.0, 2.5)
            times.append(t)
        window = self.rng.randrange(len(times))
        kill = (self.rng.uniform(0.0, 0.2), self.rng.uniform(0.1, 1.0))
        calls = [(x, self.savepoint_call(kill if i == window else None))
                 for i, x in enumerate(times)]
        plan = [(self.rng.uniform(1.0, times[-1] + 1.0), self.coord,
                 self.rng.uniform(0.1, 2.0))]
        if self.rng.random() < 0.5:
            plan.append((self.rng.uniform(1.0, times[-1]),
                         self.rng.choice(self.workers),
                         self.rng.uniform(0.1, 1.5)))
        self.event("plan: savepoints at %s (the coordinator killed +%.2fs "
                   "after #%d's TRIGGER, restart +%.2fs); %s" % (
                       ", ".join("%.2fs" % x for x in times), kill[0],
                       window + 1, kill[1],
                       ", ".join("%.2fs kill %s restart +%.2fs" % (
                           t, v.name, d) for t, v, d in plan)))
        self.produce_while(plan, calls + [(0.0, self.restart_crashed)])

    def restart_crashed(self):
        """For produce_while, every 50 ms until the last savepoint command
        started: restarts the coordinator if it crashed at its fault hook
        (exit 137, KSNAP_FAULT=coord.savepoint-copy: the copy of the
        first savepoint cut short after one file)."""
        if not self.coord.alive() and self.coord.popen.returncode == 137:
            self.event("coordinator exited 137 at its fault hook")
            self.coord.start()
        return [(0.05, self.restart_crashed)] if len(self.savepoints) < 3 \
            else None

    def job_running(self):
        """True if the coordinator runs and logged, since it started and
        since its last failure and restore, that every task registered (a
        savepoint requested while the job restores, or waits out the
        restart delay, is refused)."""
        text = self.coord_log()
        return self.coord.alive() and text.rfind("checkpointing starts") > \
            max(text.rfind("==== start"), text.rfind("Restoring the job"),
                text.rfind("Job failure: restoring in"))

    def stop_with_savepoint(self, problem=None):
        """`ksnap savepoint --stop`, retried while the job restores; every
        process started (self.procs) exits 0; then @p problem() (a check
        of the output so far) must return None. @returns the savepoint's
        URL."""
        end = self.elapsed() + 45.0
        while True:
            while not self.job_running() and self.elapsed() < end:
                self.sleep(0.05)
            self.event("stop with savepoint requested (%s)" % self.stages)
            r = subprocess.run(
                [self.args.ksnap, "savepoint", self.job_file, "--stop",
                 "--timeout", str(STOP_TIMEOUT_S)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, timeout=STOP_TIMEOUT_S + 30)
            text = r.stdout.decode(errors="replace")
            self.event("savepoint --stop exit %d: %s" % (r.returncode,
                                                        text.strip()))
            url = next((l.split(": ", 1)[1].strip()
                        for l in text.splitlines()
                        if l.startswith("Job stopped with savepoint ")), None)
            if r.returncode == 0 and url:
                break
            retry = ("nothing was triggered" in text or  # was restoring
                     "restarting after a failure" in text)  # a kill's
            if not retry or self.elapsed() > end:
                raise RunFailed("ksnap savepoint --stop: exit %d: %s" % (
                    r.returncode, text))
        for p in self.procs:
            try:
                rc = p.popen.wait(30)
            except subprocess.TimeoutExpired:
                raise RunFailed("%s still runs 30 s after the stop with "
                                "savepoint %s" % (p.name, url))
            if rc != 0:
                raise RunFailed("%s exited %d after the stop with "
                                "savepoint %s" % (p.name, rc, url))
        self.event("every process exited 0; savepoint %s" % url)
        found = problem() if problem else None
        if found:
            raise RunFailed("after the stop with savepoint %s: %s" % (
                url, found))
        return url

    def coord_log(self):
        return open(os.path.join(self.dir, "coordinator.log"),
                    errors="replace").read()

    def savepoint_call(self, kill=None):
        """For produce_while: once the job runs (or after 8 s), `ksnap
        savepoint`; with @p kill (delay, restart delay), kill -9 of the
        coordinator that long after it logs the savepoint's TRIGGER (or
        3 s after the command if it logs none), and its restart."""
        end = []

        def wait_running():
            end[:] = end or [self.elapsed() + 8.0]
            if not self.job_running() and self.elapsed() < end[0]:
                return [(0.05, wait_running)]
            before = self.coord_log().count("type=SAVEPOINT")
            self.savepoint_start()
            end[0] = self.elapsed() + 3.0
            return [(0.0, lambda: wait_trigger(before))] if kill else None

        def wait_trigger(before):
            if self.coord_log().count("type=SAVEPOINT") == before and \
                    self.elapsed() < end[0]:
                return [(0.01, lambda: wait_trigger(before))]
            return [(kill[0], kill_coord)]

        def kill_coord():
            self.coord.kill9()
            return [(kill[1], restart)]

        def restart():
            if not self.coord.alive():
                self.coord.start()
        return wait_running

    def savepoint_start(self):
        """`ksnap savepoint JOB` in the background."""
        path = os.path.join(self.dir, "savepoint-%d.out" % len(
            self.savepoints))
        out = open(path, "wb")
        p = subprocess.Popen([self.args.ksnap, "savepoint", self.job_file,
                              "--timeout", "20"], stdout=out,
                             stderr=subprocess.STDOUT)
        out.close()
        self.savepoints.append((p, path))
        self.event("savepoint command %d started (pid %d)" % (
            len(self.savepoints), p.pid))

    def check_savepoints(self):
        """Every savepoint command ended; each one that exited 0 printed
        the URL of a whole directory (check_savepoint_dir), each that
        printed a URL exited 0; every savepoint directory holding a
        _metadata, reported or not, is whole (the _metadata is written
        last; one without it is a copy the coordinator's death cut
        short); the last one (no failure after it) completed. @returns
        the URLs."""
        urls = []
        for p, path in self.savepoints:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                raise RunFailed("ksnap savepoint (%s) did not end" % path)
            text = open(path, errors="replace").read()
            found = [l.split(": ", 1)[1].strip() for l in text.splitlines()
                     if l.startswith("Completed savepoint ")]
            self.event("savepoint command exit %d: %s" % (
                p.returncode, text.strip().replace("\n", " | ")))
            if bool(found) != (p.returncode == 0):
                raise RunFailed("ksnap savepoint exited %d and printed %s:"
                                " %s" % (p.returncode, found, text))
            for url in found:
                self.check_savepoint_dir(url)
            urls += found
        for name in sorted(os.listdir(self.savepoint_dir())):
            d = os.path.join(self.savepoint_dir(), name)
            if "_metadata" in os.listdir(d):  # written last: whole
                self.check_savepoint_dir("file://" + d)
        if self.savepoints[-1][0].returncode != 0:
            raise RunFailed("the last savepoint, with no failure after "
                            "it, did not complete")
        listing = self.ksnap("checkpoints", "list", self.job_file)
        missing = [u for u in urls if u not in listing]
        if missing:
            raise RunFailed("checkpoints list does not show %s:\n%s" % (
                missing, listing))
        return urls

    def check_savepoint_dir(self, url):
        """@p url is a savepoint directory of this job under
        state.savepoints.dir, whole: `ksnap inspect --state` reads its
        _metadata (a savepoint's, no incremental handle) and every state
        file it names (CRC32C verified), and each handle's file is in the
        directory."""
        prefix = "file://%s/savepoint-%s-" % (self.savepoint_dir(), self.job)
        if not url.startswith(prefix):
            raise RunFailed("savepoint URL %s is not under %s" % (url,
                                                                 prefix))
        r = subprocess.run([self.args.ksnap, "inspect", "--state", url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            raise RunFailed("ksnap inspect --state %s: exit %d: %s" % (
                url, r.returncode, r.stderr.decode(errors="replace")))
        meta = json.loads(out.splitlines()[0])
        d = url[len("file://"):]
        files = set(os.listdir(d))
        handles = [h["path"] for t in meta["tasks"]
                   for h in t["state_handles"]]
        problems = [] if meta.get("is_savepoint") else ["not a savepoint"]
        problems += ["%s: incremental" % l[:200] for l in out.splitlines()
                     if l.startswith('{"file"') and '"incremental":false'
                     not in l]
        problems += ["%s missing" % h for h in handles if h not in files]
        if len(meta["tasks"]) != len(ALL_TASKS) or "_metadata" not in files:
            problems.append("%d tasks, files %s" % (len(meta["tasks"]),
                                                     sorted(files)))
        if problems:
            raise RunFailed("savepoint %s: %s" % (url, "; ".join(problems)))
        self.event("savepoint %s: whole (%s)" % (url, ", ".join(handles)))

    def faults_outage(self):
        """A worker crash and restart while the coordinator is down: the
        new coordinator never saw the dead instance register."""
        victim = self.worker_of("split:0")
        t = 2.5 + self.rng.uniform(0, 1.5)
        self.produce_while([(t, self.coord, 3.0),
                            (t + 0.5, victim, self.rng.uniform(0.1, 1.0))])

    def faults_hook(self, proc, spec):
        """@p proc was started with KSNAP_FAULT=@p spec after the first
        batch was produced: wait until it crashes at the hook (exit 137),
        restart it without the variable, produce the rest."""
        while proc.alive():
            self.sleep(0.1)
        code = proc.popen.returncode
        self.event("%s exited %d" % (proc.name, code))
        if proc is not self.coord:
            self.cause("crash of %s at the fault hook" % proc.name)
        if code != 137:
            raise RunFailed("%s exited %d, not 137 at the fault hook %s" % (
                proc.name, code, spec))
        self.sleep(self.rng.uniform(0.1, 1.0))
        proc.start()
        for b in ([] if self.args.backlog else self.batches[1:]):
            self.sleep(0.5)
            self.produce(b)

    def all_lines(self):
        return [l for b in self.batches for l in b]

    def completed_ids(self):
        """The ids of the checkpoints the coordinator's log says completed
        so far."""
        key, ids = "Completed checkpoint ", []
        with open(os.path.join(self.dir, "coordinator.log"),
                  errors="replace") as f:
            for line in f:
                i = line.find(key)
                if i >= 0:
                    ids.append(int(line[i + len(key):].split()[0]))
        return ids

    def faults_trigger_catchup(self):
        """The input at once; kill -9 the count worker once a checkpoint
        completed (taken on the TRIGGER: the count tasks are seconds behind
        its barriers), restart it at once, and kill -9 it again at the
        first checkpoint completed after the restore, or 2.5-3.5 s after
        its tasks registered (two or more TRIGGERs, every 1 s): while it
        still processes the older generation's records, which a
        checkpoint taken on those TRIGGERs would lose; restart it."""
        victim = self.worker_of("count:0")
        self.produce(self.all_lines())
        while not self.completed_ids():
            self.sleep(0.1)
        self.event("checkpoint %d completed" % self.completed_ids()[0])
        victim.kill9()
        self.sleep(0.1)
        victim.start()
        key = "tasks registered in generation 1: checkpointing starts"
        while key not in self.coord_log():
            self.sleep(0.1)
        self.event("restored in generation 1")
        since = len(self.coord_log())
        end = self.elapsed() + self.rng.uniform(2.5, 3.5)
        while self.elapsed() < end and \
                "Completed checkpoint " not in self.coord_log()[since:]:
            self.sleep(0.05)
        victim.kill9()
        self.sleep(0.1)
        victim.start()

    def check_trigger_snapshots(self):
        """Some completed checkpoint has a count task's part taken on the
        TRIGGER (`ksnap checkpoints list --json`): the mode was exercised."""
        stats = json.loads(self.ksnap("checkpoints", "list", self.job_file,
                                      "--json", "--history", "1000"))
        on_trigger = ["%d:%s" % (ck["id"], t["task"])
                      for ck in stats["history"]
                      if ck["status"] == "COMPLETED" for t in ck["tasks"]
                      if t.get("unaligned_reason") == "trigger"]
        self.event("parts taken on the TRIGGER: %s" % short(on_trigger))
        if not on_trigger:
            raise RunFailed("no completed checkpoint has a part taken on "
                            "the TRIGGER")

    def faults_early(self):
        victim = self.worker_of("split:0")
        path = os.path.join(self.dir, victim.name + ".log")
        while "running in generation" not in open(path,
                                                   errors="replace").read():
            self.sleep(0.01)
        self.sleep(self.rng.uniform(0.2, 0.7))  # emitting, not registered
        victim.kill9()
        self.sleep(self.rng.uniform(0.0, 0.5))
        victim.start()
        for b in self.batches[1:]:
            self.sleep(0.5)
            self.produce(b)

    def faults_recovery(self):
        victim = self.worker_of("count:0")
        self.produce(self.batches[0])
        self.sleep(2.5 + self.rng.uniform(0, 0.5))
        victim.kill9()
        self.sleep(0.1)
        victim.start()
        for b in self.batches[1:]:
            self.sleep(0.5)
            self.produce(b)

    def faults_slow_restore(self):
        """kill -9 the worker of the sink tasks; its replacement's restores
        take 5 s (KSNAP_FAULT=task.slow-restore), longer than
        heartbeat.timeout (2 s): the job must restore once, not again and
        again while the tasks load their state."""
        victim = self.worker_of("count:0")
        self.produce(self.batches[0])
        self.sleep(2.0 + self.rng.uniform(0, 1))
        victim.kill9()
        self.sleep(self.rng.uniform(0.1, 3.0))
        victim.start({"KSNAP_FAULT": "task.slow-restore"})
        for b in self.batches[1:]:
            self.sleep(0.5)
            self.produce(b)

    def faults_buffer_limit(self):
        """The whole input at once (a backlog); in even seeds kill -9 the
        count worker (and in some the split worker) while the alignments
        switch."""
        lines = [l for b in self.batches for l in b]
        for p in (0, 1):  # as many lines for each split task (kcat's own
            self.produce(lines[p::2], p)  # partitioner makes runs)
        plan = []
        if self.seed % 2 == 0:
            count = self.worker_of("count:0")
            t = self.rng.uniform(1.0, 3.0)
            plan.append((t, count, self.rng.uniform(0.1, 1.0)))
            if self.rng.random() < 0.5:
                plan.append((t + self.rng.uniform(1.5, 3.0),
                             self.worker_of("split:0"),
                             self.rng.uniform(0.1, 1.0)))
            self.event("plan: " + ", ".join("%.2fs kill %s restart +%.2fs" % (
                t, v.name, d) for t, v, d in plan))
        self.produce_while(plan, batches=[])

    def check_buffer_limit(self):
        """The statistics of the whole run: no task ever buffered more than
        the limit and one record, and (odd seeds, without kills) some task
        of some completed checkpoint switched to unaligned on the limit."""
        stats = json.loads(self.ksnap("checkpoints", "list", self.job_file,
                                      "--json", "--history", "1000"))
        limit = BUFFER_LIMIT_MIB << 20
        most, switched, completed = 0, [], 0
        for ck in stats["history"]:
            completed += ck["status"] == "COMPLETED"
            for t in ck["tasks"]:
                if not t["acknowledged"]:
                    continue
                most = max(most, t["bytes_buffered"])
                if t.get("unaligned_reason") == "buffer-limit":
                    switched.append("%d:%s" % (ck["id"], t["task"]))
        self.event("statistics: %d completed, most buffered %d bytes, "
                   "switched on the buffer limit: %s" % (
                       completed, most, short(switched)))
        log("buffer-limit seed %d: %d checkpoints completed, most buffered "
            "%d bytes (limit %d), %d switches on the limit" % (
                self.seed, completed, most, limit, len(switched)))
        if not switched and self.seed % 2:  # kills may fall anywhere else
            raise RunFailed("no task switched to unaligned on the buffer "
                            "limit (most buffered: %d bytes)" % most)
        if most > limit + 64 * 1024:
            raise RunFailed("a task buffered %d bytes, over the limit %d" % (
                most, limit))

    def check_peak_rss(self):
        """The count worker's peak resident size (VmHWM of its process,
        read before it stops) stays under the limit plus RSS_MARGIN_MIB."""
        w = self.worker_of("count:0")
        with open("/proc/%d/status" % w.popen.pid) as f:
            hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
        cap = (BUFFER_LIMIT_MIB + RSS_MARGIN_MIB) << 10
        log("buffer-limit seed %d: count worker peak RSS %d KiB (cap %d KiB)"
            % (self.seed, hwm, cap))
        if hwm > cap:
            raise RunFailed("count worker's peak RSS %d KiB over %d KiB" % (
                hwm, cap))

    def faults_zombie(self):
        """SIGSTOP the worker of the sink tasks, take over with a new
        worker, SIGCONT the old one. The seed decides whether the new
        worker starts before the coordinator missed the old one's
        heartbeats (it claims tasks another instance owns: the job
        restores naming it) or after (the tasks are vacant)."""
        old = self.worker_of("count:0")
        self.produce(self.batches[0])
        self.sleep(2.0 + self.rng.uniform(0, 1))
        old.signal(signal.SIGSTOP)
        self.produce(self.batches[1])
        # heartbeat.timeout=2s: the coordinator restores after it
        self.sleep(self.rng.choice((0.5, 3.5)) + self.rng.uniform(0, 0.5))
        new = Proc(self, old.name + "-new", old.argv)
        self.procs.append(new)
        new.start()
        self.sleep(1.0 + self.rng.uniform(0, 3.0))
        old.signal(signal.SIGCONT)
        for b in self.batches[2:]:
            self.sleep(0.5)
            self.produce(b)
        self.sleep(3.0)
        self.zombie_output = self.committed()
        deadline = time.time() + 10
        while old.alive() and time.time() < deadline:
            time.sleep(0.2)
        if old.alive():
            raise RunFailed("the zombie worker %s still runs: its tasks "
                            "were taken over, it must stop" % old.name)
        old.stop()

    # --- check ---------------------------------------------------------
    def check(self, out):
        """None if @p out is exactly the model's output, in order, else a
        summary."""
        got = collections.defaultdict(list)
        for k, v, _ in out:
            got[k].append(int(v) if v.isdigit() else v)
        problems = []
        for w in sorted(set(got) | set(self.model)):
            vals = sorted(got.get(w, []), key=lambda x: (str(type(x)), x))
            want = list(range(1, self.model.get(w, 0) + 1))
            if vals != want:
                c = collections.Counter(vals)
                dup = sorted(v for v, n in c.items() if n > 1)
                miss = sorted(set(want) - set(vals))
                extra = sorted(set(vals) - set(want), key=str)
                problems.append("%s: n=%d got %d values; duplicates %s; "
                                "missing %s; unexpected %s" % (
                                    w, self.model.get(w, 0), len(vals),
                                    short(dup), short(miss), short(extra)))
        return "; ".join(problems or self.out_of_order(out)) or None

    @staticmethod
    def out_of_order(out):
        """Per key, in offset order, each value must follow the previous
        one by 1 (plugin/PROTOCOL.md section 2.4): [problem]."""
        last, bad = {}, {}
        for k, v, where in out:
            n = int(v) if v.isdigit() else None
            if k not in bad and (n is None or n != last.get(k, 0) + 1):
                bad[k] = "%s: value %s at %s follows %s" % (
                    k, v, where, last.get(k, "nothing"))
            last[k] = n
        return ["out of order: " + p for p in bad.values()]

    def wait_output(self):
        """Waits until the committed output has as many records as the
        model, then once more (a later checkpoint must not add any).
        Output that stops growing for STALL_S (checkpoints complete every
        second) is final: the run fails at once instead of at the
        timeout."""
        total = sum(self.model.values())
        stall_s = STALL_S + (SLOW_RESTORE_S if self.case == "slow-restore"
                             else 0)
        if self.case == "buffer-limit":  # a checkpoint waits for a batch of
            stall_s += 1000 * SLOW_US / 1e6  # the slow writer's lines
        if self.slow_count():  # a restore's catch-up: up to every word
            stall_s += total * self.slow_count() / 1e6  # at the slow rate
        last, since = -1, self.elapsed()
        while True:
            out = self.committed()
            if len(out) >= total and (not self.dlq or len(
                    self.dead_letters()) >= sum(self.dlq_model.values())):
                break
            if len(out) != last:
                last, since = len(out), self.elapsed()
            stalled = self.elapsed() - since > stall_s
            if stalled or self.elapsed() + 0.5 > self.args.timeout:
                self.save(out)
                raise RunFailed("%s: %d of %d records committed: %s" % (
                    "output stalled for %d s" % stall_s if stalled else
                    "run did not finish in %d s" % self.args.timeout,
                    len(out), total, self.check(out)) +
                    self.commit_window_note(out))
            self.sleep(0.5)
        self.event("committed output complete (%d records)" % len(out))
        self.sleep(2.5)  # > 2 checkpoint intervals: nothing may be added
        return self.committed()

    def final_output(self):
        """The sink's committed output once it is complete (wait_output),
        saved; RunFailed unless it equals the failure-free model."""
        out = self.wait_output()
        self.save(out)
        problem = self.check(out)
        if problem:
            raise RunFailed("committed output differs from the model: " +
                            problem)
        return out

    def commit_window_note(self, out):
        """Names the completed checkpoints no sink commit was reported for
        before a restore: output lost in the commit window, which the
        epoch replay of plugin/PROTOCOL.md section 8 replays (branch repair)."""
        completed, committed = [], set()
        with open(os.path.join(self.dir, "coordinator.log"),
                  errors="replace") as f:
            for line in f:
                for key, dest in (("Completed checkpoint ", completed),
                                  ("fully committed", None)):
                    i = line.find(key)
                    if i < 0:
                        continue
                    if dest is not None:
                        dest.append(int(line[i + len(key):].split()[0]))
                    else:
                        j = line.find("Checkpoint ")
                        committed.add(int(line[j + 11:].split()[0]))
        lost = [n for n in completed if n not in committed]
        return ("; completed checkpoints without 'fully committed by every "
                "sink' (commit window, needs repair): %s" % lost
                if lost else "")

    def execute(self):
        self.topology = ("one", "stage", "task")[self.seed % 3] \
            if self.case in ("random", "dlq", "incremental", "bounded") \
            else "stage"
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file,
                   # buffer-limit: one lines partition per split task
                   self.lines_topic + (":2" if self.case == "buffer-limit"
                                       else ":3"),
                   self.counts_topic + ":3",
                   *([self.dlq_topic + ":3"] if self.dlq else []))
        self.event("case %s seed %d topology %s, %d words" % (
            self.case, self.seed, self.topology, sum(self.model.values())))
        hooks = {"meta-window": ("coordinator",
                                 "coord.before-complete"),
                 "commit-window": ("count:0", "sink.before-commit:count[0]"),
                 "dlq-commit-window": ("split:0",
                                       "sink.before-commit:split[0]")}
        if self.case in hooks:
            self.produce(self.all_lines() if self.args.backlog
                         else self.batches[0])
            self.faults_hook(self.start_job(hooks[self.case]),
                             hooks[self.case][1])
        elif self.case == "early":
            self.produce(self.batches[0])
            self.start_job()
            self.faults_early()
        elif self.case == "bounded":
            for b in self.batches:
                self.produce(b)
            self.start_job()
        elif self.case == "savepoint" and self.seed % 2 == 0 and \
                faults_compiled_in(self.args.ksnap):
            self.start_job(("coordinator", "coord.savepoint-copy"))
        else:
            self.start_job()
        if self.case in ("random", "dlq"):
            self.faults_random()
        elif self.case == "incremental":
            self.faults_incremental()
        elif self.case == "coordinator":
            self.faults_coordinator()
        elif self.case == "outage":
            self.faults_outage()
        elif self.case == "savepoint":
            self.faults_savepoint()
        elif self.case == "zombie":
            self.faults_zombie()
        elif self.case == "recovery":
            self.faults_recovery()
        elif self.case == "bounded":
            self.faults_bounded()
        elif self.case == "slow-restore":
            self.faults_slow_restore()
        elif self.case == "happy":
            self.produce_while([])
            self.sleep(4.0)  # 250 ms checkpoints: more than 20 in all
        elif self.case == "buffer-limit":
            self.faults_buffer_limit()
        elif self.case == "trigger-catchup":
            self.faults_trigger_catchup()
        self.final_output()
        if self.case == "buffer-limit" and self.seed % 2:
            self.check_peak_rss()
        if self.dlq:
            self.coord.stop()  # its transactions would hold kcat -e back
            problem = self.check_dlq()
            if problem:
                raise RunFailed("dead-letter topic differs from the model: "
                                + problem)
        if self.case == "zombie":
            problem = self.check_prefix(self.zombie_output)
            if problem:
                raise RunFailed("while the zombie ran: " + problem)
        if self.case == "savepoint":
            self.produce_while([], [(0.0, self.savepoint_call())], [])
            # no failure after it: it must complete
            urls = self.check_savepoints()
        if self.case == "coordinator":
            self.check_ids_continue()
        if self.case == "buffer-limit":
            self.check_buffer_limit()
        if self.slow_count() and (self.args.snapshot_on_trigger or
                                  self.case == "trigger-catchup"):
            self.check_trigger_snapshots()
        if self.case == "happy":
            self.check_happy()
        else:
            self.check_restores()
        if self.case == "savepoint":  # never deleted, not even later
            for url in urls:
                self.check_savepoint_dir(url)
        if self.case == "incremental":
            self.count_chain_restores()

    def count_chain_restores(self):
        """Restores of task state in this run that read incremental files
        (restore.c logs each), into self.chain_restores."""
        self.chain_restores = 0
        for w in self.workers:
            with open(os.path.join(self.dir, w.name + ".log"),
                      errors="replace") as f:
                for line in f:
                    i = line.find(" incremental files)")
                    if i > 0 and " state from " in line:
                        n = line[:i].rsplit(" ", 1)[-1]
                        self.chain_restores += int(n) > 0
        self.event("restores from a chain: %d" % self.chain_restores)

    def save(self, out):
        with open(os.path.join(self.dir, "committed.txt"), "w") as f:
            f.writelines("%s %s %s\n" % (w, k, v) for k, v, w in out)

    def check_prefix(self, out):
        """While the run is going, every word's values are 1..k for some k
        (no duplicate, no gap), in offset order: nothing of a zombie got
        in."""
        got = collections.defaultdict(list)
        for k, v, _ in out:
            got[k].append(int(v))
        bad = ["%s: %s" % (w, short(sorted(v))) for w, v in got.items()
               if sorted(v) != list(range(1, len(v) + 1))]
        return "; ".join(bad or self.out_of_order(out)) or None

    def decoded(self, topic):
        """The committed records of @p topic as [(timestamp ms, decoded
        JSON)], in topic order per partition (ksnap record decode)."""
        r = subprocess.run(
            kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
             topic, "-o", "beginning", "-e", "-q",
             "-X", "isolation.level=read_committed", "-f", "%T:%S:%s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise RunFailed("kcat -C: %s" % r.stderr.decode(errors="replace"))
        out, buf, i = [], r.stdout, 0
        while i < len(buf):
            c1 = buf.index(b":", i)
            c2 = buf.index(b":", c1 + 1)
            ts, n = int(buf[i:c1]), int(buf[c1 + 1:c2])
            rec = buf[c2 + 1:c2 + 1 + n]
            i = c2 + 1 + n
            d = subprocess.run([self.args.ksnap, "record", "decode", "-"],
                               input=rec, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            if d.returncode != 0:
                raise RunFailed("undecodable record on %s: %s" % (
                    topic, d.stderr.decode(errors="replace")))
            out.append((ts, json.loads(d.stdout)))
        return out

    def control(self):
        """The committed control records by kind (Trigger, Complete,
        Abort, Restore, Assign): {kind: [(timestamp, body)]}, each list in
        topic order."""
        by_kind = collections.defaultdict(list)
        for ts, rec in self.decoded(self.job + ".ksnap.control"):
            for kind, body in rec["body"].items():
                by_kind[kind].append((ts, body))
        return by_kind

    @staticmethod
    def ids(records):
        return [b["checkpoint_id"] for _, b in records]

    def check_happy(self):
        """Failure-free: at least 20 checkpoints, every one completed but
        the one pending when the coordinator is stopped (no ABORT, no
        RESTORE on the control topic), and no sink transaction
        became visible before its checkpoint's COMPLETE existed: each
        committed progress record (sink task, transaction N) was written
        after a COMPLETE(M >= N) (both timestamps from this host's
        clock)."""
        self.coord.stop()  # its transactions would hold kcat -e back
        control = self.control()
        triggers = self.ids(control["Trigger"])
        completes = control["Complete"]
        done = set(self.ids(completes))
        for kind in ("Abort", "Restore"):
            if control[kind]:
                raise RunFailed("%s records in a failure-free run: %s" % (
                    kind.upper(), control[kind]))
        # the checkpoint pending when the coordinator was stopped is the
        # only one that may be left incomplete
        missed = [i for i in triggers
                  if i not in done and i < max(done, default=0)]
        if len(done) < 20 or missed:
            raise RunFailed("%d checkpoints triggered, %d completed, not "
                            "completed: %s (want >= 20, every one before "
                            "the stop)" % (len(triggers), len(done),
                                           short(missed)))
        progress = self.decoded(self.job + ".ksnap.progress")
        for ts, p in progress:
            n = p["transaction_id"]
            first = min((t for t, b in completes if b["checkpoint_id"] >= n),
                        default=None)
            if first is None or ts < first:
                raise RunFailed("sink %s committed transaction %d at %d, "
                                "before any COMPLETE of checkpoint >= %d "
                                "(first at %s)" % (p["sink_task"], n, ts, n,
                                                   first))
        self.event("%d checkpoints, all completed; %d sink commits, each "
                   "after its COMPLETE" % (len(done), len(progress)))

    # --- the graph harnesses' common steps ------------------------------
    def write_props(self, props):
        """Writes @p props, with the secured servers' settings if any, as
        the job file (self.job_file)."""
        self.job_file = os.path.join(self.dir, "job.properties")
        with open(self.job_file, "w") as f:
            for k, v in dict(props, **secure_props()).items():
                f.write("%s=%s\n" % (k, v))

    def multiset_problem(self, got, records, model=None):
        """None if the Counter @p got (of @p records committed records)
        equals @p model (default self.model), else a summary: duplicates,
        missing, unexpected."""
        model = self.model if model is None else model
        dup = sorted(x for x, n in got.items() if n > 1)
        miss = sorted(set(model) - set(got))
        extra = sorted(set(got) - set(model))
        if not (dup or miss or extra):
            return None
        return "%d records for %d in the model; duplicates %s; missing %s; " \
            "unexpected %s" % (records, sum(model.values()), short(dup),
                               short(miss), short(extra))

    def finish_checked(self):
        """Waits for the whole output, keeps it, and fails the run unless
        it equals the model (self.check) and each failure restored once."""
        self.final_output()
        self.check_restores()

    def check_restores(self):
        """One restore per failure (see the top of this file): RESTOREs
        never outnumber the failures made so far. Prints, per kill, the
        time to the next RESTORE and to the first COMPLETE after it."""
        self.coord.stop()  # its transactions would hold kcat -e back
        control = self.control()
        restores = [ts for ts, _ in control["Restore"]]
        completes = [ts for ts, _ in control["Complete"]]
        timeline = sorted([(t, 0, w) for t, w in self.causes] +
                          [(t, 1, "RESTORE") for t in restores])
        failures = made = 0
        for t, kind, what in timeline:
            if kind == 0:
                failures += 1
                continue
            made += 1
            if made > failures:
                raise RunFailed(
                    "RESTORE %d (at %.3f) after only %d failures %s: more "
                    "than one generation for one failure; RESTOREs at %s" % (
                        made, t / 1000.0, failures,
                        [w for _, w in self.causes[:failures]],
                        ["%.3f" % (x / 1000.0) for x in restores]))
        for t, what in self.causes:
            if what.startswith("restart"):
                continue
            r = min((x for x in restores if x >= t), default=None)
            c = min((x for x in completes if r is not None and x > r),
                    default=None)
            msg = "%s: %s, %s" % (
                what, "RESTORE +%d ms" % (r - t) if r else "no RESTORE",
                "first COMPLETE after it +%d ms" % (c - t) if c else
                "no COMPLETE after it")
            if self.case == "recovery" and r:
                msg += self.recovery_parts(t, r)
            self.event(msg)
            log("     %s" % msg)
        self.event("%d RESTOREs for %d failures" % (len(restores),
                                                   len(self.causes)))

    OPENED = re.compile(r"^(\S+Z) .*: running in generation \d+, restored "
                        r"from checkpoint \d+, opened in (\d+) ms \("
                        r"metadata (\d+), exchange (\d+), sink (\d+), "
                        r"state (\d+), inputs (\d+)\)")

    def recovery_parts(self, t, r):
        """Where the time of the restore at @p r (ms) after the failure at
        @p t went: the tasks that opened after it (their "running" lines:
        the last one's time, and the longest of each part), and the first
        sink commit after it (the progress topic)."""
        opened, parts = [], [0] * 6
        for w in self.workers:
            for line in open(os.path.join(self.dir, w.name + ".log"),
                             errors="replace"):
                m = self.OPENED.match(line)
                if not m:
                    continue
                ts = datetime.datetime.strptime(
                    m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                        tzinfo=datetime.timezone.utc).timestamp() * 1000.0
                if ts >= r:
                    opened.append(ts)
                    parts = [max(a, int(b)) for a, b in
                             zip(parts, m.groups()[1:])]
        commits = [ts for ts, _ in
                   self.decoded(self.job + ".ksnap.progress") if ts > r]
        return (", %d tasks running +%d ms (longest open %d ms: metadata "
                "%d, exchange %d, sink %d, state %d, inputs %d), first sink "
                "commit +%s ms" % (
                    len(opened), max(opened) - t if opened else -1,
                    *parts,
                    "%d" % (min(commits) - t) if commits else " none"))

    def check_ids_continue(self):
        """Checkpoint ids never go back after a coordinator restart: every
        committed TRIGGER on the control topic has a new, higher id. (The
        log may say "Triggering checkpoint N" twice: a coordinator killed
        before its TRIGGER transaction committed used N for nothing.)"""
        self.coord.stop()  # its transactions would hold kcat -e back
        ids = self.ids(self.control()["Trigger"])
        if not ids or len(ids) != len(set(ids)) or ids != sorted(ids):
            raise RunFailed("checkpoint ids reused across coordinator "
                            "restarts: %s" % short(ids, 40))
        self.event("checkpoint ids %d..%d, never reused" % (ids[0], ids[-1]))

    def run(self):
        """@returns True if the run passed."""
        ok = False
        case = getattr(self, "name", self.case)  # a harness's own name
        try:
            self.execute()
            ok = True
        except RunFailed as e:
            self.event("FAILED: %s" % e)
            log("FAILED case %s seed %d: %s" % (case, self.seed, e))
        finally:
            self.stop_all()
            self.events.close()
        secs = self.elapsed()
        if ok and not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        if ok:
            log("ok   case %s seed %d (%.1f s)" % (case, self.seed, secs))
        else:
            log("     logs kept in %s" % self.dir)
            log("     reproduce: %s --case %s --seed %d --runs 1" % (
                sys.argv[0], case, self.seed))
        return ok


def faults_compiled_in(ksnap):
    """True if @p ksnap is a test build with the fault hooks."""
    out = subprocess.run([ksnap, "version"], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return "fault injection: compiled in" in out


def short(xs, n=12):
    xs = list(xs)
    return str(xs) if len(xs) <= n else str(xs[:n])[:-1] + ", ...]"


def final_counts_problem(out, model):
    """None if the sink records @p out ([(word, value, where)]) are one
    (word, n) per word of @p model (word -> n): what an operator that
    emits only in its finish writes; else the first differences."""
    got = collections.defaultdict(list)
    for k, v, _ in out:
        got[k].append(v)
    bad = ["%s: %s, model %d" % (w, short(got.get(w, [])), model.get(w, 0))
           for w in sorted(set(got) | set(model))
           if got.get(w, []) != [str(model.get(w, 0))]]
    return "; ".join(bad[:10]) or None


def add_run_options(ap):
    """The options of every harness's runs: seeds, time, directories."""
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--runs", type=int, default=1,
                    help="runs with seeds SEED, SEED+1, ...")
    ap.add_argument("--timeout", type=float, default=90,
                    help="seconds a run may take")
    ap.add_argument("--run-root", default=None,
                    help="where run directories go (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the run directories of passed runs too")


def check_env():
    """@returns None when the test servers' env and kcat are there, else
    the exit status (logged)."""
    missing = [k for k in ENV_KEYS if not os.environ.get(k)]
    if missing:
        log("missing %s: source tests/.run/env (tests/servers/up.sh)" %
            ", ".join(missing))
        return 1
    if not shutil.which("kcat"):
        log("kcat not found on PATH")
        return 1
    return None


def run_seeds(args, prefix, make_run, what):
    """The runs of a harness with a command line of its own (dagrun.py,
    scalerun.py, spwaitrun.py): KSNAP_E2E_MAX_RUNS, the run root (per
    Kafka version), a run per seed (@p make_run(seed) gives a Run), the
    summary naming @p what. @returns the exit status."""
    if os.environ.get("KSNAP_E2E_MAX_RUNS"):
        args.runs = min(args.runs, int(os.environ["KSNAP_E2E_MAX_RUNS"]))
    if args.run_root and os.environ.get("KSNAP_TEST_KAFKA_VERSION"):
        args.run_root = os.path.join(
            args.run_root, "kafka-" + os.environ["KSNAP_TEST_KAFKA_VERSION"])
    args.run_root = args.run_root or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(args.run_root, exist_ok=True)
    t0 = time.monotonic()
    failed = [s for s in range(args.seed, args.seed + args.runs)
              if not make_run(s).run()]
    log("%d of %d %s runs passed in %.0f s%s" % (
        args.runs - len(failed), args.runs, what, time.monotonic() - t0,
        "; failed seeds: %s" % failed if failed else ""))
    if not failed and not args.keep:
        shutil.rmtree(args.run_root, ignore_errors=True)
    return 1 if failed else 0


def arg_parser():
    """The command line of this harness (also the defaults option_defaults()
    gives harnesses that run Run with a command line of their own)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--poison-lib", default=None,
                    help="libksnap_test_poison.so (cases dlq*)")
    ap.add_argument("--slow-lib", default=None,
                    help="libksnap_test_slow.so (case buffer-limit)")
    ap.add_argument("--case", default="random",
                    choices=["random", "coordinator", "outage", "meta-window",
                             "commit-window", "early", "zombie", "happy",
                             "slow-restore", "dlq", "dlq-commit-window",
                             "recovery", "savepoint", "buffer-limit",
                             "incremental", "bounded", "trigger-catchup"])
    ap.add_argument("--snapshot-on-trigger", action="store_true",
                    help="configure the job unaligned with "
                    "snapshot-on-trigger (any case)")
    ap.add_argument("--backlog", action="store_true",
                    help="produce the input at once, not a batch a second "
                    "(cases that produce while they run)")
    ap.add_argument("--slow-count", type=int, default=None, metavar="US",
                    help="with --slow-lib: each count task sleeps US "
                    "microseconds per record (default %d in case "
                    "trigger-catchup, else 0)" % SLOW_COUNT_US)
    add_run_options(ap)
    ap.add_argument("--secure", action="store_true",
                    help="only on the secured servers (tests/servers/"
                    "secure.sh): skipped (77) without them")
    return ap


def option_defaults(args):
    """Gives @p args every option of this harness it lacks, at its default:
    Run reads them all (dagrun.py has a command line of its own)."""
    for k, v in vars(arg_parser().parse_args(
            ["--ksnap", "", "--lib", ""])).items():
        if not hasattr(args, k):
            setattr(args, k, v)
    return args


def main():
    args = arg_parser().parse_args()
    if args.secure and not os.environ.get("KSNAP_TEST_KAFKA_SECURE_DIR"):
        log("skipped: --secure and no secured servers (source "
            "tests/.run/secure/env)")
        return SKIPPED
    if check_env():
        return 1
    absent = ["--%s %s" % (k.replace("_", "-"), v) for k, v in (
        ("ksnap", args.ksnap), ("lib", args.lib),
        ("poison_lib", args.poison_lib), ("slow_lib", args.slow_lib))
        if v and not os.path.isfile(v)]
    if absent:  # else the job runs for the stall timeout with no output
        log("no such file: %s" % ", ".join(absent))
        return 1
    args.ksnap = os.path.abspath(args.ksnap)
    args.lib = os.path.abspath(args.lib)
    if args.poison_lib:
        args.poison_lib = os.path.abspath(args.poison_lib)
    if args.slow_lib:
        args.slow_lib = os.path.abspath(args.slow_lib)
    if args.case in FAULT_CASES and not faults_compiled_in(args.ksnap):
        log("skipped: case %s needs the fault hooks (KSNAP_FAULT) and %s has "
            "none; configure with -DKSNAP_FAULT_INJECTION=ON (tests/run.sh "
            "does)" % (args.case, args.ksnap))
        return SKIPPED
    if os.environ.get("KSNAP_E2E_MAX_RUNS"):
        args.runs = min(args.runs, int(os.environ["KSNAP_E2E_MAX_RUNS"]))
    shared_root = None  # --run-root, when the runs go to a subdirectory
    if args.run_root and os.environ.get("KSNAP_TEST_KAFKA_VERSION"):
        shared_root = args.run_root
        args.run_root = os.path.join(
            args.run_root, "kafka-" + os.environ["KSNAP_TEST_KAFKA_VERSION"])
    args.run_root = args.run_root or tempfile.mkdtemp(prefix="ksnap-e2e-")
    os.makedirs(args.run_root, exist_ok=True)
    t0 = time.monotonic()
    failed, chain_restores = [], 0
    for s in range(args.seed, args.seed + args.runs):
        run = Run(args, args.case, s)
        if not run.run():
            failed.append(s)
        chain_restores += getattr(run, "chain_restores", 0)
    n = args.runs
    log("%d of %d %s runs passed in %.0f s (%.1f s per run)%s" % (
        n - len(failed), n, args.case, time.monotonic() - t0,
        (time.monotonic() - t0) / n,
        "; failed seeds: %s" % failed if failed else ""))
    if not failed and not args.keep:
        shutil.rmtree(args.run_root, ignore_errors=True)
        if shared_root:
            try:  # unless another broker's failed runs are kept there
                os.rmdir(shared_root)
            except OSError:
                pass
    if args.case == "incremental" and not failed:
        log("restores from an incremental chain: %d" % chain_restores)
        if not chain_restores:
            log("FAILED: no restore of the incremental runs read a chain")
            return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
