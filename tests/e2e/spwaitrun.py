#!/usr/bin/env python3
"""A savepoint that waits for its alignment without memory, under crash
tests (stdlib only), with killrun.py's conventions and helpers.

The job is killrun.py's case buffer-limit: the word count of --slow-lib
(split[0] sleeps 3 ms a line, split[1] 1 ms, padded 8 KB records), the
whole input produced up front as a backlog, one lines partition per split
task, aligned, alignment.max-buffered-bytes 1 MiB. A savepoint must stay
aligned, so when a count task's alignment reaches the limit it drops the
records of the channels that delivered the barrier, keeps processing the
others, and once the slow writer's barrier came it takes its snapshot and
reads the dropped records again (plugin/PROTOCOL.md section 10.5).

Each run (--case savepoint-wait):
  1. kill -9 of the count worker 0.3-1 s after the start, restarted
     0.1-0.5 s later; once the job runs again, the backlog and at once
     `ksnap savepoint`; 0.2-1 s after the first checkpoint after it
     completed (the re-read's epoch committed), kill -9 of the split
     worker, restarted 0.1-0.5 s later;
  2. the savepoint completed, aligned: its statistics (`ksnap checkpoints
     list --json`) report no unaligned task and at least one task that
     waited and re-read, with the bytes (reread.bytes > 0);
  3. the count worker that ran the savepoint (the one restarted before it)
     never held more than the limit: its peak RSS (VmHWM in /proc) stays
     under the limit + killrun.RSS_MARGIN_MIB;
  4. the sink topic's read_committed content equals the failure-free
     model (killrun.Run.check), and each failure restored the job once;
  5. everything stops; a coordinator started --from-savepoint with the
     savepoint's URL and the workers read the input again from the
     savepoint's source offsets: the output they add to the sink topic is,
     per word, exactly the counts of the words after those offsets
     (n-m+1 .. n for a word with m occurrences there, n in all), in order.
A re-read that processed the blocked channels' records of an already
processed channel again would duplicate counts in 4; one that skipped the
dropped records would lose them in 4 and 5.

Environment and run directories as for killrun.py.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import killrun


class SpwaitRun(killrun.Run):
    def __init__(self, args, seed):
        super().__init__(args, "buffer-limit", seed)  # its job and input
        self.name = "savepoint-wait"
        self.job = self.job.replace("e2e-buffer-limit-", "e2e-spwait-", 1)
        self.lines_topic = self.job + ".lines"
        self.counts_topic = self.job + ".counts"
        self.topology = "stage"

    def write_job(self):
        super().write_job()
        with open(self.job_file, "a") as f:
            f.write("state.savepoints.dir=file://%s\n" % self.savepoint_dir())

    def split_lines(self):
        """The lines of each lines partition, in offset order."""
        lines = self.all_lines()
        return [lines[0::2], lines[1::2]]

    def wait_running(self):
        """Until the job runs (every task registered since the last
        restore), at most 8 s."""
        end = self.elapsed() + 8.0
        while not self.job_running() and self.elapsed() < end:
            self.sleep(0.05)

    def take_savepoint(self):
        """`ksnap savepoint`, retried while the job restores. @returns
        (checkpoint id, URL)."""
        while True:
            self.wait_running()
            self.event("savepoint requested")
            r = subprocess.run([self.args.ksnap, "savepoint", self.job_file,
                                "--timeout", "30"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
            text = r.stdout.decode(errors="replace")
            self.event("savepoint exit %d: %s" % (r.returncode, text.strip()))
            for l in text.splitlines():
                if l.startswith("Completed savepoint "):
                    n, url = l[len("Completed savepoint "):].split(": ", 1)
                    return int(n), url.strip()
            if "restor" not in text.lower():
                raise killrun.RunFailed("ksnap savepoint: exit %d: %s" % (
                    r.returncode, text))

    def faults(self):
        """Step 1 (see the top): the backlog goes in once the restarted
        count worker's tasks run, right before the savepoint, so that the
        fast writer still has seconds of records after its barrier."""
        count, split = self.worker_of("count:0"), self.worker_of("split:0")
        parts = self.split_lines()
        self.sleep(self.rng.uniform(0.3, 1.0))
        count.kill9()
        self.sleep(self.rng.uniform(0.1, 0.5))
        count.start()
        self.wait_running()
        for p in (0, 1):
            self.produce(parts[p], p)
        self.savepoint = self.take_savepoint()
        self.wait_completed_after(self.savepoint[0])
        self.sleep(self.rng.uniform(0.2, 1.0))
        split.kill9()
        self.sleep(self.rng.uniform(0.1, 0.5))
        split.start()

    def wait_completed_after(self, sid):
        """Until a checkpoint after savepoint @p sid completed, so that the
        epoch of the re-read is committed before the next kill (a restore
        from the savepoint would hide a re-read that lost or doubled
        records), at most 20 s."""
        end = self.elapsed() + 20.0
        while self.elapsed() < end:
            ids = [int(l.split("Completed checkpoint ", 1)[1].split()[0])
                   for l in self.coord_log().splitlines()
                   if "Completed checkpoint " in l]
            if any(n > sid for n in ids):
                self.event("checkpoint %d completed after savepoint %d" % (
                    max(ids), sid))
                return
            self.sleep(0.1)
        raise killrun.RunFailed("no checkpoint completed in 20 s after "
                                "savepoint %d" % sid)

    def check_wait(self):
        """The savepoint completed aligned, and some task waited."""
        sid, url = self.savepoint
        stats = json.loads(self.ksnap("checkpoints", "list", self.job_file,
                                      "--json", "--history", "1000"))
        ck = next((c for c in stats["history"] if c["id"] == sid), None)
        if not ck or ck["status"] != "COMPLETED" or not ck["is_savepoint"]:
            raise killrun.RunFailed("savepoint %d: %s" % (sid, ck))
        waited = ["%s %d bytes (%s)" % (t["task"], t["reread"]["bytes"],
                                         t["reread"]["reason"])
                  for t in ck["tasks"] if t.get("reread")]
        killrun.log("savepoint-wait seed %d: savepoint %d, %d unaligned "
                    "tasks, re-read: %s" % (self.seed, sid,
                                            ck["num_unaligned_tasks"],
                                            ", ".join(waited) or "none"))
        if ck["num_unaligned_tasks"] or ck["unaligned_reason"]:
            raise killrun.RunFailed("savepoint %d not aligned: %s" % (sid,
                                                                      ck))
        if not waited or not ck["bytes_reread"] or \
                ck["num_reread_tasks"] != len(waited):
            raise killrun.RunFailed("savepoint %d: no task waited and "
                                    "re-read: %s" % (sid, ck))

    def source_offsets(self, url):
        """{partition: next offset} of the lines topic in the savepoint."""
        out = self.ksnap("inspect", "--state", url)
        meta = json.loads(out.splitlines()[0])
        offs = {}
        for t in meta["tasks"]:
            for o in t.get("source_offsets") or t.get("offsets") or []:
                if o["topic"] == self.lines_topic:
                    offs[o["partition"]] = o["offset"]
        if sorted(offs) != [0, 1]:
            raise killrun.RunFailed("savepoint %s: source offsets %s" % (
                url, offs))
        return offs

    def check_restore(self, before):
        """Step 5 (see the top): the output after @p before records."""
        sid, url = self.savepoint
        offs = self.source_offsets(url)
        parts = self.split_lines()
        after = collections.Counter(w for p in (0, 1)
                                    for l in parts[p][offs[p]:]
                                    for w in l.split())
        want = sum(after.values())
        self.event("restore from %s: offsets %s, %d words after them" % (
            url, offs, want))
        self.coord = killrun.Proc(self, "coordinator-restored", [
            self.args.ksnap, "coordinator", "--from-savepoint", url,
            self.job_file])
        self.coord.start()
        self.sleep(1.0)
        for w in self.workers:
            w.start()
        self.procs = [self.coord] + self.workers
        ends = {}
        for k, v, where in before:
            p, o = map(int, where.split("@"))
            ends[p] = max(ends.get(p, -1), o)
        last, since = -1, self.elapsed()
        while True:
            new = [(k, v, where) for k, v, where in self.committed()
                   if int(where.split("@")[1]) > ends.get(
                       int(where.split("@")[0]), -1)]
            if len(new) >= want:
                break
            if len(new) != last:
                last, since = len(new), self.elapsed()
            if self.elapsed() - since > killrun.STALL_S + 3:
                break
            self.sleep(0.5)
        self.sleep(2.5)
        new = [(k, v, where) for k, v, where in self.committed()
               if int(where.split("@")[1]) > ends.get(
                   int(where.split("@")[0]), -1)]
        problems = []
        got = collections.defaultdict(list)
        for k, v, _ in new:
            got[k].append(int(v) if v.isdigit() else v)
        for w in sorted(set(got) | set(after)):
            n, m = self.model.get(w, 0), after.get(w, 0)
            if got.get(w, []) != list(range(n - m + 1, n + 1)):
                problems.append("%s: n=%d, %d after the savepoint, got %s" % (
                    w, n, m, killrun.short(got.get(w, []))))
        killrun.log("savepoint-wait seed %d: restore from savepoint %d: %d "
                    "records added, %d expected" % (self.seed, sid, len(new),
                                                     want))
        if problems:
            raise killrun.RunFailed("output of the restore from savepoint "
                                    "%d differs from the model: %s" % (
                                        sid, "; ".join(problems)))

    def execute(self):
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file, self.lines_topic + ":2",
                   self.counts_topic + ":3")
        self.event("case savepoint-wait seed %d, %d words" % (
            self.seed, sum(self.model.values())))
        self.start_job()
        self.faults()
        out = self.final_output()
        self.check_peak_rss()
        self.check_wait()
        self.check_restores()
        self.stop_all()
        self.check_restore(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--slow-lib", required=True,
                    help="libksnap_test_slow.so")
    ap.add_argument("--case", default="savepoint-wait",
                    choices=["savepoint-wait"])
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    for k in ("ksnap", "lib", "slow_lib"):
        setattr(args, k, os.path.abspath(getattr(args, k)))
    return killrun.run_seeds(args, "ksnap-spwait-",
                             lambda seed: SpwaitRun(args, seed),
                             "savepoint-wait")


if __name__ == "__main__":
    sys.exit(main())
