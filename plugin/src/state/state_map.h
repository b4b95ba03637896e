/* Copy-on-write, versioned hash map (key bytes -> value bytes) with O(1)
 * snapshots. Internal to libksnap; see state_map.c for the design, the
 * threading rules and the invariants. */
#ifndef KSNAP_STATE_MAP_H
#define KSNAP_STATE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"

typedef struct ksnap_state_map_s ksnap_state_map_t;
typedef struct ksnap_state_map_snap_s ksnap_state_map_snap_t;

/** Clock returning milliseconds; used for TTL. NULL means wall clock. */
typedef int64_t (*ksnap_state_clock_t)(void *opaque);

/** One entry as seen by a reader or a snapshot iterator. */
typedef struct ksnap_state_map_item_s {
  uint16_t kg;          /**< key group the caller stored with the entry */
  int tombstone;        /**< 1: key deleted since the delta's base */
  const uint8_t *key;
  size_t klen;
  const uint8_t *value; /**< NULL for a tombstone */
  size_t vlen;
  int64_t ts;           /**< last write time (ms, the map's clock) */
} ksnap_state_map_item_t;

/** @returns 0 to continue, non-zero to stop (returned by the iterator). */
typedef int (*ksnap_state_map_cb_t)(void *opaque,
                                    const ksnap_state_map_item_t *item);

/**
 * Creates a map for the entries of key groups [@p kg_start, @p kg_end)
 * (a put outside them is INVALID_ARG). @p ttl_ms 0 disables TTL (entries
 * then keep no write time: items report ts 0). @p track_deletes keeps a
 * tombstone for every removed key until the next snapshot and a
 * modification version per entry (needed for delta views, i.e.
 * incremental snapshots). @p clock may be NULL (wall clock).
 * @returns NULL on out of memory or a bad range.
 */
ksnap_state_map_t *ksnap__state_map_new(int64_t ttl_ms, int track_deletes,
                                        ksnap_state_clock_t clock,
                                        void *clock_opaque, int kg_start,
                                        int kg_end);

/** Frees the map. Every snapshot must have been released. NULL is ok. */
void ksnap__state_map_destroy(ksnap_state_map_t *map);

/**
 * Looks @p key (of key group @p kg, as given to put) up. On success
 * points @p valuep into the entry (valid until the next write to this map
 * on this thread) and returns KSNAP_ERR_OK; KSNAP_ERR_NOT_FOUND if absent
 * or expired.
 */
ksnap_err_t ksnap__state_map_get(ksnap_state_map_t *map, uint16_t kg,
                                 const void *key, size_t klen,
                                 const uint8_t **valuep, size_t *vlenp);

/**
 * As get, but an expired entry is found too, and *@p tsp receives the
 * entry's last write time (0 in a map without TTL): what an undo record
 * must save to put the entry back exactly (state_scope.c).
 */
ksnap_err_t ksnap__state_map_get_raw(ksnap_state_map_t *map, uint16_t kg,
                                     const void *key, size_t klen,
                                     const uint8_t **valuep, size_t *vlenp,
                                     int64_t *tsp);

/** Inserts or replaces. @returns KSNAP_ERR_OK, NOMEM or INVALID_ARG (key
 * group outside the map's, a key or value over 4 GiB). */
ksnap_err_t ksnap__state_map_put(ksnap_state_map_t *map, uint16_t kg,
                                 const void *key, size_t klen,
                                 const void *value, size_t vlen);

/** As put, with an explicit timestamp (restore keeps the saved one). */
ksnap_err_t ksnap__state_map_put_ts(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen,
                                    const void *value, size_t vlen,
                                    int64_t ts);

/** Removes @p key. @returns KSNAP_ERR_OK, NOT_FOUND or NOMEM. */
ksnap_err_t ksnap__state_map_remove(ksnap_state_map_t *map, uint16_t kg,
                                    const void *key, size_t klen);

/** Number of entries (expired ones included until overwritten). */
size_t ksnap__state_map_count(const ksnap_state_map_t *map);

/** Current time of the map's clock (ms). */
int64_t ksnap__state_map_now(const ksnap_state_map_t *map);

/**
 * Synchronous phase, processing thread: takes an O(1) consistent view.
 * @p delta_base: 0 for a full view; otherwise the version of an earlier
 * snapshot of this map: the view then yields only entries written after
 * that snapshot plus tombstones of keys removed since the LAST snapshot
 * (callers chain deltas snapshot after snapshot); a map that does not
 * track deletes always gives a full view.
 * @returns NULL on out of memory.
 */
ksnap_state_map_snap_t *ksnap__state_map_snapshot(ksnap_state_map_t *map,
                                                  uint64_t delta_base);

/** The version of a snapshot (pass it as a later delta_base). */
uint64_t ksnap__state_map_snap_version(const ksnap_state_map_snap_t *snap);

/** Number of entries in the view (upper bound for a delta). */
size_t ksnap__state_map_snap_count(const ksnap_state_map_snap_t *snap);

/**
 * Asynchronous phase, any ONE thread at a time: calls @p cb for every
 * visible entry of the view (expired ones skipped, as of the sync point),
 * tombstones first for a delta. Returns the callback's non-zero value or 0.
 */
/**
 * After ksnap__state_map_snap_prepare(): the number of buckets a delta
 * view visits, those of its dirty log (state_map_dirty.c), or -1 if it
 * walks the whole table (a full view, or the log was off).
 */
long ksnap__state_map_snap_dirty_buckets(const ksnap_state_map_snap_t *snap);

int ksnap__state_map_snap_iterate(const ksnap_state_map_snap_t *snap,
                                  ksnap_state_map_cb_t cb, void *opaque);

/**
 * Asynchronous phase, before iterate_kg: groups the view's tombstones by
 * key group. @returns KSNAP_ERR_OK or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap__state_map_snap_prepare(ksnap_state_map_snap_t *snap);

/**
 * As iterate, for the entries of key group @p kg only (its tombstones
 * first, for a delta), without visiting the others' entries: iterating
 * every key group in turn reads each entry once. Needs snap_prepare.
 */
int ksnap__state_map_snap_iterate_kg(const ksnap_state_map_snap_t *snap,
                                     int kg, ksnap_state_map_cb_t cb,
                                     void *opaque);

/**
 * Releases a snapshot (any thread, once); frees superseded versions no
 * remaining snapshot needs. NULL is ok.
 */
void ksnap__state_map_snap_release(ksnap_state_map_snap_t *snap);

/**
 * Processing thread: hands the versions superseded since the last
 * snapshot to the reclaimer and frees those no snapshot needs.
 */
void ksnap__state_map_reclaim(ksnap_state_map_t *map);

/** Bytes held by superseded versions waiting for snapshots (statistics). */
size_t ksnap__state_map_retired_bytes(ksnap_state_map_t *map);

#endif /* KSNAP_STATE_MAP_H */
