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
 * KEY GROUPS
 *   A map holds the key groups [kg_start, kg_start + nkg) of its task. An
 *   entry's hash carries its key group's slot (kg - kg_start) in bits
 *   [low, low + kg_bits), kg_bits = ceil(log2(nkg)), in place of hash bits;
 *   the table never has fewer than 2^(low + kg_bits) buckets, so those
 *   bits of the bucket number are the slot too: every entry of a key group
 *   sits in the buckets whose number has its slot there, runs of 2^low
 *   consecutive buckets (low = 3: one cache line of bucket heads) every
 *   2^(low + kg_bits). A snapshot writes its file key group by key group
 *   by walking those runs: no sort, no array of N references. When nkg is
 *   not a power of two some slots are unused, so the table splits once the
 *   count exceeds the buckets of the used slots (load 1 where it matters).
 *
 * ENTRY LAYOUT
 *   next, version, hash (20 bytes), then what the map needs: mod_version
 *   (8, maps that track deletes: delta views), ts (8, maps with a TTL),
 *   then klen and vlen as LEB128 varints, the key, the value; one malloc
 *   block. An 8-byte key with an 8-byte value takes 38 bytes (a 48-byte
 *   malloc chunk) plus one bucket head. A value is overwritten in place
 *   only with a value of the same length (the common counter case).
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
 *      at its next seal) and reused by ksnap__sm_entry_alloc() for copies
 *      of the same size: cheaper than malloc after a large reclaim.
 *   6. The tombstones of keys removed in epoch V belong to the writer
 *      until the snapshot of version V takes them; then to that snapshot,
 *      which frees them on release.
 *   7. Entry content changes (put) set mod_version = V (maps that track
 *      deletes); copies made for copy-on-write keep it, so a delta view
 *      (mod_version > base) holds exactly the entries written since the
 *      base snapshot.
 *   8. Dirty log: every put whose entry had another mod_version notes the
 *      entry's hash (state_map_dirty.c). The log since snapshot S holds
 *      the hash of every entry with mod_version > S.version, so a delta
 *      view on base S visits only those buckets.
 *   9. TTL: an entry whose ts + ttl <= now is invisible to get; a view
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
 *             reused by ksnap__sm_entry_alloc()
 *
 * FILES
 *   state_map.c        this design, the hash and key groups, create and
 *                      destroy, get, put, remove, the TTL sweep
 *   state_map_cow.c    the writer's copy on write: writable paths to a
 *                      bucket or an entry, retiring what it unlinks
 *                      (invariants 1 and 4), entry allocation, the linear
 *                      hashing split
 *   state_map_snap.c   snapshots, views, release, reclamation
 *   state_map_dirty.c  the dirty log of delta views
 *   state_map_impl.h   the private structures and helpers they share
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

/* The entry hash: the key's hash with its key group's slot (KEY GROUPS). */
static uint32_t kg_hash(const ksnap_state_map_t *map, uint16_t kg,
                        const void *key, size_t len) {
  uint32_t mask = ((1u << map->kg_bits) - 1) << map->low;
  return (sm_hash(key, len) & ~mask) |
         ((uint32_t)(kg - map->kg_start) << map->low);
}

static int64_t sm_wallclock(void *opaque) {
  (void)opaque;
  return ksnap__wallclock_ms();
}

int64_t ksnap__state_map_now(const ksnap_state_map_t *map) {
  return map->clock(map->clock_opaque);
}

static void op_begin(ksnap_state_map_t *map) {
  map->hrv_cache = atomic_load_explicit(&map->hrv, memory_order_acquire);
}

/* Slot bits and the bits below them for @p nkg key groups. */
static void kg_layout(ksnap_state_map_t *map, int kg_start, int kg_end) {
  unsigned bits = 0;

  map->kg_start = kg_start;
  map->nkg = kg_end - kg_start;
  while ((1 << bits) < map->nkg)
    bits++;
  map->kg_bits = bits;
  map->low = bits <= 7 ? 3 : bits < 10 ? 10 - bits : 0;
  map->min_buckets = KSNAP_MAX((size_t)KSNAP__SM_SEG,
                               (size_t)1 << (bits + map->low));
}

ksnap_state_map_t *ksnap__state_map_new(int64_t ttl_ms, int track_deletes,
                                        ksnap_state_clock_t clock,
                                        void *clock_opaque, int kg_start,
                                        int kg_end) {
  ksnap_state_map_t *map;
  size_t nseg, cap;

  if (kg_start < 0 || kg_end <= kg_start || kg_end > 65536 ||
      !(map = calloc(1, sizeof(*map))))
    return NULL;
  kg_layout(map, kg_start, kg_end);
  nseg = map->min_buckets / KSNAP__SM_SEG;
  cap = KSNAP_MAX(nseg, (size_t)4);
  map->dir = calloc(1, sizeof(sm_dir_t) + cap * sizeof(sm_seg_t *));
  for (size_t i = 0; map->dir && i < nseg; i++, map->nseg++) {
    if (!(map->dir->s[i] = calloc(1, sizeof(sm_seg_t))))
      break;
    map->dir->s[i]->version = 1;
  }
  if (!map->dir || map->nseg < nseg) {
    for (size_t i = 0; map->dir && i < map->nseg; i++)
      free(map->dir->s[i]);
    free(map->dir);
    free(map);
    return NULL;
  }
  map->version = 1;
  map->dir->version = 1;
  map->dir->cap = cap;
  map->nbuckets = map->min_buckets;
  map->lowmask = map->min_buckets - 1;
  map->ttl_ms = ttl_ms;
  map->has_ts = ttl_ms > 0;
  map->track_deletes = track_deletes;
  map->has_mod = track_deletes != 0;
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
  ksnap__sm_dirty_free(&map->dirty);
  pthread_mutex_destroy(&map->mu);
  free(map);
}

static size_t bucket_of(const ksnap_state_map_t *map, uint32_t hash) {
  return sm_bucket(map->lowmask, map->split, hash);
}

static sm_entry_t *find(const ksnap_state_map_t *map, uint32_t hash,
                        const void *key, size_t klen, size_t *bp) {
  size_t b = bucket_of(map, hash);
  sm_entry_t *e = map->dir->s[b / KSNAP__SM_SEG]->b[b % KSNAP__SM_SEG];

  *bp = b;
  for (; e; e = e->next) {
    uint32_t kl, vl;
    const uint8_t *k;
    if (e->hash != hash)
      continue;
    k = sm_key(map, e, &kl, &vl);
    if (kl == klen && !memcmp(k, key, klen))
      return e;
  }
  return NULL;
}

static int kg_ok(const ksnap_state_map_t *map, uint16_t kg) {
  return kg >= map->kg_start && kg - map->kg_start < map->nkg;
}

ksnap_err_t ksnap__state_map_get(ksnap_state_map_t *map, uint16_t kg,
                                 const void *key, size_t klen,
                                 const uint8_t **valuep, size_t *vlenp) {
  size_t b;
  sm_entry_t *e;
  uint32_t kl, vl;
  const uint8_t *k;

  if (!kg_ok(map, kg))
    return KSNAP_ERR_NOT_FOUND;
  e = find(map, kg_hash(map, kg, key, klen), key, klen, &b);
  if (!e || expired(map->ttl_ms, sm_ts(map, e), ksnap__state_map_now(map)))
    return KSNAP_ERR_NOT_FOUND;
  k = sm_key(map, e, &kl, &vl);
  *valuep = k + kl;
  *vlenp = vl;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__state_map_get_raw(ksnap_state_map_t *map, uint16_t kg,
                                     const void *key, size_t klen,
                                     const uint8_t **valuep, size_t *vlenp,
                                     int64_t *tsp) {
  size_t b;
  sm_entry_t *e;
  uint32_t kl, vl;
  const uint8_t *k;

  if (!kg_ok(map, kg))
    return KSNAP_ERR_NOT_FOUND;
  e = find(map, kg_hash(map, kg, key, klen), key, klen, &b);
  if (!e)
    return KSNAP_ERR_NOT_FOUND;
  k = sm_key(map, e, &kl, &vl);
  *valuep = k + kl;
  *vlenp = vl;
  *tsp = sm_ts(map, e);
  return KSNAP_ERR_OK;
}

/* Load above 1 in the buckets of the used slots (KEY GROUPS). */
static int overloaded(const ksnap_state_map_t *map) {
  return ((uint64_t)map->count << map->kg_bits) >
         (uint64_t)map->nbuckets * (uint64_t)map->nkg;
}

static void set_fields(const ksnap_state_map_t *map, sm_entry_t *e,
                       int64_t ts) {
  if (map->has_mod)
    memcpy(e->data, &map->version, 8);
  if (map->has_ts)
    memcpy(e->data + (map->has_mod ? 8 : 0), &ts, 8);
}

static uint8_t *put_varint(uint8_t *p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static sm_entry_t *new_entry(ksnap_state_map_t *map, uint32_t hash,
                             const void *key, size_t klen, const void *value,
                             size_t vlen, int64_t ts) {
  size_t size = sm_entry_size_for(map, klen, vlen);
  sm_entry_t *e = ksnap__sm_entry_alloc(map, size);
  uint8_t *p;

  if (!e)
    return NULL;
  e->next = NULL;
  e->version = map->version;
  e->hash = hash;
  set_fields(map, e, ts);
  p = put_varint(e->data + sm_opt_size(map), (uint32_t)klen);
  p = put_varint(p, (uint32_t)vlen);
  memcpy(p, key, klen);
  if (vlen)
    memcpy(p + klen, value, vlen);
  return e;
}

/* In place: the entry is the writer's own and the length is unchanged. */
static int put_in_place(ksnap_state_map_t *map, sm_entry_t *e,
                        const void *value, size_t vlen, int64_t ts) {
  uint32_t kl, vl;
  uint8_t *k;

  if (sm_stale(map, e->version))
    return 0;
  k = (uint8_t *)sm_key(map, e, &kl, &vl);
  if (vl != vlen)
    return 0;
  if (vlen)
    memcpy(k + kl, value, vlen);
  set_fields(map, e, ts);
  return 1;
}

ksnap_err_t ksnap__state_map_put_ts(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen,
                                    const void *value, size_t vlen,
                                    int64_t ts) {
  uint32_t hash;
  size_t b;
  sm_entry_t *e, *n, **slot;

  if (klen > UINT32_MAX || vlen > UINT32_MAX || !kg_ok(map, kg))
    return KSNAP_ERR_INVALID_ARG;
  hash = kg_hash(map, kg, key, klen);
  op_begin(map);
  e = find(map, hash, key, klen, &b);
  if (!e || sm_mod_version(map, e) != map->version)
    ksnap__sm_dirty_note(map, hash); /* first write in this version */
  if (e && put_in_place(map, e, value, vlen, ts))
    return KSNAP_ERR_OK;
  n = new_entry(map, hash, key, klen, value, vlen, ts);
  if (!n)
    return KSNAP_ERR_NOMEM;
  slot = e ? ksnap__sm_cow_path(map, b, e) : ksnap__sm_bucket_slot(map, b);
  if (!slot) {
    free(n);
    return KSNAP_ERR_NOMEM;
  }
  if (e) {
    n->next = e->next;
    *slot = n;
    ksnap__sm_drop_entry(map, e);
    return KSNAP_ERR_OK;
  }
  n->next = *slot;
  *slot = n;
  map->count++;
  if (overloaded(map))
    (void)ksnap__sm_split_one(map); /* on failure the table just stays fuller */
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
      if (!expired(map->ttl_ms, sm_ts(map, e), now)) {
        e = next;
        continue;
      }
      if (!(slot = ksnap__sm_cow_path(map, b, e)))
        return;
      *slot = next;
      ksnap__sm_drop_entry(map, e);
      map->count--;
      e = next;
    }
  }
}

ksnap_err_t ksnap__state_map_put(ksnap_state_map_t *map, uint16_t kg,
                                 const void *key, size_t klen,
                                 const void *value, size_t vlen) {
  int64_t now = map->has_ts ? ksnap__state_map_now(map) : 0;
  ksnap_err_t err = ksnap__state_map_put_ts(map, kg, key, klen, value, vlen,
                                            now);
  if (!err && map->ttl_ms > 0)
    ttl_sweep(map, now);
  return err;
}

ksnap_err_t ksnap__state_map_remove(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen) {
  size_t b;
  sm_entry_t *e, **slot;
  sm_tomb_t *t = NULL;

  if (!kg_ok(map, kg))
    return KSNAP_ERR_NOT_FOUND;
  op_begin(map);
  e = find(map, kg_hash(map, kg, key, klen), key, klen, &b);
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
  slot = ksnap__sm_cow_path(map, b, e);
  if (!slot) {
    free(t);
    return KSNAP_ERR_NOMEM;
  }
  *slot = e->next;
  ksnap__sm_drop_entry(map, e);
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
