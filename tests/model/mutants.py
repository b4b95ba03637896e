#!/usr/bin/env python3
"""
Checks the checker: seeded bugs in the input side must make crosscheck.py
fail. Each mutant is applied to a copy of the source tree in a temporary
directory (the worktree is never touched), only the driver is built there,
and crosscheck.py runs against it.

    python3 tests/model/mutants.py [--runs 3000] [--only NAME ...]

Prints one line per mutant: CAUGHT (with the first failure) or MISSED.
'no-max-off' is expected to be MISSED: it is equivalent in live restores
(see ksnap_accept_capture() in plugin/src/input/accept.h).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MUTANTS = {
    # snapshot on TRIGGER also while catching up (rule: the TRIGGER waits)
    'early-anytime': ('plugin/src/input/align_snap.c',
                      '      al->state != ST_IDLE || al->releasing || ksnap__align_all_ended(al) ||\n'
                      '      ksnap__align_catching_up(al) >= 0)',
                      '      al->state != ST_IDLE || al->releasing || ksnap__align_all_ended(al))'),
    # unaligned snapshot while a channel still replays the base generation
    'no-catchup-wait': ('plugin/src/input/align_gate.c',
                        'if (!chan->finished && !chan->blocked && !chan->passed)\n      return c;',
                        'if (!chan->finished && !chan->blocked && !chan->passed && 0)\n      return c;'),
    # process g(N) records after the writer's barrier N
    'ignore-passed': ('plugin/src/input/accept.c',
                      'return chan->passed ? KSNAP_ACCEPT_SKIP_PASSED : KSNAP_ACCEPT_PROCESS;',
                      'return KSNAP_ACCEPT_PROCESS;'),
    # the first draft's skip rule: every older generation until passed
    'design-skip-rule': ('plugin/src/input/accept.c', '  if (gen == acc->base_gen)\n',
                         '  if (gen <= acc->base_gen)\n'),
    # open channels recorded as passed in an unaligned snapshot
    'open-passed-true': ('plugin/src/input/accept.c',
                         '      pos[c].off = part->pos > chan->off ? part->pos : chan->off;\n',
                         '      pos[c].off = part->pos > chan->off ? part->pos : chan->off;\n'
                         '      pos[c].passed = 1;\n'),
    # blocked channel recorded at the read position, not after its barrier
    'blocked-off-at-pos': ('plugin/src/input/accept.c', '      pos[c].off = chan->barpos;',
                           '      pos[c].off = chan->blocked ? part->pos : 0;'),
    # records of blocked channels processed instead of buffered
    'no-buffering': ('plugin/src/input/aligner.c',
                     '  if (chan->blocked && blocking(al) && !cancels_cur) {',
                     '  if (chan->blocked && blocking(al) && !cancels_cur && 0) {'),
    # channels=seen: only channels that delivered a barrier are waited for
    'channels-seen': ('plugin/src/input/align_gate.c',
                      '    if (!chan->finished && !chan->blocked)\n      return 0;',
                      '    if (!chan->finished && !chan->blocked && chan->last_id > 0)\n      return 0;'),
    # released records re-fed newest first
    'release-reversed': ('plugin/src/input/aligner.c',
                         '  for (size_t i = 0; i < nold; i++)\n    feed(al, &old[i], now);',
                         '  for (size_t i = nold; i-- > 0;)\n    feed(al, &old[i], now);'),
    # the restored checkpoint's barrier does not mark the channel passed
    'no-mark-passed': ('plugin/src/input/accept.c', '    chan->passed = 1; /* 3 */', '    /* 3 */'),
    # pause a partition as soon as one of its channels is blocked
    'pause-any-blocked': ('plugin/src/input/align_gate.c',
                          '      else if (!chan->finished)\n        want = 0;',
                          '      else if (!chan->finished)\n        (void)0;'),
    # a task whose every input ended ignores the TRIGGER (no barrier comes)
    'no-trigger-after-end': ('plugin/src/input/align_snap.c',
                             '  if (al->state != ST_IDLE || !al->ntrig || !ksnap__align_all_ended(al))',
                             '  if (1 || al->state != ST_IDLE || !al->ntrig || !ksnap__align_all_ended(al))'),
    # every record after the end of input refused, a late zombie too
    'refuse-all-after-end': ('plugin/src/input/aligner.c',
                             '  if (chan->endpos > 0 && (verdict == KSNAP_ACCEPT_PROCESS ||',
                             '  if (chan->endpos > 0 && (1 ||'),
    # equivalent in live restores: expected MISSED
    'no-max-off': ('plugin/src/input/accept.c',
                   '      pos[c].off = part->pos > chan->off ? part->pos : chan->off;',
                   '      pos[c].off = part->pos;'),
}


def run(name, runs, tmp):
    src = os.path.join(tmp, 'src-' + name)
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns('build*', '.git', '.run'))
    path, old, new = MUTANTS[name]
    with open(os.path.join(src, path)) as f:
        text = f.read()
    if text.count(old) != 1:
        return 'NOT APPLIED (source changed: update the mutant)'
    with open(os.path.join(src, path), 'w') as f:
        f.write(text.replace(old, new))
    bld = os.path.join(tmp, 'build-' + name)
    for cmd in (['cmake', '-S', src, '-B', bld, '-G', 'Ninja'],
                ['cmake', '--build', bld, '-j2', '--target', 'ksnap_model_driver']):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            return 'BUILD FAILED\n' + r.stdout[-2000:]
    r = subprocess.run([sys.executable, os.path.join(HERE, 'crosscheck.py'), '--driver',
                        os.path.join(bld, 'tests', 'ksnap_model_driver'), '--runs', str(runs),
                        '--seed', '5', '--tail', '0'],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode == 0:
        return 'MISSED'
    return 'CAUGHT: ' + r.stdout.splitlines()[0][:240]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=3000)
    ap.add_argument('--only', nargs='*')
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix='ksnap-mutants-') as tmp:
        for name in args.only or MUTANTS:
            print('%-20s %s' % (name, run(name, args.runs, tmp)), flush=True)


if __name__ == '__main__':
    main()
