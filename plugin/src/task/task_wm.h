/*
 * Event time in a task (PROTOCOL.md section 18): the watermarks of its
 * inputs and its own (input/watermark.h), the watermark records it reads
 * and sends, and when its event-time timers fire. task_wm.c owns
 * task->wm.
 *
 *  - A source task makes watermarks only with
 *    source.watermark.max-out-of-orderness set: after each record,
 *    its partition's watermark reaches the record's event time minus the
 *    bound minus 1 ms; every pipeline.auto-watermark-interval it looks
 *    for idle partitions (source.idle-timeout) and recomputes its own.
 *  - A reader takes the watermark records of its channels (ksnap.ctl
 *    "wm", in channel order like data: the aligner and the acceptance
 *    rule treat them as records) and recomputes its own after the poll
 *    that brought them.
 *  - A restored task sends its restored watermark once, risen or not.
 *  - When the task's watermark rose, its due event-time timers fire (in
 *    time order), then it goes to every partition of every exchange topic
 *    (payload: the watermark, 8 bytes big-endian, and the idle flag).
 *  - Per input, the watermark before each record is what
 *    ksnap_ctx_watermark() gives its process: it depends on the input's
 *    own order only, so an epoch replay sees the same.
 *  - The snapshot keeps every input's watermark and the task's in a
 *    reserved operator list every task of the stage gets back whole
 *    (KSNAP__WM_STATE); the restore takes them back (never behind).
 *  - The epoch replay tracks the inputs the same way (begin at each
 *    segment, end saves it for the next), but never fires or sends by
 *    watermark: the firing log replays the run's firings.
 * Threading: the processing thread.
 */
#ifndef KSNAP_TASK_WM_H
#define KSNAP_TASK_WM_H

#include <stddef.h>
#include <stdint.h>

#include "exchange/exchange.h"
#include "input/channel.h"
#include "input/watermark.h"
#include "kafka/kafka_types.h"
#include "ksnap/error.h"
#include "ksnap/operator.h"
#include "ksnap/records.h"

struct ksnap_task_s;

/** The operator list of the snapshot's watermarks (input/watermark.h). */
#define KSNAP__WM_STATE "ksnap.watermarks"
/** ksnap.ctl of a watermark record. */
#define KSNAP__WM_CTL "wm"
/** input_index of a ksnap_record_t that is a watermark record (its value
 * the payload): ksnap__task_process() gives it to the tracker. */
#define KSNAP__WM_RECORD (-2)

typedef struct ksnap__task_wm_s {
  int on;            /* the tracker runs */
  ksnap_wm_t w;      /* per input: the gate's channels or source partitions */
  char **names;      /* per input, for the snapshot */
  int64_t bound_ms;  /* a source's out-of-orderness, -1: no watermarks */
  int64_t idle_ms, interval_ms;
  int64_t now_ms;    /* the loop's clock (source idleness) */
  int64_t next_ms;   /* a source's next periodic step */
  int pending;       /* a reader took a watermark record */
  int used;          /* one was taken or restored: the snapshot keeps them */
  int64_t sent;      /* the last watermark sent downstream */
  int sent_idle, sent_any;
  int64_t rec_wm;    /* in process: the record's input's watermark */
  int in_process;
  int64_t timer_wm;  /* in on_timer: the watermark of the firing */
  int in_timer, timer_event;
} ksnap__task_wm_t;

/** The live run's tracker, once the inputs are open: its inputs, and the
 * watermarks of the restored state (if any). */
ksnap_err_t ksnap__task_wm_open(struct ksnap_task_s *task,
                                ksnap_error_t *error);
void ksnap__task_wm_close(struct ksnap_task_s *task);

/** An epoch replay's segment: a tracker of @p gate's channels (or, NULL,
 * of the source partitions @p src), from the replay's state; end() puts
 * it into the state for the next segment and frees it. */
ksnap_err_t ksnap__task_wm_segment_begin(struct ksnap_task_s *task,
                                         ksnap_gate_t *gate,
                                         const ksnap_kafka_pos_t *src,
                                         size_t nsrc, ksnap_error_t *error);
ksnap_err_t ksnap__task_wm_segment_end(struct ksnap_task_s *task,
                                       ksnap_error_t *error);

/** 1 if @p m is a watermark record (ksnap.ctl "wm"). */
int ksnap__task_wm_is_msg(const ksnap_exchange_msg_t *m);

/** Around one record of input @p chan. take(): a watermark record
 * (KSNAP__WM_RECORD) goes to the tracker and returns 1 (no operator);
 * else before() gives the operator its input's watermark, after() (the
 * record processed, @p event_ms its event time) moves the input on. */
int ksnap__task_wm_take(struct ksnap_task_s *task, int32_t chan,
                        const ksnap_record_t *rec);
void ksnap__task_wm_before(struct ksnap_task_s *task, int32_t chan);
void ksnap__task_wm_after(struct ksnap_task_s *task, int32_t chan,
                          int64_t event_ms);

/** The loop's step: a source's periodic watermark, a reader's after a
 * watermark record; when the task's rose, its due event-time timers fire
 * and it goes downstream. @returns the error that fails the task. */
ksnap_err_t ksnap__task_wm_step(struct ksnap_task_s *task,
                                ksnap_error_t *error);
/** Source partition @p topic [@p partition] reached its end (bounded):
 * its watermark goes to KSNAP_WATERMARK_MAX. */
void ksnap__task_wm_input_ended(struct ksnap_task_s *task, const char *topic,
                                int32_t partition);
/** Every input ended: the watermark goes to KSNAP_WATERMARK_MAX, every
 * event-time timer fires, and it goes downstream (before the end). */
ksnap_err_t ksnap__task_wm_finish(struct ksnap_task_s *task,
                                  ksnap_error_t *error);

/** Into the snapshot's state, at its sync phase. */
ksnap_err_t ksnap__task_wm_save(struct ksnap_task_s *task,
                                ksnap_error_t *error);

/** Around an on_timer the epoch replay fires from the firing log: the
 * run's kind of timer and watermark (ksnap_ctx_watermark()). */
void ksnap__task_wm_timer_begin(struct ksnap_task_s *task, int event,
                                int64_t wm);
void ksnap__task_wm_timer_end(struct ksnap_task_s *task);

/** What ksnap_ctx_watermark() gives now. */
int64_t ksnap__task_wm_current(const struct ksnap_task_s *task);

#endif /* KSNAP_TASK_WM_H */
