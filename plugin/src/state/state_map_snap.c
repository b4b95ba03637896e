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
  s->base = map->has_mod ? delta_base : 0; /* no mod_version: full view */
  s->dir = map->dir;
  s->nbuckets = map->nbuckets;
  s->lowmask = map->lowmask;
  s->split = map->split;
  s->count = map->count;
  ksnap__sm_dirty_take(map, s);
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
  if (!s->base) { /* a full view needs no tombstones */
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

static void tomb_item(const sm_tomb_t *t, ksnap_state_map_item_t *it) {
  it->kg = t->kg;
  it->tombstone = 1;
  it->key = t->key;
  it->klen = t->klen;
  it->value = NULL;
  it->vlen = 0;
  it->ts = 0;
}

/* One walk over a view's buckets. Entries are scattered over the heap,
 * so the walk is bound by memory latency unless many fetches are in
 * flight: it prefetches entries ahead, as many cache lines of each as
 * the last entry seen spanned (entries of a state tend to be alike). */
typedef struct walk_s {
  const ksnap_state_map_snap_t *snap;
  ksnap_state_map_cb_t cb;
  void *opaque;
  unsigned lines;
} walk_t;

static sm_entry_t *const *bucket_ref(const ksnap_state_map_snap_t *snap,
                                     size_t b) {
  return &snap->dir->s[b / KSNAP__SM_SEG]->b[b % KSNAP__SM_SEG];
}

static void prefetch_entry(const walk_t *w, const sm_entry_t *e) {
  for (unsigned i = 0; i < w->lines; i++)
    __builtin_prefetch((const char *)e + 64 * i);
}

/* Calls the callback for the visible entries of the chain at bucket @p b. */
static int visit_bucket(walk_t *w, size_t b) {
  const ksnap_state_map_snap_t *snap = w->snap;
  const ksnap_state_map_t *map = snap->map;
  const sm_entry_t *e = *bucket_ref(snap, b);
  int rc;

  for (; e; e = e->next) {
    ksnap_state_map_item_t it;
    uint32_t klen, vlen;
    size_t size;
    if (e->next) /* the chain's next entry while this one is processed */
      prefetch_entry(w, e->next);
    it.ts = sm_ts(map, e);
    it.key = sm_key(map, e, &klen, &vlen);
    /* lines spanned by an entry of this size at 16-byte alignment */
    size = (size_t)(it.key - (const uint8_t *)e) + klen + vlen;
    w->lines = (unsigned)KSNAP_MIN((size + 111) / 64, (size_t)4);
    if ((snap->base && sm_mod_version(map, e) <= snap->base) ||
        expired(map->ttl_ms, it.ts, snap->now))
      continue;
    it.klen = klen;
    it.value = it.key + klen;
    it.vlen = vlen;
    it.kg = (uint16_t)sm_kg(map, e->hash);
    it.tombstone = 0;
    if ((rc = w->cb(w->opaque, &it)))
      return rc;
  }
  return 0;
}

int ksnap__state_map_snap_iterate(const ksnap_state_map_snap_t *snap,
                                  ksnap_state_map_cb_t cb, void *opaque) {
  walk_t w = {snap, cb, opaque, 2};
  ksnap_state_map_item_t it;
  int rc;

  for (const sm_tomb_t *t = snap->tombs; t; t = t->next) {
    tomb_item(t, &it);
    if ((rc = cb(opaque, &it)))
      return rc;
  }
  for (size_t b = 0; b < snap->nbuckets; b++) {
    if (b + 8 < snap->nbuckets && *bucket_ref(snap, b + 8))
      prefetch_entry(&w, *bucket_ref(snap, b + 8));
    if ((rc = visit_bucket(&w, b)))
      return rc;
  }
  return 0;
}

ksnap_err_t ksnap__state_map_snap_prepare(ksnap_state_map_snap_t *snap) {
  const ksnap_state_map_t *map = snap->map;
  size_t n = 0, *start;

  ksnap__sm_dirty_prepare(snap);
  if (snap->tomb_start || !snap->tombs)
    return KSNAP_ERR_OK;
  for (const sm_tomb_t *t = snap->tombs; t; t = t->next)
    n++;
  start = calloc((size_t)map->nkg + 2, sizeof(*start));
  snap->tomb_by_slot = malloc(n * sizeof(*snap->tomb_by_slot));
  if (!start || !snap->tomb_by_slot) {
    free(start);
    free(snap->tomb_by_slot);
    snap->tomb_by_slot = NULL;
    return KSNAP_ERR_NOMEM;
  }
  /* counting sort by slot, stable (list order within a key group) */
  for (const sm_tomb_t *t = snap->tombs; t; t = t->next)
    start[t->kg - map->kg_start + 2]++;
  for (int s = 0; s <= map->nkg; s++)
    start[s + 1] += start[s];
  for (const sm_tomb_t *t = snap->tombs; t; t = t->next)
    snap->tomb_by_slot[start[t->kg - map->kg_start + 1]++] = t;
  snap->tomb_start = start;
  return KSNAP_ERR_OK;
}

/* Prefetches the bucket heads of the run 4 strides ahead, the entries of
 * the run 2 strides ahead (their heads fetched 2 runs ago), and the
 * second entries of this run's chains (its entries fetched 2 runs ago). */
static void prefetch_runs(const walk_t *w, size_t base, size_t run,
                          size_t stride) {
  const ksnap_state_map_snap_t *snap = w->snap;
  size_t n = snap->nbuckets;

  if (base + 4 * stride < n)
    __builtin_prefetch(bucket_ref(snap, base + 4 * stride));
  for (size_t j = 0; j < run && base + 2 * stride + j < n; j++) {
    const sm_entry_t *e = *bucket_ref(snap, base + 2 * stride + j);
    if (e)
      prefetch_entry(w, e);
  }
  for (size_t j = 0; j < run && base + j < n; j++) {
    const sm_entry_t *e = *bucket_ref(snap, base + j);
    if (e && e->next)
      prefetch_entry(w, e->next);
  }
}

/* Walks the runs of buckets of slot @p s (KEY GROUPS in state_map.c). */
int ksnap__state_map_snap_iterate_kg(const ksnap_state_map_snap_t *snap,
                                     int kg, ksnap_state_map_cb_t cb,
                                     void *opaque) {
  const ksnap_state_map_t *map = snap->map;
  size_t s = (size_t)(kg - map->kg_start);
  size_t run = (size_t)1 << map->low;
  size_t stride = (size_t)1 << (map->kg_bits + map->low);
  walk_t w = {snap, cb, opaque, 2};
  int rc;

  if (kg < map->kg_start || kg - map->kg_start >= map->nkg)
    return 0;
  if (snap->tomb_start) {
    for (size_t i = snap->tomb_start[s]; i < snap->tomb_start[s + 1]; i++) {
      ksnap_state_map_item_t it;
      tomb_item(snap->tomb_by_slot[i], &it);
      if ((rc = cb(opaque, &it)))
        return rc;
    }
  }
  if (snap->dirty_start) { /* a delta view: the buckets of its dirty log */
    for (size_t i = snap->dirty_start[s]; i < snap->dirty_start[s + 1]; i++) {
      if (i + 4 < snap->dirty_start[s + 1])
        __builtin_prefetch(bucket_ref(snap, snap->dirty_b[i + 4]));
      if ((rc = visit_bucket(&w, snap->dirty_b[i])))
        return rc;
    }
    return 0;
  }
  for (size_t base = s << map->low; base < snap->nbuckets; base += stride) {
    prefetch_runs(&w, base, run, stride);
    for (size_t j = 0; j < run && base + j < snap->nbuckets; j++)
      if ((rc = visit_bucket(&w, base + j)))
        return rc;
  }
  return 0;
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
  free(snap->tomb_by_slot);
  free(snap->tomb_start);
  ksnap__sm_dirty_free(&snap->dirty);
  free(snap->dirty_b);
  free(snap->dirty_start);
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
