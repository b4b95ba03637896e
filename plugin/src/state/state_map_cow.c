/*
 * state_map_cow.c: the writer's copy on write in the state map. Every
 * change the writer (the processing thread) makes to the table goes
 * through here: a writable path to a bucket head or to an entry, copying
 * the read-only objects on the way (dir -> segment -> chain prefix), the
 * retirement of what it unlinks (invariants 1 and 4 at the top of
 * state_map.c), the allocation of entries (recycled ones first) and the
 * linear hashing split. The design and the invariants are at the top of
 * state_map.c.
 */
#include "state_map_impl.h"

#include <string.h>

#include "base/util.h"

/* Invariant 4: free an unlinked object now, or retire it. */
static void drop(ksnap_state_map_t *map, void *obj, uint64_t version,
                 size_t bytes, int entry) {
  sm_chunk_t *c = map->retired;

  if (!sm_stale(map, version)) {
    free(obj);
    return;
  }
  if (!c || c->n == KSNAP__SM_CHUNK) {
    c = malloc(sizeof(*c));
    if (!c) {
      /* Cannot retire: leak rather than free memory a reader may use. */
      return;
    }
    c->n = 0;
    c->next = map->retired;
    map->retired = c;
  }
  c->p[c->n++] = entry ? obj : (void *)((uintptr_t)obj | 1);
  map->retired_cur_bytes += bytes;
  atomic_fetch_add_explicit(&map->retired_bytes, bytes, memory_order_relaxed);
}

void ksnap__sm_drop_entry(ksnap_state_map_t *map, sm_entry_t *e) {
  drop(map, e, e->version, sm_entry_size(map, e), 1);
}

/* Makes the dir writable (copy on write). */
static int writable_dir(ksnap_state_map_t *map, size_t cap) {
  sm_dir_t *d = map->dir, *nd;

  if (!sm_stale(map, d->version) && cap <= d->cap)
    return 0;
  if (cap < d->cap)
    cap = d->cap;
  nd = malloc(sizeof(*nd) + cap * sizeof(sm_seg_t *));
  if (!nd)
    return -1;
  nd->version = map->version;
  nd->cap = cap;
  memcpy(nd->s, d->s, map->nseg * sizeof(sm_seg_t *));
  map->dir = nd;
  drop(map, d, d->version, sizeof(*d) + d->cap * sizeof(sm_seg_t *), 0);
  return 0;
}

/* @returns the writable head slot of bucket @p b, or NULL (no memory). */
sm_entry_t **ksnap__sm_bucket_slot(ksnap_state_map_t *map, size_t b) {
  sm_seg_t *seg;

  if (writable_dir(map, 0))
    return NULL;
  seg = map->dir->s[b / KSNAP__SM_SEG];
  if (sm_stale(map, seg->version)) {
    sm_seg_t *ns = malloc(sizeof(*ns));
    if (!ns)
      return NULL;
    memcpy(ns, seg, sizeof(*ns));
    ns->version = map->version;
    map->dir->s[b / KSNAP__SM_SEG] = ns;
    drop(map, seg, seg->version, sizeof(*seg), 0);
    seg = ns;
  }
  return &seg->b[b % KSNAP__SM_SEG];
}

/* Allocates an entry of @p size bytes, preferably a recycled one of the
 * same size (reclaimed entries come back through recyclable, see
 * state_map_snap.c): popping an array is cheaper than malloc's bins,
 * whose free chunks are scattered over the heap after a reclaim. */
sm_entry_t *ksnap__sm_entry_alloc(ksnap_state_map_t *map, size_t size) {
  for (int tries = 0; tries < 4 && map->recycle;) {
    sm_chunk_t *c = map->recycle;
    void *p;
    if (!c->n) {
      map->recycle = c->next;
      free(c);
      continue;
    }
    p = c->p[--c->n];
    map->recycle_n--;
    if (!((uintptr_t)p & 1) && sm_entry_size(map, p) == size)
      return p;
    free(KSNAP__SM_UNTAG(p));
    tries++;
  }
  return malloc(size);
}

static sm_entry_t *copy_entry(ksnap_state_map_t *map, const sm_entry_t *e) {
  size_t size = sm_entry_size(map, e);
  sm_entry_t *n = ksnap__sm_entry_alloc(map, size);

  if (!n)
    return NULL;
  memcpy(n, e, size);
  n->version = map->version;
  return n;
}

/* Returns a writable link that points to @p target in bucket @p b,
 * copying the read-only entries before it (chain-prefix copy). */
sm_entry_t **ksnap__sm_cow_path(ksnap_state_map_t *map, size_t b,
                             const sm_entry_t *target) {
  sm_entry_t **slot = ksnap__sm_bucket_slot(map, b);

  while (slot && *slot != target) {
    sm_entry_t *p = *slot;
    if (sm_stale(map, p->version)) {
      sm_entry_t *c = copy_entry(map, p);
      if (!c)
        return NULL;
      *slot = c;
      ksnap__sm_drop_entry(map, p);
      p = c;
    }
    slot = &p->next;
  }
  return slot;
}

/* Linear hashing: split bucket map->split into itself and a new one.
 * Copies of read-only entries are made first, so a failed allocation
 * leaves the table untouched. */
int ksnap__sm_split_one(ksnap_state_map_t *map) {
  size_t old = map->split, nb = map->nbuckets, n = 0, k;
  size_t si = nb / KSNAP__SM_SEG, mask2 = 2 * map->lowmask + 1;
  sm_entry_t **slot_old, **slot_new, *e, *local[32], **arr = local;

  if (si >= map->nseg) {
    sm_seg_t *seg = calloc(1, sizeof(*seg));
    if (!seg || writable_dir(map, map->nseg < map->dir->cap
                                      ? 0 : map->dir->cap * 2)) {
      free(seg);
      return -1;
    }
    seg->version = map->version;
    map->dir->s[map->nseg++] = seg;
  }
  slot_old = ksnap__sm_bucket_slot(map, old);
  slot_new = slot_old ? ksnap__sm_bucket_slot(map, nb) : NULL;
  if (!slot_new)
    return -1;
  for (e = *slot_old; e; e = e->next)
    n++;
  if (n > KSNAP_ARRAY_SIZE(local) && !(arr = malloc(n * sizeof(*arr))))
    return -1;
  for (k = 0, e = *slot_old; e; e = e->next, k++) {
    arr[k] = sm_stale(map, e->version) ? copy_entry(map, e) : e;
    if (!arr[k])
      break;
  }
  if (e) { /* allocation failed at index k: free the copies made */
    size_t j = 0;
    for (sm_entry_t *o = *slot_old; o != e; o = o->next, j++)
      if (arr[j] != o)
        free(arr[j]);
    if (arr != local)
      free(arr);
    return -1;
  }
  e = *slot_old;
  *slot_old = NULL;
  for (k = 0; k < n; k++) {
    sm_entry_t *next = e->next, *x = arr[k], **to;
    if (x != e)
      ksnap__sm_drop_entry(map, e);
    to = (x->hash & mask2) == old ? slot_old : slot_new;
    x->next = *to;
    *to = x;
    e = next;
  }
  if (arr != local)
    free(arr);
  map->nbuckets++;
  if (++map->split > map->lowmask) {
    map->lowmask = mask2;
    map->split = 0;
  }
  return 0;
}
