/*
 * Processing-time timers of a task's operator (ksnap/context.h): a list
 * on the processing thread, fired by the task's loop. A keyed timer (one
 * registered while a record or keyed timer is processed) is also an entry
 * of the reserved map state KSNAP__TIMER_STATE, so it is in every
 * snapshot and restored with the state (ksnap__task_restore_timer()).
 * Owns task->op's timer fields with task_ctx.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/log.h"
#include "task_int.h"

/* A timer's user key in the reserved map state: the time, big-endian. */
static void time_key(int64_t time_ms, uint8_t out[8]) {
  for (int i = 7; i >= 0; i--, time_ms >>= 8)
    out[i] = (uint8_t)(time_ms & 0xff);
}

static ksnap_err_t add_timer(ksnap_task_t *task, int64_t time_ms,
                             const void *key, size_t klen,
                             ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap__timer_t *t;

  if (op->ntimers == op->captimers) {
    size_t cap = op->captimers ? op->captimers * 2 : 16;
    void *p = realloc(op->timers, cap * sizeof(*op->timers));
    if (!p)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    op->timers = p;
    op->captimers = cap;
  }
  t = &op->timers[op->ntimers];
  t->time_ms = time_ms;
  t->klen = key ? klen : 0;
  t->key = NULL;
  if (key && !(t->key = malloc(t->klen ? t->klen : 1)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (t->key)
    memcpy(t->key, key, t->klen);
  op->ntimers++;
  return KSNAP_ERR_OK;
}

int ksnap__task_restore_timer(ksnap_task_t *task, int64_t time_ms,
                              const void *key, size_t klen, int tombstone) {
  ksnap__task_op_t *op = &task->op;

  for (size_t i = 0; i < op->ntimers; i++)
    if (op->timers[i].key && op->timers[i].time_ms == time_ms &&
        op->timers[i].klen == klen && !memcmp(op->timers[i].key, key, klen)) {
      free(op->timers[i].key);
      op->timers[i] = op->timers[--op->ntimers];
      break;
    }
  if (!tombstone && add_timer(task, time_ms, key, klen, NULL))
    return 1;
  return 0;
}

ksnap_err_t ksnap_ctx_timer_register(ksnap_operator_ctx_t *ctx,
                                     int64_t time_ms, ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap_state_t *state;
  uint8_t uk[8];
  ksnap_err_t err;

  if (task->op.cur_key) { /* keyed: kept in the snapshot */
    time_key(time_ms, uk);
    if ((err = ksnap_ctx_state(ctx, &state, error)) ||
        (err = ksnap_state_map_put(state, task->op.timer_state, uk,
                                   sizeof(uk), "", 0, error)))
      return err;
  }
  return add_timer(task, time_ms, task->op.cur_key, task->op.cur_klen, error);
}

int ksnap__task_fire_timers(ksnap_task_t *task, int64_t now_ms) {
  ksnap__task_op_t *op = &task->op;
  ksnap_error_t error;
  int failed = 0;

  for (size_t i = 0; i < op->ntimers;) {
    ksnap__timer_t t = op->timers[i];
    if (t.time_ms > now_ms) {
      i++;
      continue;
    }
    op->timers[i] = op->timers[--op->ntimers];
    ksnap__task_set_current(task, NULL, t.key, t.klen, t.time_ms);
    if (t.key) {
      uint8_t uk[8];
      ksnap_state_t *state;
      time_key(t.time_ms, uk);
      if (!ksnap_ctx_state(&op->ctx, &state, &error))
        ksnap_state_map_remove(state, op->timer_state, uk, sizeof(uk));
    }
    if (op->ops->on_timer &&
        op->ops->on_timer(&op->ctx, op->inst, t.key, t.klen, t.time_ms,
                          &error)) {
      KSNAP_ERR("task", "%s: on_timer failed: %s", task->id, error.msg);
      failed = 1;
    }
    ksnap__task_set_current(task, NULL, NULL, 0, 0);
    free(t.key);
  }
  return failed;
}

size_t ksnap__task_timers_mark(const ksnap_task_t *task) {
  return task->op.ntimers;
}

void ksnap__task_timers_drop(ksnap_task_t *task, size_t mark) {
  ksnap__task_op_t *op = &task->op;

  while (op->ntimers > mark)
    free(op->timers[--op->ntimers].key);
}

void ksnap__task_free_timers(ksnap_task_t *task) {
  for (size_t i = 0; i < task->op.ntimers; i++)
    free(task->op.timers[i].key);
  task->op.ntimers = 0;
}
