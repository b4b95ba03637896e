"""Record timestamps under crash tests (stdlib only), run by dagrun.py
--case stamp (its command line, killrun.py's conventions and helpers).
The job (libksnap_test_stamp.so, tests/data/operators/stamp.c):

    source lines (3 partitions) -> restamp (P=2) -> count (P=2) -> sink
                                   timestamp TS    keyed count,
                                   from the line   default timestamp

A source line is "KEY SEQ TS", written with key KEY (so a key's lines are
in one partition, in input order). restamp sets its emit's timestamp to
TS from the content; count, keyed, emits (KEY, "SEQ N SEEN") with the
default timestamp, the input record's: N is the key's count so far and
SEEN the timestamp count saw (the exchange record's Kafka timestamp).
The TS are drawn at random within the last two hours (the broker keeps
and accepts them; they are never in input order), not the clock of any
produce.

The model of the failure-free run, from the input alone: for the i-th
line of key K, "SEQ TS", the sink holds exactly one record (K, "SEQ i TS")
whose Kafka timestamp is TS. The check compares the read_committed
records (key, value, timestamp) with it as multisets: a timestamp lost at
either hop (the exchange record's, the sink record's) differs, and so do
a duplicate or a loss. Faults as dagrun.py's random case: 1 to 3 kill -9s
of a random worker or the coordinator at random (seeded) times, each
restarted; every failure restores the job once.
"""
import collections
import os
import subprocess
import time

import killrun

STAGES = [("restamp", 2), ("count", 2)]


class StampRun(killrun.Run):
    def __init__(self, args, seed):
        super().__init__(args, "stamp", seed)
        self.counts_topic = self.job + ".stamped"
        self.stages = dict(STAGES)

    def write_job(self):
        lib = self.args.stamp_lib
        props = {
            **self.quick_props(),
            "stage.restamp.operator": lib + ":restamp",
            "stage.restamp.parallelism": "2",
            "stage.restamp.input": "source:" + self.lines_topic,
            "stage.count.operator": lib + ":count",
            "stage.count.parallelism": "2",
            "stage.count.input": "stage:restamp",
            "stage.count.output": "sink:" + self.counts_topic,
        }
        self.write_props(props)

    def make_input(self):
        """self.batches: lists of (key, "SEQ TS"); self.model: (key,
        "SEQ N TS ts=TS") -> 1."""
        keys = ["k%02d" % i for i in range(self.rng.randint(10, 40))]
        base = (int(time.time()) - 2 * 3600) * 1000
        lines = [(self.rng.choice(keys), "%d %d" % (
            i, base + self.rng.randint(0, 3600 * 1000)))
            for i in range(self.rng.randint(500, 1000))]
        nb = self.rng.randint(3, 5)
        step = (len(lines) + nb - 1) // nb
        self.batches = [lines[i:i + step]
                        for i in range(0, len(lines), step)]
        n = collections.Counter()
        self.model = collections.Counter()
        for k, v in lines:
            n[k] += 1
            seq, ts = v.split()
            self.model[(k, "%s %d %s ts=%s" % (seq, n[k], ts, ts))] += 1
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            f.write("".join("%s %s\n" % kv for kv in lines))

    def produce(self, batch):
        r = subprocess.run(killrun.kcat() + [
            "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
            self.lines_topic, "-K", ":"],
            input="".join("%s:%s %s\n" % (k, k, v) for k, v in batch)
            .encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=30)
        if r.returncode != 0:
            raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                errors="replace"))
        self.event("produced %d lines" % len(batch))

    def committed(self):
        """The sink's read_committed records [(key, "VALUE ts=T",
        "partition@offset")], T the record's Kafka timestamp."""
        r = subprocess.run(
            killrun.kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"],
                              "-t", self.counts_topic, "-o", "beginning",
                              "-e", "-q", "-X",
                              "isolation.level=read_committed",
                              "-f", "%p %o %T %k %s\\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise killrun.RunFailed("kcat -C: %s" % r.stderr.decode(
                errors="replace"))
        out = []
        for line in r.stdout.decode(errors="replace").splitlines():
            if line.strip():
                p, o, ts, k, v = line.split(" ", 4)
                out.append((int(p), int(o), k, "%s ts=%s" % (v, ts)))
        out.sort()
        return [(k, v, "%d@%d" % (p, o)) for p, o, k, v in out]

    def check(self, out):
        """None if @p out holds exactly the model's records (timestamps
        included), else a summary."""
        return self.multiset_problem(
            collections.Counter((k, v) for k, v, _ in out), len(out))

    def start_job(self, fault=None):
        self.start_stage_workers(self.stages)

    def execute(self):
        if not self.args.stamp_lib:
            raise killrun.RunFailed("case stamp needs --stamp-lib")
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":3",
                   self.counts_topic + ":3")
        self.event("seed %d: %d stamped records expected" % (
            self.seed, sum(self.model.values())))
        self.start_job()
        self.faults_random()
        self.finish_checked()
