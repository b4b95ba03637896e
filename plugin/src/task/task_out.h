/*
 * A task's exchange output (task_out.c): the writer of the stage's
 * exchange topics (one per output and parallelism of the stages reading
 * it; each record goes to every one of its output, partitioned for its
 * readers), the partition
 * of each record, and the barriers and cancellation markers broadcast on
 * them. A stage without an exchange
 * output (a sink stage) has no writer; every call is then a no-op.
 * Calls nothing else of the task. Threading: the processing thread, but
 * ksnap__task_exchange_delivered() (the snapshot pool).
 */
#ifndef KSNAP_TASK_OUT_H
#define KSNAP_TASK_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "exchange/exchange.h"
#include "kafka/kafka_types.h"
#include "ksnap/error.h"
#include "ksnap/records.h"

struct ksnap_task_s;

/** task->out: no other file touches it. */
typedef struct ksnap__task_out_s {
  ksnap_exchange_t *writer;   /* NULL: none, or detached by the replay */
  ksnap_exchange_t *detached; /* the writer while the epoch replay runs */
  const char **topics;        /* the stage's exchange outputs */
  int32_t *parts;             /* their partitions */
  int32_t *reader_p;          /* the parallelism of the stages reading each */
  const char **outs;          /* the output each carries (NULL: default) */
  size_t ntopics;             /* 0: none */
  size_t next;                /* the topic a retried record resumes at */
  int64_t last_barrier;       /* the last barrier id broadcast, 0: none */
  int64_t last_cancel;        /* the last cancellation marker's id, 0 */
  int ended;                  /* the task's end of input went out */
} ksnap__task_out_t;

/**
 * The exchange partition of @p key (ksnap/context.h's rule): topic of @p n
 * partitions read by a stage of parallelism @p p, so that reading task
 * (partition mod p) owns the key's key group; @p seq spreads records
 * without key.
 */
int32_t ksnap__exchange_partition(const void *key, size_t klen, int32_t n,
                                  int32_t p, int max_par, int64_t seq);

/** Opens the writer of the stage's exchange output, if it has one. */
ksnap_err_t ksnap__task_open_exchange(struct ksnap_task_s *task,
                                      ksnap_error_t *error);
void ksnap__task_close_exchange(struct ksnap_task_s *task);

/** Produces one record to each exchange topic of output @p output (NULL:
 * the default output; the job's string, compared by content),
 * partitioned by @p key (@p seq: the task's count of records out, for
 * records without key), with Kafka timestamp @p ts_ms (<= 0: the
 * producer's clock) and @p headers after ksnap's own.
 * After a (retriable) error the same record's retry resumes at the topic
 * that failed: no topic gets it twice. */
ksnap_err_t ksnap__task_exchange_produce(
    struct ksnap_task_s *task, const char *output, const void *key,
    size_t key_len,
    const void *value, size_t value_len, int64_t ts_ms,
    const ksnap_kafka_header_t *headers, size_t header_cnt, int64_t seq,
    ksnap_error_t *error);

/** The record whose produce failed is not retried: the next one goes to
 * every exchange output again. */
void ksnap__task_exchange_give_up(struct ksnap_task_s *task);

/** Broadcasts barrier @p id (BARRIER: to every partition, after the
 * task's last record before it) or its cancellation marker (CANCEL),
 * stamped with the task, its generation, @p ts_ms and @p opts. */
ksnap_err_t ksnap__task_exchange_barrier(struct ksnap_task_s *task,
                                         ksnap_barrier_kind_t kind,
                                         int64_t id, int64_t ts_ms,
                                         const ksnap_ckpt_options_t *opts,
                                         ksnap_error_t *error);

/**
 * Broadcasts the cancellation marker of checkpoint @p id (this task
 * declined it, or forwards a marker it received), once, and only when a
 * reader can still act on it: @p id above every marker broadcast so far,
 * or equal to the last barrier (the task declined after its barrier went
 * out: the readers still aligning @p id stop at once). Else, and without
 * a writer, nothing is written. A reader refuses a marker id below the
 * channel's last one (ids grow per channel), so a marker older than the
 * last barrier is never sent.
 */
ksnap_err_t ksnap__task_exchange_cancel(struct ksnap_task_s *task, int64_t id,
                                        ksnap_error_t *error);

/**
 * The end of the task's input (bounded inputs): broadcasts the end marker
 * on the exchange output, if any, once; from then on no barrier and no
 * cancellation marker is sent. @p sentp: 1 if a marker went out now.
 */
ksnap_err_t ksnap__task_exchange_end(struct ksnap_task_s *task, int *sentp,
                                     ksnap_error_t *error);

/** Broadcasts a control record of @p kind (a watermark: task_wm.h) to
 * every partition of every exchange topic, unless there is no writer
 * (none, or the epoch replay's) or the end of input went out. */
ksnap_err_t ksnap__task_exchange_marker(struct ksnap_task_s *task,
                                        const char *kind, const void *payload,
                                        size_t len, ksnap_error_t *error);

/** @returns 1 once ksnap__task_exchange_end() ran (until the close). */
int ksnap__task_exchange_ended(const struct ksnap_task_s *task);

/** Waits until every record before barrier @p id and the barrier records
 * are delivered (bounded by @p timeout_ms). */
ksnap_err_t ksnap__task_exchange_delivered(struct ksnap_task_s *task,
                                           int64_t id, int timeout_ms,
                                           ksnap_error_t *error);

/** The epoch replay's emits must not reach the exchange (downstream has
 * that output already): detach the writer for the replay, attach it
 * after. */
void ksnap__task_exchange_detach(struct ksnap_task_s *task);
void ksnap__task_exchange_attach(struct ksnap_task_s *task);

#endif /* KSNAP_TASK_OUT_H */
