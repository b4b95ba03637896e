"""Named outputs and record headers under crash tests (stdlib only), run
by dagrun.py --case router (its command line, killrun.py's conventions and
helpers). The job is examples/router (librouter.so):

    source lines (3 partitions) -> route (P=2) --default-------> sink small
                                     |  errors.tolerance=all
                                     +--output "bad"-----------> sink bad
                                     +--output "large"--> exchange
                                     |                    JOB.route.large
                                     |                    -> total (P=2) -> sink large
                                     +--failed records---------> dead-letter topic

A source line is "ACCOUNT AMOUNT SEQ" with key ACCOUNT (an account's lines
are in one partition, in input order), or "ACCOUNT oops SEQ" (malformed:
route's side output "bad"), or "ACCOUNT -N SEQ" (route fails on it: the
dead-letter topic). Each batch is produced with the headers
"batch=B" and "src=e2e". route emits to exactly one output by content,
forwarding the input headers and adding router.route (and router.reason
for bad records); total (keyed, running sum of an account's large amounts)
forwards the headers it read from the exchange topic.

Case router-commit-window: route[0] crashes (fault hook) after
COMPLETE(N) and before committing its transaction, which holds its
default output's, its side output's and its dead-letter records: the
epoch replay must produce each of them again, to its own output, with
its headers (and must not write the named output "large" to the exchange
topic again, where total read it already).

The model of the failure-free run, from the input alone: every record of
every sink and of the dead-letter topic, as (topic, key, value, headers):
  small  (A, "A N SEQ")        batch=B,src=e2e,router.route=small    0 <= N < 1000
  large  (A, "A N SEQ TOTAL")  batch=B,src=e2e,router.route=large    N >= 1000
  bad    (A, "A oops SEQ")     batch=B,src=e2e,router.route=bad,router.reason=...
  dlq    (A, "A -N SEQ")       batch=B,src=e2e (the failed record's own)
TOTAL is the account's sum of large amounts up to that line in input order.
The check compares the read_committed records with it as multisets: an
emit_to that wrote to every output, a header dropped at the exchange hop
or at a sink, a duplicate or a loss all differ. Faults as dagrun.py's
random case: 1 to 3 kill -9s of a random worker or the coordinator at
random (seeded) times, each restarted; every failure restores the job
once.
"""
import collections
import os
import subprocess

import killrun

STAGES = [("route", 2), ("total", 2)]
LARGE = 1000
REASON = "not ACCOUNT AMOUNT with an integer AMOUNT"


class RouterRun(killrun.Run):
    def __init__(self, args, seed, case="router"):
        super().__init__(args, case, seed)
        self.sinks = {s: "%s.%s" % (self.job, s)
                      for s in ("small", "large", "bad", "dlq")}
        self.stages = dict(STAGES)

    def write_job(self):
        lib = self.args.router_lib
        props = {
            **self.quick_props(),
            "stage.route.operator": lib + ":route",
            "stage.route.parallelism": "2",
            "stage.route.input": "source:" + self.lines_topic,
            "stage.route.output": "sink:" + self.sinks["small"],
            "stage.route.output.large": "",
            "stage.route.output.bad": "sink:" + self.sinks["bad"],
            "stage.route.errors.tolerance": "all",
            "stage.route.errors.deadletterqueue.topic.name":
                self.sinks["dlq"],
            "stage.total.operator": lib + ":total",
            "stage.total.parallelism": "2",
            "stage.total.input": "stage:route.large",
            "stage.total.output": "sink:" + self.sinks["large"],
        }
        self.write_props(props)

    def make_input(self):
        """self.batches: lists of (key, value); self.model: (sink, key,
        value, headers) -> 1."""
        accounts = ["acct%02d" % i for i in range(self.rng.randint(5, 20))]
        lines = []
        for seq in range(self.rng.randint(400, 800)):
            a, r = self.rng.choice(accounts), self.rng.random()
            amount = ("oops" if r < 0.05 else
                      str(-self.rng.randint(1, 50)) if r < 0.10 else
                      str(self.rng.randint(0, 2 * LARGE)))
            lines.append((a, "%s %s %d" % (a, amount, seq)))
        nb = self.rng.randint(3, 5)
        step = (len(lines) + nb - 1) // nb
        self.batches = [lines[i:i + step]
                        for i in range(0, len(lines), step)]
        total = collections.Counter()
        self.model = collections.Counter()
        for b, batch in enumerate(self.batches):
            h = "batch=%d,src=e2e" % b
            for a, v in batch:
                n = v.split()[1]
                if n == "oops":
                    rec = ("bad", a, v, h + ",router.route=bad,"
                           "router.reason=" + REASON)
                elif int(n) < 0:
                    rec = ("dlq", a, v, h)
                elif int(n) >= LARGE:
                    total[a] += int(n)
                    rec = ("large", a, "%s %d" % (v, total[a]),
                           h + ",router.route=large")
                else:
                    rec = ("small", a, v, h + ",router.route=small")
                self.model[rec] += 1
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            for b, batch in enumerate(self.batches):
                f.write("".join("%d %s %s\n" % (b, k, v) for k, v in batch))

    def produce(self, batch):
        b = self.batches.index(batch)
        r = subprocess.run(killrun.kcat() + [
            "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
            self.lines_topic, "-K", "\t", "-H", "batch=%d" % b,
            "-H", "src=e2e"],
            input="".join("%s\t%s\n" % kv for kv in batch).encode(),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        if r.returncode != 0:
            raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                errors="replace"))
        self.event("produced batch %d: %d lines" % (b, len(batch)))

    def read(self, sink):
        """@p sink's read_committed records [(partition, offset, key,
        value, headers)]."""
        return killrun.read_records(self.sinks[sink])

    def committed(self):
        """Every sink's and the dead-letter topic's records as (key,
        (sink, key, value, headers), where)."""
        out = []
        for s in sorted(self.sinks):
            out += [(k, (s, k, v, h), "%s %d@%d" % (s, p, o))
                    for p, o, k, v, h in self.read(s)]
        return out

    def check(self, out):
        """None if @p out holds exactly the model's records (headers
        included), else a summary."""
        return self.multiset_problem(
            collections.Counter(v for _, v, _ in out), len(out))

    def start_job(self, fault=None):
        self.start_stage_workers(self.stages)

    def execute(self):
        if not self.args.router_lib:
            raise killrun.RunFailed("case router needs --router-lib")
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":3",
                   *[t + ":3" for t in self.sinks.values()])
        self.event("seed %d: %s" % (self.seed, ", ".join(
            "%s %d" % (s, sum(n for r, n in self.model.items()
                             if r[0] == s)) for s in sorted(self.sinks))))
        if self.case == "router-commit-window":
            hook = "sink.before-commit:route[0]"  # dagrun.py checked it
            self.produce(self.batches[0])
            self.start_stage_workers(self.stages, fault=("route", hook))
            self.faults_hook(next(w for w in self.workers
                                  if w.name == "worker-route"), hook)
        else:
            self.start_job()
            self.faults_random()
        self.finish_checked()
