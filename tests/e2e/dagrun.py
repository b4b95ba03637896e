#!/usr/bin/env python3
"""Crash tests of a job whose graph is not a straight line (stdlib only),
on the real test servers, with the conventions and helpers of killrun.py.

The job (the word count's operators, libwordcount.so):

    source lines  -> split  (P=2) -+-> counta (P=2) -> sink counts_a
                                   |
    source lines2 -> split2 (P=1) -+-> countb (P=3) -> sink counts_b
                                       (reads split and split2)

split fans out to two stages of parallelisms 2 and 3 (each reads its own
exchange topic of split, partitioned for it); countb fans in two writer
stages (its barriers align over the channels of both); two sinks. The
model of the failure-free run: for every word, counts_a holds 1..n (n =
its occurrences in lines) and counts_b 1..m (m = its occurrences in lines
and lines2), each 1, 2, ... in offset order.

Cases (--case):
  happy    no fault
  random   kill -9 a random worker (one per stage) or the coordinator 1 to
           3 times at random (seeded) times, each restarted after a random
           delay; every failure restores the job once (check_restores)
  rescale  the first half of the batches, `ksnap savepoint` once their
           output is committed, stop; start again with --from-savepoint at
           countb P=4 (split's exchange topic for it is a new one,
           JOB.split.p4, with no position in the savepoint), feed the
           rest, kill -9 countb's worker once and restart it
  join     another job: the enrichment join of examples/enrich (two
           inputs sharing keyed state), killed as in random; see
           joinrun.py (needs --join-lib libenrich.so)
  stamp    another job: record timestamps set from the content, kept
           through an exchange and a keyed count to the sink, killed as
           in random; see stamprun.py (needs --stamp-lib
           libksnap_test_stamp.so)
  timers   another job: timers without a key (each must fire exactly
           once across restores), killed as in random; see tickrun.py
           (needs --timers-lib libksnap_test_timers.so)
  timers-after-commit  the same job, its sink crashing right after its
           first commit, timers pending (see tickrun.py)
  timers-commit-window  the same job, its sink crashing (fault hook)
           between a COMPLETE and its commit in an epoch where timers
           fired: the epoch replay must fire them again (tickrun.py)
  timers-exchange-window  the same, the ticker behind an exchange topic
  timers-window-random  one of the two, crashing at a random commit
           window, then kill -9s at random (tickrun.py)
  router   another job: examples/router, records routed by content to
           named outputs (two sinks, a side output, a stage reading a
           named output) with headers end to end, killed as in random; see
           routerrun.py (needs --router-lib librouter.so)
  router-commit-window  the same job, route[0] crashing (fault hook)
           between a checkpoint's COMPLETE and its commit: the epoch
           replay must write every output's records again (routerrun.py)
  clicks   another job: examples/clicks, clicks per page per minute in
           tumbling event-time windows (watermarks from the source
           partitions, event-time timers, allowed lateness with late
           firings, a side output for later clicks), killed as in random;
           see clicksrun.py (needs --clicks-lib libclicks.so)
  clicks-happy  the same job without faults: no RESTORE at all, some
           late firings; and the example of examples/clicks/README.md
           without servers (ksnap run --input)
  clicks-commit-window  the same job, window[0] crashing (fault hook)
           between COMPLETE(2) and its commit, epoch 2 holding window
           firings: the epoch replay must fire them again from the firing
           log and write exactly those results again (clicksrun.py)
  clicks-rescale  the same job (tumbling windows) stopped with a
           savepoint while windows are open (some fired, their cleanup
           pending; some with their firing pending), started from it at
           parse P=3, window P=3, kill -9 of a worker, stopped again and
           started at lower parallelisms (clicksrun.py)
  clicks-sliding  the clicks job and faults of clicks, window running
           window_sliding (the window library: sliding windows of 60 s
           every 20 s); per (page, window start) the final count
  clicks-session  the same, window running window_session (session
           windows per page, gap 10 s, merged by stragglers): the final
           sessions' counts, other committed sessions within one of them
           and below its count (clicksrun.py)

Environment and run directories as for killrun.py.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clicksrun  # noqa: E402
import joinrun  # noqa: E402
import killrun  # noqa: E402
import routerrun  # noqa: E402
import stamprun  # noqa: E402
import tickrun  # noqa: E402

STAGES = [("split", 2), ("split2", 1), ("counta", 2), ("countb", 3)]


class DagRun(killrun.Run):
    def __init__(self, args, case, seed):
        super().__init__(args, "dag-" + case, seed)
        self.case = case
        self.lines2_topic = self.job + ".lines2"
        self.sinks = {"a": self.job + ".counts_a", "b": self.job + ".counts_b"}
        self.stages = dict(STAGES)

    def write_job(self):
        lib = self.args.lib
        props = {
            **self.quick_props(),
            "stage.split.operator": lib + ":split",
            "stage.split.parallelism": "2",
            "stage.split.input": "source:" + self.lines_topic,
            "stage.split2.operator": lib + ":split",
            "stage.split2.parallelism": "1",
            "stage.split2.input": "source:" + self.lines2_topic,
            "stage.counta.operator": lib + ":count",
            "stage.counta.parallelism": "2",
            "stage.counta.input": "stage:split",
            "stage.counta.output": "sink:" + self.sinks["a"],
            "stage.countb.operator": lib + ":count",
            "stage.countb.parallelism": str(self.stages["countb"]),
            "stage.countb.input": "stage:split, stage:split2",
            "stage.countb.output": "sink:" + self.sinks["b"],
        }
        props.update(killrun.secure_props())
        if self.case == "rescale":
            props["state.savepoints.dir"] = "file://" + self.savepoint_dir()
            # exchange partitions fixed, as a job that may rescale has them
            # (never fewer than a reader's parallelism)
            props["stage.split.partitions"] = "4"
            props["stage.split2.partitions"] = "4"
        self.job_file = os.path.join(self.dir, "job.properties")
        with open(self.job_file, "w") as f:
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))

    def make_input(self):
        """self.batches: [(lines, lines2)]; self.model: "a:word" / "b:word"
        -> occurrences (the failure-free run's last count)."""
        vocab = killrun.WORDS[:self.rng.randint(8, len(killrun.WORDS))]

        def lines(n):
            return [" ".join(self.rng.choice(vocab)
                             for _ in range(self.rng.randint(1, 8)))
                    for _ in range(n)]
        one, two = lines(self.rng.randint(400, 900)), \
            lines(self.rng.randint(200, 500))
        nb = self.rng.randint(3, 5)
        s1, s2 = (len(one) + nb - 1) // nb, (len(two) + nb - 1) // nb
        self.batches = [(one[i * s1:(i + 1) * s1], two[i * s2:(i + 1) * s2])
                        for i in range(nb)]
        a = collections.Counter(w for l in one for w in l.split())
        self.model = self.model_of(self.batches)
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            f.write("\n".join(one) + "\n--- lines2\n" + "\n".join(two) + "\n")

    @staticmethod
    def model_of(batches):
        """"a:word" / "b:word" -> occurrences in @p batches."""
        a = collections.Counter(w for one, _ in batches
                                for l in one for w in l.split())
        b = a + collections.Counter(w for _, two in batches
                                    for l in two for w in l.split())
        return collections.Counter(
            {"%s:%s" % (s, w): n for s, c in (("a", a), ("b", b))
             for w, n in c.items()})

    def produce(self, batch):
        for topic, lines in zip((self.lines_topic, self.lines2_topic), batch):
            if not lines:
                continue
            r = subprocess.run(killrun.kcat() + [
                "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t", topic],
                input=("\n".join(lines) + "\n").encode(),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
            if r.returncode != 0:
                raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                    errors="replace"))
        self.event("produced %d + %d lines" % tuple(len(x) for x in batch))

    def committed(self):
        """Both sinks' read_committed content, keys "a:word" / "b:word",
        each topic partition by partition in offset order."""
        out = []
        for s, topic in sorted(self.sinks.items()):
            self.counts_topic = topic
            out += [("%s:%s" % (s, k), v, "%s %s" % (s, where))
                    for k, v, where in super().committed()]
        return out

    def start_job(self, fault=None, savepoint=None):
        self.start_stage_workers(self.stages, savepoint)

    def execute(self):
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":3",
                   self.lines2_topic + ":2", self.sinks["a"] + ":3",
                   self.sinks["b"] + ":3")
        self.event("case %s seed %d, %d + %d counts" % (
            self.case, self.seed,
            sum(n for k, n in self.model.items() if k.startswith("a:")),
            sum(n for k, n in self.model.items() if k.startswith("b:"))))
        self.start_job()
        if self.case == "random":
            self.faults_random()
        elif self.case == "rescale":
            self.rescale()
        else:
            self.produce_while([])
        self.final_output()
        self.check_restores()

    def rescale(self):
        """The case rescale (see the top of this file), up to the last
        batch produced."""
        half = max(1, len(self.batches) // 2)
        first, rest = self.batches[:half], self.batches[half:]
        full, self.model = self.model, self.model_of(first)
        self.produce_while([], batches=first)
        self.wait_output()
        out = self.ksnap("savepoint", self.job_file, "--timeout", "30")
        prefix = "file://" + self.savepoint_dir() + "/savepoint-"
        urls = [w for w in out.split() if w.startswith(prefix)]
        if not urls:
            raise killrun.RunFailed("no %s... in ksnap savepoint's output: "
                                    "%s" % (prefix, out))
        self.event("savepoint %s" % urls[0])
        self.stop_all()
        self.model = full
        self.stages["countb"] = 4
        self.write_job()
        self.cause("start from the savepoint at countb P=4")
        # the workers' new instances replace the stopped ones the control
        # topic names: the coordinator restores once more for them
        self.cause("new worker instances")
        self.start_job(savepoint=urls[0])
        countb = next(w for w in self.workers if w.name == "worker-countb")
        self.produce_while([(1.0 + 0.7 * len(rest), countb, 0.5)],
                           batches=rest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--case", default="random",
                    choices=["random", "happy", "rescale", "join", "stamp",
                             "timers", "timers-after-commit",
                             "timers-commit-window",
                             "timers-exchange-window",
                             "timers-window-random", "router",
                             "router-commit-window", "clicks",
                             "clicks-happy", "clicks-commit-window",
                             "clicks-rescale", "clicks-sliding",
                             "clicks-session"])
    ap.add_argument("--join-lib", help="libenrich.so (case join)")
    ap.add_argument("--stamp-lib",
                    help="libksnap_test_stamp.so (case stamp)")
    ap.add_argument("--timers-lib",
                    help="libksnap_test_timers.so (case timers)")
    ap.add_argument("--router-lib", help="librouter.so (case router)")
    ap.add_argument("--clicks-lib", help="libclicks.so (cases clicks*)")
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    args.ksnap, args.lib = os.path.abspath(args.ksnap), \
        os.path.abspath(args.lib)
    for k in ("join_lib", "stamp_lib", "timers_lib", "router_lib",
              "clicks_lib"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    if args.case in ("router-commit-window", "timers-commit-window",
                     "timers-exchange-window", "timers-window-random",
                     "clicks-commit-window") and \
            not killrun.faults_compiled_in(args.ksnap):
        killrun.log("skipped: case %s needs the fault hooks (KSNAP_FAULT); "
                    "configure with -DKSNAP_FAULT_INJECTION=ON" % args.case)
        return killrun.SKIPPED
    runs = {"join": joinrun.JoinRun, "stamp": stamprun.StampRun,
            "router": routerrun.RouterRun,
            "router-commit-window": lambda a, s: routerrun.RouterRun(
                a, s, "router-commit-window"),
            "clicks": clicksrun.ClicksRun,
            "clicks-happy": lambda a, s: clicksrun.ClicksRun(
                a, s, "clicks-happy"),
            "clicks-commit-window": lambda a, s: clicksrun.ClicksRun(
                a, s, "clicks-commit-window"),
            "clicks-rescale": lambda a, s: clicksrun.ClicksRun(
                a, s, "clicks-rescale"),
            "clicks-sliding": lambda a, s: clicksrun.ClicksRun(
                a, s, "clicks-sliding"),
            "clicks-session": lambda a, s: clicksrun.ClicksRun(
                a, s, "clicks-session")}

    def make_run(seed):
        if args.case in runs:
            return runs[args.case](args, seed)
        if args.case.startswith("timers"):
            return tickrun.TickRun(args, args.case, seed)
        return DagRun(args, args.case, seed)
    return killrun.run_seeds(args, "ksnap-dag-", make_run,
                             "dag %s" % args.case)


if __name__ == "__main__":
    sys.exit(main())
