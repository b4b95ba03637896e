"""The enrichment join of examples/enrich under crash tests (stdlib only),
run by dagrun.py --case join (its command line, killrun.py's conventions
and helpers). The job (libenrich.so):

    source events    (3 partitions) -> orders    keyby (P=2) -+
                                                               +-> join
    source customers (2 partitions,  -> customers keyby (P=1) -+   enrich
                      compacted)                                   (P=2)
                                                                   -> sink

join reads two exchange topics, both partitioned by key group for its two
tasks: an event and its customer reach the same task and share the key's
state. The input: customer keys c000..; most have one reference value
(never updated), the others none; events o<i> on random keys. Both topics
are produced at the same time, batch by batch, the references spread over
the batches, so an event may come before or after its key's reference.

The model does not depend on that order: an event is emitted exactly once,
as (key, "o<i>|REFERENCE"), whether it found the reference in the state or
waited for it, and events of keys without reference are never emitted. So
the sink's read_committed content must equal the multiset {(key,
"o<i>|ref(key)") : event o<i> on a key with a reference}; the order of one
key's records depends on arrival and is not checked.

Before the run, `ksnap config check` must refuse the same job with join
reading the two source topics directly (they cannot be co-partitioned),
naming the stage and both inputs, and accept examples/enrich's job file.
Faults as dagrun.py's random case: 1 to 3 kill -9s of a random worker or
the coordinator at random (seeded) times, each restarted; every failure
restores the job once.
"""
import collections
import os
import subprocess

import killrun

STAGES = [("orders", 2), ("customers", 1), ("join", 2)]


class JoinRun(killrun.Run):
    def __init__(self, args, seed):
        super().__init__(args, "join", seed)
        self.events_topic = self.job + ".events"
        self.refs_topic = self.job + ".customer-table"
        self.counts_topic = self.job + ".enriched"  # committed() reads it
        self.stages = dict(STAGES)

    def props(self, direct=False):
        """The job; @p direct: join reads the source topics itself."""
        lib = self.args.join_lib
        props = {
            **self.quick_props(),
            "stage.orders.operator": lib + ":keyby",
            "stage.orders.parallelism": "2",
            "stage.orders.input": "source:" + self.events_topic,
            "stage.customers.operator": lib + ":keyby",
            "stage.customers.parallelism": "1",
            "stage.customers.input": "source:" + self.refs_topic,
            "stage.join.operator": lib + ":enrich",
            "stage.join.parallelism": "2",
            "stage.join.input": "stage:orders, stage:customers",
            "stage.join.output": "sink:" + self.counts_topic,
        }
        if direct:
            for s in ("orders", "customers"):
                for k in [k for k in props if k.startswith("stage.%s." % s)]:
                    del props[k]
            props["stage.join.input"] = "source:%s, source:%s" % (
                self.events_topic, self.refs_topic)
        props.update(killrun.secure_props())
        return props

    def write(self, name, props):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))
        return path

    def write_job(self):
        self.job_file = self.write("job.properties", self.props())

    def make_input(self):
        """self.batches: [(events, references)], each [(key, value)];
        self.model: (key, enriched value) -> 1."""
        keys = ["c%03d" % i for i in range(self.rng.randint(30, 80))]
        refs = {k: "name-%s-%d" % (k, self.rng.randint(0, 999))
                for k in keys if self.rng.random() < 0.75}
        events = [(self.rng.choice(keys), "o%d" % i)
                  for i in range(self.rng.randint(500, 1000))]
        ref_list = list(refs.items())
        self.rng.shuffle(ref_list)
        nb = self.rng.randint(3, 5)
        se = (len(events) + nb - 1) // nb
        sr = (len(ref_list) + nb - 1) // nb
        self.batches = [(events[i * se:(i + 1) * se],
                         ref_list[i * sr:(i + 1) * sr]) for i in range(nb)]
        self.model = collections.Counter(
            (k, "%s|%s" % (v, refs[k])) for k, v in events if k in refs)
        self.waiting = sum(1 for k, _ in events if k not in refs)
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            for e, r in self.batches:
                f.write("".join("event %s %s\n" % kv for kv in e) +
                        "".join("ref %s %s\n" % kv for kv in r))

    def produce(self, batch):
        for topic, recs in zip((self.events_topic, self.refs_topic), batch):
            if not recs:
                continue
            r = subprocess.run(killrun.kcat() + [
                "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t", topic,
                "-K", ":"],
                input="".join("%s:%s\n" % kv for kv in recs).encode(),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
            if r.returncode != 0:
                raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                    errors="replace"))
        self.event("produced %d events + %d references" % tuple(
            len(x) for x in batch))

    def check(self, out):
        """None if @p out holds exactly the model's records, else a
        summary (duplicates, missing, unexpected)."""
        return self.multiset_problem(
            collections.Counter((k, v) for k, v, _ in out), len(out))

    def check_refused(self):
        """join reading both source topics at P=2 is refused at check."""
        path = self.write("direct.properties", self.props(direct=True))
        r = subprocess.run([self.args.ksnap, "config", "check", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        out = r.stdout.decode(errors="replace")
        want = ("stage.join.input: the inputs of stage join (source:%s, "
                "source:%s) cannot be co-partitioned by key" % (
                    self.events_topic, self.refs_topic))
        if r.returncode == 0 or want not in out:
            raise killrun.RunFailed("ksnap config check of a join reading "
                                    "two source topics: exit %d, expected "
                                    "\"%s\" in: %s" % (r.returncode, want,
                                                       out))
        self.event("refused at check: " + out.strip().splitlines()[-1])

    def check_example(self):
        """examples/enrich/enrich.properties passes ksnap config check."""
        env = self.example_env(self.args.join_lib)
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..", "examples", "enrich",
                            "enrich.properties")
        r = subprocess.run([self.args.ksnap, "config", "check", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60, env=env)
        if r.returncode != 0:
            raise killrun.RunFailed("ksnap config check %s: exit %d: %s" % (
                path, r.returncode, r.stdout.decode(errors="replace")))

    def start_job(self, fault=None):
        self.start_stage_workers(self.stages)

    def execute(self):
        if not self.args.join_lib:
            raise killrun.RunFailed("case join needs --join-lib")
        self.write_job()
        self.make_input()
        self.check_refused()
        self.check_example()
        out = self.ksnap("topics", "create", self.job_file,
                         self.events_topic + ":3",
                         self.refs_topic + ":2:compact",
                         self.counts_topic + ":3")
        if "%s: created, 2 partitions, cleanup.policy=compact" % \
                self.refs_topic not in out:
            raise killrun.RunFailed("the reference topic was not created "
                                    "compacted: " + out)
        self.event("seed %d: %d enriched records expected, %d events "
                   "without reference" % (self.seed, sum(
                       self.model.values()), self.waiting))
        self.start_job()
        self.faults_random()
        self.finish_checked()
