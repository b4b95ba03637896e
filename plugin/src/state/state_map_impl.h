/* Private structures of the state map, shared by state_map.c (the table
 * and the writer's operations), state_map_cow.c (the writer's copy on
 * write), state_map_snap.c (snapshots and reclamation) and
 * state_map_dirty.c (the dirty log). The design, threading rules and
 * invariants are at the top of state_map.c. */
#ifndef KSNAP_STATE_MAP_IMPL_H
#define KSNAP_STATE_MAP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "state_map.h"

#define KSNAP__SM_SEG 1024 /* buckets per segment */
#define KSNAP__SM_CHUNK 1022

/* An entry is one malloc'd block: this header, then the optional fields
 * of its map (see "ENTRY LAYOUT" in state_map.c), the lengths as LEB128
 * varints, the key and the value. KSNAP__SM_HDR is the header's size
 * without the struct's tail padding. */
typedef struct sm_entry_s {
  struct sm_entry_s *next;
  uint64_t version;
  uint32_t hash; /* key-group slot in bits [low, low + kg_bits) */
  uint8_t data[];
} sm_entry_t;

#define KSNAP__SM_HDR offsetof(sm_entry_t, data)

typedef struct sm_seg_s {
  uint64_t version;
  sm_entry_t *b[KSNAP__SM_SEG];
} sm_seg_t;

typedef struct sm_dir_s {
  uint64_t version;
  size_t cap;
  sm_seg_t *s[];
} sm_dir_t;

typedef struct sm_tomb_s {
  struct sm_tomb_s *next;
  uint16_t kg;
  uint32_t klen;
  uint8_t key[];
} sm_tomb_t;

/* The hashes of the entries put since the map's last snapshot (DIRTY LOG
 * in state_map_dirty.c): a delta view visits only their buckets. */
typedef struct sm_dirty_s {
  uint32_t *h;
  size_t n, cap;
  uint64_t since; /* holds every put with mod_version > since */
  int off;        /* not kept (too many puts, or out of memory) */
} sm_dirty_t;

typedef struct sm_chunk_s {
  struct sm_chunk_s *next;
  size_t n;
  void *p[KSNAP__SM_CHUNK];
} sm_chunk_t;

typedef struct sm_batch_s {
  struct sm_batch_s *next;
  uint64_t tag;
  sm_chunk_t *chunks;
  size_t bytes;
} sm_batch_t;

struct ksnap_state_map_snap_s {
  ksnap_state_map_t *map;
  struct ksnap_state_map_snap_s *prev, *next; /* live list, under mutex */
  uint64_t version;
  uint64_t base; /* 0: full view */
  sm_dir_t *dir;
  size_t nbuckets, lowmask, split;
  size_t count;
  int64_t now;
  sm_tomb_t *tombs;
  /* tombstones grouped by key-group slot (snap_prepare, async phase):
   * slot s is tomb_by_slot[tomb_start[s] .. tomb_start[s + 1]) */
  const sm_tomb_t **tomb_by_slot;
  size_t *tomb_start;
  /* a delta view's dirty log (hashes), then (snap_prepare) the buckets it
   * names, unique, grouped by slot like the tombstones; no dirty_start:
   * the view walks every bucket */
  sm_dirty_t dirty;
  size_t *dirty_b, *dirty_start;
};

struct ksnap_state_map_s {
  /* fixed at creation */
  int kg_start, nkg;     /* the key groups [kg_start, kg_start + nkg) */
  unsigned kg_bits, low; /* slot bits and the hash bits below them */
  int has_mod, has_ts;   /* optional entry fields (mod_version, ts) */
  size_t min_buckets;
  /* writer-owned */
  sm_dir_t *dir;
  size_t nseg;
  size_t nbuckets, lowmask, split;
  size_t count;
  uint64_t version;
  uint64_t hrv_cache; /* hrv as loaded at the start of this operation */
  int64_t ttl_ms;
  size_t sweep; /* TTL cleanup cursor (bucket) */
  int track_deletes;
  ksnap_state_clock_t clock;
  void *clock_opaque;
  sm_tomb_t *tombs;
  sm_dirty_t dirty;
  sm_chunk_t *retired; /* current (unsealed) batch */
  sm_chunk_t *recycle; /* freed entries the writer allocates from */
  size_t recycle_n;
  size_t retired_cur_bytes;
  /* shared, under mu */
  pthread_mutex_t mu;
  _Atomic uint64_t hrv;
  ksnap_state_map_snap_t *live;
  sm_batch_t *sealed;
  sm_chunk_t *recyclable; /* reclaimed entries for the writer to take */
  size_t recyclable_n, recycle_cap, writer_pool_n;
  _Atomic size_t retired_bytes;
};

/* Retired pointers: entries as they are, segments and dirs tagged with
 * bit 0 (all are malloc'd, so bit 0 is free) so that only entries are
 * recycled. */
#define KSNAP__SM_UNTAG(p) ((void *)((uintptr_t)(p) & ~(uintptr_t)1))

static inline void free_chunks(sm_chunk_t *c) {
  while (c) {
    sm_chunk_t *next = c->next;
    for (size_t i = 0; i < c->n; i++)
      free(KSNAP__SM_UNTAG(c->p[i]));
    free(c);
    c = next;
  }
}

static inline void free_tombs(sm_tomb_t *t) {
  while (t) {
    sm_tomb_t *next = t->next;
    free(t);
    t = next;
  }
}

static inline int expired(int64_t ttl, int64_t ts, int64_t now) {
  return ttl > 0 && ts + ttl <= now;
}

/* ---- entry fields (ENTRY LAYOUT in state_map.c) ---- */

static inline size_t sm_opt_size(const ksnap_state_map_t *map) {
  return (map->has_mod ? 8u : 0u) + (map->has_ts ? 8u : 0u);
}

static inline uint64_t sm_mod_version(const ksnap_state_map_t *map,
                                      const sm_entry_t *e) {
  uint64_t v = 0;
  if (map->has_mod)
    memcpy(&v, e->data, 8);
  return v;
}

/* The last write time; 0 in a map without TTL (not kept). */
static inline int64_t sm_ts(const ksnap_state_map_t *map,
                            const sm_entry_t *e) {
  int64_t ts = 0;
  if (map->has_ts)
    memcpy(&ts, e->data + (map->has_mod ? 8 : 0), 8);
  return ts;
}

static inline size_t sm_varint_size(uint32_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline const uint8_t *sm_get_varint(const uint8_t *p, uint32_t *v) {
  uint32_t x = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t b = *p++;
    x |= (uint32_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      break;
  }
  *v = x;
  return p;
}

/* @returns the key of @p e; its length and the value's into the args. */
static inline const uint8_t *sm_key(const ksnap_state_map_t *map,
                                    const sm_entry_t *e, uint32_t *klen,
                                    uint32_t *vlen) {
  const uint8_t *p = e->data + sm_opt_size(map);
  p = sm_get_varint(p, klen);
  return sm_get_varint(p, vlen);
}

static inline size_t sm_entry_size_for(const ksnap_state_map_t *map,
                                       size_t klen, size_t vlen) {
  return KSNAP__SM_HDR + sm_opt_size(map) + sm_varint_size((uint32_t)klen) +
         sm_varint_size((uint32_t)vlen) + klen + vlen;
}

static inline size_t sm_entry_size(const ksnap_state_map_t *map,
                                   const sm_entry_t *e) {
  uint32_t klen, vlen;
  sm_key(map, e, &klen, &vlen);
  return sm_entry_size_for(map, klen, vlen);
}

/* The key group of an entry, from its hash. */
static inline int sm_kg(const ksnap_state_map_t *map, uint32_t hash) {
  return map->kg_start +
         (int)((hash >> map->low) & ((1u << map->kg_bits) - 1));
}

/* Under map->mu: seals the writer's current retire batch into @p b. */
void ksnap__sm_seal_locked(ksnap_state_map_t *map, sm_batch_t *b);

/* The bucket of @p hash in a table of @p lowmask and @p split. */
static inline size_t sm_bucket(size_t lowmask, size_t split, uint32_t hash) {
  size_t b = hash & lowmask;

  if (b < split)
    b = hash & (2 * lowmask + 1);
  return b;
}

/* ---- the writer's copy on write (state_map_cow.c) ---- */

/* Invariant 1: an object of @p version may be reachable from a snapshot
 * (as of this operation's hrv, see op_begin() in state_map.c). */
static inline int sm_stale(const ksnap_state_map_t *map, uint64_t version) {
  return version <= map->hrv_cache;
}

/* Writer: retires (or frees, invariant 4) an entry it unlinked. */
void ksnap__sm_drop_entry(ksnap_state_map_t *map, sm_entry_t *e);
/* Writer: the writable head slot of bucket @p b, or NULL (no memory). */
sm_entry_t **ksnap__sm_bucket_slot(ksnap_state_map_t *map, size_t b);
/* Writer: a writable link to @p target in bucket @p b, copying the
 * read-only entries before it; NULL (no memory). */
sm_entry_t **ksnap__sm_cow_path(ksnap_state_map_t *map, size_t b,
                                const sm_entry_t *target);
/* Writer: an entry of @p size bytes, a recycled one if it can; NULL. */
sm_entry_t *ksnap__sm_entry_alloc(ksnap_state_map_t *map, size_t size);
/* Writer: splits bucket map->split (linear hashing). @returns 0, or -1
 * (no memory) with the table untouched. */
int ksnap__sm_split_one(ksnap_state_map_t *map);

/* ---- the dirty log (state_map_dirty.c) ---- */

/* Writer: the entry of @p hash was just put (its mod_version is V now). */
void ksnap__sm_dirty_note(ksnap_state_map_t *map, uint32_t hash);
/* Writer, in the snapshot's sync phase: hands the log to @p s if its view
 * can use it, and starts a new one. */
void ksnap__sm_dirty_take(ksnap_state_map_t *map, ksnap_state_map_snap_t *s);
/* Async phase: turns @p s's log into its buckets by slot. NOMEM leaves the
 * view walking every bucket. */
void ksnap__sm_dirty_prepare(ksnap_state_map_snap_t *s);
void ksnap__sm_dirty_free(sm_dirty_t *d);

#endif /* KSNAP_STATE_MAP_IMPL_H */
