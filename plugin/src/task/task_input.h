/*
 * A task's input side: the inputs and what the rest of the task needs of
 * them (task_input.c), and the live loop over them (task_poll.c). Both
 * own task->in. Threading: the task's processing thread.
 */
#ifndef KSNAP_TASK_INPUT_H
#define KSNAP_TASK_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "exchange/exchange.h"
#include "input/aligner.h"
#include "kafka/kafka_types.h"
#include "ksnap/error.h"
#include "ksnap/records.h"
#include "source/source.h"

struct ksnap_task_s;

/** task->in: no other file touches it. */
typedef struct ksnap__task_in_s {
  ksnap_source_t *source;          /* a source task's input */
  ksnap_exchange_reader_t *reader; /* else: the exchange reader, */
  ksnap_gate_t *gate;              /* its channels */
  ksnap_aligner_t *al;             /* and the aligner */
  int64_t last_trigger;            /* last checkpoint id started here */
  int64_t barrier_ts; /* trigger timestamp of the aligning checkpoint */
  ksnap_ckpt_options_t barrier_opts; /* and its options */
  struct ksnap__bounded_s *bounded;  /* source.stop-at (task_bounded.c) */
  /* per input channel (the gate's, or the source's partitions in
   * src_parts' order): the offset after its last record processed in
   * this run, 0: none (task_poll.c; the firing log's positions) */
  int64_t *processed;
  int32_t nprocessed;
  ksnap_kafka_pos_t *src_parts;
} ksnap__task_in_t;

/* task_input.c */

/** Opens the source (source task) or the gate, aligner and exchange
 * reader, at the positions of checkpoint @p base_id (@p meta; 0 / NULL: a
 * fresh start). */
ksnap_err_t ksnap__task_open_inputs(struct ksnap_task_s *task,
                                    int64_t base_id,
                                    const ksnap_checkpoint_meta_t *meta,
                                    ksnap_error_t *error);
void ksnap__task_close_inputs(struct ksnap_task_s *task);

/** A Kafka source of the task's assigned partitions of the stage's input
 * topics, at @p meta's offsets of the stage (NULL: the beginning).
 * @returns NULL on error (set). */
ksnap_source_t *ksnap__task_new_source(struct ksnap_task_s *task,
                                       const ksnap_checkpoint_meta_t *meta,
                                       ksnap_error_t *error);

/** A new gate with the task's exchange input channels (*gatep is set even
 * on error; the caller destroys it). */
ksnap_err_t ksnap__task_new_gate(struct ksnap_task_s *task,
                                 ksnap_gate_t **gatep, ksnap_error_t *error);

/** Positions of @p meta (the task's stage) naming @p gate's channels
 * (malloc'd into *posp, *np of them). */
ksnap_err_t ksnap__task_chan_positions(struct ksnap_task_s *task,
                                       ksnap_gate_t *gate,
                                       const ksnap_checkpoint_meta_t *meta,
                                       ksnap_chan_pos_t **posp, int32_t *np,
                                       ksnap_error_t *error);

/** The channel of exchange record @p m in @p gate: its partition and its
 * writer task (the ksnap.w header "stage[i]"). @returns 0, or non-zero
 * when @p m is not on one of the gate's channels (logged by the gate). */
int ksnap__task_record_chan(ksnap_gate_t *gate, const ksnap_exchange_msg_t *m,
                            int32_t *chanp);

/** The kind of exchange record @p m into @p in: data, end of input, or a
 * barrier / cancellation marker with its checkpoint id and trigger
 * timestamp (and the barrier's options into @p opts unless NULL).
 * @returns OK, or the decode error of an undecodable control record. */
ksnap_err_t ksnap__task_record_kind(const ksnap_exchange_msg_t *m,
                                    ksnap_in_t *in,
                                    ksnap_ckpt_options_t *opts,
                                    ksnap_error_t *error);

/** A source task's current positions (malloc'd, ksnap_kafka_pos_free). */
ksnap_err_t ksnap__task_source_positions(struct ksnap_task_s *task,
                                         ksnap_kafka_pos_t **posp, size_t *np,
                                         ksnap_error_t *error);

/** Commits @p pos to the job's consumer group (monitoring only). */
ksnap_err_t ksnap__task_commit_offsets(struct ksnap_task_s *task,
                                       const ksnap_kafka_pos_t *pos, size_t n,
                                       ksnap_error_t *error);

/** The SNAPSHOT action's channel positions as ACK records, named by the
 * gate (*@p chansp malloc'd, *@p np counted up as they are filled). */
ksnap_err_t ksnap__task_cut_channels(struct ksnap_task_s *task,
                                     const ksnap_action_t *act,
                                     ksnap_channel_pos_t **chansp,
                                     size_t *np, ksnap_error_t *error);

/* task_poll.c */

/** Per input channel, the offset after its last record processed in this
 * run (0: none); *@p np of them (0 before the inputs opened). */
const int64_t *ksnap__task_in_processed(const struct ksnap_task_s *task,
                                        int32_t *np);

/** One poll of the inputs; @returns records handled or -1 (error set). */
int ksnap__task_poll_input(struct ksnap_task_s *task, int timeout_ms,
                           ksnap_error_t *error);

/** TRIGGER(N) at a source task, its barrier: the snapshot of a checkpoint
 * newer than every one started here; on error it declines N (the task
 * must fail). Other tasks ignore TRIGGER. */
ksnap_err_t ksnap__task_trigger(struct ksnap_task_s *task,
                                const ksnap_trigger_t *t,
                                ksnap_error_t *error);

/** ABORT(@p id): the aligner releases what it blocked for @p id. */
void ksnap__task_abort_alignment(struct ksnap_task_s *task, int64_t id,
                                 const char *reason);

/* task_bounded.c: the end of the input (source.stop-at, a drain) */

/** After the inputs opened: a source task's partition ends (restored from
 * its state, or asked of the broker at a fresh start). */
ksnap_err_t ksnap__task_bounded_open(struct ksnap_task_s *task,
                                     ksnap_error_t *error);
void ksnap__task_bounded_close(struct ksnap_task_s *task);

/** @returns 1 if a source record at @p offset is at or past its
 * partition's end: not processed. */
int ksnap__task_bounded_skip(struct ksnap_task_s *task, const char *topic,
                             int32_t partition, int64_t offset);

/** Positions of a snapshot: none past its partition's end (the records
 * skipped there are not in the state, and an epoch replay must not read
 * them). */
void ksnap__task_bounded_clamp(struct ksnap_task_s *task,
                               ksnap_kafka_pos_t *pos, size_t n);

/** Whether the task's current state (restored, or the epoch replay's)
 * says its finish ran (the operator state ksnap.finished, registered:
 * *@p idp its id). */
ksnap_err_t ksnap__task_bounded_was_finished(struct ksnap_task_s *task,
                                             int *idp, int *finishedp,
                                             ksnap_error_t *error);

/** After a poll: once the input ended (every source partition at its
 * end, or every channel's end of input delivered), sends this task's end
 * of input downstream, once. */
ksnap_err_t ksnap__task_bounded_check(struct ksnap_task_s *task,
                                      ksnap_error_t *error);

/** A source task's TRIGGER with drain, before its snapshot: each of its
 * partitions ends at its current position (or its end, if before), in
 * the state from this snapshot on; a task whose input ended already does
 * nothing. */
ksnap_err_t ksnap__task_bounded_drain(struct ksnap_task_s *task,
                                      ksnap_error_t *error);

/** Remembers TRIGGER @p t's timestamp and options for a snapshot that a
 * task whose inputs ended takes on it. */
void ksnap__task_bounded_trigger(struct ksnap_task_s *task,
                                 const ksnap_trigger_t *t);
/** @returns 1 and TRIGGER @p id's timestamp and options if remembered. */
int ksnap__task_bounded_trigger_of(struct ksnap_task_s *task, int64_t id,
                                   int64_t *tsp, ksnap_ckpt_options_t *optsp);

#endif /* KSNAP_TASK_INPUT_H */
