"""
The reference reader for crosscheck.py: the reader of the executable
protocol model the rules of plugin/PROTOCOL.md (sections 3 to 6 and 10)
were checked with, kept with its logic unchanged for the rules ksnap
implements: exact skips by channel position, passed_c set by the record
that carries the writer's barrier, old-generation barriers ignored, and
every channel of the job graph waited for. The
aborted set is passed in by the caller (the ABORTs delivered to this task).
The model reads one exchange partition per reader; so does this class.
"""

W = (0, 1)          # writer tasks A0, A1 (the channels of the partition)


# entries: ('D', w, g, key, uid) data; ('B', w, g, n, None) barrier n.
class RefReader:
    def __init__(self, mode, G, base_id, base_gen, snap, aborted):
        self.mode = mode
        self.G = G
        self.base_id = base_id
        self.base_gen = base_gen
        self.state = dict(snap['state'])
        self.passed = dict(snap['passed'])
        self.chpos = dict(snap['chpos'])
        self.pos = min(self.chpos.values())
        self.aborted = aborted
        self.blocked = {w: None for w in W}
        self.buffer = []
        self.release = []
        self.aligning = None
        self.seen = set()
        self.barpos = {}
        self.last_snap = base_id

    def step(self, log):
        if self.release:
            off, e = self.release.pop(0)
            return self._live(off, e)
        if self.pos >= len(log):
            return None
        off = self.pos
        e = log[off]
        self.pos += 1
        kind, w, g, a, uid = e
        if off < self.chpos[w]:
            return ('skip', off, e, 'before channel position')
        if g == self.G:
            return self._live(off, e)
        if g > self.G:
            return ('skip', off, e, 'newer generation')
        if kind == 'B':
            if a == self.base_id and g == self.base_gen:
                self.passed[w] = True
            return ('oldbar', off, e)
        ok = (g == self.base_gen) and not self.passed[w]
        if ok:
            return self._live(off, e)
        return ('skip', off, e, 'old generation')

    def _live(self, off, e):
        kind, w, g, a, uid = e
        if self.blocked[w] is not None:
            self.buffer.append((off, e))
            return ('buf', off, e)
        if kind == 'D':
            c = self.state.get(a, 0) + 1
            self.state[a] = c
            return ('out', (a, c, uid), off, e)
        n = a
        if n == self.base_id:
            self.passed[w] = True
        if n <= self.last_snap or (self.aborted is not None and n in self.aborted):
            return ('ign', off, e)
        if self.mode == 'aligned':
            if self.aligning is not None and n > self.aligning:
                self._release()                     # subsumed
            if self.aligning is None:
                self.aligning = n
                self.seen = set()
            if n < self.aligning:
                return ('ign', off, e)
            self.blocked[w] = n
            self.barpos[w] = off + 1
            self.seen.add(w)
            if len(self.seen) == len(W):
                snap = {'state': dict(self.state), 'pos': self.pos,
                        'chpos': {x: (self.barpos[x] if x in self.seen else self.pos) for x in W},
                        'passed': {x: x in self.seen for x in W}}
                self.last_snap = n
                self._release()
                return ('snap', n, snap, off, e)
            return ('block', off, e)
        snap = {'state': dict(self.state), 'pos': self.pos,
                'chpos': {x: self.pos for x in W}, 'passed': {x: (x == w) for x in W}}
        self.last_snap = n
        return ('snap', n, snap, off, e)

    def _release(self):
        self.release = sorted(self.buffer + self.release, key=lambda x: x[0])
        self.buffer = []
        self.blocked = {x: None for x in W}
        self.aligning = None
        self.seen = set()

    def abort(self, n):
        if self.aligning == n:
            self._release()
