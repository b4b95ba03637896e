/* Task assignment to members (coord_assign.h).
 *
 * Shares: with moves, the tasks are dealt out one at a time to the member
 * whose share would be the smallest fraction of its slots after taking it
 * (ties: the lowest index), never beyond its slots: 7 tasks on three
 * members of 4 slots are 3, 2 and 2; 5 tasks on members of 4 and 2 slots
 * are 4 and 1 (a tie goes to the lower index). Without
 * moves a member's share is its slots and the tasks it runs stay.
 *
 * Then two passes over the tasks in table order: a task stays with its
 * current member while that member has kept fewer tasks than its share
 * (stickiness: fewer moves, fewer caches lost); every other task goes to
 * the member with room that runs the fewest tasks of its stage (a stage's
 * tasks spread over the machines), then the lowest load, then the lowest
 * index (deterministic: a restarted coordinator decides the same). */
#include "coord_assign.h"

#include <stdlib.h>
#include <string.h>

/* share[m]: how many tasks member m takes (see above). */
static void shares(const coord_assign_in_t *in, bool moves, size_t *share) {
  size_t left = in->ntasks;

  for (size_t m = 0; m < in->nmembers; m++)
    share[m] = moves ? 0 : (size_t)(in->slots[m] > 0 ? in->slots[m] : 0);
  if (!moves)
    return;
  while (left--) {
    int best = -1;
    for (size_t m = 0; m < in->nmembers; m++) {
      if (in->slots[m] <= 0 || share[m] >= (size_t)in->slots[m])
        continue;
      /* (share+1)/slots smallest: compare by cross-multiplying */
      if (best < 0 || (share[m] + 1) * (size_t)in->slots[best] <
                          (share[best] + 1) * (size_t)in->slots[m])
        best = (int)m;
    }
    if (best < 0)
      return;
    share[best]++;
  }
}

static size_t stage_on(const coord_assign_in_t *in, const int *out, size_t m,
                       int stage) {
  size_t n = 0;

  for (size_t i = 0; i < in->ntasks; i++)
    if (out[i] == (int)m && in->stage[i] == stage)
      n++;
  return n;
}

/* The member with room that should take a task of @p stage, or -1. */
static int pick(const coord_assign_in_t *in, const int *out,
                const size_t *load, const size_t *share, int stage) {
  int best = -1;
  size_t best_st = 0;

  for (size_t m = 0; m < in->nmembers; m++) {
    size_t st;
    if (load[m] >= share[m])
      continue;
    st = stage_on(in, out, m, stage);
    if (best < 0 || st < best_st ||
        (st == best_st && load[m] * (size_t)in->slots[best] <
                              load[best] * (size_t)in->slots[m])) {
      best = (int)m;
      best_st = st;
    }
  }
  return best;
}

size_t ksnap__coord_assign(const coord_assign_in_t *in, bool moves,
                           int *out) {
  size_t *share = calloc(in->nmembers + 1, sizeof(*share));
  size_t *load = calloc(in->nmembers + 1, sizeof(*load));
  size_t left = 0;

  for (size_t i = 0; i < in->ntasks; i++)
    out[i] = -1;
  if (!share || !load) { /* no memory: nothing moves */
    for (size_t i = 0; i < in->ntasks; i++)
      left += (out[i] = in->cur[i]) < 0;
    free(share);
    free(load);
    return left;
  }
  shares(in, moves, share);
  for (size_t i = 0; i < in->ntasks; i++) {
    int m = in->cur[i];
    if (m >= 0 && (size_t)m < in->nmembers && load[m] < share[m]) {
      out[i] = m;
      load[m]++;
    }
  }
  for (size_t i = 0; i < in->ntasks; i++) {
    int m;
    if (out[i] >= 0)
      continue;
    if (!moves && in->cur[i] >= 0 && (size_t)in->cur[i] < in->nmembers) {
      out[i] = in->cur[i]; /* over its slots, but running: it stays */
      continue;
    }
    if ((m = pick(in, out, load, share, in->stage[i])) < 0) {
      left++;
      continue;
    }
    out[i] = m;
    load[m]++;
  }
  free(share);
  free(load);
  return left;
}

bool ksnap__coord_assign_unbalanced(const coord_assign_in_t *in) {
  int *out = calloc(in->ntasks + 1, sizeof(*out));
  bool diff = false;

  if (!out)
    return false;
  ksnap__coord_assign(in, true, out);
  for (size_t i = 0; i < in->ntasks && !diff; i++)
    diff = out[i] >= 0 && out[i] != in->cur[i];
  free(out);
  return diff;
}
