/*
 * state_map_snap.c: snapshots of the copy-on-write state map and the
 * reclamation of superseded versions. The design, the threading rules
 * and the numbered invariants are at the top of state_map.c; this file
 * implements the transitions "snapshot" (sync phase, processing thread),
 * "iterate" (async phase, one thread) and "release" (any thread).
 */
#include "state_map_impl.h"

#include <string.h>

#include "base/util.h"

/* Under mu: seal the writer's current retire batch (invariant 5). */
void ksnap__sm_seal_locked(ksnap_state_map_t *map, sm_batch_t *b) {
  /* The writer takes the recycled entries (O(1) splice) and reports its
   * pool size for the cap. */
  if (map->recyclable) {
    sm_chunk_t *tail = map->recyclable;
    while (tail->next)
      tail = tail->next;
    tail->next = map->recycle;
    map->recycle = map->recyclable;
    map->recycle_n += map->recyclable_n;
    map->recyclable = NULL;
    map->recyclable_n = 0;
  }
  map->writer_pool_n = map->recycle_n;
  map->recycle_cap = KSNAP_MAX(map->count, 4096);
  b->tag = map->version;
  b->chunks = map->retired;
  b->bytes = map->retired_cur_bytes;
  b->next = map->sealed;
  map->sealed = b;
  map->retired = NULL;
  map->retired_cur_bytes = 0;
}

/* Under mu: hands the chunks of a reclaimable batch to the writer for
 * reuse while the recycled entries stay under the cap (about the number
 * of live entries, so memory stays bounded); the rest is freed. */
static void recycle_locked(ksnap_state_map_t *map, sm_batch_t *b) {
  size_t n = 0;
  sm_chunk_t *tail = b->chunks;

  if (!tail)
    return;
  for (sm_chunk_t *c = b->chunks; c; c = c->next) {
    n += c->n;
    tail = c;
  }
  if (map->recyclable_n + map->writer_pool_n + n > map->recycle_cap)
    return;
  tail->next = map->recyclable;
  map->recyclable = b->chunks;
  map->recyclable_n += n;
  b->chunks = NULL;
}

/* Under mu: detach the sealed batches no live snapshot needs. */
static sm_batch_t *collect_locked(ksnap_state_map_t *map) {
  uint64_t min_live = UINT64_MAX, max_live = 0;
  sm_batch_t **pb = &map->sealed, *freeable = NULL;

  for (ksnap_state_map_snap_t *s = map->live; s; s = s->next) {
    min_live = KSNAP_MIN(min_live, s->version);
    max_live = KSNAP_MAX(max_live, s->version);
  }
  atomic_store_explicit(&map->hrv, max_live, memory_order_release);
  while (*pb) {
    sm_batch_t *b = *pb;
    if (b->tag <= min_live) {
      *pb = b->next;
      b->next = freeable;
      freeable = b;
      recycle_locked(map, b);
    } else {
      pb = &b->next;
    }
  }
  return freeable;
}

static void free_batches(ksnap_state_map_t *map, sm_batch_t *b) {
  while (b) {
    sm_batch_t *next = b->next;
    atomic_fetch_sub_explicit(&map->retired_bytes, b->bytes,
                              memory_order_relaxed);
    free_chunks(b->chunks);
    free(b);
    b = next;
  }
}

ksnap_state_map_snap_t *ksnap__state_map_snapshot(ksnap_state_map_t *map,
                                                  uint64_t delta_base) {
  ksnap_state_map_snap_t *s = calloc(1, sizeof(*s));
  sm_batch_t *batch = malloc(sizeof(*batch));

  if (!s || !batch) {
    free(s);
    free(batch);
    return NULL;
  }
  s->map = map;
  s->version = map->version;
  s->base = delta_base;
  s->dir = map->dir;
  s->nbuckets = map->nbuckets;
  s->count = map->count;
  s->now = ksnap__state_map_now(map);
  s->tombs = map->tombs;
  map->tombs = NULL;
  pthread_mutex_lock(&map->mu);
  ksnap__sm_seal_locked(map, batch);
  s->next = map->live;
  if (map->live)
    map->live->prev = s;
  map->live = s;
  atomic_store_explicit(&map->hrv, s->version, memory_order_release);
  map->version++;
  pthread_mutex_unlock(&map->mu);
  if (!delta_base) { /* a full view needs no tombstones */
    free_tombs(s->tombs);
    s->tombs = NULL;
  }
  return s;
}

uint64_t ksnap__state_map_snap_version(const ksnap_state_map_snap_t *snap) {
  return snap->version;
}

size_t ksnap__state_map_snap_count(const ksnap_state_map_snap_t *snap) {
  return snap->count;
}

typedef struct item_cb_s {
  ksnap_state_map_cb_t cb;
  void *opaque;
} item_cb_t;

static int ref_to_item(void *opaque, uint16_t kg, const void *ref) {
  item_cb_t *ic = opaque;
  ksnap_state_map_item_t it;

  (void)kg;
  ksnap__state_map_ref_item(ref, &it);
  return ic->cb(ic->opaque, &it);
}

int ksnap__state_map_snap_iterate(const ksnap_state_map_snap_t *snap,
                                  ksnap_state_map_cb_t cb, void *opaque) {
  item_cb_t ic = {cb, opaque};
  return ksnap__state_map_snap_iterate_refs(snap, ref_to_item, &ic);
}

/* A reference is an entry pointer, or a tombstone pointer with bit 0 set
 * (both are malloc'd, so bit 0 is free). */
int ksnap__state_map_snap_iterate_refs(const ksnap_state_map_snap_t *snap,
                                       int (*cb)(void *opaque, uint16_t kg,
                                                 const void *ref),
                                       void *opaque) {
  int64_t ttl = snap->map->ttl_ms;
  int rc;

  for (const sm_tomb_t *t = snap->tombs; t; t = t->next)
    if ((rc = cb(opaque, t->kg, (const void *)((uintptr_t)t | 1))))
      return rc;
  for (size_t b = 0; b < snap->nbuckets; b++) {
    const sm_entry_t *e =
        snap->dir->s[b / KSNAP__SM_SEG]->b[b % KSNAP__SM_SEG];
    size_t ahead = b + 8; /* entries are scattered: fetch ahead */
    if (ahead < snap->nbuckets)
      __builtin_prefetch(
          snap->dir->s[ahead / KSNAP__SM_SEG]->b[ahead % KSNAP__SM_SEG]);
    for (; e; e = e->next) {
      if ((snap->base && e->mod_version <= snap->base) ||
          expired(ttl, e->ts, snap->now))
        continue;
      if ((rc = cb(opaque, e->kg, e)))
        return rc;
    }
  }
  return 0;
}

void ksnap__state_map_ref_item(const void *ref, ksnap_state_map_item_t *it) {
  if ((uintptr_t)ref & 1) {
    const sm_tomb_t *t = (const void *)((uintptr_t)ref & ~(uintptr_t)1);
    it->kg = t->kg;
    it->tombstone = 1;
    it->key = t->key;
    it->klen = t->klen;
    it->value = NULL;
    it->vlen = 0;
    it->ts = 0;
  } else {
    const sm_entry_t *e = ref;
    it->kg = e->kg;
    it->tombstone = 0;
    it->key = e->data;
    it->klen = e->klen;
    it->value = e->data + e->klen;
    it->vlen = e->vlen;
    it->ts = e->ts;
  }
}

void ksnap__state_map_snap_release(ksnap_state_map_snap_t *snap) {
  ksnap_state_map_t *map;
  sm_batch_t *freeable;

  if (!snap)
    return;
  map = snap->map;
  pthread_mutex_lock(&map->mu);
  if (snap->prev)
    snap->prev->next = snap->next;
  else
    map->live = snap->next;
  if (snap->next)
    snap->next->prev = snap->prev;
  freeable = collect_locked(map);
  pthread_mutex_unlock(&map->mu);
  free_batches(map, freeable);
  free_tombs(snap->tombs);
  free(snap);
}

void ksnap__state_map_reclaim(ksnap_state_map_t *map) {
  sm_batch_t *batch = malloc(sizeof(*batch)), *freeable;

  if (!batch)
    return;
  pthread_mutex_lock(&map->mu);
  ksnap__sm_seal_locked(map, batch);
  freeable = collect_locked(map);
  pthread_mutex_unlock(&map->mu);
  free_batches(map, freeable);
}

size_t ksnap__state_map_retired_bytes(ksnap_state_map_t *map) {
  return atomic_load_explicit(&map->retired_bytes, memory_order_relaxed);
}
