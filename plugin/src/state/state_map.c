/*
 * state_map.c: a copy-on-write, versioned hash map with O(1) snapshots,
 * in the spirit of Flink's CopyOnWriteStateMap.
 *
 * LAYOUT
 *   map -> dir (array of segment pointers) -> seg (KSNAP__SM_SEG bucket
 *   heads) -> chained entries (key and value inline). The table grows by
 *   linear hashing: each insert that pushes the load above 1 splits ONE
 *   bucket (incremental rehashing: no insert ever rehashes the table).
 *
 * VERSIONS
 *   The map has a version V (starts at 1). Every object (dir, segment,
 *   entry) records the map version at which it was created. A snapshot
 *   takes version V, remembers the current dir and bucket count, and the
 *   map moves to V+1: that is the whole synchronous phase, O(1).
 *   hrv ("highest required version") is the largest version of a live
 *   snapshot, 0 if none. An object with version <= hrv may be reachable
 *   from a snapshot and is read-only; the writer copies it (copy on write)
 *   and re-links the copy from a writable parent, copying the parents that
 *   are themselves read-only (dir -> segment -> chain prefix).
 *
 * THREADING
 *   One processing thread (the "writer") calls get/put/remove/snapshot/
 *   reclaim. Each snapshot is iterated by at most one thread at a time
 *   (the async phase) and released once, from any thread. The mutex
 *   guards the live-snapshot list, hrv and the sealed retire batches;
 *   the writer's hot path takes no lock: it loads hrv (acquire) once per
 *   operation.
 *
 * INVARIANTS
 *   1. An object with version <= hrv is never written or freed by the
 *      writer; the writer only reads it (to copy it).
 *   2. Every object reachable from snapshot s has version <= s.version,
 *      and hrv >= s.version while s is live. Hence (with 1) a snapshot's
 *      view never changes under its reader.
 *   3. hrv only decreases in snapshot release, under the mutex, after the
 *      releasing thread's last read of the view; the store is a release
 *      and the writer's load an acquire, so every read of a released view
 *      happens before any later in-place write of the objects it read.
 *   4. An object the writer unlinks is freed at once if its version >
 *      hrv (no snapshot can reach it), otherwise appended to the current
 *      retire batch. Nothing in a retire batch is reachable from the
 *      writer's current structure.
 *   5. The current batch is sealed, tagged with the epoch V in which its
 *      objects were unlinked, at the next snapshot or reclaim (under the
 *      mutex). A sealed batch with tag e is reclaimed when no live
 *      snapshot has a version < e: snapshots of version >= e were taken
 *      after the objects were unlinked and cannot reach them. Reclaimed
 *      entries are either freed or, while their number stays below the
 *      number of live entries, handed back to the writer (under the mutex,
 *      at its next seal) and reused by entry_alloc() for copies of the
 *      same size: cheaper than malloc after a large reclaim.
 *   6. The tombstones of keys removed in epoch V belong to the writer
 *      until the snapshot of version V takes them; then to that snapshot,
 *      which frees them on release.
 *   7. Entry content changes (put) set mod_version = V; copies made for
 *      copy-on-write keep it, so a delta view (mod_version > base) holds
 *      exactly the entries written since the base snapshot.
 *   8. TTL: an entry whose ts + ttl <= now is invisible to get; a view
 *      skips entries expired as of the clock read at its sync point; each
 *      put unlinks the expired entries of two more buckets (round robin),
 *      through the same copy-on-write path as a remove.
 *
 * TRANSITIONS (object life cycle)
 *     created (v = V, writable) --snapshot--> shared (v <= hrv, read-only)
 *     shared --writer changes it--> copy made; original RETIRED (inv. 4)
 *     writable --writer unlinks it--> freed at once
 *     RETIRED --batch sealed (reclaim/snapshot), all older snaps released
 *             (snap_release)--> freed, or recycled --writer's next seal-->
 *             reused by entry_alloc()
 */
#include "state_map_impl.h"

#include <string.h>

#include "base/util.h"

/* A 64-bit multiply-rotate hash of the key bytes (independent of the
 * key-group hash, so one task's key groups still spread over buckets). */
static uint32_t sm_hash(const void *key, size_t len) {
  const uint8_t *p = key;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
  uint64_t w;

  for (; len >= 8; len -= 8, p += 8) {
    memcpy(&w, p, 8);
    h = (h ^ (w * 0xc4ceb9fe1a85ec53ull)) * 0x9e3779b97f4a7c15ull;
    h = (h << 31) | (h >> 33);
  }
  w = 0;
  memcpy(&w, p, len);
  h = (h ^ (w * 0xc4ceb9fe1a85ec53ull)) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (uint32_t)h;
}

static int64_t sm_wallclock(void *opaque) {
  (void)opaque;
  return ksnap__wallclock_ms();
}

int64_t ksnap__state_map_now(const ksnap_state_map_t *map) {
  return map->clock(map->clock_opaque);
}

static size_t entry_size(const sm_entry_t *e) {
  return sizeof(*e) + e->klen + e->vcap;
}

static int stale(const ksnap_state_map_t *map, uint64_t version) {
  return version <= map->hrv_cache;
}

static void op_begin(ksnap_state_map_t *map) {
  map->hrv_cache = atomic_load_explicit(&map->hrv, memory_order_acquire);
}

/* Invariant 4: free an unlinked object now, or retire it. */
static void drop(ksnap_state_map_t *map, void *obj, uint64_t version,
                 size_t bytes, int entry) {
  sm_chunk_t *c = map->retired;

  if (!stale(map, version)) {
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



ksnap_state_map_t *ksnap__state_map_new(int64_t ttl_ms, int track_deletes,
                                        ksnap_state_clock_t clock,
                                        void *clock_opaque) {
  ksnap_state_map_t *map = calloc(1, sizeof(*map));

  if (!map)
    return NULL;
  map->dir = calloc(1, sizeof(sm_dir_t) + 4 * sizeof(sm_seg_t *));
  if (map->dir)
    map->dir->s[0] = calloc(1, sizeof(sm_seg_t));
  if (!map->dir || !map->dir->s[0]) {
    if (map->dir)
      free(map->dir);
    free(map);
    return NULL;
  }
  map->version = 1;
  map->dir->version = 1;
  map->dir->cap = 4;
  map->dir->s[0]->version = 1;
  map->nseg = 1;
  map->nbuckets = KSNAP__SM_SEG;
  map->lowmask = KSNAP__SM_SEG - 1;
  map->ttl_ms = ttl_ms;
  map->track_deletes = track_deletes;
  map->clock = clock ? clock : sm_wallclock;
  map->clock_opaque = clock_opaque;
  pthread_mutex_init(&map->mu, NULL);
  atomic_init(&map->hrv, 0);
  atomic_init(&map->retired_bytes, 0);
  return map;
}

void ksnap__state_map_destroy(ksnap_state_map_t *map) {
  if (!map)
    return;
  for (size_t si = 0; si < map->nseg; si++) {
    sm_seg_t *seg = map->dir->s[si];
    for (size_t i = 0; i < KSNAP__SM_SEG; i++) {
      sm_entry_t *e = seg->b[i];
      while (e) {
        sm_entry_t *next = e->next;
        free(e);
        e = next;
      }
    }
    free(seg);
  }
  free(map->dir);
  free_chunks(map->retired);
  free_chunks(map->recycle);
  free_chunks(map->recyclable);
  while (map->sealed) {
    sm_batch_t *b = map->sealed;
    map->sealed = b->next;
    free_chunks(b->chunks);
    free(b);
  }
  free_tombs(map->tombs);
  pthread_mutex_destroy(&map->mu);
  free(map);
}

static size_t bucket_of(const ksnap_state_map_t *map, uint32_t hash) {
  size_t b = hash & map->lowmask;

  if (b < map->split)
    b = hash & (2 * map->lowmask + 1);
  return b;
}

static sm_entry_t *find(const ksnap_state_map_t *map, uint32_t hash,
                        const void *key, size_t klen, size_t *bp) {
  size_t b = bucket_of(map, hash);
  sm_entry_t *e = map->dir->s[b / KSNAP__SM_SEG]->b[b % KSNAP__SM_SEG];

  *bp = b;
  for (; e; e = e->next)
    if (e->hash == hash && e->klen == klen && !memcmp(e->data, key, klen))
      return e;
  return NULL;
}


ksnap_err_t ksnap__state_map_get(ksnap_state_map_t *map, const void *key,
                                 size_t klen, const uint8_t **valuep,
                                 size_t *vlenp) {
  size_t b;
  sm_entry_t *e = find(map, sm_hash(key, klen), key, klen, &b);

  if (!e || expired(map->ttl_ms, e->ts, ksnap__state_map_now(map)))
    return KSNAP_ERR_NOT_FOUND;
  *valuep = e->data + e->klen;
  *vlenp = e->vlen;
  return KSNAP_ERR_OK;
}

/* Makes the dir writable (copy on write). */
static int writable_dir(ksnap_state_map_t *map, size_t cap) {
  sm_dir_t *d = map->dir, *nd;

  if (!stale(map, d->version) && cap <= d->cap)
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
static sm_entry_t **bucket_slot(ksnap_state_map_t *map, size_t b) {
  sm_seg_t *seg;

  if (writable_dir(map, 0))
    return NULL;
  seg = map->dir->s[b / KSNAP__SM_SEG];
  if (stale(map, seg->version)) {
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
static sm_entry_t *entry_alloc(ksnap_state_map_t *map, size_t size) {
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
    if (!((uintptr_t)p & 1) && entry_size(p) == size)
      return p;
    free(KSNAP__SM_UNTAG(p));
    tries++;
  }
  return malloc(size);
}

static sm_entry_t *copy_entry(ksnap_state_map_t *map, const sm_entry_t *e) {
  sm_entry_t *n = entry_alloc(map, entry_size(e));

  if (!n)
    return NULL;
  memcpy(n, e, entry_size(e));
  n->version = map->version;
  return n;
}

/* Returns a writable link that points to @p target in bucket @p b,
 * copying the read-only entries before it (chain-prefix copy). */
static sm_entry_t **cow_path(ksnap_state_map_t *map, size_t b,
                             const sm_entry_t *target) {
  sm_entry_t **slot = bucket_slot(map, b);

  while (slot && *slot != target) {
    sm_entry_t *p = *slot;
    if (stale(map, p->version)) {
      sm_entry_t *c = copy_entry(map, p);
      if (!c)
        return NULL;
      *slot = c;
      drop(map, p, p->version, entry_size(p), 1);
      p = c;
    }
    slot = &p->next;
  }
  return slot;
}

/* Linear hashing: split bucket map->split into itself and a new one.
 * Copies of read-only entries are made first, so a failed allocation
 * leaves the table untouched. */
static int split_one(ksnap_state_map_t *map) {
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
  slot_old = bucket_slot(map, old);
  slot_new = slot_old ? bucket_slot(map, nb) : NULL;
  if (!slot_new)
    return -1;
  for (e = *slot_old; e; e = e->next)
    n++;
  if (n > KSNAP_ARRAY_SIZE(local) && !(arr = malloc(n * sizeof(*arr))))
    return -1;
  for (k = 0, e = *slot_old; e; e = e->next, k++) {
    arr[k] = stale(map, e->version) ? copy_entry(map, e) : e;
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
      drop(map, e, e->version, entry_size(e), 1);
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

static sm_entry_t *new_entry(ksnap_state_map_t *map, uint32_t hash,
                             uint16_t kg, const void *key, size_t klen,
                             const void *value, size_t vlen, int64_t ts) {
  sm_entry_t *e = entry_alloc(map, sizeof(*e) + klen + vlen);

  if (!e)
    return NULL;
  e->next = NULL;
  e->version = map->version;
  e->mod_version = map->version;
  e->ts = ts;
  e->hash = hash;
  e->kg = kg;
  e->klen = (uint32_t)klen;
  e->vlen = e->vcap = (uint32_t)vlen;
  memcpy(e->data, key, klen);
  if (vlen)
    memcpy(e->data + klen, value, vlen);
  return e;
}

ksnap_err_t ksnap__state_map_put_ts(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen,
                                    const void *value, size_t vlen,
                                    int64_t ts) {
  uint32_t hash = sm_hash(key, klen);
  size_t b;
  sm_entry_t *e, *n, **slot;

  if (klen > UINT32_MAX || vlen > UINT32_MAX)
    return KSNAP_ERR_INVALID_ARG;
  op_begin(map);
  e = find(map, hash, key, klen, &b);
  if (e && !stale(map, e->version) && vlen <= e->vcap) {
    if (vlen)
      memcpy(e->data + e->klen, value, vlen);
    e->vlen = (uint32_t)vlen;
    e->ts = ts;
    e->kg = kg;
    e->mod_version = map->version;
    return KSNAP_ERR_OK;
  }
  n = new_entry(map, hash, kg, key, klen, value, vlen, ts);
  if (!n)
    return KSNAP_ERR_NOMEM;
  slot = e ? cow_path(map, b, e) : bucket_slot(map, b);
  if (!slot) {
    free(n);
    return KSNAP_ERR_NOMEM;
  }
  if (e) {
    n->next = e->next;
    *slot = n;
    drop(map, e, e->version, entry_size(e), 1);
    return KSNAP_ERR_OK;
  }
  n->next = *slot;
  *slot = n;
  map->count++;
  if (map->count > map->nbuckets)
    (void)split_one(map); /* on failure the table just stays fuller */
  return KSNAP_ERR_OK;
}

/* Incremental TTL cleanup: each put also unlinks the expired entries of
 * KSNAP__SM_SWEEP buckets, walking the table round-robin (as Flink's
 * incremental cleanup does on state access). Same op as the put, so the
 * hrv loaded by op_begin() still holds. */
#define KSNAP__SM_SWEEP 2
static void ttl_sweep(ksnap_state_map_t *map, int64_t now) {
  for (int i = 0; i < KSNAP__SM_SWEEP; i++) {
    size_t b = map->sweep++ % map->nbuckets;
    sm_entry_t *e = map->dir->s[b / KSNAP__SM_SEG]->b[b % KSNAP__SM_SEG];

    while (e) {
      sm_entry_t *next = e->next, **slot;
      if (!expired(map->ttl_ms, e->ts, now)) {
        e = next;
        continue;
      }
      if (!(slot = cow_path(map, b, e)))
        return;
      *slot = next;
      drop(map, e, e->version, entry_size(e), 1);
      map->count--;
      e = next;
    }
  }
}

ksnap_err_t ksnap__state_map_put(ksnap_state_map_t *map, uint16_t kg,
                                 const void *key, size_t klen,
                                 const void *value, size_t vlen) {
  int64_t now = ksnap__state_map_now(map);
  ksnap_err_t err = ksnap__state_map_put_ts(map, kg, key, klen, value, vlen,
                                            now);
  if (!err && map->ttl_ms > 0)
    ttl_sweep(map, now);
  return err;
}

ksnap_err_t ksnap__state_map_remove(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen) {
  uint32_t hash = sm_hash(key, klen);
  size_t b;
  sm_entry_t *e, **slot;
  sm_tomb_t *t = NULL;

  op_begin(map);
  e = find(map, hash, key, klen, &b);
  if (map->track_deletes) {
    t = malloc(sizeof(*t) + klen);
    if (!t)
      return KSNAP_ERR_NOMEM;
    t->kg = kg;
    t->klen = (uint32_t)klen;
    memcpy(t->key, key, klen);
  }
  if (!e) {
    free(t);
    return KSNAP_ERR_NOT_FOUND;
  }
  slot = cow_path(map, b, e);
  if (!slot) {
    free(t);
    return KSNAP_ERR_NOMEM;
  }
  *slot = e->next;
  drop(map, e, e->version, entry_size(e), 1);
  map->count--;
  if (t) {
    t->next = map->tombs;
    map->tombs = t;
  }
  return KSNAP_ERR_OK;
}

size_t ksnap__state_map_count(const ksnap_state_map_t *map) {
  return map->count;
}
