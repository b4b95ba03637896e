/**
 * @file context.h
 * @brief What an operator callback can do through its context
 *        (ksnap_operator_ctx_t, see operator.h): emit records (with a
 *        timestamp), use keyed state, set processing-time timers, count
 *        things, and ask who it is.
 *
 * Every call is valid only inside a callback of the operator, on the
 * task's processing thread (the context is the task's; it is never shared
 * between tasks).
 *
 * Outputs: a stage has a default output (`stage.S.output=sink:...` and
 * the readers of `stage:S`) and any number of named outputs
 * (`stage.S.output.NAME=sink:...` and the readers of `stage:S.NAME`),
 * as Flink's side outputs (OutputTag) or Kafka Streams' named branches.
 * ksnap_ctx_emit() writes to the default output, ksnap_ctx_emit_to() to
 * one named output (NULL: the default). Every output's records are
 * exactly-once alike: in the same epoch transaction for sinks, and
 * behind the same barriers for exchange topics (every exchange topic of
 * the stage gets every barrier, cancellation and end-of-input marker).
 * An emit to an output the stage does not have fails the task with a
 * message naming the stage and the output, also when the operator
 * ignores the returned code, and no restart is tried: the job FAILS.
 *
 * Routing of an emit: a record goes to every topic of its output:
 *  - the output's exchange topics (if a stage reads it), with the
 *    ksnap.w / ksnap.g headers first, then the emit's own headers. The partition follows the key so that the reading
 *    task owns the key's key group (state.h): kg = murmur3(key) mod
 *    pipeline.max-parallelism, t = the reader task owning kg, partition =
 *    t + P * (kg mod n_t), where P is the reading stage's parallelism and
 *    n_t the number of partitions read by t. A record without key goes to
 *    partition (records out of this task) mod partitions. When several
 *    stages read the topic, the first reader's parallelism decides;
 *  - every sink topic, inside the current epoch's transaction (partition
 *    by the sink producer's partitioner on the key).
 *
 * Headers: an input record's headers are record->headers (those named
 * "ksnap.*" are ksnap's own and never shown). An emit carries exactly the
 * headers it is given (at most 64), on the exchange topic (after
 * ksnap's) and on the sink: it does NOT copy the input record's headers
 * by itself, unlike Kafka Streams' forward(). Reason: an operator that
 * splits, aggregates or joins would attach one record's headers to
 * output they do not describe, and ksnap cannot tell. To forward them,
 * pass them: ksnap_ctx_emit(ctx, k, kl, v, vl, rec->headers,
 * rec->header_cnt, error). A dead-letter record carries every header of
 * the failed input record, as it was read.
 *
 * In a stage with errors.tolerance=all, the records process emits are
 * held and produced when it returns OK (in emit order), or dropped when it
 * fails; emits of the other callbacks are produced at once.
 *
 * Timestamps: every emitted record carries one, written as its Kafka
 * timestamp (CreateTime) on the exchange topic, where it becomes the next
 * stage's record->timestamp_ms, and on the sink topics. By default, as
 * Flink's process functions do:
 *  - in process: the input record's timestamp (record->timestamp_ms);
 *  - in on_timer: the timer's time (@p time_ms, the time it was set
 *    for, not the later moment it fired), so a restore or replay writes
 *    the same timestamp;
 *  - in the other callbacks (open, prepare_snapshot_pre_barrier, the
 *    checkpoint notifications, close): none; the producer's clock.
 * ksnap_ctx_set_timestamp() replaces it for the following emits of the
 * same callback. A timestamp <= 0 (a source record without timestamp is
 * -1) means the producer's clock at the produce, as Kafka's producer does.
 * A record keeps its timestamp in the epoch replay and in the dead-letter
 * topic. The broker may refuse a timestamp far from its clock
 * (log.message.timestamp.before.max.ms / after.max.ms): the produce fails
 * and so does the task. An exchange topic's time-based retention
 * (retention.ms) counts from these timestamps: input much older than it
 * may be deleted from the exchange topic before the next stage reads it
 * (plugin/PROTOCOL.md section 9.3); give exchange topics retention.ms=-1
 * (or one above the input's age) when the input's timestamps are old.
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
 * Emits one record to the stage's default output (key, value and headers
 * copied; @p key may be NULL). Headers named "ksnap.*" are reserved and
 * refused; at most 64.
 * @returns OK; INVALID_ARG (reserved header, too many, the stage has
 * named outputs only); KAFKA (retriable when the producer's queue is
 * full), FENCED, STATE (sink pool exhausted).
 */
ksnap_err_t ksnap_ctx_emit(ksnap_operator_ctx_t *ctx, const void *key,
                           size_t key_len, const void *value,
                           size_t value_len, const ksnap_header_t *headers,
                           size_t header_cnt, ksnap_error_t *error);

/**
 * Emits one record to the stage's named output @p output
 * (stage.S.output.OUTPUT; NULL: the default output, as ksnap_ctx_emit())
 * and to no other. Otherwise as ksnap_ctx_emit(): the timestamp, the
 * headers, held emits of a tolerant stage (each keeps its output).
 * @returns as ksnap_ctx_emit(); INVALID_ARG when the stage has no such
 * output ("stage S has no output \"X\" ..."), after which the task fails
 * and the job FAILS, whatever the callback returns.
 */
ksnap_err_t ksnap_ctx_emit_to(ksnap_operator_ctx_t *ctx, const char *output,
                              const void *key, size_t key_len,
                              const void *value, size_t value_len,
                              const ksnap_header_t *headers,
                              size_t header_cnt, ksnap_error_t *error);

/**
 * Sets the timestamp (ms since the epoch) of the records the current
 * callback emits after this call (until it returns; the next callback
 * starts from its default, see the file comment). Like everything a
 * callback does, it must be deterministic for exactly-once (e.g. taken
 * from the record's content, never from the clock). @p ms <= 0: the
 * producer's clock. In a stage with errors.tolerance=all each held emit
 * keeps the timestamp it was emitted with.
 */
void ksnap_ctx_set_timestamp(ksnap_operator_ctx_t *ctx, int64_t ms);

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
 * Every timer is kept in the snapshot and restored with it: a keyed one in
 * a reserved keyed map state ("ksnap.timers": record key -> time), one
 * without key (registered in open, for a record without key, or in such
 * a timer) in another ("ksnap.timers.nokey") under a key of the task's
 * own key groups, so that on rescale it goes with that key group and
 * fires in exactly one task.
 * @returns OK or NOMEM.
 */
ksnap_err_t ksnap_ctx_timer_register(ksnap_operator_ctx_t *ctx,
                                     int64_t time_ms, ksnap_error_t *error);

/** No watermark yet (every record is on time); and the end of input. */
#define KSNAP_WATERMARK_MIN INT64_MIN
#define KSNAP_WATERMARK_MAX INT64_MAX

/**
 * Registers an event-time timer at @p time_ms for the current key (NULL
 * key outside a keyed record, as ksnap_ctx_timer_register()): on_timer
 * gets it once the task's watermark reaches @p time_ms (watermark >=
 * time), in time order, before the watermark goes on downstream, and at
 * the latest when every input ended (the watermark is then
 * KSNAP_WATERMARK_MAX). A timer at or below the current watermark fires
 * at the next advance. Kept in the snapshot and restored as
 * processing-time timers are (in the same reserved states, user key its
 * time followed by the byte 'e'); one timer per key and time (registering
 * it again changes nothing).
 * @returns OK or NOMEM.
 */
ksnap_err_t ksnap_ctx_event_timer_register(ksnap_operator_ctx_t *ctx,
                                           int64_t time_ms,
                                           ksnap_error_t *error);

/**
 * The watermark, Flink's "no record older than this will come" (ms since
 * the epoch; KSNAP_WATERMARK_MIN before the first one):
 *  - in process: the watermark of the record's own input (its source
 *    partition, or its exchange channel: writer task and partition)
 *    before the record. A record whose timestamp is at or below it is
 *    late on its input. Unlike the task's watermark (the minimum over
 *    its inputs) it does not depend on how the inputs interleave, so a
 *    restore and an epoch replay see the same value;
 *  - in on_timer: the task's watermark when the timer fired (for an
 *    event-time timer, at least its time);
 *  - elsewhere: the task's watermark.
 * A stage that reads source topics makes watermarks when
 * source.watermark.max-out-of-orderness is set: per partition, the
 * largest event time read minus that bound minus 1 ms, where a record's
 * event time is the timestamp of its emits when its process returns (the
 * last one it set with ksnap_ctx_set_timestamp(), else its Kafka
 * timestamp). Every stage passes the minimum over its inputs on to its
 * exchange topics (plugin/PROTOCOL.md section 18).
 */
int64_t ksnap_ctx_watermark(const ksnap_operator_ctx_t *ctx);

/** In on_timer: 1 when the timer firing is an event-time timer, 0 for a
 * processing-time one (and outside on_timer). */
int ksnap_ctx_timer_is_event_time(const ksnap_operator_ctx_t *ctx);

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
