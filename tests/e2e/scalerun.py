#!/usr/bin/env python3
"""Crash tests of members: workers started with `ksnap worker --join`,
which the coordinator gives tasks (stdlib only), on the real test
servers, with the conventions and helpers of killrun.py.

The job is the word count at split P=3 and count P=4: 7 tasks. Every
member has worker.slots=4, so one member alone cannot run the job and two
can. The model is killrun.py's: for every word, the read_committed sink
holds 1..n in offset order, whatever was killed.

Cases (--case):
  scale    one member starts alone: the job waits, the coordinator says
           how many slots are missing, no checkpoint completes; two more
           join and the job runs; the coordinator's /checkpoints shows
           the members, their tasks and the slots missing. kill -9 of one member: the RESTORE that
           follows (exactly one) gives every task to a live member and
           none to the dead one. A fourth member joins: a later RESTORE
           (the rebalance at a checkpoint) gives it tasks. One member is
           paused (SIGSTOP) past heartbeat.timeout and resumed: it must
           stop by itself (removed from the job), and while it ran its
           output never became visible (every word's committed values
           stay 1..k)
  random   three members; 2 to 4 events at random (seeded) times: kill -9
           of a member (while at least two others live), a new member
           joining, or a kill -9 and a new member at once; each RESTORE
           follows a kill or a join (check_restores)

Environment and run directories as for killrun.py.
"""
import argparse
import collections
import json
import re
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import killrun  # noqa: E402

STAGES = [("split", 3), ("count", 4)]
NTASKS = sum(n for _, n in STAGES)
SLOTS = 4


class ScaleRun(killrun.Run):
    def __init__(self, args, case, seed):
        super().__init__(args, "scale-" + case, seed)
        self.kind = case
        self.members = []
        self.nmembers = 0
        self.tables = []  # [(generation, live instances, after what)]
        with socket.socket() as sock:  # a port nothing listens on now
            sock.bind(("127.0.0.1", 0))
            self.rest_port = sock.getsockname()[1]

    def write_job(self):
        props = {
            "job.name": self.job,
            "execution.checkpointing.interval": "500ms",
            "execution.checkpointing.timeout": "30s",
            "heartbeat.interval": "200ms",
            "heartbeat.timeout": "2s",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "100",
            "restart-strategy.fixed-delay.delay": "500ms",
            "worker.slots": str(SLOTS),
            "rest.port": str(self.rest_port),
            **self.server_props(),
            "stage.split.operator": self.args.lib + ":split",
            "stage.split.parallelism": "3",
            "stage.split.input": "source:" + self.lines_topic,
            "stage.count.operator": self.args.lib + ":count",
            "stage.count.parallelism": "4",
            "stage.count.input": "stage:split",
            "stage.count.output": "sink:" + self.counts_topic,
        }
        self.write_props(props)

    # --- processes -----------------------------------------------------
    def start_coordinator(self):
        self.coord = killrun.Proc(self, "coordinator", [
            self.args.ksnap, "coordinator", self.job_file])
        self.procs = [self.coord]
        self.workers = []
        self.coord.start()

    def join(self):
        """Starts a new member (a new process: a new instance)."""
        self.nmembers += 1
        m = killrun.Proc(self, "member%d" % self.nmembers, [
            self.args.ksnap, "worker", "--join", self.job_file])
        self.procs.append(m)
        self.workers.append(m)
        self.members.append(m)
        self.cause("member %s joins" % m.name)
        m.start()
        return m

    def live(self):
        return [m for m in self.members if m.alive()]

    def instance(self, m, timeout=20):
        """The instance id member @p m logged at its start."""
        key = "member "
        end = time.time() + timeout
        while time.time() < end:
            with open(os.path.join(self.dir, m.name + ".log"),
                      errors="replace") as f:
                for line in f:
                    i = line.find(key)
                    if i >= 0 and " joins with " in line:
                        return line[i + len(key):].split()[0]
            self.sleep(0.1)
        raise killrun.RunFailed("%s never logged its instance" % m.name)

    def kill(self, m):
        m.kill9()  # a cause of the run (Proc.kill9)

    # --- the control topic ---------------------------------------------
    def generations(self):
        """The generations the coordinator restored the job in so far."""
        with open(os.path.join(self.dir, "coordinator.log"),
                  errors="replace") as f:
            return [int(x) for x in re.findall(
                r"Restoring the job in generation (\d+)", f.read())]

    def runners(self, gen):
        """{task: [members that opened it in generation @p gen]}, from the
        members' logs (task.c: "TASK: restoring generation G from")."""
        out = collections.defaultdict(list)
        pat = re.compile(r" (\w+)\[(\d+)\]: restoring generation %d from"
                         % gen)
        for m in self.members:
            with open(os.path.join(self.dir, m.name + ".log"),
                      errors="replace") as f:
                for t in set(pat.findall(f.read())):
                    out["%s:%s" % t].append(m.name)
        return out

    def wait_restore(self, after, what, timeout=20):
        """Waits for a RESTORE after the @p after-th one and for every
        task to open in its generation: @returns {task: [members]}."""
        end = time.time() + timeout
        while time.time() < end:
            g = self.generations()
            if len(g) > after:
                table = self.runners(g[after])
                if len(table) == NTASKS:
                    self.sleep(1.0)  # a second instance would be late
                    return self.runners(g[after])
            self.sleep(0.3)
        raise killrun.RunFailed("no RESTORE after %s with every task open "
                                "within %d s" % (what, timeout))

    def completed(self):
        with open(os.path.join(self.dir, "coordinator.log"),
                  errors="replace") as f:
            return f.read().count("Completed checkpoint ")

    def wait_completed(self, n, timeout=20):
        end = time.time() + timeout
        while self.completed() < n:
            if time.time() > end:
                raise killrun.RunFailed("fewer than %d checkpoints completed"
                                        " in %d s" % (n, timeout))
            self.sleep(0.2)

    def members_view(self, want, timeout=10):
        """The "members" of the coordinator's /checkpoints once @p want
        (a dict of its figures) holds; RunFailed with the last one read
        if it does not within @p timeout s."""
        url = "http://127.0.0.1:%d/checkpoints" % self.rest_port
        end, view = time.time() + timeout, None
        while time.time() < end:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    view = json.load(resp).get("members")
            except (OSError, ValueError):
                view = None
            if view and all(view.get(k) == v for k, v in want.items()):
                return view
            self.sleep(0.3)
        raise killrun.RunFailed("/checkpoints: members %s, want %s" % (
            view, want))

    def check_owners(self, table, allowed, what):
        """Every task of @p table runs on one member, of @p allowed."""
        bad = {t: o for t, o in table.items()
               if len(o) != 1 or o[0] not in allowed}
        if len(table) != NTASKS or bad:
            raise killrun.RunFailed(
                "the RESTORE after %s: %d tasks, owned by other instances "
                "than the live members %s: %s" % (what, len(table),
                                                   sorted(allowed), bad))
        per = collections.Counter(o[0] for o in table.values())
        self.event("RESTORE after %s: tasks per member %s" % (
            what, dict(per)))
        if max(per.values()) - min(per.values()) > 1 or \
                len(per) != len(allowed):
            raise killrun.RunFailed("the RESTORE after %s is not balanced: "
                                    "%s over %d members" % (
                                        what, dict(per), len(allowed)))

    # --- cases ---------------------------------------------------------
    def faults_scale(self):
        first = self.join()
        self.produce(self.batches[0])
        self.sleep(3.0)
        with open(os.path.join(self.dir, "coordinator.log"),
                  errors="replace") as f:
            log_text = f.read()
        want = "%d tasks wait for %d more slots" % (NTASKS - SLOTS,
                                                  NTASKS - SLOTS)
        if want not in log_text or self.completed():
            raise killrun.RunFailed("one member of %d slots for %d tasks: "
                                    "expected \"%s\" in the coordinator log "
                                    "and no checkpoint (%d completed)" % (
                                        SLOTS, NTASKS, want,
                                        self.completed()))
        view = self.members_view({"count": 1, "slots": SLOTS,
                                  "tasks_vacant": NTASKS - SLOTS,
                                  "slots_missing": NTASKS - SLOTS})
        if [m["tasks"] for m in view["list"]] != [SLOTS]:
            raise killrun.RunFailed("/checkpoints: the one member's tasks: "
                                    "%s, want %d" % (view["list"], SLOTS))
        self.event("one member: the job waits (%s; /checkpoints: %d slots "
                   "missing)" % (want, view["slots_missing"]))
        self.join()
        self.join()
        for b in self.batches[1:3]:
            self.produce(b)
            self.sleep(0.7)
        self.wait_completed(2)
        # kill -9 one member: its tasks move to the others in one RESTORE
        victim = self.members[1]
        before = len(self.generations())
        self.kill(victim)
        for b in self.batches[3:5]:
            self.produce(b)
            self.sleep(0.5)
        table = self.wait_restore(before, "the kill")
        self.check_owners(table, {m.name for m in self.live()},
                          "kill -9 " + victim.name)
        view = self.members_view({"count": len(self.live()), "removed": 1,
                                  "tasks_vacant": 0, "slots_missing": 0})
        if sum(m["tasks"] for m in view["list"]) != NTASKS:
            raise killrun.RunFailed("/checkpoints after the kill: members' "
                                    "tasks %s, want %d in all" % (
                                        view["list"], NTASKS))
        self.tables.append((self.generations()[before],
                            {self.instance(m) for m in self.live()},
                            "kill -9 " + victim.name))
        # a fourth member gets tasks at the next rebalance
        self.wait_completed(self.completed() + 1)
        n = len(self.generations())
        fourth = self.join()
        self.instance(fourth)  # it started
        for b in self.batches[5:7]:
            self.produce(b)
            self.sleep(0.5)
        table = self.wait_restore(n, "the join of " + fourth.name)
        self.check_owners(table, {m.name for m in self.live()},
                          "the join of " + fourth.name)
        self.tables.append((self.generations()[n],
                            {self.instance(m) for m in self.live()},
                            "the join of " + fourth.name))
        # a paused member is removed and stops; its output stays invisible
        self.wait_completed(self.completed() + 1)
        paused = first
        paused.signal(signal.SIGSTOP)  # a cause (Proc.signal)
        for b in self.batches[7:9]:
            self.produce(b)
            self.sleep(0.5)
        self.sleep(3.0)  # past heartbeat.timeout: the others take over
        paused.signal(signal.SIGCONT)
        for b in self.batches[9:]:
            self.produce(b)
            self.sleep(0.3)
        self.zombie_output = self.committed()
        end = time.time() + 10
        while paused.alive() and time.time() < end:
            time.sleep(0.2)
        if paused.alive():
            raise killrun.RunFailed("the paused member %s still runs: it "
                                    "was removed, it must stop" % paused.name)
        with open(os.path.join(self.dir, paused.name + ".log"),
                  errors="replace") as f:
            if "was removed from job" not in f.read():
                raise killrun.RunFailed("the paused member %s stopped "
                                        "without saying it was removed" %
                                        paused.name)
        self.event("the paused member stopped: it was removed")

    def faults_random(self):
        """2-4 events: kill -9 a member (keeping two), join, or both."""
        for _ in range(3):
            self.join()
        self.produce(self.batches[0])
        plan, t = [], 1.0
        for _ in range(self.rng.randint(2, 4)):
            t += self.rng.uniform(1.0, 4.0)
            plan.append((t, self.rng.choice(("kill", "join", "both"))))
        self.event("plan: %s" % plan)
        start, todo = self.elapsed(), list(plan)
        batches = list(self.batches[1:])
        while todo or batches:
            if batches:
                self.produce(batches.pop(0))
            self.sleep(0.5)
            while todo and self.elapsed() - start >= todo[0][0]:
                _, what = todo.pop(0)
                live = self.live()
                if what in ("kill", "both") and len(live) > 2:
                    self.kill(self.rng.choice(live))
                if what in ("join", "both") or len(self.live()) < 2:
                    self.join()

    def make_input(self):
        """killrun.py's input in 12 batches (the case's steps)."""
        super().make_input()
        lines = [l for b in self.batches for l in b]
        step = (len(lines) + 11) // 12
        self.batches = [lines[i:i + step]
                        for i in range(0, len(lines), step)]

    def execute(self):
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file,
                   self.lines_topic + ":3", self.counts_topic + ":3")
        self.event("case %s seed %d, %d words" % (
            self.case, self.seed, sum(self.model.values())))
        self.start_coordinator()
        if self.kind == "scale":
            self.faults_scale()
        else:
            self.faults_random()
        self.final_output()
        if self.kind == "scale":
            problem = self.check_prefix(self.zombie_output)
            if problem:
                raise killrun.RunFailed("while the paused member ran: " +
                                        problem)
        self.check_restores()
        self.check_tables()

    def check_tables(self):
        """The RESTORE of each generation in self.tables names a live
        member for every task (read once the coordinator stopped): the
        tasks moved in that RESTORE, not by an ASSIGN after it."""
        restores = {b["generation"]: b for _, b in self.control()["Restore"]}
        for gen, live, what in self.tables:
            owners = {"%s:%d" % (o["task"]["stage"], o["task"]["index"]):
                      o["instance"] for o in restores[gen]["owners"]}
            bad = {t: o for t, o in owners.items() if o not in live}
            if len(owners) != NTASKS or bad:
                raise killrun.RunFailed(
                    "the RESTORE of generation %d (after %s) names %d tasks,"
                    " these not to a live member: %s" % (gen, what,
                                                         len(owners), bad))
        self.event("owner tables: %d RESTOREs name live members only" %
                   len(self.tables))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True, help="the ksnap binary")
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--case", default="scale", choices=["scale", "random"])
    killrun.add_run_options(ap)
    args = killrun.option_defaults(ap.parse_args())
    if killrun.check_env():
        return 1
    args.ksnap, args.lib = os.path.abspath(args.ksnap), \
        os.path.abspath(args.lib)
    return killrun.run_seeds(args, "ksnap-scale-",
                             lambda seed: ScaleRun(args, args.case, seed),
                             "scale %s" % args.case)


if __name__ == "__main__":
    sys.exit(main())
