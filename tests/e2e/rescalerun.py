#!/usr/bin/env python3
"""Crash tests of rescaling (stdlib only): the word count stopped with a
savepoint and started from it at other parallelisms, twice, with kill -9s
in every phase, on the real test servers, with killrun.py's conventions,
helpers and model (for every word, the read_committed sink holds 1..n in
offset order, whatever was killed and whatever ran at which parallelism).

Each run (--case random) has three phases. The first runs split P=2,
count P=2 from an empty job; each later one starts the coordinator with
--from-savepoint and the savepoint the phase before stopped with, at
(split, count) parallelisms drawn by the seed from PARALLELISMS (never the
previous phase's). One worker per stage. The lines topic has 4
partitions, the exchange topic stage.split.partitions=4 (a job that may
rescale fixes it at the largest reader parallelism), the sink 3.

A later phase starts its coordinator and workers at once: a worker that
reads JOB_STOPPED before the coordinator's RESTORE must wait for it and
then start its tasks.

In each phase:
  1. its share of the input is produced, a batch a second, while 0 to 2
     kill -9s (seeded times) hit a worker or the coordinator, each
     restarted 0.1-1.5 s later; the first can fall into the restore from
     the savepoint itself;
  2. except in the last phase: 0-1.5 s later, once the job runs, `ksnap
     savepoint --stop` (retried when the job was restoring and nothing was
     triggered, or when a kill's failure aborted the savepoint) must print "Job stopped with savepoint N: URL", and every
     process of the phase must exit 0 by itself; lines produced but not
     yet read when it stopped are read by the next phase from the
     savepoint's source offsets. The sink holds, per word, 1..k in offset
     order (no duplicate, no gap).
At the end the sink equals the failure-free model, and each failure
restored the job once (check_restores; a start from a savepoint after a
stop is one restore).

Environment and run directories as for killrun.py.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import killrun  # noqa: E402

PHASES = 3
FIRST = {"split": 2, "count": 2}
PARALLELISMS = [(3, 4), (1, 1), (4, 1), (1, 3), (2, 4), (3, 2)]


class RescaleRun(killrun.Run):
    def __init__(self, args, case, seed):
        super().__init__(args, "rescale-" + case, seed)
        self.name = "rescale-" + case
        self.stages = dict(FIRST)
        self.savepoints = []

    def write_job(self):
        super().write_job()
        over = {"stage.split.parallelism": str(self.stages["split"]),
                "stage.count.parallelism": str(self.stages["count"]),
                "stage.split.partitions": "4",
                "state.savepoints.dir": "file://" + self.savepoint_dir()}
        with open(self.job_file) as f:
            lines = [l for l in f if l.split("=", 1)[0] not in over]
        with open(self.job_file, "w") as f:
            f.writelines(lines + ["%s=%s\n" % kv for kv in over.items()])

    def next_stages(self):
        now = (self.stages["split"], self.stages["count"])
        split, count = self.rng.choice([p for p in PARALLELISMS if p != now])
        return {"split": split, "count": count}

    def phase_batches(self):
        """self.batches split into PHASES shares, each of one batch at
        least, in order."""
        n = len(self.batches)
        cuts = [round(i * n / PHASES) for i in range(PHASES + 1)]
        return [self.batches[cuts[i]:cuts[i + 1]] for i in range(PHASES)]

    def phase(self, i, batches):
        plan = self.kill_plan(self.rng.randint(0, 2), 0.0, (0.3, 2.5),
                              (0.1, 1.5))
        self.produce_while(plan, batches=batches)
        if i + 1 == PHASES:
            return
        self.sleep(self.rng.uniform(0.0, 1.5))
        url = self.stop_with_savepoint(
            lambda: self.check_prefix(self.committed()))
        self.savepoints.append(url)
        self.stages = self.next_stages()
        self.write_job()
        self.cause("start from savepoint %s at split P=%d, count P=%d" % (
            url, self.stages["split"], self.stages["count"]))
        self.start_stage_workers(self.stages, url)

    def execute(self):
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":4",
                   self.counts_topic + ":3")
        self.event("case %s seed %d, %d words" % (
            self.name, self.seed, sum(self.model.values())))
        self.start_stage_workers(self.stages)
        for i, batches in enumerate(self.phase_batches()):
            self.phase(i, batches)
        self.final_output()
        killrun.log("%s seed %d: savepoints %s, last at split P=%d, count "
                    "P=%d" % (self.name, self.seed, len(self.savepoints),
                              self.stages["split"], self.stages["count"]))
        self.check_restores()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--case", default="random", choices=["random"])
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    args.ksnap, args.lib = map(os.path.abspath, (args.ksnap, args.lib))
    return killrun.run_seeds(args, "ksnap-rescale-",
                             lambda seed: RescaleRun(args, args.case, seed),
                             "rescale " + args.case)


if __name__ == "__main__":
    sys.exit(main())
