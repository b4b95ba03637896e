"""Event time under crash tests (stdlib only), run by dagrun.py --case
clicks, --case clicks-happy, --case clicks-commit-window, --case
clicks-rescale, --case clicks-sliding and --case clicks-session (its
command line, killrun.py's conventions and helpers). The job is
examples/clicks (libclicks.so):

    source lines (3 partitions) -> parse (P=2) --default--> exchange
      watermark per partition:      |                     JOB.parse
      max event time - B - 1 ms     |                     -> window (P=2)
                                    |                        -> sink counts
                                    +--output "late"------> sink late
                                    +--output "bad"-------> sink bad

A source line is "PAGE EVENT_TIME_MS SEQ", key PAGE, written to a
partition chosen by the generator (kcat -p), so each partition's order is
the input's. parse sets the record's timestamp (its event time) to
EVENT_TIME_MS; a line it cannot parse ("PAGE oops SEQ", "PAGE -N SEQ")
goes to the side output "bad". window counts clicks per page in tumbling
windows of W = 60 s, fires (PAGE@WINDOW_START, "COUNT") when the task's
watermark passes the window's end - 1, emits the new count at once for
every click of a window that already fired (a late firing) and drops the
window L = 10 s of event time later (allowed lateness).

The input: a few minutes of event time per partition, its clock going up
with the partition's lines, most clicks within the bound B = 5 s behind
the clock (on time), some further behind but within the allowed lateness,
some beyond it. One batch a second per minute of event time: each ends
11 s past a minute (its watermark fires the minute's windows) and the
next begins with stragglers of that minute, within the allowed lateness,
which window reads after the firing (late firings; the case clicks-happy
requires some). The event times start minutes after the produce, so that
the Kafka timestamp of a malformed line (its event time: parse sets none)
is below every click's and never moves a watermark; and end within half
an hour of it (a broker may refuse timestamps far ahead of its clock:
log.message.timestamp.after.max.ms). Last, one flush line per
partition ("flush T SEQ", T far beyond the data): its watermark passes the
cleanup of every data window. Its own window never fires and is not in
the model.

The model, from the input alone, per partition in order: wm = (largest
event time so far) - B - 1 (none before the first); a click with ts <=
wm - L goes to late as (PAGE, the line, header clicks.watermark=wm), every
other click counts in its (page, window); a malformed line goes to bad as
(PAGE, the line, header clicks.reason). It is deterministic because the
watermark parse compares with is its partition's before the click (a
function of the partition's earlier lines), and because of the allowed
lateness: a click that passed parse has ts > wm - L. Every watermark
window got before the click was sent by parse before it, as the minimum
over partitions, so window's task watermark is <= wm < ts + L <= window
end - 1 + L, the click's window's cleanup time: the window is still
there (fired or not) and counts the click. So the final count of every
(page, window) equals the model; only how many late firings there are
in between depends on timing (which clicks window read before the
watermark that fired their window).

The check on the read_committed sinks: in counts, per key in offset
order (one partition per key), the values strictly increase (an equal or
lower one is an emission repeated across a restore, or a window fired
twice) and the last equals the model's count; no key outside the model,
none missing. late and bad equal their models as multisets (key, value,
headers). Case clicks: 1 to 3 kill -9s of a random worker or the
coordinator at random (seeded) times, each restarted (as dagrun.py's
random case); every failure restores the job once. Case clicks-happy: no
fault, no RESTORE at all, and at least one late firing; it first runs
the README's example without servers (ksnap run --input, a bounded job:
the end of input fires every window) and compares what it prints. Both
first run `ksnap config check` on examples/clicks' two job files.

Case clicks-commit-window: window[0] (a worker of its own) crashes (fault
hook sink.before-commit@2) after COMPLETE(2) and before its commit, in an
epoch that holds event-time firings. The harness triggers the first two
checkpoints itself (ksnap checkpoint trigger; the periodic interval is a
minute, never reached before the crash), so that epoch 2 is exactly
batch 1 and what its watermark fired: batch 0 is produced, its minute's
windows fire (their results show in the counts topic, read uncommitted),
checkpoint 1 is triggered and completes; then batch 1 is produced, whose
stragglers update minute 0's fired windows (late firings) and whose pacer
fires minute 1's windows (counted from clicks of epochs 1 and 2) and the
cleanup of minute 0's; once every one of minute 1's results shows
(uncommitted), checkpoint 2 is triggered, and window[0] dies on its
COMPLETE. Restarted, window[0] restores from checkpoint 2 with its last
commit at 1: its epoch replay (plugin/PROTOCOL.md 8.2, 8.4, 18.5) must
process batch 1's records from checkpoint 1's state and fire the logged
event-time timers again where they fired, writing exactly the lost
transaction's results again (a firing lost: a result missing or, for a
window a straggler updates later, a value jumping; a firing twice: a value
repeated). After the crash a checkpoint is triggered every 0.5 s. The
same checks as clicks, one RESTORE, and window[0]'s log must show the
replay of checkpoint 2 firing timers of the run (else the crash missed
the firings and the case tested nothing).

Case clicks-rescale: the input of clicks in RESCALE_PHASES = 3 shares of
its batches, the flush in the last; the exchange topic JOB.parse has
stage.parse.partitions = 3 (window's largest parallelism). Phase 1 runs
parse P=2, window P=2 without faults; each later phase starts the
coordinator with --from-savepoint and the savepoint the phase before
stopped with, phase 2 at parse P=3, window P=3 (a new writer, parse[2],
whose channels start at the minimum; source partitions, their
watermarks and the key groups with their windows and timers moved to
other tasks; the tasks' watermark floors from the lowest task entry),
phase 3 at one of (1, 2), (2, 1), (1, 1) (seeded: writers vanish). Phase
2 has one kill -9 of its parse or window worker (seeded), 0.2-2 s after
the job runs at the new parallelisms (every task registered: a worker
killed before its tasks registered makes no restore, its tasks wait for
a new instance), restarted 0.1-1.5 s later; phase 3 none or one, 0.3-2.5
s after its start (maybe inside the restore from the savepoint). A phase
ending after batch b waits until the committed output is exactly the
model of batches 0..b (every window batch b's watermark fired at its
count there, no other window, late and bad equal to their models there),
then stops the job with `ksnap savepoint --stop`: every process exits 0
and the output is still that. So the savepoint holds fired windows whose
cleanup timers are pending (minute b: the next batch begins with their
stragglers, late firings on restored windows that must continue the
count, not start again) and open windows (clicks of minute b + 1) whose
firing timers are pending, and the case fails unless the input has
both. The late decision is taken against the partition's watermark,
restored by the partition's name whichever task reads it, so late and
bad equal the same models across the rescales. At the end, clicks'
checks and one RESTORE per start from a savepoint and per kill.

The case can fail: with KSNAP_E2E_CLICKS_RESCALE_BREAK=drop-window the
start of phase 2 renames stage window (--allow-non-restored-state: its
windows, counts and timers are dropped), with =older it starts from a
savepoint taken after batch 0 instead of the stop's (the output since
is made again): the check of phase 2's end fails either way.

Cases clicks-sliding and clicks-session: the input (its generator, its
late and bad clicks), the faults and the side-output checks of clicks,
the stage window running libclicks.so's window_sliding or window_session
(the window library, ksnap/window.h, with the same allowed lateness L):

- clicks-sliding: windows of SLIDING_SIZE_MS = 60 s every SLIDE_MS =
  20 s, key PAGE@WINDOW_START; a click counts in each of the 3 windows
  [s, s + 60 s) with s a multiple of 20 s in (ts - 60 s, ts]. Every one
  of them ends after ts, so the argument above holds for each: the
  model's final count per (page, window start) counts every click that
  passed parse. The checks are clicks': per key strictly increasing
  values ending at the model's count, no key outside the model.
- clicks-session: sessions per page with the gap GAP_MS = 10 s (the
  generator gives a page a click every few seconds: a 10 s gap makes 5
  to 10 sessions per page at least, and a within-lateness straggler
  often bridges two of them or extends one that fired; 20 s left some
  seeds a single session on a page and no merge), key PAGE@START-END
  (END = the last click + the gap). The model, from the clicks that
  passed parse alone: a click's [ts, ts + gap) joins every session of its
  page whose [start, end) overlaps it, merging them; the final sessions
  are the connected components of those intervals, whatever order the
  clicks come in. No session is removed before a click that joins it
  comes (that click has ts > wm - L, and the session ends after ts, so
  its cleanup end - 1 + L is at least ts + L, above window's watermark
  then, as above), so every click is in its final session, whose last
  result is the model's count (a click joining a session that fired
  fires it again at once). Other keys depend on timing: a session that
  fired (the watermark passed its end - 1) and that a within-lateness
  click then extends, or merges with another one, was emitted under
  bounds that are not final, and is never emitted again (its results
  stay in the topic). The checks: for every final session, its key's
  committed values strictly increase and end at the model's count; every
  other committed key is a session of its page contained in a final
  session ([start, end) within it), its values strictly increasing (a
  session only grows until it is merged away) and below that final
  session's count (the merge or extension added at least one click); no
  key outside every final session, no final session missing.
"""
import collections
import os
import re
import subprocess
import threading
import time

import killrun

STAGES = [("parse", 2), ("window", 2)]
PARTITIONS = 3
BOUND_MS = 5000      # source.watermark.max-out-of-orderness
LATENESS_MS = 10000  # CLICKS_LATENESS_MS of examples/clicks/clicks.c
WINDOW_MS = 60000    # CLICKS_WINDOW_MS
SLIDING_SIZE_MS = 60000  # CLICKS_SLIDING_SIZE_MS (case clicks-sliding)
SLIDE_MS = 20000         # CLICKS_SLIDING_SLIDE_MS
GAP_MS = 10000           # CLICKS_SESSION_GAP_MS (case clicks-session)
# the windows of each case, and of each the operator of stage window
KINDS = {"clicks-sliding": "sliding", "clicks-session": "session"}
OPERATORS = {"tumbling": "window", "sliding": "window_sliding",
             "session": "window_session"}
CUT_MS = 11000       # a batch ends this far past a minute (make_input)
REASON = "not PAGE EVENT_TIME_MS with a positive integer time"
FLUSH = "flush"
# examples/clicks/README.md's run without servers: its input and output
README_INPUT = ["home 1700000041000 1", "home 1700000043000 2",
                "cart 1700000050000 3", "home 1700000101000 4",
                "home 1700000106000 5", "cart 1700000098000 6",
                "home 1700000080000 7", "home noon 8"]
README_OUTPUT = ["late-clicks home home 1700000080000 7",
                 "bad-clicks  home noon 8",
                 "clicks-per-minute cart@1700000040000 2",
                 "clicks-per-minute home@1700000040000 2",
                 "clicks-per-minute home@1700000100000 2"]
# case clicks-commit-window: window[0] dies between COMPLETE(2) and its
# commit; checkpoints are triggered by the harness (a minute's interval,
# never reached before the crash), every TICK_S after it
COMMIT_HOOK = "sink.before-commit@2"
CRASH_TASK, CRASH_CHECKPOINT = "window[0]", 2
TICK_S = 0.5
REPLAYED = re.compile(r"(\S+): epoch replay: checkpoint (\d+) replayed: "
                      r".* (\d+) timers fired as in the run")
# case clicks-rescale: phases of the input, each after the first started
# from the savepoint the one before stopped with, at (parse, window)
# parallelisms: RESCALE_UP, then one of RESCALE_DOWN (seeded); the exchange
# topic JOB.parse has RESCALE_PARTITIONS (window's largest parallelism)
RESCALE_PHASES = 3
RESCALE_UP = (3, 3)
RESCALE_DOWN = [(1, 2), (2, 1), (1, 1)]
RESCALE_PARTITIONS = 3
# The failure demonstration (never set by CTest): the first start from a
# savepoint is made wrong. drop-window: stage window renamed LOST_WINDOW
# (with --allow-non-restored-state: the savepoint's windows, counts and
# timers are dropped, the operator starts empty); older: from a savepoint
# taken after batch 0, not from the stop's.
BREAK_ENV = "KSNAP_E2E_CLICKS_RESCALE_BREAK"
BREAKS = ("drop-window", "older")
LOST_WINDOW = "window_lost"


SESSION_KEY = re.compile(r"^(.*)@(\d+)-(\d+)$")


def session_counts(page, times):
    """The final sessions of @p page's click times @p times (case
    clicks-session): "PAGE@START-END" -> clicks. A click's [ts, ts +
    GAP_MS) joins every session it overlaps: in time order, a click
    before the current session's end extends it."""
    out, cur = {}, None
    for ts in sorted(times) + [None]:
        if cur is not None and ts is not None and ts < cur[1]:
            cur[1], cur[2] = max(cur[1], ts + GAP_MS), cur[2] + 1
            continue
        if cur is not None:
            out["%s@%d-%d" % (page, cur[0], cur[1])] = cur[2]
        cur = [ts, ts + GAP_MS, 1] if ts is not None else None
    return out


class ClicksRun(killrun.Run):
    def __init__(self, args, seed, case="clicks"):
        super().__init__(args, case, seed)
        self.sinks = {s: "%s.%s" % (self.job, s)
                      for s in ("counts", "late", "bad")}
        self.stages = dict(STAGES)
        self.window = "window"  # stage window's name (LOST_WINDOW: BREAKS)
        self.kind = KINDS.get(case, "tumbling")
        self.prefixes = {}  # batch -> prefix_model(batch)

    def write_job(self):
        lib, w = self.args.clicks_lib, "stage." + self.window
        props = {
            **self.quick_props(),
            "source.watermark.max-out-of-orderness": "%dms" % BOUND_MS,
            "pipeline.auto-watermark-interval": "100ms",
            "stage.parse.operator": lib + ":parse",
            "stage.parse.parallelism": str(self.stages["parse"]),
            "stage.parse.input": "source:" + self.lines_topic,
            "stage.parse.output.late": "sink:" + self.sinks["late"],
            "stage.parse.output.bad": "sink:" + self.sinks["bad"],
            w + ".operator": lib + ":" + OPERATORS[self.kind],
            w + ".parallelism": str(self.stages[self.window]),
            w + ".input": "stage:parse",
            w + ".output": "sink:" + self.sinks["counts"],
        }
        if self.case == "clicks-rescale":
            # exchange partitions fixed for window's largest parallelism
            props["stage.parse.partitions"] = str(RESCALE_PARTITIONS)
            props["state.savepoints.dir"] = "file://" + self.savepoint_dir()
        if self.case == "clicks-commit-window":
            # no periodic checkpoint before the crash (the harness
            # triggers them); the transaction timeout rule: more than
            # interval * sink.producer-pool-size (4) + the timeout
            props["execution.checkpointing.interval"] = "1min"
            props["kafka.transaction.timeout.ms"] = "600000"
        self.write_props(props)

    def make_input(self):
        """self.parts: per partition its lines [(key, value)];
        self.batches: [[(partition, lines)]]; self.counts: "PAGE@START" ->
        final count; self.model: the late and bad records (sink, key,
        value, headers) -> occurrences. A batch ends where the clocks
        passed a minute by CUT_MS, with a click at CUT_MS - 1 s on each
        partition: its watermark (at least 4 s past the minute) fires the
        minute's windows; the next batch begins with stragglers of that
        minute (up to 3 s before its end: within the allowed lateness,
        the watermark being less than 6 s past the minute), which then
        update fired windows."""
        pages = ["page%02d" % i for i in range(self.rng.randint(6, 15))]
        # whole minutes, 5 to 6 minutes after now (the run takes less)
        base = (int(time.time() * 1000) // WINDOW_MS + 6) * WINDOW_MS
        self.base = base  # batch b's watermark fires base + b minutes
        minutes = self.rng.randint(4, 6)
        span = minutes * WINDOW_MS
        flush_ts = base + span + 10 * WINDOW_MS
        self.parts, seq, cuts = [], 0, []
        for p in range(PARTITIONS):
            n, start = self.rng.randint(150, 300), self.rng.randint(0, 3000)
            lines, cut = [], [0]
            for i in range(n):
                clock = base + start + span * i // n
                if clock >= base + len(cut) * WINDOW_MS + CUT_MS:
                    minute = base + len(cut) * WINDOW_MS
                    page = self.rng.choice(pages)  # the batch's pacer
                    lines.append((page, "%s %d %d" % (
                        page, minute + CUT_MS - 1000, seq)))
                    seq += 1
                    cut.append(len(lines))
                    for _ in range(self.rng.randint(1, 2)):
                        page = self.rng.choice(pages)
                        lines.append((page, "%s %d %d" % (
                            page, minute - self.rng.randint(500, 3000),
                            seq)))
                        seq += 1
                page, r = self.rng.choice(pages), self.rng.random()
                if r < 0.03:
                    t = "oops"
                elif r < 0.05:
                    t = str(-self.rng.randint(1, clock))
                elif r < 0.10:  # beyond the allowed lateness
                    t = str(clock - BOUND_MS - LATENESS_MS -
                            self.rng.randint(1000, 40000))
                elif r < 0.22:  # behind the watermark, within it mostly
                    t = str(clock - self.rng.randint(BOUND_MS,
                                                     BOUND_MS + LATENESS_MS))
                else:  # within the bound
                    t = str(clock - self.rng.randint(0, BOUND_MS - 1))
                lines.append((page, "%s %s %d" % (page, t, seq)))
                seq += 1
            cut += [len(lines)] * (minutes + 1 - len(cut))
            lines.append((FLUSH, "%s %d %d" % (FLUSH, flush_ts, seq)))
            seq += 1
            self.parts.append(lines)
            cuts.append(cut + [len(lines)])  # the last batch: the flush
        self.batches = [[(p, lines[cuts[p][b]:cuts[p][b + 1]])
                         for p, lines in enumerate(self.parts)]
                        for b in range(minutes + 1)]
        self.model_of()
        with open(os.path.join(self.dir, "input.txt"), "w") as f:
            for p, lines in enumerate(self.parts):
                f.write("".join("%d %s\n" % (p, v) for _, v in lines))

    def model_of(self):
        """The failure-free run's output from self.parts (see the top of
        this file)."""
        self.counts, self.model, self.behind = self.model_parts(
            self.parts, self.kind)
        late = sum(n for r, n in self.model.items() if r[0] == "late")
        if not late or not self.behind:
            raise killrun.RunFailed("the input has %d late clicks and %d "
                                    "within the allowed lateness: it must "
                                    "have both" % (late, self.behind))

    @staticmethod
    def model_parts(parts, kind="tumbling"):
        """(counts, model, behind) of the lines @p parts (per partition,
        in order): the final counts "PAGE@START" (the tumbling or sliding
        windows, @p kind) or "PAGE@START-END" (the final sessions) ->
        count, the late and bad records -> occurrences, and how many
        clicks were behind their watermark but within the allowed
        lateness. A prefix of every partition gives the model of the
        input up to there (a click's fate depends only on its partition's
        earlier lines)."""
        counts = collections.Counter()
        model = collections.Counter()
        behind = 0  # clicks behind their watermark, not late
        clicks = collections.defaultdict(list)  # page -> times (sessions)
        for lines in parts:
            top = None
            for page, v in lines:
                t = v.split()[1]
                if not t.isdigit() or int(t) <= 0:
                    model[("bad", page, v, "clicks.reason=" + REASON)] += 1
                    continue
                ts = int(t)
                wm = top - BOUND_MS - 1 if top is not None else None
                if wm is not None and ts <= wm - LATENESS_MS:
                    model[("late", page, v,
                           "clicks.watermark=%d" % wm)] += 1
                else:
                    if wm is not None and ts <= wm:
                        behind += 1
                    if page == FLUSH:
                        pass
                    elif kind == "session":
                        clicks[page].append(ts)
                    elif kind == "sliding":  # starts in (ts - size, ts]
                        s = ts - ts % SLIDE_MS
                        while s > ts - SLIDING_SIZE_MS:
                            counts["%s@%d" % (page, s)] += 1
                            s -= SLIDE_MS
                    else:
                        counts["%s@%d" % (page, ts - ts % WINDOW_MS)] += 1
                top = ts if top is None else max(top, ts)
        for page, times in clicks.items():
            counts.update(session_counts(page, times))
        return counts, model, behind

    def produce(self, batch):
        for p, lines in batch:
            if not lines:
                continue
            r = subprocess.run(killrun.kcat() + [
                "-P", "-b", os.environ["KSNAP_TEST_BOOTSTRAP"], "-t",
                self.lines_topic, "-p", str(p), "-K", "\t",
                "-X", "enable.idempotence=true"],
                input="".join("%s\t%s\n" % kv for kv in lines).encode(),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
            if r.returncode != 0:
                raise killrun.RunFailed("kcat -P: %s" % r.stdout.decode(
                    errors="replace"))
        self.event("produced batch %d: %s lines" % (
            self.batches.index(batch),
            " + ".join(str(len(lines)) for _, lines in batch)))

    def read(self, sink, isolation="read_committed"):
        """@p sink's read_committed (or @p isolation) records [(partition,
        offset, key, value, headers)], in partition and offset order."""
        return killrun.read_records(self.sinks[sink], isolation)

    def committed(self):
        """Every sink's records as (key, (sink, key, value, headers),
        where), each sink in partition and offset order."""
        out = []
        for s in sorted(self.sinks):
            out += [(k, (s, k, v, h), "%s %d@%d" % (s, p, o))
                    for p, o, k, v, h in self.read(s)]
        return out

    def containing(self, k):
        """Case clicks-session: the final session (its key) that contains
        the session @p k ("PAGE@START-END") and is not it, else None."""
        m = SESSION_KEY.match(k)
        if not m:
            return None
        page, start, end = m.group(1), int(m.group(2)), int(m.group(3))
        for f in self.sessions.get(page, ()):
            fm = SESSION_KEY.match(f)
            if f != k and int(fm.group(2)) <= start and \
                    end <= int(fm.group(3)):
                return f
        return None

    def counts_problem(self, out, counts=None):
        """None if the counts sink's records in @p out are, per key, a
        strictly increasing sequence ending at the model's count (of
        @p counts, default self.counts), for exactly the model's keys
        (case clicks-session: other keys each a session within a final
        session, strictly increasing and below its count); else a
        summary. Sets self.intermediate: how many such other keys there
        are."""
        want = self.counts if counts is None else counts
        seen = collections.defaultdict(list)
        for k, (s, _, v, _), where in out:
            if s == "counts":
                seen[k].append((int(v) if v.isdigit() else -1, where))
        problems = []
        if self.kind == "session" and not hasattr(self, "sessions"):
            self.sessions = collections.defaultdict(list)  # page -> keys
            for f in self.counts:
                self.sessions[f.rsplit("@", 1)[0]].append(f)
        self.intermediate = 0
        for k in sorted(set(seen) | set(want)):
            vals = seen.get(k, [])
            within = None
            if k not in want and self.kind == "session":
                within = self.containing(k)
            if k not in want and not within:
                problems.append("%s: not in the model%s, got %s" % (
                    k, " (within no final session of its page)"
                    if self.kind == "session" else "",
                    killrun.short(v for v, _ in vals)))
                continue
            if not vals:
                problems.append("%s: missing, model %d" % (k, want[k]))
                continue
            down = [(a, b) for a, b in zip(vals, vals[1:]) if b[0] <= a[0]]
            if down:
                (a, _), (b, where) = down[0]
                problems.append("%s: %d at %s after %d (values %s)" % (
                    k, b, where, a, killrun.short(v for v, _ in vals)))
            if within:  # a session before a merge or an extension
                self.intermediate += 1
                if vals[-1][0] >= want[within]:
                    problems.append(
                        "%s: %d at %s, not below %d of the final session "
                        "%s that contains it" % (
                            k, vals[-1][0], vals[-1][1], want[within],
                            within))
            elif vals[-1][0] != want[k]:
                problems.append("%s: last %d, model %d" % (
                    k, vals[-1][0], want[k]))
        return "; ".join(problems[:10]) + (
            "; ... (%d problems)" % len(problems)
            if len(problems) > 10 else "") if problems else None

    def check(self, out):
        """None if @p out equals the model (see the top of this file),
        else a summary."""
        sides = [x for _, x, _ in out if x[0] != "counts"]
        return "; ".join(p for p in (
            self.counts_problem(out),
            self.multiset_problem(collections.Counter(sides), len(sides)))
            if p) or None

    def wait_output(self):
        """Waits until the committed output equals the model, then once
        more (a later checkpoint must not add any). Output that stops
        changing for killrun.STALL_S is final: the run fails at once."""
        last, since = None, self.elapsed()
        while True:
            out = self.committed()
            if not self.check(out):
                break
            if len(out) != last:
                last, since = len(out), self.elapsed()
            stalled = self.elapsed() - since > killrun.STALL_S
            if stalled or self.elapsed() + 0.5 > self.args.timeout:
                self.save(out)
                raise killrun.RunFailed("%s: %d records committed: %s" % (
                    "output stalled for %d s" % killrun.STALL_S if stalled
                    else "run did not finish in %d s" % self.args.timeout,
                    len(out), self.check(out)) + self.commit_window_note(out))
            self.sleep(0.5)
        self.event("committed output complete (%d records)" % len(out))
        self.sleep(2.5)  # > 2 checkpoint intervals: nothing may be added
        return self.committed()

    def check_examples(self):
        """examples/clicks' job files pass ksnap config check."""
        env = self.example_env(self.args.clicks_lib)
        for name in ("clicks.properties", "embedded.properties"):
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "clicks", name)
            r = subprocess.run([self.args.ksnap, "config", "check", path],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60, env=env)
            if r.returncode != 0:
                raise killrun.RunFailed(
                    "ksnap config check %s: exit %d: %s" % (
                        path, r.returncode, r.stdout.decode(errors="replace")))

    def check_embedded(self):
        """examples/clicks/README.md's run without servers prints what the
        README says: a bounded job, whose end of input (the watermark at
        its maximum) fires every window and cleans it up."""
        path = os.path.join(self.dir, "readme-clicks.txt")
        with open(path, "w") as f:
            f.write("".join(l + "\n" for l in README_INPUT))
        job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "..", "examples", "clicks", "embedded.properties")
        r = subprocess.run(
            [self.args.ksnap, "run", "--input", path, job],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
            env=dict(os.environ, KSNAP_OPERATOR_PATH=os.path.dirname(
                self.args.clicks_lib)))
        out = r.stdout.decode(errors="replace")
        got = [l for l in out.splitlines() if l.split(" ")[0] in
               ("late-clicks", "bad-clicks", "clicks-per-minute")]
        if r.returncode != 0 or sorted(got) != sorted(README_OUTPUT):
            raise killrun.RunFailed(
                "ksnap run --input (examples/clicks/README.md): exit %d, "
                "sinks %s, expected %s: %s" % (r.returncode, got,
                                               README_OUTPUT, out[-2000:]))
        self.event("ksnap run --input: %d records as the README says" %
                   len(got))

    def start_job(self, fault=None):
        if self.case != "clicks-commit-window":
            self.start_stage_workers(self.stages)
            return
        # window's tasks one per worker: the hook's id then names
        # window[0]'s COMPLETE(2) alone
        self.start_stage_workers({"parse": self.stages["parse"]})
        for i in range(self.stages["window"]):
            w = killrun.Proc(self, "worker-window%d" % i, [
                self.args.ksnap, "worker", "--tasks", "window:%d" % i,
                self.job_file])
            self.workers.append(w)
            self.procs.append(w)
            w.start({"KSNAP_FAULT": COMMIT_HOOK} if i == 0 else None)

    def fired_keys(self, b):
        """The results ("PAGE@START") fired once batch @p b's watermark
        passed: the windows of the input up to it (batches 0..b) that
        end by the minute its pacer passed (base + b + 1 minutes; earlier
        ones too, from clicks behind the first watermark)."""
        return set(self.prefix_model(b)[0])

    def prefix_model(self, b):
        """The model of the input up to batch @p b (tumbling windows):
        (fired, open, sides): the counts "PAGE@START" -> count of the
        windows batch @p b's watermark fired (see fired_keys) and of those
        it did not (open: their firing timers pending), and the late and
        bad records -> occurrences."""
        if b not in self.prefixes:
            prefix = [[l for batch in self.batches[:b + 1]
                       for l in batch[p][1]] for p in range(PARTITIONS)]
            counts, sides, _ = self.model_parts(prefix)
            last = self.base + b * WINDOW_MS
            fired = {k: n for k, n in counts.items()
                     if int(k.rsplit("@", 1)[1]) <= last}
            self.prefixes[b] = (fired, {k: n for k, n in counts.items()
                                        if k not in fired}, sides)
        return self.prefixes[b]

    def wait_uncommitted(self, keys, what):
        """Waits until the counts topic holds a result of each of @p keys,
        committed or not (the firings happened)."""
        while True:
            got = {k for _, _, k, _, _ in self.read("counts",
                                                    "read_uncommitted")}
            if keys <= got:
                break
            if self.elapsed() > 60:
                raise killrun.RunFailed(
                    "%s: no result of %s in 60 s" % (
                        what, killrun.short(sorted(keys - got))))
            self.sleep(0.1)
        self.event("%s: the %d results show (uncommitted)" % (
            what, len(keys)))

    def tick(self, stop):
        """Triggers a checkpoint every TICK_S until @p stop is set."""
        while not stop.wait(TICK_S):
            try:
                subprocess.run([self.args.ksnap, "checkpoint", "trigger",
                                self.job_file, "--no-wait"],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def commit_window(self):
        """The case clicks-commit-window up to the committed output (see
        the top of this file); @returns the ticker's stop event."""
        window0 = next(w for w in self.workers if w.name == "worker-window0")
        self.produce(self.batches[0])
        self.wait_uncommitted(self.fired_keys(0), "batch 0's minute fired")
        out = self.ksnap("checkpoint", "trigger", self.job_file,
                         "--timeout", "30")
        if "/chk-1/" not in out:
            raise killrun.RunFailed("the first checkpoint triggered is not "
                                    "1: %s" % out.strip())
        self.event("checkpoint 1 completed: " + out.split()[-1])
        self.produce(self.batches[1])
        keys = self.fired_keys(1)
        self.wait_uncommitted(keys, "batch 1's minute fired")
        self.ksnap("checkpoint", "trigger", self.job_file, "--no-wait")
        self.event("checkpoint %d requested: window[0] crashes on its "
                   "COMPLETE" % CRASH_CHECKPOINT)
        t = self.elapsed() + 30
        while window0.alive():
            if self.elapsed() > t:
                raise killrun.RunFailed("no crash at %s in 30 s" %
                                        COMMIT_HOOK)
            self.sleep(0.05)
        code = window0.popen.returncode
        self.event("%s exited %d" % (window0.name, code))
        self.cause("crash of %s at the fault hook" % window0.name)
        if code != 137:
            raise killrun.RunFailed("%s exited %d, not 137 at %s" % (
                window0.name, code, COMMIT_HOOK))
        self.sleep(self.rng.uniform(0.1, 1.0))
        window0.start()
        stop = threading.Event()
        threading.Thread(target=self.tick, args=(stop,), daemon=True).start()
        try:
            self.produce_while([], batches=self.batches[2:])
        except BaseException:
            stop.set()
            raise
        return stop

    def check_replay_fired(self):
        """The case tested what it claims: window[0]'s epoch replay of
        checkpoint 2 fired timers of the run (its log says how many)."""
        replays = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name),
                          errors="replace") as f:
                    replays += [(m.group(1), int(m.group(2)),
                                 int(m.group(3)))
                                for m in map(REPLAYED.search, f) if m]
        self.event("epoch replays (task, checkpoint, timers fired as in "
                   "the run): %s" % replays)
        fired = sum(n for task, c, n in replays
                    if task == CRASH_TASK and c == CRASH_CHECKPOINT)
        killrun.log("     epoch replay of %s at checkpoint %d: %d timers "
                    "fired as in the run" % (CRASH_TASK, CRASH_CHECKPOINT,
                                             fired))
        if not fired:
            raise killrun.RunFailed(
                "no epoch replay of %s at checkpoint %d fired a timer of "
                "the run (replays: %s): the crash at %s missed the epoch "
                "of the firings" % (CRASH_TASK, CRASH_CHECKPOINT, replays,
                                    COMMIT_HOOK))

    def prefix_problem(self, out, b):
        """None if the committed output @p out is that of the input up to
        batch @p b (prefix_model): the fired windows' values strictly
        increasing up to their counts there, no open window's result, the
        late and bad sinks equal to their models there; else a
        summary."""
        fired, _, sides = self.prefix_model(b)
        got = [x for _, x, _ in out if x[0] != "counts"]
        return "; ".join(p for p in (
            self.counts_problem(out, fired),
            self.multiset_problem(collections.Counter(got), len(got), sides))
            if p) or None

    def wait_prefix(self, b):
        """Waits until the committed output is that of the input up to
        batch @p b (prefix_problem); output that stops changing for
        killrun.STALL_S is final: the run fails."""
        last, since = None, self.elapsed()
        while True:
            out = self.committed()
            problem = self.prefix_problem(out, b)
            if not problem:
                break
            if len(out) != last:
                last, since = len(out), self.elapsed()
            if self.elapsed() - since > killrun.STALL_S:
                self.save(out)
                raise killrun.RunFailed(
                    "output stalled for %d s at %d records committed, not "
                    "the model of batches 0..%d (at parse P=%d, %s P=%d): "
                    "%s" % (killrun.STALL_S, len(out), b,
                            self.stages["parse"], self.window,
                            self.stages[self.window], problem))
            self.sleep(0.5)
        self.event("committed output is the model of batches 0..%d (%d "
                   "records)" % (b, len(out)))

    def phase_batches(self):
        """Case clicks-rescale: self.batches split into RESCALE_PHASES
        shares [(first batch, batches)], one batch at least each, the
        flush in the last."""
        n = len(self.batches)
        cuts = [round(i * n / RESCALE_PHASES)
                for i in range(RESCALE_PHASES + 1)]
        return [(cuts[i], self.batches[cuts[i]:cuts[i + 1]])
                for i in range(RESCALE_PHASES)]

    def across(self, b):
        """Case clicks-rescale, a stop after batch @p b: (the windows that
        fired before it and count clicks after it: late firings on
        restored windows, the windows open at the stop that count clicks
        before and after it), from the model."""
        fired, opened, _ = self.prefix_model(b)
        return ([k for k, n in fired.items() if self.counts[k] > n],
                [k for k, n in opened.items() if self.counts[k] > n])

    def worker_kills(self, n):
        """A produce_while plan of @p n kill -9s of a random worker of the
        phase, 0.3-2.5 s apart, each restarted 0.1-1.5 s later (the first
        may fall into the restore from the savepoint)."""
        plan, t = [], 0.0
        for _ in range(n):
            t += self.rng.uniform(0.3, 2.5)
            victim = self.rng.choice(self.workers)
            d = self.rng.uniform(0.1, 1.5)
            plan.append((t, victim, d))
            t += d
        self.event("plan: " + ", ".join("%.2fs kill %s restart +%.2fs" % (
            t, v.name, d) for t, v, d in plan))
        return plan

    def kill_running(self):
        """A produce_while call: once the job runs at the phase's
        parallelisms (every task registered: a kill before that restores
        nothing, its tasks wait for a new instance), 0.2-2 s later kill -9
        a random worker of the phase, restarted 0.1-1.5 s later: the job
        restores at the new parallelisms, from the savepoint or a
        checkpoint taken since."""
        victim = self.rng.choice(self.workers)
        wait, d = self.rng.uniform(0.2, 2.0), self.rng.uniform(0.1, 1.5)
        self.event("plan: kill %s %.2fs after the job runs, restart +%.2fs"
                   % (victim.name, wait, d))

        def restart():
            victim.start()

        def kill():
            self.restores_at_kill = self.coord_log().count(
                "Restoring the job")
            victim.kill9()
            return [(d, restart)]

        def poll():
            if not self.job_running():
                return [(0.05, poll)]
            self.event("the job runs: kill %s in %.2fs" % (victim.name,
                                                           wait))
            return [(wait, kill)]
        return poll

    def wait_restored(self):
        """After kill_running's kill: waits until the coordinator restored
        the job (a "Restoring the job" line more than at the kill) and it
        runs again, so that the stop is not requested while the failure
        is still to be found or the restart delay runs (the coordinator
        refuses it then and the command waits its whole timeout)."""
        end = self.elapsed() + 30
        while self.coord_log().count("Restoring the job") <= \
                self.restores_at_kill or not self.job_running():
            if self.elapsed() > end:
                raise killrun.RunFailed(
                    "no restore and run again within 30 s of the kill -9 "
                    "after the job ran")
            self.sleep(0.1)
        self.event("the job restored after the kill and runs")

    def savepoint_url(self):
        """`ksnap savepoint` (the job runs on): the savepoint's URL."""
        while not self.job_running():
            self.sleep(0.05)
        out = self.ksnap("savepoint", self.job_file, "--timeout", "30")
        prefix = "file://" + self.savepoint_dir() + "/savepoint-"
        urls = [w for w in out.split() if w.startswith(prefix)]
        if not urls:
            raise killrun.RunFailed("no %s... in ksnap savepoint's output: "
                                    "%s" % (prefix, out))
        return urls[0]

    def rescale(self):
        """The case clicks-rescale (see the top of this file), up to the
        last batch produced."""
        brk = os.environ.get(BREAK_ENV, "")
        if brk and brk not in BREAKS:
            raise killrun.RunFailed("%s=%s: not one of %s" % (
                BREAK_ENV, brk, BREAKS))
        phases = self.phase_batches()
        stops = [first + len(batches) - 1 for first, batches in phases[:-1]]
        across = [self.across(b) for b in stops]
        self.event("phases from batches %s, stops after batches %s; "
                   "windows fired before a stop and counting clicks after "
                   "it %s, open at a stop with clicks before and after it "
                   "%s" % ([f for f, _ in phases], stops,
                           [len(f) for f, _ in across],
                           [len(o) for _, o in across]))
        if not any(f for f, _ in across) or not any(o for _, o in across):
            raise killrun.RunFailed(
                "the input has no window that fired before a stop and "
                "counts a click after it, or none open at a stop with "
                "clicks on both sides (%s): the case would test nothing" %
                across)
        older = None
        for i, (first, batches) in enumerate(phases):
            # phase 2: a kill once the job runs; phase 3: none or one at
            # a random time
            plan = self.worker_kills(self.rng.randint(0, 1)) if i == 2 \
                else []
            calls = [(0.0, self.kill_running())] if i == 1 else []
            if brk == "older" and i == 0:
                self.produce_while([], batches=batches[:1])
                self.wait_prefix(first)
                older = self.savepoint_url()
                self.event("%s=older: savepoint %s after batch %d" % (
                    BREAK_ENV, older, first))
                batches = batches[1:]
            self.produce_while(plan, calls, batches=batches)
            if i + 1 == RESCALE_PHASES:
                return
            b = stops[i]
            fired, opened, _ = self.prefix_model(b)
            if i == 1:
                self.wait_restored()
            self.wait_prefix(b)
            url = self.stop_with_savepoint(
                lambda: self.prefix_problem(self.committed(), b))
            later, both = self.across(b)
            killrun.log(
                "     stopped with savepoint after batch %d at parse P=%d, "
                "window P=%d: %d windows fired (%d of them count clicks "
                "after the stop), %d open (%d with clicks after it too)" % (
                    b, self.stages["parse"], self.stages[self.window],
                    len(fired), len(later), len(opened), len(both)))
            parse, window = RESCALE_UP if i == 0 else \
                self.rng.choice(RESCALE_DOWN)
            extra = ()
            if brk and i == 0:
                killrun.log("     %s=%s: the start from the savepoint is "
                            "made wrong" % (BREAK_ENV, brk))
                if brk == "drop-window":
                    self.window = LOST_WINDOW
                    extra = ("--allow-non-restored-state",)
                else:
                    url = older
            self.stages = {"parse": parse, self.window: window}
            self.write_job()
            self.cause("start from savepoint %s at parse P=%d, %s P=%d" % (
                url, parse, self.window, window))
            self.start_stage_workers(self.stages, url, coord_args=extra)

    def execute(self):
        if not self.args.clicks_lib:
            raise killrun.RunFailed("case %s needs --clicks-lib" % self.case)
        self.check_examples()
        if self.case == "clicks-happy":
            self.check_embedded()
        self.write_job()
        self.make_input()
        self.ksnap("topics", "create", self.job_file,
                   "%s:%d" % (self.lines_topic, PARTITIONS),
                   *[t + ":3" for t in self.sinks.values()])
        pages = {k.rsplit("@", 1)[0] for k in self.counts}
        self.event("seed %d: %d %s windows over %d pages (%d clicks counted), "
                   "%d late clicks, %d bad lines, %d clicks behind the "
                   "watermark within the allowed lateness" % (
                       self.seed, len(self.counts), self.kind, len(pages),
                       sum(self.counts.values()),
                       sum(n for r, n in self.model.items()
                           if r[0] == "late"),
                       sum(n for r, n in self.model.items()
                           if r[0] == "bad"), self.behind))
        self.start_job()
        stop = None
        if self.case == "clicks-happy":
            self.produce_while([])
        elif self.case == "clicks-commit-window":
            stop = self.commit_window()
        elif self.case == "clicks-rescale":
            self.rescale()
        else:
            self.faults_random()
        try:
            out = self.final_output()
        finally:
            if stop:
                stop.set()
        updates = sum(1 for _, x, _ in out if x[0] == "counts") - \
            len(self.counts)
        self.event("%d results, %d of them late firings" % (
            len(self.counts), updates))
        killrun.log("     %d %s windows, %d late firings, %d late clicks%s" % (
            len(self.counts), self.kind, updates,
            sum(n for r, n in self.model.items() if r[0] == "late"),
            ", %d sessions committed before a merge or extension" %
            self.intermediate if self.kind == "session" else ""))
        if self.case == "clicks-happy" and not updates:
            raise killrun.RunFailed(
                "no late firing: the stragglers that begin each batch came "
                "a second after the watermark that fired their windows")
        self.check_restores()
        if self.case == "clicks-commit-window":
            self.check_replay_fired()
