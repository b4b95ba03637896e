#!/usr/bin/env python3
"""
Cross-check of ksnap's input side (plugin/src/input/channel.c, accept.c, aligner.c)
against a reference reader of the protocol rules (model_reader.py;
plugin/PROTOCOL.md sections 6, 10.3 and 17).

A random schedule runs a 2-writer exchange (writers A0, A1, each reading its
own source list) into ONE reader task B that reads every exchange partition
(1 or 2 of them), with checkpoints, coordinator aborts, crashes with job
restores (G := G+1, everything reloads the latest completed checkpoint), lost
and late (zombie) in-flight records, cancel markers and end-of-input markers
(a writer that used up its input ends it, before or between crashes; a finished
writer sends no barrier, its part of a checkpoint is its end position; a
restore drops what ended and a restored writer already at its end emits its
end of input again in the new generation).
B is the C code, driven through tests/model/trace_driver.c (line protocol).

Three checks:
  1. exact: with 1 partition, aligned or unaligned mode, the configuration
     the model covers, every processed record and every snapshot (id, off_c,
     passed_c per channel) of the C code equals that of the model's reader
     (RefReader in model_reader.py). The
     model's world (source tasks, in-flight queues, acks, completion,
     restore) is re-done below for one reader and several partitions; sinks
     and repair are not modelled here.
  2. invariant, every run and every mode: after a failure-free drain, B's
     state (restored snapshot + everything processed after) holds every
     source record exactly once (at least once for AT_LEAST_ONCE), the C
     code never refuses an input (no ERR line), PAUSE/RESUME pair up, and a
     paused partition never stalls the pipeline.
  3. catch-up: no unaligned snapshot while a channel still replays the
     restored checkpoint's generation (see README.md); in mode early
     (unaligned with snapshot_on_trigger) this is the rule that a TRIGGER
     waits during catch-up.

    python3 crosscheck.py --driver build/tests/ksnap_model_driver --runs 600
    python3 crosscheck.py --driver ... --one SEED --tail 200
"""
import argparse
import random
import subprocess
import sys
from collections import Counter

from model_reader import W, RefReader


class Mismatch(Exception):
    pass


class Driver:
    """The C input side, one process per schedule."""

    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.log = []

    def cmd(self, line):
        self.log.append('> ' + line)
        self.p.stdin.write(line + '\n')
        self.p.stdin.flush()
        out = []
        while True:
            r = self.p.stdout.readline()
            if not r:
                raise Mismatch('driver died after: %s' % line)
            r = r.rstrip('\n')
            if r == '.':
                break
            out.append(r)
            self.log.append('  ' + r)
        for r in out:
            if r.startswith('ERR'):
                raise Mismatch('C refused an input: %s (after %s)' % (r, line))
        return out

    def close(self):
        """Returns a failure message if the driver did not exit cleanly
        (e.g. a leak or an error found by an ASan/UBSan build)."""
        self.p.stdin.close()
        rc = self.p.wait()
        return None if rc == 0 else 'driver exited with status %d' % rc


class Sim:
    def __init__(self, rng, opt, drv):
        self.rng, self.opt, self.drv = rng, opt, drv
        self.xp = opt['xp']
        self.src = {i: [('a%d.%d' % (i, k), rng.randrange(self.xp))
                        for k in range(rng.randint(1, 8))] for i in W}
        self.G = 0
        self.now = 0
        self.logs = [[] for _ in range(self.xp)]
        self.apos = {i: 0 for i in W}
        self.seq = {i: 0 for i in W}
        self.inflight = {(i, p): [] for i in W for p in range(self.xp)}
        self.zq = {(i, p): [] for i in W for p in range(self.xp)}
        self.atrig = {i: [] for i in W}
        self.btrig = []                 # TRIGGERs on their way to B
        self.asnap = {i: {} for i in W}
        self.ended = {i: False for i in W}
        self.next_id = 1
        self.inprog = None
        self.trig_ts = {}
        self.acks = {}
        self.bsnap = {}
        self.uploads = {}
        self.aborts_to_b = []
        self.chk = {0: {'gen': 0, 'A': {i: 0 for i in W}, 'B': None,
                        'Bref': {'state': {}, 'pos': 0, 'chpos': {w: 0 for w in W},
                                 'passed': {w: True for w in W}}}}
        self.last = 0
        self.ncrash = 0
        self.exact = opt['exact']
        self.stats = Counter()
        self.start_b()

    # ---------------- B (the C code) and the reference ----------------
    def conf(self):
        o = self.opt
        return '%d 2 %s %d %d %d' % (self.xp, o['mode'], o['timeout'], o['maxbytes'], self.G)

    def start_b(self):
        N = self.last
        c = self.chk[N]
        self.state = Counter()
        self.b_aborted = set()
        if N == 0:
            self.drv.cmd('INIT ' + self.conf())
            self.bpos = [0] * self.xp
        else:
            snap = c['B']
            self.state = Counter(snap['state'])
            pos = ' '.join('%d %d %d' % (ch, off, ps) for ch, (off, ps) in sorted(snap['pos'].items()))
            self.drv.cmd('RESTORE %s %d %d %s' % (self.conf(), N, c['gen'], pos))
            self.bpos = [min(snap['pos'][p * 2 + w][0] for w in W) for p in range(self.xp)]
        # Channels that still replay generation g(N) up to their barrier N
        # (passed_c false): chan -> offset of that barrier. While one does, an
        # unaligned snapshot would lose records (tests/model/README.md).
        self.catchup = {}
        for ch, (off, ps) in (sorted(c['B']['pos'].items()) if N else []):
            if not ps:
                p, w = divmod(ch, 2)
                bar = ('B', w, c['gen'], N, None)
                # a writer that ended before N sent no barrier N: its channel
                # replays g(N) up to its end of input of g(N)
                end = ('E', w, c['gen'], 0, None)
                ks = [k for k in range(off, len(self.logs[p])) if self.logs[p][k] == bar]
                ks = ks or [k for k in range(off, len(self.logs[p])) if self.logs[p][k] == end]
                if not ks:
                    raise Mismatch('barrier %d of writer %d missing on X%d' % (N, w, p))
                self.catchup[ch] = ks[0]
        self.paused = set()                      # partitions the C code paused
        self.ref = None
        if self.exact:
            self.ref = RefReader(self.opt['mode'], self.G, N, c['gen'], c['Bref'], self.b_aborted)
            if self.ref.pos != self.bpos[0]:
                raise Mismatch('start offset: C %d, model %d' % (self.bpos[0], self.ref.pos))

    def b_out(self, lines):
        """Applies the C actions; returns them as comparable events."""
        ev = []
        for r in lines:
            f = r.split()
            if f[0] == 'P':
                self.state[f[1]] += 1
                ev.append(('out', f[1]))
            elif f[0] == 'SNAP':
                if f[2] == '1' and self.catchup and not self.opt.get('no_catchup_check'):
                    raise Mismatch('unaligned snapshot %s while channels %s still replay '
                                   'generation %d' % (f[1], sorted(self.catchup),
                                                      self.chk[self.last]['gen']))
                n, vals = int(f[1]), list(map(int, f[3:]))
                pos = {vals[k]: (vals[k + 1], vals[k + 2]) for k in range(0, len(vals), 4)}
                self.bsnap[n] = {'state': Counter(self.state), 'pos': pos}
                ev.append(('snap', n, tuple(sorted(pos.items()))))
            elif f[0] == 'PAUSE':
                if int(f[1]) in self.paused:
                    raise Mismatch('PAUSE of a paused partition: %s' % r)
                self.paused.add(int(f[1]))
            elif f[0] == 'RESUME':
                if int(f[1]) not in self.paused:
                    raise Mismatch('RESUME of a running partition: %s' % r)
                self.paused.discard(int(f[1]))
            elif f[0] == 'ABORT':
                n = int(f[1])
                if n == self.inprog:
                    self.coord_abort()      # B declines: the coordinator aborts n
        return ev

    def ref_events(self, evs):
        out = []
        for e in evs:
            if e[0] == 'out':
                out.append(('out', e[1][2]))
            elif e[0] == 'snap':
                s = e[2]
                pos = {w: (s['chpos'][w], int(s['passed'][w])) for w in W}
                out.append(('snap', e[1], tuple(sorted(pos.items()))))
                self.refsnap = getattr(self, 'refsnap', {})
                self.refsnap[e[1]] = s
        return out

    def ref_drain(self):
        evs = []
        while self.ref.release:
            evs.append(self.ref.step(self.logs[0]))
        return evs

    def compare(self, cev, rev, what):
        if cev != rev:
            raise Mismatch('%s: C %s, model %s' % (what, cev, rev))

    # ---------------- actions ----------------
    def enabled(self, faults):
        acts = []
        for i in W:
            if self.atrig[i]:
                acts.append(('abar', i))
            if self.apos[i] < len(self.src[i]):
                acts.append(('aread', i))
            for p in range(self.xp):
                if self.inflight[(i, p)]:
                    acts.append(('app', i, p))
                if self.zq[(i, p)]:
                    acts.append(('zapp', i, p))
            for n in sorted(self.asnap[i]):
                if self.a_can_ack(i, n):
                    acts.append(('aack', i, n))
            # a writer whose input is used up emits its end of input, also
            # between crashes: a restored writer whose restored position is
            # already at its end emits it again in the new generation
            if (self.opt['ends'] and not self.ended[i]
                    and self.apos[i] == len(self.src[i])):
                acts.append(('aend', i))
        for p in range(self.xp):
            # a paused partition delivers nothing (real backpressure), except
            # records fetched before the pause when the schedule allows it
            if self.bpos[p] < len(self.logs[p]) and (p not in self.paused
                                                     or (faults and self.opt['prefetch'])):
                acts.append(('bstep', p))
        if self.btrig:
            acts.append(('btrig',))
        for n in sorted(self.bsnap):
            acts.append(('back', n))
        if self.aborts_to_b:
            acts.append(('babort',))
        if self.inprog and self.acks.get(self.inprog, set()) >= {'A0', 'A1', 'B'}:
            acts.append(('meta',))
        if faults:
            if self.inprog is None:
                acts.append(('trig',))
            else:
                acts.append(('abort',))
            if self.opt['mode'] == 'timeout':
                acts.append(('tick',))
        return acts

    def a_can_ack(self, i, n):
        thr = self.asnap[i][n][1]
        return all(s >= thr for p in range(self.xp) for s, e in self.inflight[(i, p)])

    def produce(self, i, p, e):
        self.inflight[(i, p)].append((self.seq[i], e))
        self.seq[i] += 1

    def apply(self, a):
        self.now += 1
        getattr(self, 'do_' + a[0])(*a[1:])

    def do_aread(self, i):
        uid, p = self.src[i][self.apos[i]]
        self.apos[i] += 1
        self.produce(i, p, ('D', i, self.G, uid, uid))

    def do_abar(self, i):
        n = self.atrig[i].pop(0)
        if n != self.inprog:
            if self.opt['cancel'] and self.rng.random() < 0.5:
                for p in range(self.xp):
                    self.produce(i, p, ('C', i, self.G, n, None))
            return
        for p in range(self.xp):
            self.produce(i, p, ('B', i, self.G, n, None))
        self.asnap[i][n] = (self.apos[i], self.seq[i])

    def do_aend(self, i):
        self.ended[i] = True
        if self.G > 0 and self.chk[self.last]['A'][i] == len(self.src[i]):
            self.stats['end-emitted-again-after-restore'] += 1
        for p in range(self.xp):
            self.produce(i, p, ('E', i, self.G, 0, None))
        for n in self.atrig[i]:             # a finished writer acks at once
            if n == self.inprog:
                self.asnap[i][n] = (self.apos[i], self.seq[i])
        self.atrig[i] = []

    def do_app(self, i, p):
        s, e = self.inflight[(i, p)].pop(0)
        self.logs[p].append(e)

    def do_zapp(self, i, p):
        self.logs[p].append(self.zq[(i, p)].pop(0))

    def do_aack(self, i, n):
        pos, thr = self.asnap[i].pop(n)
        if n == self.inprog:
            self.acks.setdefault(n, set()).add('A%d' % i)
            self.uploads.setdefault(n, {})[i] = pos

    def do_bstep(self, p):
        off = self.bpos[p]
        kind, w, g, a, uid = self.logs[p][off]
        self.bpos[p] += 1
        n = a if kind in 'BC' else 0
        ts = self.trig_ts.get(n, 0)
        if self.catchup and kind == 'B' and g == self.G:
            self.stats['barrier-during-catch-up'] += 1
        for ch, k in list(self.catchup.items()):
            if ch // 2 == p and k < self.bpos[p]:
                del self.catchup[ch]
        out = self.drv.cmd('REC %d %d %d %d %s %d %d 10 %d %s' %
                           (p, off, w, g, kind, n, ts, self.now, uid or '-'))
        cev = self.b_out(out)
        if self.ref:
            if self.ref.release:
                raise Mismatch('model has a pending release before a read')
            rev = self.ref_events([self.ref.step(self.logs[0])] + self.ref_drain())
            if self.ref.pos != self.bpos[0]:
                raise Mismatch('read position: C %d, model %d' % (self.bpos[0], self.ref.pos))
            self.compare(cev, rev, 'reading X0@%d %s' % (off, (kind, w, g, a, uid)))

    def do_back(self, n):
        snap = self.bsnap.pop(n)
        if n == self.inprog:
            self.acks.setdefault(n, set()).add('B')
            self.uploads.setdefault(n, {})['B'] = snap

    def do_babort(self):
        n = self.aborts_to_b.pop(0)
        self.b_aborted.add(n)
        cev = self.b_out(self.drv.cmd('ABORT %d %d' % (n, self.now)))
        if self.ref:
            self.ref.abort(n)
            self.compare(cev, self.ref_events(self.ref_drain()), 'ABORT %d' % n)

    def do_btrig(self):
        # B acts on a TRIGGER only once every input ended (it can get no
        # barrier then); the TRIGGER may come before or after the last end
        # (mode early: also at once, once caught up: its snapshot on TRIGGER)
        n = self.btrig.pop(0)
        cev = self.b_out(self.drv.cmd('TRIGGER %d %d %d' % (n, self.trig_ts[n], self.now)))
        if cev:
            self.stats['snapshot-on-trigger-after-every-end' if all(self.ended.values())
                       else 'snapshot-on-trigger'] += 1
        if self.ref:
            self.compare(cev, [], 'TRIGGER %d (inputs open: barriers decide)' % n)

    def do_tick(self):
        self.b_out(self.drv.cmd('TICK %d' % self.now))

    def do_trig(self):
        n = self.next_id
        self.next_id += 1
        self.inprog = n
        self.trig_ts[n] = self.now
        self.uploads = {}
        self.btrig.append(n)
        for i in W:
            if self.ended[i]:
                self.asnap[i][n] = (self.apos[i], self.seq[i])
            else:
                self.atrig[i].append(n)

    def do_meta(self):
        n = self.inprog
        up = self.uploads[n]
        self.chk[n] = {'gen': self.G, 'A': {i: up[i] for i in W}, 'B': up['B'],
                       'Bref': getattr(self, 'refsnap', {}).get(n)}
        self.last = n
        self.inprog = None

    def do_abort(self):
        self.coord_abort()

    def coord_abort(self):
        n = self.inprog
        self.inprog = None
        self.aborts_to_b.append(n)
        for i in W:
            self.asnap[i].pop(n, None)
        self.bsnap.pop(n, None)

    def do_crash(self, keep, zomb):
        self.ncrash += 1
        for key in sorted(self.inflight):
            q = self.inflight[key]
            k = min(keep.get(key, len(q)), len(q))
            z = min(zomb.get(key, 0), k) if self.opt['zombies'] else 0
            for s, e in q[:k - z]:
                self.logs[key[1]].append(e)
            for s, e in q[k - z:k]:
                self.zq[key].append(e)
            self.inflight[key] = []
        self.G += 1
        N = self.last
        if any(self.ended.values()):
            self.stats['restore-after-an-end'] += 1
        for i in W:
            self.apos[i] = self.chk[N]['A'][i]
            self.atrig[i] = []
            self.asnap[i] = {}
            self.ended[i] = False   # the end of input is emitted again in G
        self.inprog = None
        self.acks = {}
        self.bsnap = {}
        self.aborts_to_b = []
        self.btrig = []
        self.start_b()

    # ---------------- schedule ----------------
    def run(self, nsteps):
        rng = self.rng
        wt = {k: rng.choice((0.2, 1.0, 3.0)) for k in
              ('abar', 'aread', 'app', 'zapp', 'aack', 'aend', 'bstep', 'btrig', 'back', 'babort',
               'meta', 'trig', 'abort', 'tick')}
        wt['abort'] *= 0.2
        pcrash = rng.choice((0.0, 0.02, 0.05))
        ppost = rng.choice((0.0, 0.2, 0.4))      # crash right after a protocol event
        maxcrash = rng.randint(1, 3)
        skew = [1.0] * self.xp                   # B reads partitions at different speeds
        if self.opt.get('catchup'):
            ppost, maxcrash = 0.5, 3
            wt['abort'], wt['trig'] = 0.0, 3.0
            skew = rng.choice(([0.1, 5.0], [5.0, 0.1]))
        last = None
        for _ in range(nsteps):
            pc = max(pcrash, ppost if last in ('meta', 'back', 'abar', 'aack') else 0)
            if self.last == 0 and rng.random() < 0.8:
                pc = 0                          # mostly crash after a completed one
            if self.ncrash < maxcrash and rng.random() < pc:
                keep = {key: rng.randint(0, len(q)) for key, q in self.inflight.items()}
                zomb = {key: rng.randint(0, 2) for key in self.inflight}
                self.apply(('crash', keep, zomb))
                last = 'crash'
                continue
            acts = self.enabled(True)
            if not acts:
                break
            a = rng.choices(acts, [wt[a[0]] * (skew[a[1]] if a[0] == 'bstep' else 1)
                                   for a in acts])[0]
            self.apply(a)
            last = a[0]
        self.drain()

    def quiescent(self):
        if self.paused:
            return False
        return (all(self.apos[i] == len(self.src[i]) for i in W)
                and not any(self.inflight.values()) and not any(self.zq.values())
                and all(self.bpos[p] == len(self.logs[p]) for p in range(self.xp))
                and self.inprog is None and not self.aborts_to_b and not self.btrig
                and all(self.ended[i] or not self.opt['ends'] for i in W))

    def drain(self):
        order = ['babort', 'abar', 'aread', 'app', 'zapp', 'aack', 'bstep', 'btrig', 'back', 'meta',
                 'aend']
        for _ in range(5000):
            acts = self.enabled(False)
            if acts:
                acts.sort(key=lambda a: order.index(a[0]))
                self.apply(acts[0])
                continue
            if self.quiescent():
                return
            if self.inprog is None:
                self.do_trig()
                continue
            raise Mismatch('pipeline cannot drain: checkpoint %s never completes' % self.inprog)
        raise Mismatch('drain did not terminate')

    def check(self):
        want = Counter(uid for i in W for uid, p in self.src[i])
        have = self.state
        if self.opt['mode'] == 'alo':
            if set(have) != set(want):
                return 'MISSING %s' % sorted(set(want) - set(have))
            return None
        if have != want:
            dup = sorted(u for u in have if have[u] > 1)
            miss = sorted(u for u in want if have[u] == 0)
            return 'state != source: duplicates %s, missing %s' % (dup, miss)
        return None


def coverage(log, stats, opt):
    """Counts the behaviours a batch of schedules exercised."""
    for line in log:
        f = line.split()
        if line.startswith('> RESTORE'):
            stats['restore-from-checkpoint'] += 1
        elif f[0] == 'SNAP':
            stats['snapshot-unaligned' if f[2] == '1' else 'snapshot-aligned'] += 1
        elif f[0] == 'S':
            stats['skip-' + f[2].lower()] += 1
        elif f[0] in ('B', 'PAUSE', 'FWD'):
            stats[{'B': 'buffered', 'PAUSE': 'pause', 'FWD': 'forward-cancel'}[f[0]]] += 1
        elif f[0] == 'ABORT':
            stats['abort-' + ('subsumed' if 'subsumed' in line else 'cancel' if 'cancel' in line
                              else 'buffer-full' if 'buffer' in line else 'coordinator')] += 1


def options(rng, exact_share):
    if rng.random() < exact_share:
        return dict(xp=1, mode=rng.choice(('aligned', 'unaligned')), timeout=0, maxbytes=0,
                    zombies=rng.random() < 0.5, cancel=False, ends=False, exact=True)
    if rng.random() < 0.3:
        # restore catch-up across partitions: crashes after completed
        # unaligned checkpoints, partitions read at different speeds
        return dict(xp=2, mode=rng.choice(('unaligned', 'timeout', 'early')),
                    timeout=rng.choice((0, 2)),
                    maxbytes=0, zombies=rng.random() < 0.5, cancel=False, ends=False,
                    exact=False, catchup=True)
    mode = rng.choice(('aligned', 'unaligned', 'timeout', 'alo', 'early'))
    return dict(xp=rng.choice((1, 2)), mode=mode, timeout=rng.choice((0, 3, 10, 40)),
                maxbytes=rng.choice((0, 0, 15, 25)), zombies=rng.random() < 0.5,
                cancel=rng.random() < 0.5, ends=rng.random() < 0.5, exact=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--driver', required=True)
    ap.add_argument('--runs', type=int, default=400)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--exact-share', type=float, default=0.5)
    ap.add_argument('--verbose', action='store_true')
    ap.add_argument('--tail', type=int, default=60, help='driver lines shown')
    ap.add_argument('--keep-going', action='store_true',
                    help='count failing schedules instead of stopping at the first')
    ap.add_argument('--no-catchup-check', action='store_true',
                    help='skip check 3 (to see the loss it prevents end to end)')
    ap.add_argument('--one', type=int, help='run only the schedule of this seed')
    args = ap.parse_args()
    stats = Counter()
    if args.one is not None:
        args.runs = 1
    for r in range(args.runs):
        seed = args.seed * 100003 + r if args.one is None else args.one
        rng = random.Random(seed)
        opt = options(rng, args.exact_share)
        opt['prefetch'] = rng.random() < 0.5
        opt['no_catchup_check'] = args.no_catchup_check
        drv = Driver(args.driver)
        sim = Sim(rng, opt, drv)
        try:
            sim.run(rng.randint(10, 200))
            v = sim.check()
        except Mismatch as m:
            v = str(m)
        exit_msg = drv.close()
        v = v or exit_msg
        stats['exact' if opt['exact'] else 'invariant'] += 1
        coverage(drv.log, stats, opt)
        stats.update(sim.stats)
        stats['crashes'] += sim.ncrash
        stats['completed checkpoints'] += len(sim.chk) - 1
        if (v and not args.keep_going) or args.verbose:
            print('run %d seed %d %s: %s' % (r, seed, opt, v or 'ok'))
            print('  source: %s' % sim.src)
            print('  logs: %s' % sim.logs)
            if args.tail > 0:
                print('\n'.join('  ' + line for line in drv.log[-args.tail:]))
        if v:
            stats['FAILED'] += 1
            if not args.keep_going:
                return 1
    if stats['FAILED']:
        print('crosscheck: %d of %d schedules FAILED' % (stats['FAILED'], args.runs))
        return 1
    print('crosscheck: %d schedules ok' % args.runs)
    print('coverage: ' + ', '.join('%s=%d' % kv for kv in sorted(stats.items())))
    return 0


if __name__ == '__main__':
    sys.exit(main())
