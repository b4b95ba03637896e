/**
 * @file context.h
 * @brief What an operator callback can do through its context
 *        (ksnap_operator_ctx_t, see operator.h): emit records, use keyed
 *        state, set processing-time timers, count things, and ask who it is.
 *
 * Every call is valid only inside a callback of the operator, on the
 * task's processing thread (the context is the task's; it is never shared
 * between tasks).
 *
 * Routing of emit: a record goes to every output of the stage:
 *  - the stage's exchange topic (if a stage reads it), with the ksnap.w /
 *    ksnap.g headers. The partition follows the key so that the reading
 *    task owns the key's key group (state.h): kg = murmur3(key) mod
 *    pipeline.max-parallelism, t = the reader task owning kg, partition =
 *    t + P * (kg mod n_t), where P is the reading stage's parallelism and
 *    n_t the number of partitions read by t. A record without key goes to
 *    partition (records out of this task) mod partitions. When several
 *    stages read the topic, the first reader's parallelism decides;
 *  - every sink topic, inside the current epoch's transaction (partition
 *    by the sink producer's partitioner on the key).
 * In a stage with errors.tolerance=all, the records process emits are
 * held and produced when it returns OK (in emit order), or dropped when it
 * fails; emits of the other callbacks are produced at once.
 */
#ifndef KSNAP_CONTEXT_H
#define KSNAP_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/operator.h"
#include "ksnap/state.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Emits one record (key and value copied; @p key may be NULL). Headers
 * named "ksnap.*" are reserved and refused.
 * @returns OK; INVALID_ARG (reserved header); KAFKA (retriable when the
 * producer's queue is full), FENCED, STATE (sink pool exhausted).
 */
ksnap_err_t ksnap_ctx_emit(ksnap_operator_ctx_t *ctx, const void *key,
                           size_t key_len, const void *value,
                           size_t value_len, const ksnap_header_t *headers,
                           size_t header_cnt, ksnap_error_t *error);

/**
 * The task's state backend with the current key (the record's, or the
 * timer's in on_timer) set for the keyed accessors of state.h. Register
 * states once in open (ksnap_state_register(), ids stay valid until
 * close). The pointer is valid during the callback.
 * @returns OK; INVALID_ARG when the current key's group is not owned by
 * this task (the input was not partitioned by this key).
 */
ksnap_err_t ksnap_ctx_state(ksnap_operator_ctx_t *ctx, ksnap_state_t **statep,
                            ksnap_error_t *error);

/**
 * Registers a processing-time timer at @p time_ms (wall clock, ms) for
 * the current key (NULL key outside a keyed record); on_timer gets it
 * once that time has passed (checked between records, about every 50 ms).
 * A keyed timer is kept in the snapshot (a reserved keyed map state,
 * "ksnap.timers": record key -> time) and restored with it; a timer
 * without key (registered outside a keyed record) lives in memory only.
 * @returns OK or NOMEM.
 */
ksnap_err_t ksnap_ctx_timer_register(ksnap_operator_ctx_t *ctx,
                                     int64_t time_ms, ksnap_error_t *error);

/** Adds @p delta to counter @p name of this task (created on first use;
 * at most 16 per task, later names are ignored). */
void ksnap_ctx_counter_add(ksnap_operator_ctx_t *ctx, const char *name,
                           int64_t delta);

/** @returns counter @p name (0 if unknown). Any thread. */
int64_t ksnap_ctx_counter_get(ksnap_operator_ctx_t *ctx, const char *name);

/** Task info: stage name, task index, parallelism, generation, job
 * configuration (owned by the worker; valid while the task runs). */
const char *ksnap_ctx_stage_name(const ksnap_operator_ctx_t *ctx);
int32_t ksnap_ctx_task_index(const ksnap_operator_ctx_t *ctx);
int32_t ksnap_ctx_parallelism(const ksnap_operator_ctx_t *ctx);
int64_t ksnap_ctx_generation(const ksnap_operator_ctx_t *ctx);
const ksnap_conf_t *ksnap_ctx_conf(const ksnap_operator_ctx_t *ctx);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_CONTEXT_H */
