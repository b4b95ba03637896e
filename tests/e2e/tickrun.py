"""Timers without a key under crash tests (stdlib only), run by dagrun.py
--case timers (its command line, killrun.py's conventions and helpers).
The job (libksnap_test_timers.so):

    source numbers (3 partitions) -> ticker (P=2) -> sink ticks

(case timers-exchange-window: source numbers -> relay (P=2) -> exchange,
keyed by the number -> ticker (P=2), its timers keyed, -> sink ticks)

ticker reads records without a key, each a number N of 0..M-1 (M up to
1000, every number once), and registers for each a timer without a key
0.3 to 1.3 s ahead whose time carries N (t % 1000 == N); the timer, when
it fires, emits (tNNN, "fired"). The operator keeps nothing else, and a
record's offset is in the snapshot once it was processed: a timer that is
pending at a checkpoint exists after a restore only if the snapshot holds
it, and fires once only if its firing leaves the snapshot in the epoch of
its output. So the sink's read_committed content must be exactly one
(tNNN, "fired") per number. The numbers are produced in batches, one a
second, so that timers are pending at most checkpoints (every 300 ms).

Faults (--case):
  timers-after-commit  checkpoints every 3 s; the worker of ticker is
           killed -9 0.5 s after the sink's first committed output shows
           (both tasks committed, the next COMPLETE seconds away), with
           the timers registered before the checkpoint and not yet fired
           pending in it: they exist after the restore only if the
           snapshot holds them (before timers without a key were in it,
           this lost them), and what they emitted before the kill was
           not committed. Runs in CI.
  timers-commit-window  checkpoints every 1 s, the first batch
           produced before the start; the ticker worker crashes (fault
           hook sink.before-commit@1) between COMPLETE(1) and its commit:
           the first batch's timers fire 0.3 to 1.3 s after its records,
           before the first checkpoint, so epoch 1 holds records and
           firings, and its epoch replay must fire those timers again
           where they fired in the run (the timers' firing log). The case checks that
           the worker's log shows the replay firing at least one; before
           the firing log, the output of those timers was missing. Runs
           in CI (needs the fault hooks).
  timers-exchange-window  the same through an exchange topic (relay in
           front of ticker, keyed timers): the replay of an exchange
           segment fires them. Runs in CI.
  timers-window-random  a random one of the two jobs (seed parity) whose
           ticker worker crashes at sink.before-commit@K, K random in 1..3,
           a batch produced every 0.7 s until then; restarted, then 1 or 2
           kill -9s of a random process at random times while the rest is
           produced. Runs in CI (one seed).
  timers   as dagrun.py's random case: 1 to 3 kill -9s of a random worker
           or the coordinator at random (seeded) times, each restarted.
           A kill between a COMPLETE and a sink's commit is repaired as in
           timers-commit-window. Run by hand.
Every failure restores the job once.
"""
import collections
import os
import subprocess

import killrun

STAGES = [("ticker", 2)]
# the case timers-commit-window: the ticker worker crashes between
# COMPLETE(1) and its commit
COMMIT_HOOK = "sink.before-commit@1"
WINDOW_CASES = ("timers-commit-window", "timers-exchange-window")


class TickRun(killrun.Run):
    def __init__(self, args, case, seed):
        super().__init__(args, case, seed)
        self.numbers_topic = self.job + ".numbers"
        self.counts_topic = self.job + ".ticks"  # committed() reads it
        self.stages = dict(STAGES)
        if case == "timers-exchange-window" or (
                case == "timers-window-random" and seed % 2):
            self.stages = {"relay": 2, "ticker": 2}

    def write_job(self):
        props = {
            "job.name": self.job,
            "execution.checkpointing.interval":
                {"timers-after-commit": "3s",
                 "timers-commit-window": "1s",
                 "timers-exchange-window": "1s",
                 "timers-window-random": "1s"}.get(self.case, "300ms"),
            "execution.checkpointing.timeout": "30s",
            "heartbeat.interval": "200ms",
            "heartbeat.timeout": "2s",
            **self.server_props(),
            "stage.ticker.operator": self.args.timers_lib + ":ticker",
            "stage.ticker.parallelism": "2",
            "stage.ticker.input": "source:" + self.numbers_topic,
            "stage.ticker.output": "sink:" + self.counts_topic,
        }
        if "relay" in self.stages:
            props.update({
                "stage.relay.operator": self.args.timers_lib + ":relay",
                "stage.relay.parallelism": "2",
                "stage.relay.input": "source:" + self.numbers_topic,
                "stage.ticker.input": "stage:relay"})
        self.write_props(props)

    def make_input(self):
        """self.batches: lists of numbers; self.model: tNNN -> 1."""
        numbers = list(range(self.rng.randint(300, 999)))
        self.rng.shuffle(numbers)
        nb = self.rng.randint(4, 7)
        size = (len(numbers) + nb - 1) // nb
        self.batches = [numbers[i * size:(i + 1) * size] for i in range(nb)]
        self.model = collections.Counter("t%03d" % n for n in numbers)
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            f.write("".join("%d\n" % n for n in numbers))

    def produce(self, batch):
        r = subprocess.run(killrun.kcat() + [
            "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
            self.numbers_topic],
            input="".join("%d\n" % n for n in batch).encode(),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        if r.returncode != 0:
            raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                errors="replace"))
        self.event("produced %d numbers" % len(batch))

    def check(self, out):
        """None if @p out holds exactly one (tNNN, "fired") per number,
        else a summary (duplicates, missing, unexpected)."""
        return self.multiset_problem(collections.Counter(
            k if v == "fired" else "%s=%s" % (k, v) for k, v, _ in out),
            len(out))

    def kill_after_commit(self, worker):
        """The case timers-after-commit (see the top): a batch a second
        until the first committed output, then the kill, the restart and
        the other batches."""
        todo = list(self.batches)
        while todo and not self.committed():
            self.produce(todo.pop(0))
            t = self.elapsed() + 1.0
            while self.elapsed() < t and not self.committed():
                self.sleep(0.05)
        while not self.committed():
            if self.elapsed() > 30:
                raise killrun.RunFailed("no committed output in 30 s")
            self.sleep(0.05)
        self.sleep(0.5)
        self.event("first output committed: %d records" % len(
            self.committed()))
        worker.kill9()
        self.sleep(0.5)
        worker.start()
        for b in todo:
            self.produce(b)
            self.sleep(1.0)

    def window_random(self):
        """The case timers-window-random (see the top)."""
        hook = "sink.before-commit@%d" % self.rng.randint(1, 3)
        todo = list(self.batches)
        self.event("fault hook " + hook)
        self.produce(todo.pop(0))
        self.start_job(("ticker", hook))
        ticker = next(w for w in self.workers if w.name == "worker-ticker")
        last = self.elapsed()
        while ticker.alive():
            if self.elapsed() > 60:
                raise killrun.RunFailed("no crash at %s in 60 s" % hook)
            if todo and self.elapsed() - last > 0.7:
                self.produce(todo.pop(0))
                last = self.elapsed()
            self.sleep(0.05)
        self.event("worker-ticker exited %d" % ticker.popen.returncode)
        self.cause("crash of worker-ticker at the fault hook")
        if ticker.popen.returncode != 137:
            raise killrun.RunFailed("worker-ticker exited %d, not 137 at %s"
                                    % (ticker.popen.returncode, hook))
        ticker.start()
        self.produce_while(self.kill_plan(self.rng.randint(1, 2), 0.5,
                                          (0.5, 3.0), (0.1, 2.0)),
                           batches=todo)

    def start_job(self, fault=None):
        self.start_stage_workers(self.stages, fault=fault)
        return self.workers[0]

    def execute(self):
        if not self.args.timers_lib:
            raise killrun.RunFailed("case timers needs --timers-lib")
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file,
                   self.numbers_topic + ":3", self.counts_topic + ":3")
        self.event("seed %d: %d timers" % (self.seed,
                                            sum(self.model.values())))
        if self.case == "timers-after-commit":
            self.kill_after_commit(self.start_job())
        elif self.case in WINDOW_CASES:
            self.produce(self.batches[0])
            self.start_job(("ticker", COMMIT_HOOK))
            self.faults_hook(next(w for w in self.workers
                                  if w.name == "worker-ticker"), COMMIT_HOOK)
        elif self.case == "timers-window-random":
            self.window_random()
        else:
            self.start_job()
            self.faults_random()
        self.finish_checked()
        if self.case in WINDOW_CASES:
            self.check_replay_fired()

    def check_replay_fired(self):
        """The case did what it claims: an epoch replay of the ticker
        fired timers of the run (the worker's log says how many)."""
        key, fired = " timers fired as in the run", 0
        for name in os.listdir(self.dir):
            if not name.endswith(".log"):
                continue
            with open(os.path.join(self.dir, name), errors="replace") as f:
                for line in f:
                    i = line.find(key)
                    if i > 0 and "epoch replay" in line:
                        fired += int(line[:i].rsplit(None, 1)[-1])
        self.event("epoch replays fired %d timers of the run" % fired)
        if not fired:
            raise killrun.RunFailed(
                "no epoch replay fired a timer of the run: the crash at %s "
                "missed the epoch of the firings" % COMMIT_HOOK)
