#!/usr/bin/env python3
"""Crash tests of a stop with a savepoint after a drain (`ksnap savepoint
--stop --drain`), stdlib only, with killrun.py's conventions and helpers.

The job: lines (3 partitions) -> split (P=2, the word count's) -> count
(P=2, finalcount of libksnap_test_finish.so: it counts each word in its
state and emits nothing but in its finish, one (word, n) per word) ->
counts. Not bounded: nothing ends the input but the drain. One worker
per stage.

Each run (--case random):
  1. a share of the input (the seed draws how many batches) is produced,
     a batch a second, while 0 to 2 kill -9s (seeded times) hit a worker
     or the coordinator, each restarted 0.1-1.5 s later;
  2. `ksnap savepoint --stop --drain` is asked while the rest of the input
     is still being produced; by the seed, 0.0-0.5 s after the request a
     worker or the coordinator is killed -9 (and restarted 0.1-1.0 s
     later), or nothing: the kill falls before the drain's first
     checkpoint (a restore drains on from the restored positions; a lost
     request is asked again), between it and the final savepoint (the
     restored ends hold), or after it;
  3. the command must print "Job stopped with savepoint N: URL" (asked
     again when the job was restoring, or when the coordinator died with
     the request) and every process must exit 0 by itself (a worker
     restarted after the stop says it waits for the job to start again,
     and is stopped).
The read_committed sink must then hold one record (word, n) per word of
the input the job read, n its occurrences: finish ran exactly once per
task, after its whole input, and nothing past the ends was read. The ends
are the source offsets of the savepoint (`ksnap inspect`), and the lines
at the offsets below them are read back from the lines topic. Each
failure restored the job once (check_restores). Last, a job started from
the drained savepoint ends at once: every process exits 0 by itself
(JOB_FINISHED) and the sink holds the same records (finish does not run
again, and the ends hold).

Environment and run directories as for killrun.py.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import killrun  # noqa: E402

STAGES = {"split": 2, "count": 2}
DRAIN_TIMEOUT_S = 20


class DrainRun(killrun.Run):
    def __init__(self, args, case, seed):
        super().__init__(args, "drain-" + case, seed)
        self.name = "drain-" + case

    def write_job(self):
        super().write_job()
        over = {"stage.count.operator": self.args.finish_lib + ":finalcount",
                "state.savepoints.dir": "file://" + self.savepoint_dir()}
        with open(self.job_file) as f:
            lines = [l for l in f if l.split("=", 1)[0] not in over]
        with open(self.job_file, "w") as f:
            f.writelines(lines + ["%s=%s\n" % kv for kv in over.items()])

    def job_stopped_url(self):
        """The savepoint URL of the job's JOB_STOPPED record, or None."""
        stopped = self.control().get("JobStopped", [])
        return stopped[-1][1]["savepoint_url"] if stopped else None

    def drain_call(self):
        """`ksnap savepoint --stop --drain` started: a Popen."""
        self.event("drain requested")
        return subprocess.Popen(
            [self.args.ksnap, "savepoint", self.job_file, "--stop", "--drain",
             "--timeout", str(DRAIN_TIMEOUT_S)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def drain_result(self, call):
        """The URL the drain printed, or None (then the reason is
        logged)."""
        text = call.communicate(timeout=DRAIN_TIMEOUT_S + 30)[0].decode(
            errors="replace")
        self.event("savepoint --stop --drain exit %d: %s" % (
            call.returncode, text.strip()))
        return next((l.split(": ", 1)[1].strip() for l in text.splitlines()
                     if l.startswith("Job stopped with savepoint ")), None) \
            if call.returncode == 0 else None

    def drain_kill(self):
        """For produce_while: the seed's kill during the drain, [] or
        [(time after the request, function)]. A process that ended
        already (the job stopped) is not killed nor restarted."""
        kill = self.rng.choice([None, "worker", "coordinator"])
        if not kill:
            return []
        victim = (self.coord if kill == "coordinator"
                  else self.rng.choice(self.workers))
        at, delay = self.rng.uniform(0.0, 0.5), self.rng.uniform(0.1, 1.0)

        def kill9():
            if not victim.alive():
                return ()
            victim.kill9()
            return [(delay, victim.start)]
        self.event("plan: %.2fs after the request kill %s restart +%.2fs" % (
            at, victim.name, delay))
        return [(at, kill9)]

    def drain(self, rest):
        """The drain while @p rest (batches) is produced, with the seed's
        kill; asked again until the job stopped. @returns the URL."""
        calls = self.drain_kill()
        while not self.job_running() and self.elapsed() < 60:
            self.sleep(0.05)
        call = self.drain_call()
        self.produce_while([], calls, batches=rest)
        url = self.drain_result(call)
        end = self.elapsed() + 60.0
        while url is None:
            url = self.job_stopped_url()  # the command may have missed it
            if url or self.elapsed() > end:
                break
            while not self.job_running() and self.elapsed() < end:
                self.sleep(0.05)
            url = self.drain_result(self.drain_call())
        if url is None:
            raise killrun.RunFailed("the job did not stop with a drain")
        return url

    def wait_exit0(self, what):
        """Every process exits 0 by itself within 30 s; a worker
        restarted just after the stop waits for the job to start again
        (it says so): it is stopped then, and must exit 0."""
        end = self.elapsed() + 30.0
        for p in self.procs:
            while p.alive() and self.elapsed() < end:
                with open(os.path.join(self.dir, p.name + ".log"),
                          errors="replace") as f:
                    last = f.read().rsplit("==== start", 1)[-1]
                if "waits for the job to start again" in last:
                    p.stop()
                    self.event("%s waited for a restart: stopped" % p.name)
                self.sleep(0.1)
            if p.alive():
                raise killrun.RunFailed("%s still runs 30 s after %s" % (
                    p.name, what))
            if p.popen.returncode != 0:
                raise killrun.RunFailed("%s exited %d after %s" % (
                    p.name, p.popen.returncode, what))
        self.event("every process exited 0 after " + what)

    def ends(self, url):
        """{partition: end offset} of the lines topic in savepoint @p url."""
        meta = json.loads(self.ksnap("inspect", url))
        ends = {}
        for t in meta["tasks"]:
            for o in t.get("source_offsets") or []:
                if o["topic"] == self.lines_topic:
                    ends[o["partition"]] = o["offset"]
        return ends

    def read_model(self, ends):
        """Word -> occurrences in the lines below @p ends."""
        r = subprocess.run(
            killrun.kcat() + ["-C", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"],
                              "-t", self.lines_topic, "-o", "beginning", "-e",
                              "-q", "-f", "%p %o %s\\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise killrun.RunFailed("kcat -C: %s" % r.stderr.decode(
                errors="replace"))
        model, read, left = collections.Counter(), 0, 0
        for line in r.stdout.decode(errors="replace").splitlines():
            p, o, text = (line.split(" ", 2) + [""])[:3]
            if int(o) < ends.get(int(p), 0):
                model.update(text.split())
                read += 1
            else:
                left += 1
        self.event("ends %s: %d lines read, %d left" % (ends, read, left))
        return model

    def start_from(self, url, before):
        """A job started from the drained savepoint ends at once and
        writes nothing to the sink."""
        self.cause("start from the drained savepoint %s" % url)
        self.start_stage_workers(STAGES, url)
        self.wait_exit0("the start from the drained savepoint")
        out = self.committed()
        if out != before:
            raise killrun.RunFailed("the start from the drained savepoint "
                                    "changed the sink: %d records, %d before" %
                                    (len(out), len(before)))

    def execute(self):
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":3",
                   self.counts_topic + ":3")
        k = self.rng.randint(1, len(self.batches) - 1)
        self.event("case %s seed %d, %d batches, the drain after %d" % (
            self.name, self.seed, len(self.batches), k))
        self.start_stage_workers(STAGES)
        self.produce_while(self.kill_plan(self.rng.randint(0, 2), 0.0,
                                          (0.3, 2.0), (0.1, 1.5)),
                           batches=self.batches[:k])
        url = self.drain(self.batches[k:])
        self.wait_exit0("the drain")
        out = self.committed()
        self.save(out)
        model = self.read_model(self.ends(url))
        if not model:
            raise killrun.RunFailed("the drain read nothing")
        problem = killrun.final_counts_problem(out, model)
        if problem:
            raise killrun.RunFailed("committed output differs from the "
                                    "input read: " + problem)
        killrun.log("%s seed %d: stopped with savepoint %s, %d of %d words "
                    "read" % (self.name, self.seed, url,
                              sum(model.values()), sum(self.model.values())))
        self.check_restores()
        self.start_from(url, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--finish-lib", required=True,
                    help="libksnap_test_finish.so")
    ap.add_argument("--case", default="random", choices=["random"])
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    for k in ("ksnap", "lib", "finish_lib"):
        setattr(args, k, os.path.abspath(getattr(args, k)))
    return killrun.run_seeds(args, "ksnap-drain-",
                             lambda seed: DrainRun(args, args.case, seed),
                             "drain " + args.case)


if __name__ == "__main__":
    sys.exit(main())
