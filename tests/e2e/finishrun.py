#!/usr/bin/env python3
"""A bounded job that ends by itself, under crash tests (stdlib only), with
killrun.py's conventions and helpers.

The job: lines -> split (P=2, the word count's) -> count (P=2, finalcount
of libksnap_test_finish.so: it counts each word in its state and emits
nothing but in its finish, one (word, n) per word) -> counts, with
source.stop-at=latest and the whole input in the lines topic before the
start. Periodic checkpoints are 60 s apart: every checkpoint the run sees
is the final one the coordinator triggers once every task's input ended
(plugin/PROTOCOL.md section 5.9). The topology (one worker, one per stage,
one per task) comes from the seed.

Each run (--case bounded-finish), by the seed's parity:
  odd   the worker of count[0] starts with KSNAP_FAULT=sink.before-commit:
        count[0]: it dies after the final COMPLETE and before its commit
        (its finish's output is in that transaction); right after, kill -9
        of another worker (its tasks finished); both restart 0.1-1 s later.
        The coordinator must not write JOB_FINISHED before every sink task
        committed: it restores (the repair commits the transaction) and
        takes a final checkpoint again;
  even  the coordinator starts with KSNAP_FAULT=coord.before-job-finished:
        it dies after the final COMPLETE and the sinks' commits, before
        JOB_FINISHED; while it is down, kill -9 of a worker (its tasks
        finished); both restart 0.1-1 s later; the new coordinator
        restores from the final checkpoint, where every task is finished:
        finish must not run again (it would emit every word twice);
  both  first one kill -9 of a random worker or the coordinator 0.3-1.5 s
        after the start (before or after the tasks' finish), restarted
        0.1-0.5 s later (a worker with its fault again).
Then every process must end by itself, with exit 0 (workers on JOB_FINISHED;
a worker restarted after it starts nothing), within the run's timeout; the
read_committed content of the sink topic must be one record (word, n) per
word of the input, n its occurrences (the failure-free run's output); the
control topic holds exactly one JOB_FINISHED, and `ksnap job status` says
FINISHED with its checkpoint; each failure restored the job once
(killrun.Run.check_restores); a coordinator and a worker started afterwards
say the job finished and exit 0 at once, writing nothing.

Environment and run directories as for killrun.py.
"""
import argparse
import os
import sys

import killrun


class FinishRun(killrun.Run):
    def __init__(self, args, seed):
        super().__init__(args, "bounded", seed)  # source.stop-at=latest
        self.name = "bounded-finish"
        self.job = self.job.replace("e2e-bounded-", "e2e-finish-", 1)
        self.lines_topic = self.job + ".lines"
        self.counts_topic = self.job + ".counts"
        self.topology = ("one", "stage", "task")[seed % 3]

    def write_job(self):
        super().write_job()
        with open(self.job_file) as f:
            lines = [l for l in f if not l.startswith((
                "stage.count.operator=", "execution.checkpointing.interval="))]
        lines += ["stage.count.operator=%s:finalcount\n" % self.args.finish_lib,
                  "execution.checkpointing.interval=60s\n",
                  "kafka.transaction.timeout.ms=300000\n"]
        with open(self.job_file, "w") as f:
            f.writelines(lines)

    def reap(self, proc, want):
        """@p proc ended: with 0, or with @p want (137: its fault hook)."""
        code = proc.popen.returncode
        self.event("%s exited %d" % (proc.name, code))
        if code != want:
            raise killrun.RunFailed("%s exited %d, not %d" % (
                proc.name, code, want))

    def wait_any(self, procs, secs):
        """Until one of @p procs is not alive (it is returned), at most
        @p secs (None then)."""
        end = self.elapsed() + secs
        while self.elapsed() < end:
            for p in procs:
                if not p.alive():
                    return p
            self.sleep(0.05)
        return None

    def early_kill(self, faults):
        victim = (self.coord if self.rng.random() < 0.25
                  else self.rng.choice(self.workers))
        p = self.wait_any(self.procs, self.rng.uniform(0.3, 1.5))
        if p is not None:  # the hook came first: not an early kill
            return p
        victim.kill9()
        self.sleep(self.rng.uniform(0.1, 0.5))
        if victim is self.coord:
            self.coord.start({"KSNAP_FAULT": faults["coordinator"]}
                             if "coordinator" in faults else None)
        else:
            victim.start({"KSNAP_FAULT": faults[victim.name]}
                         if victim.name in faults else None)
        return None

    def faults(self):
        """The seed's faults (top of this file); @returns when the hook's
        process crashed and the job was started again."""
        if self.seed % 2:
            hooked = self.worker_of("count:0")
            faults = {hooked.name: "sink.before-commit:count[0]"}
        else:
            hooked = self.coord
            faults = {"coordinator": "coord.before-job-finished"}
        p = self.early_kill(faults)
        while p is not hooked:
            if p is not None:  # anything else ending now is wrong
                self.reap(p, 0)
                raise killrun.RunFailed("%s ended before the fault hook" %
                                        p.name)
            p = self.wait_any(self.procs, self.args.timeout)
            if p is None:
                raise killrun.RunFailed("no process reached the fault hook")
        self.reap(hooked, 137)
        if hooked is not self.coord:
            self.cause("crash of %s at the fault hook" % hooked.name)
        others = [w for w in self.workers if w is not hooked and w.alive()]
        victim = self.rng.choice(others) if others else None
        if victim:  # its tasks finished
            victim.kill9()
        for proc in [hooked] + ([victim] if victim else []):
            self.sleep(self.rng.uniform(0.1, 1.0))
            proc.start()

    def wait_ended(self):
        """Every process ends by itself with 0."""
        left = list(self.procs)
        while left:
            p = self.wait_any(left, self.args.timeout)
            if p is None:
                raise killrun.RunFailed("%s did not end by itself" % ", ".join(
                    q.name for q in left))
            self.reap(p, 0)
            left.remove(p)
        self.event("every process ended with 0")

    def execute(self):
        if not killrun.faults_compiled_in(self.args.ksnap):
            raise killrun.RunFailed("needs a build with the fault hooks")
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":3",
                   self.counts_topic + ":3")
        self.event("case bounded-finish seed %d topology %s, %d words" % (
            self.seed, self.topology, sum(self.model.values())))
        for b in self.batches:
            self.produce(b)
        faults = ({"count:0": "sink.before-commit:count[0]"} if self.seed % 2
                  else {"coordinator": "coord.before-job-finished"})
        self.start_job(next(iter(faults.items())))
        self.faults()
        self.wait_ended()
        out = self.committed()
        self.save(out)
        problem = killrun.final_counts_problem(out, self.model)
        if problem:
            raise killrun.RunFailed("committed output differs from the "
                                    "model: " + problem)
        finished = self.control()["JobFinished"]
        if len(finished) != 1:
            raise killrun.RunFailed("%d JOB_FINISHED records, not 1" %
                                    len(finished))
        status = self.ksnap("job", "status", self.job_file)
        if "state FINISHED (final checkpoint %d)" % self.ids(finished)[0] \
                not in status:
            raise killrun.RunFailed("ksnap job status: " + status)
        self.check_restores()
        self.start_after()

    def start_after(self):
        """A coordinator and a worker started for the finished job say so
        and exit 0 at once, writing nothing."""
        before = len(self.decoded(self.job + ".ksnap.control"))
        for name, cmd in (("coordinator-after", "coordinator"),
                          ("worker-after", "worker")):
            p = killrun.Proc(self, name, [self.args.ksnap, cmd,
                                          self.job_file])
            p.start()
            if self.wait_any([p], 20.0) is None:
                p.kill9()
                raise killrun.RunFailed("%s of the finished job did not end "
                                        "at once" % cmd)
            self.reap(p, 0)
            with open(os.path.join(self.dir, name + ".log"),
                      errors="replace") as f:
                if "finished (final checkpoint" not in f.read():
                    raise killrun.RunFailed("%s of the finished job did not "
                                            "say it finished" % cmd)
        if len(self.decoded(self.job + ".ksnap.control")) != before:
            raise killrun.RunFailed("a start of the finished job wrote to "
                                    "its control topic")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--finish-lib", required=True,
                    help="libksnap_test_finish.so")
    ap.add_argument("--case", default="bounded-finish",
                    choices=["bounded-finish"])
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    for k in ("ksnap", "lib", "finish_lib"):
        setattr(args, k, os.path.abspath(getattr(args, k)))
    return killrun.run_seeds(args, "ksnap-finish-",
                             lambda seed: FinishRun(args, seed),
                             "bounded-finish")


if __name__ == "__main__":
    sys.exit(main())
