/**
 * @file operator.h
 * @brief The operator API: what a stage runs, as a struct of callbacks,
 * and how ksnap finds it (shared libraries or built-in registration).
 *
 * An operator is a `const ksnap_operator_t` with static storage duration.
 * A job names it in `stage.<name>.operator`:
 *  - `LIB.so:NAME`: ksnap dlopen()s LIB (RTLD_NOW | RTLD_LOCAL) and calls
 *    the function `ksnap_operator_NAME` (a ksnap_operator_fn_t), or, if
 *    the library has no such symbol, the function named exactly NAME. LIB
 *    is looked up in the job file's directory, then in each directory of
 *    the colon-separated KSNAP_OPERATOR_PATH, then by the system's dynamic
 *    loader (LD_LIBRARY_PATH, ld.so.cache, ...). A LIB containing '/' is
 *    used as written, relative to the job file's directory.
 *  - `NAME`: a built-in operator registered by the program that embeds
 *    libksnap, with ksnap_operator_register().
 *
 * A library declares its operators like this:
 * @code
 *   static ksnap_err_t split_process(ksnap_operator_ctx_t *ctx, void *inst,
 *                                    const ksnap_record_t *rec,
 *                                    ksnap_error_t *error) { ... }
 *   static const ksnap_operator_t split = {
 *       .abi_version = KSNAP_OPERATOR_ABI_VERSION,
 *       .name = "split",
 *       .process = split_process,
 *   };
 *   const ksnap_operator_t *ksnap_operator_split(void) { return &split; }
 * @endcode
 *
 * Lifecycle of one task's instance, all on the task's one processing
 * thread (the mailbox): open, then any sequence of process, on_timer,
 * prepare_snapshot_pre_barrier (between two records, right before the
 * task broadcasts barrier N), notify_checkpoint_complete/aborted (which
 * may arrive late and out of order with respect to later barriers), at
 * most once finish (a bounded job, source.stop-at=latest: every input of
 * the task ended), then close (also after a failure of any callback, if
 * open succeeded).
 * Callbacks of one instance are never called concurrently; instances of
 * other tasks may run on other threads at the same time, so an operator
 * must not keep unsynchronized global mutable state. A callback must not
 * block for long: it delays barriers.
 *
 * Errors: a fallible callback returns KSNAP_ERR_OK, or another code with
 * @p error set (ksnap_error_set()); the task then fails and the job
 * restores from the latest completed checkpoint. A record that process
 * cannot handle because its key or value cannot be decoded should fail
 * with KSNAP_ERR_UNDECODABLE (any other code, e.g. KSNAP_ERR_OPERATOR,
 * for other failures of the record): with errors.tolerance=all the
 * stage's task does not fail on an error of process. It undoes what
 * process did for the record (its state writes, the records it emitted:
 * emits are held until process returns, the timers it registered),
 * counts the record and writes it to the stage's dead-letter topic
 * (errors.deadletterqueue.topic.name) with the error's name
 * (ksnap_err2name()) and message, then goes on with the next record.
 * KSNAP_ERR_NOMEM still fails the task, and so do errors of the other
 * callbacks. process must then be deterministic in its failures too (a
 * replayed record must fail or succeed as it did), as in every
 * exactly-once argument of plugin/PROTOCOL.md.
 *
 * @par The context (declared in ksnap/context.h, implemented by the task
 * runtime, plugin/src/task/task_ctx.c). ksnap_operator_ctx_t gives:
 *  - emit(ctx, key, value, headers): produce a record to the default
 *    output of the stage, emit_to(ctx, "NAME", ...) to its named output
 *    NAME (exchange topics partitioned by key, sink topics inside
 *    the epoch's transaction); valid only inside a callback; the record
 *    carries the input record's timestamp (in on_timer, the timer's
 *    time), or the one set with ksnap_ctx_set_timestamp();
 *  - keyed state (from the state module): value and map state of the
 *    current record's key, captured in snapshots (copy-on-write);
 *  - processing-time timers: register/delete a timer for the current key,
 *    delivered through on_timer, kept in the snapshot;
 *  - metrics: counters and gauges named per task;
 *  - task info: stage name, task index, parallelism, job configuration.
 *
 * @par Several inputs (a join): a stage may list several inputs in
 * `stage.S.input`; process gets the records of all of them, interleaved
 * in no order the operator can rely on, and record->input says which one
 * each came from. Keyed state and timers belong to the key, not to the
 * input: the records of one key from every input reach the same task,
 * where they share the key's state (as Flink's KeyedCoProcessFunction).
 * The job graph guarantees it: exchange inputs are partitioned by key
 * group for the reading stage, and a stage of parallelism above 1 with
 * several inputs may not read a source topic directly (refused by
 * `ksnap config check`; see ksnap/job.h).
 */
#ifndef KSNAP_OPERATOR_H
#define KSNAP_OPERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; checked when loading. Version
 * 2 added the finish callback at the end of ksnap_operator_t; an operator
 * built for version 1 (KSNAP_OPERATOR_ABI_VERSION_MIN) still loads and
 * runs (it has no finish). */
#define KSNAP_OPERATOR_ABI_VERSION 2
/** The oldest operator ABI version this ksnap loads. */
#define KSNAP_OPERATOR_ABI_VERSION_MIN 1

/** Prefix of the function a library exports for operator NAME. */
#define KSNAP_OPERATOR_SYMBOL_PREFIX "ksnap_operator_"

/** The per-task context given to every callback (opaque; design note). */
typedef struct ksnap_operator_ctx_s ksnap_operator_ctx_t;

/** One record header. Borrowed: valid during the callback only. */
typedef struct ksnap_header_s {
  const char *name;
  const void *value;
  size_t value_len;
} ksnap_header_t;

/**
 * An input record. Borrowed: every pointer is valid only until the
 * callback returns; copy what must outlive it. headers are the Kafka
 * record's headers in their order (source topics and exchange topics
 * alike), without ksnap's own (every name starting with `ksnap.`);
 * header_cnt 0 and headers NULL when it has none. An emit does not copy
 * them unless given them (ksnap/context.h).
 */
typedef struct ksnap_record_s {
  const void *key; /**< NULL for a record without key */
  size_t key_len;
  const void *value; /**< NULL for a tombstone */
  size_t value_len;
  const ksnap_header_t *headers;
  size_t header_cnt;
  /** The Kafka record timestamp (ms; -1: none): a source record's, or
   * on an exchange input the timestamp the writing stage's emit carried
   * (ksnap/context.h). */
  int64_t timestamp_ms;
  const char *topic;    /**< the input topic it was read from */
  int32_t partition;
  int64_t offset;
  /** The input it came from, as listed in `stage.S.input` (trimmed):
   * "source:TOPIC" or "stage:NAME". Never NULL in process. */
  const char *input;
  int32_t input_index; /**< that input's position in stage.S.input, 0.. */
} ksnap_record_t;

/**
 * An operator: its ABI version, its name, and callbacks. Only process is
 * required; a NULL callback means "nothing to do". @p instance is what
 * open stored in *instancep (NULL if there is no open callback).
 */
typedef struct ksnap_operator_s {
  uint32_t abi_version; /**< KSNAP_OPERATOR_ABI_VERSION */
  const char *name;     /**< for logs and errors */

  /** Creates one task's instance (*instancep, owned by the operator). */
  ksnap_err_t (*open)(ksnap_operator_ctx_t *ctx, void **instancep,
                      ksnap_error_t *error);
  /** Handles one input record. */
  ksnap_err_t (*process)(ksnap_operator_ctx_t *ctx, void *instance,
                         const ksnap_record_t *record, ksnap_error_t *error);
  /**
   * Called before barrier @p checkpoint_id is broadcast downstream: the
   * last moment to emit records that belong to this checkpoint's epoch.
   */
  ksnap_err_t (*prepare_snapshot_pre_barrier)(ksnap_operator_ctx_t *ctx,
                                              void *instance,
                                              int64_t checkpoint_id,
                                              ksnap_error_t *error);
  /** A processing-time timer of key @p key fired at @p time_ms. */
  ksnap_err_t (*on_timer)(ksnap_operator_ctx_t *ctx, void *instance,
                          const void *key, size_t key_len, int64_t time_ms,
                          ksnap_error_t *error);
  /** Checkpoint @p checkpoint_id completed (its sinks commit). */
  void (*notify_checkpoint_complete)(ksnap_operator_ctx_t *ctx,
                                     void *instance, int64_t checkpoint_id);
  /** Checkpoint @p checkpoint_id was aborted. */
  void (*notify_checkpoint_aborted)(ksnap_operator_ctx_t *ctx,
                                    void *instance, int64_t checkpoint_id);
  /** Frees the instance. Called once if open succeeded (or was NULL). */
  void (*close)(ksnap_operator_ctx_t *ctx, void *instance);
  /**
   * ABI 2 (Flink's finish(), FLIP-147): every input of the task ended (a
   * bounded job: source.stop-at=latest) and no record will come any more.
   * Called once per task and job, before the task's part of its final
   * checkpoint: it may emit records (a buffering operator flushes here)
   * and change state; they belong to the final checkpoint, and the task
   * ends its output after it. The task records in its state that finish
   * ran (the operator state `ksnap.finished`), so a restore from a
   * checkpoint taken after it never calls it again, and a restore from
   * one taken before calls it once more on that checkpoint's state
   * (emits made after that checkpoint were never committed). Timers
   * still fire after finish (their output to an exchange topic is
   * dropped: plugin/PROTOCOL.md section 5.9). Read only when abi_version
   * is 2 or more: an ABI 1 operator has no such member.
   */
  ksnap_err_t (*finish)(ksnap_operator_ctx_t *ctx, void *instance,
                        ksnap_error_t *error);
} ksnap_operator_t;

/** What a library exports as `ksnap_operator_NAME`. */
typedef const ksnap_operator_t *(ksnap_operator_fn_t)(void);

/**
 * Registers a built-in operator under @p name (a spec without ':' or '/'
 * that does not end in ".so"), process-wide, for the lifetime of the
 * process. @p ops is not copied: it must stay valid (static).
 * Thread-safe.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_INVALID_ARG (bad name, ABI version
 * mismatch, no process callback); KSNAP_ERR_EXISTS (name taken);
 * KSNAP_ERR_NOMEM. @p error (may be NULL) holds the message.
 */
ksnap_err_t ksnap_operator_register(const char *name,
                                    const ksnap_operator_t *ops,
                                    ksnap_error_t *error);

/** A resolved operator; keeps its shared library loaded. */
typedef struct ksnap_operator_handle_s ksnap_operator_handle_t;

/**
 * Finds the operator of spec @p spec (see the file comment), loading its
 * library if needed. @p job_dir is the job file's directory (NULL: none).
 * Thread-safe.
 * @returns KSNAP_ERR_OK with *handlep (free with
 * ksnap_operator_handle_destroy()); KSNAP_ERR_NOT_FOUND ("cannot load
 * \"PATH\": <dlerror>" with PATH the file handed to dlopen(), followed
 * by where a bare LIB was searched when it was found in no directory;
 * "LIB has no operator NAME (no symbol ...)"; "no built-in operator
 * NAME"); KSNAP_ERR_UNSUPPORTED (ABI version mismatch, both versions
 * named); KSNAP_ERR_INVALID_ARG (bad spec, NULL operator, no process
 * callback); KSNAP_ERR_NOMEM. Callers prefix the message with the key,
 * e.g. "stage.split.operator: cannot load \"libwordcount.so\": ...".
 * ksnap_job_preflight() resolves every stage's operator with this call,
 * so a job file check and a worker find the same files.
 */
ksnap_err_t ksnap_operator_resolve(const char *spec, const char *job_dir,
                                   ksnap_operator_handle_t **handlep,
                                   ksnap_error_t *error);

/** @returns the operator of @p handle, valid until the handle is freed. */
const ksnap_operator_t *
ksnap_operator_handle_ops(const ksnap_operator_handle_t *handle);

/** Frees @p handle (dlclose()s its library). NULL is a no-op. */
void ksnap_operator_handle_destroy(ksnap_operator_handle_t *handle);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_OPERATOR_H */
