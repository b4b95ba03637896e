/* Private structures of the state map, shared by state_map.c (the table
 * and the writer) and state_map_snap.c (snapshots and reclamation). The
 * design, threading rules and invariants are at the top of state_map.c. */
#ifndef KSNAP_STATE_MAP_IMPL_H
#define KSNAP_STATE_MAP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "state_map.h"

#define KSNAP__SM_SEG 1024 /* buckets per segment */
#define KSNAP__SM_CHUNK 1022

typedef struct sm_entry_s {
  struct sm_entry_s *next;
  uint64_t version;
  uint64_t mod_version;
  int64_t ts;
  uint32_t hash;
  uint16_t kg;
  uint32_t klen, vlen, vcap;
  uint8_t data[]; /* key[klen], value[vcap] */
} sm_entry_t;

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
  size_t nbuckets;
  size_t count;
  int64_t now;
  sm_tomb_t *tombs;
};

struct ksnap_state_map_s {
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

/* Under map->mu: seals the writer's current retire batch into @p b. */
void ksnap__sm_seal_locked(ksnap_state_map_t *map, sm_batch_t *b);

#endif /* KSNAP_STATE_MAP_IMPL_H */
