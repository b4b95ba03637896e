/**
 * @file state.h
 * @brief Managed operator state: keyed state (value, list, map) and
 *        operator state (lists of blobs), with non-blocking snapshots,
 *        restore at any parallelism, and incremental snapshots.
 *
 * Key groups. A record key's key group is
 *   kg = murmur3_32(key bytes, seed 0) % max_parallelism
 * (MurmurHash3 x86_32 over the raw key bytes; Flink hashes the Java
 * hashCode instead, so key groups differ from Flink's for the same key).
 * Task i of P owns the contiguous range given by Flink's
 * KeyGroupRangeAssignment: [ceil(i*M/P), floor(((i+1)*M - 1)/P)], i.e.
 * start = (i*M + P - 1) / P, end (exclusive) = ((i+1)*M - 1) / P + 1.
 *
 * Threading. A ksnap_state_t belongs to ONE processing thread: every call
 * on it (accessors, register, snapshot_begin, restore) is made from that
 * thread. A snapshot (ksnap_state_snapshot_t) is written by any ONE other
 * thread (the async phase) while the processing thread keeps updating
 * state, and ended from any thread. Updates made after snapshot_begin
 * never appear in that snapshot.
 *
 * Values returned by getters point into state memory and stay valid until
 * the next write to the same state on the processing thread.
 *
 * Snapshots. snapshot_begin (sync phase) is O(number of states), never
 * O(entries). snapshot_stream (async phase) encodes one Avro object
 * container file and hands it to the caller's ksnap_state_out_t block by
 * block as it goes, holding only the current Avro block (at most half of
 * conf.buffer_size, and 1 MiB) and the file's header; snapshot_write
 * does the same into one ksnap_buf_t.
 * With incremental snapshots the file holds only entries written since
 * the previous snapshot plus tombstones, and its manifest lists every
 * file (by the names given to snapshot_begin) the snapshot needs, oldest
 * first: retention must keep all of them. Incremental chains assume one
 * snapshot in flight at a time (Flink's default max-concurrent = 1);
 * ending a snapshot with persisted = 0 makes the next one full.
 */
#ifndef KSNAP_STATE_H
#define KSNAP_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/buf.h"
#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_state_s ksnap_state_t;
typedef struct ksnap_state_snapshot_s ksnap_state_snapshot_t;

/** State kinds (the numbers are stored in snapshot files). */
typedef enum ksnap_state_kind_e {
  KSNAP_STATE_VALUE = 0,    /**< keyed: one value per record key */
  KSNAP_STATE_LIST = 1,     /**< keyed: a list of values per record key */
  KSNAP_STATE_MAP = 2,      /**< keyed: user key -> value per record key */
  KSNAP_STATE_OP_SPLIT = 3, /**< operator list, split evenly on rescale */
  KSNAP_STATE_OP_UNION = 4  /**< operator list, every task gets all */
} ksnap_state_kind_t;

#define KSNAP_STATE_MAX_PARALLELISM_DEFAULT 128
#define KSNAP_STATE_MAX_CHAIN_DEFAULT 10

/** Milliseconds clock (TTL); inject one in tests. */
typedef int64_t (*ksnap_state_clock_fn)(void *opaque);

typedef struct ksnap_state_conf_s {
  int max_parallelism; /**< pipeline.max-parallelism, 1..32768 */
  int parallelism;     /**< tasks of the stage */
  int task_index;      /**< this task, 0..parallelism-1 */
  int incremental;     /**< state.backend.incremental */
  int max_chain;       /**< files in a chain before a full snapshot */
  size_t buffer_size;  /**< state.backend.write-buffer-size: a
                            snapshot's Avro blocks are at most half of
                            it (and 1 MiB), a restore through read
                            callbacks reads windows of about it; 0:
                            2 MiB */
  ksnap_state_clock_fn clock; /**< NULL: wall clock */
  void *clock_opaque;
} ksnap_state_conf_t;

/** Fills @p conf with defaults (M=128, P=1, i=0, full snapshots). */
void ksnap_state_conf_init(ksnap_state_conf_t *conf);

/** MurmurHash3 x86_32 of @p key with seed 0. */
uint32_t ksnap_state_murmur3_32(const void *key, size_t len, uint32_t seed);

/** @returns the key group of @p key (see the file comment). */
int ksnap_state_key_group(const void *key, size_t len, int max_parallelism);

/** Key groups [*startp, *endp) of task @p index of @p parallelism. */
void ksnap_state_key_group_range(int max_parallelism, int parallelism,
                                 int index, int *startp, int *endp);

/** @returns the task of @p parallelism that owns key group @p kg. */
int ksnap_state_task_of_key_group(int max_parallelism, int parallelism,
                                  int kg);

/**
 * Creates a state backend for one task.
 * @returns KSNAP_ERR_OK, INVALID_ARG (bad conf) or NOMEM.
 */
ksnap_err_t ksnap_state_new(const ksnap_state_conf_t *conf,
                            ksnap_state_t **statep, ksnap_error_t *error);

/** Frees @p state; every snapshot must have been ended. NULL is ok. */
void ksnap_state_destroy(ksnap_state_t *state);

/**
 * Registers (or finds, e.g. after restore) a named state. @p ttl_ms 0
 * means no TTL (keyed kinds only; the TTL clock starts at each write).
 * @returns OK; INVALID_ARG for a bad name (empty, > 255 bytes, or with
 * whitespace) or when the name exists with another kind or TTL;
 * INCOMPATIBLE when a restore registered the name with another kind (an
 * operator upgrade changed a state's kind: the job fails, see the
 * README's "Upgrading operators").
 */
ksnap_err_t ksnap_state_register(ksnap_state_t *state, const char *name,
                                 ksnap_state_kind_t kind, int64_t ttl_ms,
                                 int *idp, ksnap_error_t *error);

/**
 * Sets the current record key for the keyed accessors (copied).
 * @returns OK or INVALID_ARG when the key's group is not owned here.
 */
ksnap_err_t ksnap_state_set_key(ksnap_state_t *state, const void *key,
                                size_t klen, ksnap_error_t *error);

/** Value state. @returns OK or NOT_FOUND (absent or expired). */
ksnap_err_t ksnap_state_value_get(ksnap_state_t *state, int id,
                                  const void **valuep, size_t *vlenp);
ksnap_err_t ksnap_state_value_put(ksnap_state_t *state, int id,
                                  const void *value, size_t vlen,
                                  ksnap_error_t *error);

/** Removes the current key's value or list. @returns OK or NOT_FOUND. */
ksnap_err_t ksnap_state_clear(ksnap_state_t *state, int id);

/** List state: appends one element (O(list length): copy on write). */
ksnap_err_t ksnap_state_list_add(ksnap_state_t *state, int id,
                                 const void *value, size_t vlen,
                                 ksnap_error_t *error);

/** A list iterator over the current key's list. */
typedef struct ksnap_state_list_iter_s {
  const uint8_t *p, *end;
} ksnap_state_list_iter_t;

/** @returns OK or NOT_FOUND (empty list). */
ksnap_err_t ksnap_state_list_get(ksnap_state_t *state, int id,
                                 ksnap_state_list_iter_t *iter);

/** @returns 1 and the next element, or 0 at the end. */
int ksnap_state_list_next(ksnap_state_list_iter_t *iter, const void **valuep,
                          size_t *vlenp);

/** Map state under the current key. get/remove: OK or NOT_FOUND. */
ksnap_err_t ksnap_state_map_put(ksnap_state_t *state, int id,
                                const void *ukey, size_t uklen,
                                const void *value, size_t vlen,
                                ksnap_error_t *error);
ksnap_err_t ksnap_state_map_get(ksnap_state_t *state, int id,
                                const void *ukey, size_t uklen,
                                const void **valuep, size_t *vlenp);
ksnap_err_t ksnap_state_map_remove(ksnap_state_t *state, int id,
                                   const void *ukey, size_t uklen);

/** Operator state (id from register with an OP_ kind). */
ksnap_err_t ksnap_state_op_add(ksnap_state_t *state, int id,
                               const void *blob, size_t len,
                               ksnap_error_t *error);
size_t ksnap_state_op_count(ksnap_state_t *state, int id);
/** @returns OK or NOT_FOUND (@p i out of range). */
ksnap_err_t ksnap_state_op_get(ksnap_state_t *state, int id, size_t i,
                               const void **blobp, size_t *lenp);
void ksnap_state_op_clear(ksnap_state_t *state, int id);

/**
 * Makes the next snapshot a full one, whatever state.backend.incremental
 * says: a savepoint's file names no other file. Processing thread.
 */
void ksnap_state_snapshot_next_full(ksnap_state_t *state);

/**
 * Synchronous phase (processing thread): takes a consistent view of every
 * state in O(number of states). @p name names the file this snapshot will
 * be stored as (it goes into manifests); copied.
 * @returns OK, INVALID_ARG or NOMEM.
 */
ksnap_err_t ksnap_state_snapshot_begin(ksnap_state_t *state,
                                       int64_t checkpoint_id,
                                       const char *name,
                                       ksnap_state_snapshot_t **snapp,
                                       ksnap_error_t *error);

/**
 * Where ksnap_state_snapshot_stream() sends a snapshot file. The file is
 * a header of a length known at once but with contents (the key-group
 * index and its checksums) known only at the end, then the body. Calls,
 * in order: begin() once with the header's length; write() with the body
 * in order, one whole Avro block per call (at most half of
 * conf.buffer_size and 1 MiB of records, or one larger entry); head()
 * once with the header's bytes, which go before the body. An error
 * returned by a callback stops the snapshot and is returned.
 */
typedef struct ksnap_state_out_s {
  ksnap_err_t (*begin)(void *opaque, size_t head_len, ksnap_error_t *error);
  ksnap_err_t (*write)(void *opaque, const void *data, size_t len,
                       ksnap_error_t *error);
  ksnap_err_t (*head)(void *opaque, const void *data, size_t len,
                      ksnap_error_t *error);
  void *opaque;
} ksnap_state_out_t;

/**
 * Asynchronous phase (any one thread): streams the snapshot file to
 * @p out. Reads only the snapshot's own view, never the live state, so
 * the processing thread keeps writing meanwhile. Entries are read key
 * group by key group straight from the view (no sort, no copy of the
 * state): memory is one block, whatever the state's size.
 * @returns OK, NOMEM or the error of a callback.
 */
ksnap_err_t ksnap_state_snapshot_stream(ksnap_state_snapshot_t *snap,
                                        const ksnap_state_out_t *out,
                                        ksnap_error_t *error);

/**
 * As ksnap_state_snapshot_stream(), into @p out, which must be empty
 * (the whole file in memory: for tools and tests).
 * @returns OK, NOMEM or INVALID_ARG (@p out not empty).
 */
ksnap_err_t ksnap_state_snapshot_write(ksnap_state_snapshot_t *snap,
                                       ksnap_buf_t *out,
                                       ksnap_error_t *error);

/** 1 if the snapshot is incremental (a delta on earlier files). */
int ksnap_state_snapshot_is_incremental(const ksnap_state_snapshot_t *snap);

/**
 * The files this snapshot needs to be restored, oldest first, its own
 * name last. Owned by the snapshot.
 */
size_t ksnap_state_snapshot_manifest(const ksnap_state_snapshot_t *snap,
                                     const char *const **namesp);

/**
 * Ends a snapshot (any thread, once) and frees it; superseded state
 * versions no other snapshot needs are freed. @p persisted 0 (upload
 * failed or checkpoint aborted) makes the next snapshot full. NULL ok.
 */
void ksnap_state_snapshot_end(ksnap_state_snapshot_t *snap, int persisted);

/**
 * Reads @p len bytes at offset @p off of a snapshot file into @p dst (a
 * ranged GET of the storage layer). Called on the restoring thread.
 * @returns OK or an error (filled into @p error).
 */
typedef ksnap_err_t (*ksnap_state_read_fn)(void *opaque, uint64_t off,
                                           size_t len, uint8_t *dst,
                                           ksnap_error_t *error);

/**
 * One snapshot file: either all its bytes (@p data, @p len), or, with
 * @p data NULL, a reader (@p read, @p read_opaque) and its @p size: then
 * restore fetches the header and only the byte ranges of the key groups
 * this task owns (and the operator-state slot), nothing else.
 */
typedef struct ksnap_state_file_s {
  const uint8_t *data;
  size_t len;
  ksnap_state_read_fn read;
  void *read_opaque;
  uint64_t size;
} ksnap_state_file_t;

/** The files of one old task: a full file then its deltas, in order. */
typedef struct ksnap_state_chain_s {
  const ksnap_state_file_t *files;
  size_t nfiles;
} ksnap_state_chain_t;

/**
 * Restores from a checkpoint written at any parallelism: @p chains holds
 * one chain per old task, in old task order (a chain is the manifest of
 * that task's snapshot: its files, oldest first). Keyed entries outside
 * this task's key groups are not decoded, and for files given by a read
 * callback not even fetched; split operator lists are
 * concatenated in task order and divided evenly by position (at an
 * unchanged parallelism, one chain per task, each task gets its own list
 * back), union lists are given whole to every task. States found in the files are
 * registered. The next snapshot is full.
 * Processing thread (before processing starts).
 * @returns OK, CORRUPT, TRUNCATED, CHECKSUM, SCHEMA_VERSION, INVALID_ARG
 * (a file of another max parallelism, a broken chain, or a state whose
 * kind or TTL differs from one registered before), NOMEM, or the error of
 * a read callback; on error the state is partially restored and should
 * be destroyed. Files given by a read callback are read in windows of
 * about conf.buffer_size bytes (one key group at least), each checked
 * (its key groups' CRC-32s in the verified header's index) before any
 * entry of it is decoded, so no byte of a corrupt window is ever applied.
 */
ksnap_err_t ksnap_state_restore(ksnap_state_t *state,
                                const ksnap_state_chain_t *chains,
                                size_t nchains, ksnap_error_t *error);

/** One decoded entry of a snapshot file. */
typedef struct ksnap_state_entry_s {
  const char *state;         /**< state name */
  ksnap_state_kind_t kind;
  int state_index;
  int key_group;             /**< -1 for operator state */
  int tombstone;             /**< deleted (incremental files) */
  const uint8_t *key;        /**< record key (empty for operator state) */
  size_t klen;
  int has_user_key;          /**< map state */
  const uint8_t *user_key;
  size_t uklen;
  const uint8_t *value;      /**< list state: (uint32 LE len, bytes)* */
  size_t vlen;
  int64_t ts;                /**< last write, ms */
} ksnap_state_entry_t;

/** @returns 0 to continue, non-zero to stop. */
typedef int (*ksnap_state_entry_cb_t)(void *opaque,
                                      const ksnap_state_entry_t *entry);

/**
 * As ksnap_state_restore(), calling @p observe (if not NULL) with every
 * keyed entry it applies (this task's key groups only, chains in order,
 * tombstones included), so a caller can rebuild what it derives from
 * state (e.g. timers) without reading the files again. Entries are
 * observed only once their key group's checksum was verified. A non-zero
 * return stops the restore with KSNAP_ERR_INTERRUPTED.
 */
ksnap_err_t ksnap_state_restore_observed(ksnap_state_t *state,
                                         const ksnap_state_chain_t *chains,
                                         size_t nchains,
                                         ksnap_state_entry_cb_t observe,
                                         void *opaque, ksnap_error_t *error);

/** A snapshot file's header, for inspection. */
typedef struct ksnap_state_file_info_s {
  int version;
  int max_parallelism;
  int kg_start, kg_end;
  int64_t checkpoint_id;
  int incremental;
  size_t nmanifest;
  const char *const *manifest;
} ksnap_state_file_info_t;

typedef void (*ksnap_state_info_cb_t)(void *opaque,
                                      const ksnap_state_file_info_t *info);

/**
 * Decodes a whole snapshot file (for `ksnap inspect`): calls @p info_cb
 * once (may be NULL) then @p cb per entry, key groups ascending, operator
 * state last. Pointers are valid during the callback only.
 * @returns OK, CORRUPT, TRUNCATED, CHECKSUM, SCHEMA_VERSION or INTERRUPTED
 * (the callback stopped).
 */
ksnap_err_t ksnap_state_file_decode(const uint8_t *data, size_t len,
                                    ksnap_state_info_cb_t info_cb,
                                    ksnap_state_entry_cb_t cb, void *opaque,
                                    ksnap_error_t *error);

/**
 * Appends @p entry to @p out as one JSON line (with "\n"): state, kind,
 * keyGroup, op, key, userKey (map state), value (a list state's value as
 * an array of its elements), timestamp. Printable ASCII bytes are JSON
 * strings, others {"base64":"..."}. For `ksnap inspect --state`.
 * @returns OK or NOMEM.
 */
ksnap_err_t ksnap_state_entry_to_json(const ksnap_state_entry_t *entry,
                                      ksnap_buf_t *out);

/**
 * For ranged reads: given a file's first @p len bytes (at least its
 * header; 64 KiB is plenty for 1024 key groups), returns the byte range
 * [*offp, *endp) holding key groups [@p kg_lo, @p kg_hi).
 * @returns OK, TRUNCATED (header longer than @p len) or CORRUPT.
 */
ksnap_err_t ksnap_state_file_range(const uint8_t *data, size_t len,
                                   int kg_lo, int kg_hi, uint64_t *offp,
                                   uint64_t *endp, ksnap_error_t *error);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_STATE_H */
