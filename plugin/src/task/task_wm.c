/*
 * Event time in a task (task_wm.h): the tracker of its inputs'
 * watermarks, watermark records in and out, and the event-time timers'
 * firing.
 */
#include "task_wm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ksnap/context.h"
#include "ksnap/log.h"
#include "task_int.h"

#define PAYLOAD_LEN 9 /* the watermark (8, big-endian), idle (1) */

static void free_names(ksnap__task_wm_t *wm) {
  for (int32_t i = 0; wm->names && i < wm->w.n; i++)
    free(wm->names[i]);
  free(wm->names);
  wm->names = NULL;
}

static void tracker_free(ksnap__task_wm_t *wm) {
  free_names(wm);
  ksnap_wm_cleanup(&wm->w);
  wm->on = 0;
}

/* A tracker of @p n inputs named by @p gate's channels or @p src. */
static ksnap_err_t tracker_new(ksnap_task_t *task, ksnap_gate_t *gate,
                               const ksnap_kafka_pos_t *src, int32_t n,
                               ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  char buf[300];

  if (ksnap_wm_init(&wm->w, n, wm->now_ms, error))
    return error->code;
  if (!(wm->names = calloc((size_t)n + 1, sizeof(*wm->names))))
    goto nomem;
  for (int32_t i = 0; i < n; i++) {
    if (gate) /* with the writers' parallelism: at another one a writer
               * of the same index reads other partitions (a new input) */
      snprintf(buf + strlen(ksnap_gate_chan_name(gate, i, buf, sizeof(buf))),
               sizeof(buf) - strlen(buf), " of %d",
               (int)ksnap_gate_part_c(gate, ksnap_gate_chan_c(gate, i)->part)
                   ->nwriters);
    else
      snprintf(buf, sizeof(buf), "%s[%d]", src[i].topic,
               (int)src[i].partition);
    if (!(wm->names[i] = strdup(buf)))
      goto nomem;
  }
  wm->on = 1;
  return KSNAP_ERR_OK;
nomem:
  tracker_free(wm);
  return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
}

/* The watermarks of the current state's KSNAP__WM_STATE, if any. */
static ksnap_err_t tracker_restore(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  ksnap__task_wm_t *wm = &task->wm;
  const void **e = NULL;
  size_t *len = NULL, n;
  int id;
  ksnap_err_t err;

  if ((err = ksnap_state_register(st, KSNAP__WM_STATE, KSNAP_STATE_OP_UNION,
                                  0, &id, error)))
    return err;
  if (!(n = ksnap_state_op_count(st, id)))
    return KSNAP_ERR_OK;
  e = calloc(n, sizeof(*e));
  len = calloc(n, sizeof(*len));
  if (!e || !len) {
    free(e);
    free(len);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    if (ksnap_state_op_get(st, id, i, &e[i], &len[i]))
      len[i] = 0;
  wm->used = 1;
  ksnap_wm_restore(&wm->w, (const char *const *)wm->names, e, len, n,
                   task->index, task->parallelism);
  free(e);
  free(len);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_wm_open(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  int32_t n = 0;
  ksnap_err_t err;

  memset(wm, 0, sizeof(*wm));
  wm->bound_ms = -1;
  wm->now_ms = ksnap__wallclock_ms();
  wm->sent = KSNAP_WATERMARK_MIN;
  ksnap_conf_get_duration_ms(task->conf, "source.idle-timeout",
                             &wm->idle_ms);
  if (ksnap_conf_get_duration_ms(task->conf,
                                 "pipeline.auto-watermark-interval",
                                 &wm->interval_ms))
    wm->interval_ms = 200;
  if (task->is_source) {
    if (!ksnap_conf_is_set(task->conf,
                           "source.watermark.max-out-of-orderness"))
      return KSNAP_ERR_OK; /* no watermarks */
    ksnap_conf_get_duration_ms(task->conf,
                               "source.watermark.max-out-of-orderness",
                               &wm->bound_ms);
  }
  ksnap__task_in_processed(task, &n);
  if ((err = tracker_new(task, task->is_source ? NULL : task->in.gate,
                         task->in.src_parts, n, error)) ||
      (err = tracker_restore(task, error)))
    return err;
  wm->sent = wm->w.task;
  return KSNAP_ERR_OK;
}

void ksnap__task_wm_close(ksnap_task_t *task) { tracker_free(&task->wm); }

ksnap_err_t ksnap__task_wm_segment_begin(ksnap_task_t *task,
                                         ksnap_gate_t *gate,
                                         const ksnap_kafka_pos_t *src,
                                         size_t nsrc, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  ksnap_err_t err;

  memset(wm, 0, sizeof(*wm));
  wm->bound_ms = -1;
  if (task->is_source) {
    if (!ksnap_conf_is_set(task->conf,
                           "source.watermark.max-out-of-orderness"))
      return KSNAP_ERR_OK;
    ksnap_conf_get_duration_ms(task->conf,
                               "source.watermark.max-out-of-orderness",
                               &wm->bound_ms);
  }
  if ((err = tracker_new(task, gate, src,
                         gate ? ksnap_gate_nchans(gate) : (int32_t)nsrc,
                         error)) ||
      (err = tracker_restore(task, error)))
    tracker_free(wm);
  return err;
}

ksnap_err_t ksnap__task_wm_segment_end(ksnap_task_t *task,
                                       ksnap_error_t *error) {
  ksnap_err_t err = ksnap__task_wm_save(task, error);

  tracker_free(&task->wm);
  return err;
}

int ksnap__task_wm_is_msg(const ksnap_exchange_msg_t *m) {
  return m->is_control && !strcmp(m->ctl, KSNAP__WM_CTL);
}

int ksnap__task_wm_take(ksnap_task_t *task, int32_t chan,
                        const ksnap_record_t *rec) {
  ksnap__task_wm_t *wm = &task->wm;
  const uint8_t *p = rec->value;

  if (rec->input_index != KSNAP__WM_RECORD)
    return 0;
  if (wm->on && rec->value_len == PAYLOAD_LEN) {
    ksnap_wm_input(&wm->w, chan, ksnap__get_be64(p), p[8]);
    wm->pending = 1;
    wm->used = 1;
  }
  return 1;
}

void ksnap__task_wm_before(ksnap_task_t *task, int32_t chan) {
  ksnap__task_wm_t *wm = &task->wm;

  wm->in_process = 1;
  wm->rec_wm = wm->on ? ksnap_wm_of(&wm->w, chan) : KSNAP_WATERMARK_MIN;
}

void ksnap__task_wm_after(ksnap_task_t *task, int32_t chan, int64_t event_ms) {
  ksnap__task_wm_t *wm = &task->wm;

  wm->in_process = 0;
  if (!wm->on)
    return;
  ksnap_wm_seen(&wm->w, chan, wm->now_ms);
  if (wm->bound_ms >= 0 && event_ms > KSNAP_WATERMARK_MIN + wm->bound_ms + 1)
    ksnap_wm_input(&wm->w, chan, event_ms - wm->bound_ms - 1, 0);
}

/* The task's watermark to every exchange partition, if it changed. */
static ksnap_err_t send(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  uint8_t p[PAYLOAD_LEN];
  ksnap_err_t err;

  if (wm->sent_any && wm->sent == wm->w.task &&
      wm->sent_idle == wm->w.task_idle)
    return KSNAP_ERR_OK;
  ksnap__put_be64(p, wm->w.task);
  p[8] = (uint8_t)(wm->w.task_idle != 0);
  if ((err = ksnap__task_exchange_marker(task, KSNAP__WM_CTL, p, sizeof(p),
                                         error)))
    return ksnap_error_prefix(error, "%s: sending its watermark", task->id);
  wm->sent = wm->w.task;
  wm->sent_idle = wm->w.task_idle;
  wm->sent_any = 1;
  return KSNAP_ERR_OK;
}

/* The event-time timers due at @p at fire; a sink task logs them. */
static ksnap_err_t fire(ksnap_task_t *task, int64_t at, ksnap_error_t *error) {
  int32_t n = 0;
  const int64_t *pos = ksnap__task_in_processed(task, &n);
  int failed;

  ksnap__task_wm_timer_begin(task, 1, at);
  failed = ksnap__task_fire_event_timers(task, at, task->sink ? pos : NULL, n);
  ksnap__task_wm_timer_end(task);
  if (failed)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: an on_timer callback failed", task->id);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_wm_step(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  ksnap_err_t err;
  int resend;

  if (!wm->on)
    return KSNAP_ERR_OK;
  wm->now_ms = ksnap__wallclock_ms();
  /* a restored watermark goes out once, risen or not: the readers may
   * have missed the last one before the restore point */
  resend = !wm->sent_any && wm->used;
  if (task->is_source) {
    if (wm->now_ms < wm->next_ms)
      return KSNAP_ERR_OK;
    wm->next_ms = wm->now_ms + wm->interval_ms;
    ksnap_wm_idle_check(&wm->w, wm->now_ms, wm->idle_ms);
  } else if (!wm->pending && !resend) {
    return KSNAP_ERR_OK;
  }
  wm->pending = 0;
  if (ksnap_wm_advance(&wm->w) && (err = fire(task, wm->w.task, error)))
    return err;
  return send(task, error); /* if it changed since the last one sent */
}

void ksnap__task_wm_input_ended(ksnap_task_t *task, const char *topic,
                                int32_t partition) {
  ksnap__task_wm_t *wm = &task->wm;
  char name[300];

  snprintf(name, sizeof(name), "%s[%d]", topic, (int)partition);
  for (int32_t i = 0; wm->on && i < wm->w.n; i++)
    if (!strcmp(wm->names[i], name))
      ksnap_wm_input(&wm->w, i, KSNAP_WATERMARK_MAX, 0);
}

ksnap_err_t ksnap__task_wm_finish(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  ksnap_err_t err;

  for (int32_t i = 0; wm->on && i < wm->w.n; i++)
    ksnap_wm_input(&wm->w, i, KSNAP_WATERMARK_MAX, 0);
  if (wm->on) {
    ksnap_wm_advance(&wm->w);
    ksnap_wm_floor(&wm->w, KSNAP_WATERMARK_MAX); /* also with no input */
  }
  if ((err = fire(task, KSNAP_WATERMARK_MAX, error)) || !wm->on)
    return err;
  return send(task, error);
}

ksnap_err_t ksnap__task_wm_save(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_wm_t *wm = &task->wm;
  ksnap_state_t *st = ksnap__task_state(task);
  uint8_t buf[KSNAP_WM_ENTRY_MAX];
  size_t len;
  int id;
  ksnap_err_t err;

  if (!wm->on || !(wm->used || wm->bound_ms >= 0))
    return KSNAP_ERR_OK; /* no watermark ever: nothing to keep */
  if ((err = ksnap_state_register(st, KSNAP__WM_STATE, KSNAP_STATE_OP_UNION,
                                  0, &id, error)))
    return err;
  ksnap_state_op_clear(st, id);
  for (int32_t i = 0; i < wm->w.n; i++) {
    len = ksnap_wm_encode_input(wm->names[i], ksnap_wm_of(&wm->w, i),
                                ksnap_wm_is_idle(&wm->w, i), buf);
    if ((err = ksnap_state_op_add(st, id, buf, len, error)))
      return err;
  }
  len = ksnap_wm_encode_task(&wm->w, task->index, task->parallelism, buf);
  return ksnap_state_op_add(st, id, buf, len, error);
}

void ksnap__task_wm_timer_begin(ksnap_task_t *task, int event, int64_t wm) {
  task->wm.in_timer = 1;
  task->wm.timer_event = event;
  task->wm.timer_wm = wm;
}

void ksnap__task_wm_timer_end(ksnap_task_t *task) {
  task->wm.in_timer = 0;
  task->wm.timer_event = 0;
}

int64_t ksnap__task_wm_current(const ksnap_task_t *task) {
  const ksnap__task_wm_t *wm = &task->wm;

  if (wm->in_timer)
    return wm->timer_wm;
  if (wm->in_process)
    return wm->rec_wm;
  return wm->on ? wm->w.task : KSNAP_WATERMARK_MIN;
}

int64_t ksnap_ctx_watermark(const ksnap_operator_ctx_t *ctx) {
  return ksnap__task_wm_current(ctx->task);
}

int ksnap_ctx_timer_is_event_time(const ksnap_operator_ctx_t *ctx) {
  return ctx->task->wm.in_timer && ctx->task->wm.timer_event;
}
