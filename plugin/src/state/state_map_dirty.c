/*
 * state_map_dirty.c: the dirty log of the state map, so that a delta view
 * (an incremental snapshot) costs what changed, not the whole table.
 *
 * DIRTY LOG
 *   Without it a delta view walks every bucket and skips the entries
 *   whose mod_version is not above its base: 10M entries are 10M cache
 *   misses, seconds, even when 1% of them changed. With it, the writer
 *   notes the hash of each entry it puts for the first time in the
 *   current version (invariant 8 in state_map.c); the snapshot takes the
 *   log in its sync phase (a pointer move) and the async phase turns the
 *   hashes into the buckets they fall in, in the snapshot's table (its
 *   bucket count, low mask and split point), unique and grouped by
 *   key-group slot, and visits only those. The entries a visited bucket
 *   holds are still filtered by mod_version, so a hash noted twice, or
 *   for a put that then failed, only costs a bucket visit.
 *
 * WHEN A VIEW WALKS EVERYTHING
 *   - a full view (base 0) needs no log;
 *   - the log covers the puts since the map's last snapshot (`since`): a
 *     view whose base is older than that would miss entries, so it walks
 *     (state_checkpoint.c always bases a delta on the map's last view);
 *   - the log is switched off (`off`) once it holds more hashes than a
 *     quarter of the entries (beyond about 1024): there, walking the table
 *     costs about as much, and the log's memory stays below a byte per
 *     entry; also on out of memory.
 *
 * THREADING
 *   note and take run on the writer; the log a snapshot took is its own
 *   and is read by the thread of its async phase only.
 */
#include "state_map_impl.h"

#include <stdlib.h>

#define KSNAP__SM_DIRTY_MIN 1024

void ksnap__sm_dirty_free(sm_dirty_t *d) {
  free(d->h);
  d->h = NULL;
  d->n = d->cap = 0;
}

void ksnap__sm_dirty_note(ksnap_state_map_t *map, uint32_t hash) {
  sm_dirty_t *d = &map->dirty;

  if (!map->has_mod || d->off)
    return;
  if (d->n >= KSNAP__SM_DIRTY_MIN && d->n >= map->count / 4) {
    d->off = 1;
    ksnap__sm_dirty_free(d);
    return;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 256;
    uint32_t *h = realloc(d->h, cap * sizeof(*h));
    if (!h) {
      d->off = 1;
      ksnap__sm_dirty_free(d);
      return;
    }
    d->h = h;
    d->cap = cap;
  }
  d->h[d->n++] = hash;
}

void ksnap__sm_dirty_take(ksnap_state_map_t *map, ksnap_state_map_snap_t *s) {
  sm_dirty_t *d = &map->dirty;

  if (s->base && !d->off && s->base >= d->since) {
    s->dirty = *d;
  } else {
    ksnap__sm_dirty_free(d);
    s->dirty.off = 1;
  }
  *d = (sm_dirty_t){NULL, 0, 0, s->version, 0};
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

void ksnap__sm_dirty_prepare(ksnap_state_map_snap_t *s) {
  const ksnap_state_map_t *map = s->map;
  size_t n = 0, *b, *by_slot, *start;
  unsigned mask = (1u << map->kg_bits) - 1;

  if (s->dirty.off || s->dirty_start)
    return;
  b = malloc((s->dirty.n ? s->dirty.n : 1) * sizeof(*b));
  start = calloc((size_t)map->nkg + 2, sizeof(*start));
  if (!b || !start) {
    free(b);
    free(start);
    s->dirty.off = 1;
    return;
  }
  for (size_t i = 0; i < s->dirty.n; i++)
    b[i] = sm_bucket(s->lowmask, s->split, s->dirty.h[i]);
  qsort(b, s->dirty.n, sizeof(*b), cmp_size);
  for (size_t i = 0; i < s->dirty.n; i++) /* unique */
    if (!n || b[n - 1] != b[i])
      b[n++] = b[i];
  ksnap__sm_dirty_free(&s->dirty);
  /* counting sort by slot (bits [low, low + kg_bits) of the bucket, as of
   * the hash: KEY GROUPS in state_map.c), ascending within a slot */
  by_slot = malloc((n ? n : 1) * sizeof(*by_slot));
  if (!by_slot) {
    free(b);
    free(start);
    s->dirty.off = 1;
    return;
  }
  for (size_t i = 0; i < n; i++)
    start[((b[i] >> map->low) & mask) + 2]++;
  for (int k = 0; k <= map->nkg; k++)
    start[k + 1] += start[k];
  for (size_t i = 0; i < n; i++)
    by_slot[start[((b[i] >> map->low) & mask) + 1]++] = b[i];
  free(b);
  s->dirty_b = by_slot;
  s->dirty_start = start;
}

long ksnap__state_map_snap_dirty_buckets(const ksnap_state_map_snap_t *snap) {
  if (!snap->dirty_start)
    return -1;
  return (long)snap->dirty_start[snap->map->nkg];
}
