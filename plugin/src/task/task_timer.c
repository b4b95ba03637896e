/*
 * Timers of a task's operator (ksnap/context.h): a list on the
 * processing thread; processing-time ones fired by the task's loop at
 * their time, event-time ones by the task's watermark (task_wm.c), in
 * time order. Every timer is also
 * an entry of a reserved keyed map state, user key its time (8 bytes,
 * big-endian; an event-time one's followed by 'e'), so it is in every
 * snapshot and restored with it, by key
 * group like any keyed state (ksnap__task_restore_timer() as the entries
 * are read):
 *  - a keyed timer (registered while a keyed record or timer is
 *    processed) in KSNAP__TIMER_STATE under its key;
 *  - a timer without a key (registered in open, for a record without a
 *    key, or in such a timer) in KSNAP__TIMER_NOKEY_STATE under a key of
 *    the task's own, one whose key group the task owns (nokey_key()). At
 *    the same parallelism each task gets its own timers back; on rescale
 *    they go with their key group, so each fires in exactly one task.
 * A timer fired is removed from the state in the epoch of its output.
 * A sink task also writes each firing into its firing log (fired.h,
 * KSNAP__FIRED_STATE under the same key as its timers without a key),
 * tagged with the last cut, before on_timer runs: checkpoint N holds
 * the firings since the last completed checkpoint, and its epoch replay
 * fires them again at the same points of the input
 * (ksnap__task_fire_recorded(), replay_segment.c). COMPLETE(N) prunes
 * the entries tagged below N.
 * Owns task->op's timer fields with task_ctx.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fired.h"
#include "ksnap/context.h"
#include "ksnap/log.h"
#include "task_int.h"

/* A timer's user key in the reserved map state: the time, big-endian,
 * and for an event-time timer 'e'. @returns its length. */
static size_t time_key(const ksnap__timer_t *t, uint8_t out[9]) {
  int64_t time_ms = t->time_ms;

  for (int i = 7; i >= 0; i--, time_ms >>= 8)
    out[i] = (uint8_t)(time_ms & 0xff);
  out[8] = 'e';
  return t->event ? 9 : 8;
}

/* The state key of this task's timers without a key: "ksnap.nokey.N"
 * for the smallest N whose key group is this task's (found once). */
static void nokey_key(ksnap_task_t *task, const void **keyp, size_t *lenp) {
  ksnap__task_op_t *op = &task->op;
  int lo, hi, g;

  if (!op->nokey_klen) {
    ksnap_state_key_group_range(task->max_par, task->parallelism,
                                task->index, &lo, &hi);
    for (int n = 0;; n++) {
      int len = snprintf(op->nokey_key, sizeof(op->nokey_key),
                         "ksnap.nokey.%d", n);
      g = ksnap_state_key_group(op->nokey_key, (size_t)len, task->max_par);
      if ((g >= lo && g < hi) || n == 1 << 20) {
        op->nokey_klen = (size_t)len;
        break;
      }
    }
  }
  *keyp = op->nokey_key;
  *lenp = op->nokey_klen;
}

int ksnap__task_timers_key_group(ksnap_task_t *task) {
  const void *k;
  size_t klen;

  nokey_key(task, &k, &klen);
  return ksnap_state_key_group(k, klen, task->max_par);
}

/* Puts (@p put) or removes timer @p t's entry in its reserved state. The
 * state's key stays set for the operator when it is the current key (a
 * keyed timer of the record or timer being run), else it is the
 * operator's again at its next access. */
static ksnap_err_t timer_entry(ksnap_task_t *task, const ksnap__timer_t *t,
                               int put, ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  int id = t->nokey ? op->nokey_state : op->timer_state;
  uint8_t uk[9];
  size_t uklen = time_key(t, uk);
  ksnap_err_t err;

  op->key_set = 0;
  if ((err = ksnap_state_set_key(op->state, t->key, t->klen, error)))
    return ksnap_error_prefix(error, "%s", task->id);
  op->key_set = !t->nokey && t->key == op->cur_key;
  if (put)
    return ksnap_state_map_put(op->state, id, uk, uklen, "", 0, error);
  ksnap_state_map_remove(op->state, id, uk, uklen);
  return KSNAP_ERR_OK;
}

/* 1 if timer @p t has its entry in the state (is registered). */
static int timer_exists(ksnap_task_t *task, const ksnap__timer_t *t) {
  ksnap__task_op_t *op = &task->op;
  int id = t->nokey ? op->nokey_state : op->timer_state;
  uint8_t uk[9];
  size_t uklen = time_key(t, uk), vlen;
  const void *v;
  ksnap_error_t error;

  op->key_set = 0;
  if (ksnap_state_set_key(op->state, t->key, t->klen, &error))
    return 0;
  op->key_set = !t->nokey && t->key == op->cur_key;
  return !ksnap_state_map_get(op->state, id, uk, uklen, &v, &vlen);
}

static ksnap_err_t add_timer(ksnap_task_t *task, int64_t time_ms,
                             const void *key, size_t klen, int nokey,
                             int event, ksnap_error_t *error) {
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
  t->nokey = nokey;
  t->event = event;
  t->klen = key ? klen : 0;
  t->key = NULL;
  if (key && !(t->key = malloc(t->klen ? t->klen : 1)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (t->key)
    memcpy(t->key, key, t->klen);
  op->ntimers++;
  return KSNAP_ERR_OK;
}

static int same_timer(const ksnap__timer_t *a, const ksnap__timer_t *b) {
  return a->time_ms == b->time_ms && a->nokey == b->nokey &&
         a->event == b->event && a->key &&
         b->key && a->klen == b->klen && !memcmp(a->key, b->key, a->klen);
}

int ksnap__task_restore_timer(ksnap_task_t *task, int64_t time_ms,
                              const void *key, size_t klen, int nokey,
                              int event, int tombstone) {
  ksnap__task_op_t *op = &task->op;
  ksnap__timer_t want = {time_ms, (void *)key, klen, nokey, event};

  for (size_t i = 0; i < op->ntimers; i++)
    if (same_timer(&op->timers[i], &want)) {
      free(op->timers[i].key);
      op->timers[i] = op->timers[--op->ntimers];
      break;
    }
  if (!tombstone && add_timer(task, time_ms, key, klen, nokey, event, NULL))
    return 1;
  return 0;
}

static ksnap_err_t register_timer(ksnap_operator_ctx_t *ctx, int64_t time_ms,
                                  int event, ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap__timer_t t = {time_ms, (void *)task->op.cur_key, task->op.cur_klen,
                      !task->op.cur_key, event};
  const void *k;
  ksnap_err_t err;

  if (t.nokey) {
    nokey_key(task, &k, &t.klen);
    t.key = (void *)k;
  }
  if (event && timer_exists(task, &t))
    return KSNAP_ERR_OK; /* one per key and time */
  if ((err = timer_entry(task, &t, 1, error)))
    return err;
  return add_timer(task, t.time_ms, t.key, t.klen, t.nokey, event, error);
}

ksnap_err_t ksnap_ctx_timer_register(ksnap_operator_ctx_t *ctx,
                                     int64_t time_ms, ksnap_error_t *error) {
  return register_timer(ctx, time_ms, 0, error);
}

ksnap_err_t ksnap_ctx_event_timer_register(ksnap_operator_ctx_t *ctx,
                                           int64_t time_ms,
                                           ksnap_error_t *error) {
  return register_timer(ctx, time_ms, 1, error);
}

/* Indexes log entry (@p tag, @p seq) for prune(). */
static ksnap_err_t index_fired(ksnap__task_op_t *op, int64_t tag, int64_t seq,
                               ksnap_error_t *error) {
  if (op->nfired == op->capfired) {
    size_t cap = op->capfired ? op->capfired * 2 : 16;
    void *p = realloc(op->fired, cap * sizeof(*op->fired));
    if (!p)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    op->fired = p;
    op->capfired = cap;
  }
  op->fired[op->nfired][0] = tag;
  op->fired[op->nfired++][1] = seq;
  return KSNAP_ERR_OK;
}

/* Writes timer @p t's firing at @p pos into the firing log. */
static ksnap_err_t log_firing(ksnap_task_t *task, const ksnap__timer_t *t,
                              const int64_t *pos, int32_t npos,
                              ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap__fired_t f = {op->fired_tag, op->fired_seq, t->time_ms, t->nokey,
                      t->key, t->klen, (int64_t *)pos, npos, t->event,
                      ksnap__task_wm_current(task)};
  const void *k;
  size_t klen;
  uint8_t uk[16], *val = NULL;
  size_t vlen = 0;
  ksnap_err_t err;

  nokey_key(task, &k, &klen);
  ksnap__fired_user_key(f.tag, f.seq, uk);
  op->key_set = 0;
  if ((err = ksnap__fired_encode(&f, &val, &vlen, error)) ||
      (err = ksnap_state_set_key(op->state, k, klen, error)) ||
      (err = ksnap_state_map_put(op->state, op->fired_state, uk, sizeof(uk),
                                 val, vlen, error)) ||
      (err = index_fired(op, f.tag, f.seq, error)))
    ksnap_error_prefix(error, "%s: the timers' firing log", task->id);
  else
    op->fired_seq++;
  free(val);
  return err;
}

/* Fires timer @p t (taken out of the list: its key is freed here).
 * @returns 1 if the task must fail. */
static int fire_one(ksnap_task_t *task, ksnap__timer_t *t, const int64_t *pos,
                    int32_t npos) {
  ksnap__task_op_t *op = &task->op;
  ksnap_error_t error;
  int failed = 0;

  if (pos && log_firing(task, t, pos, npos, &error)) {
    KSNAP_ERR("task", "%s", error.msg);
    failed = 1;
  }
  ksnap__task_set_current(task, NULL, t->nokey ? NULL : t->key,
                          t->nokey ? 0 : t->klen, t->time_ms);
  if (timer_entry(task, t, 0, &error)) {
    KSNAP_ERR("task", "%s: timers: %s", task->id, error.msg);
    failed = 1;
  }
  if (op->ops->on_timer &&
      op->ops->on_timer(&op->ctx, op->inst, t->nokey ? NULL : t->key,
                        t->nokey ? 0 : t->klen, t->time_ms, &error)) {
    KSNAP_ERR("task", "%s: on_timer failed: %s", task->id, error.msg);
    failed = 1;
  }
  if (ksnap__task_op_misused(task, NULL))
    failed = 1; /* an emit to an output the stage lacks, even ignored */
  ksnap__task_set_current(task, NULL, NULL, 0, 0);
  free(t->key);
  return failed;
}

int ksnap__task_fire_timers(ksnap_task_t *task, int64_t now_ms,
                            const int64_t *pos, int32_t npos) {
  ksnap__task_op_t *op = &task->op;
  int failed = 0;

  for (size_t i = 0; i < op->ntimers;) {
    ksnap__timer_t t = op->timers[i];
    if (t.event || t.time_ms > now_ms) {
      i++;
      continue;
    }
    op->timers[i] = op->timers[--op->ntimers];
    failed |= fire_one(task, &t, pos, npos);
  }
  return failed;
}

static int by_time(const void *a, const void *b) {
  const ksnap__timer_t *x = a, *y = b;

  return x->time_ms < y->time_ms ? -1 : x->time_ms > y->time_ms;
}

#define EVENT_ROUNDS 8 /* timers registered at or below the watermark by
                        * on_timer fire in the same step, this many times */

int ksnap__task_fire_event_timers(ksnap_task_t *task, int64_t wm,
                                  const int64_t *pos, int32_t npos) {
  ksnap__task_op_t *op = &task->op;
  int failed = 0;

  for (int round = 0; round < EVENT_ROUNDS; round++) {
    ksnap__timer_t *due;
    size_t n = 0;
    for (size_t i = 0; i < op->ntimers; i++)
      n += op->timers[i].event && op->timers[i].time_ms <= wm;
    if (!n)
      break;
    if (!(due = malloc(n * sizeof(*due)))) {
      KSNAP_ERR("task", "%s: event-time timers: out of memory", task->id);
      return 1;
    }
    n = 0;
    for (size_t i = 0; i < op->ntimers;)
      if (op->timers[i].event && op->timers[i].time_ms <= wm) {
        due[n++] = op->timers[i];
        op->timers[i] = op->timers[--op->ntimers];
      } else {
        i++;
      }
    qsort(due, n, sizeof(*due), by_time);
    for (size_t i = 0; i < n; i++)
      failed |= fire_one(task, &due[i], pos, npos);
    free(due);
  }
  return failed;
}

ksnap_err_t ksnap__task_fire_recorded(ksnap_task_t *task,
                                      const ksnap__fired_t *f,
                                      ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap__timer_t t = {f->time_ms, f->key, f->klen, f->nokey, f->event};
  const ksnap_error_t *misuse;
  ksnap_err_t err;

  /* the replay's own copy of the timer (registered by a replayed record
   * at the replay's clock) does not fire: only the run's firings do */
  ksnap__task_restore_timer(task, t.time_ms, t.key, t.klen, t.nokey,
                            t.event, 1);
  ksnap__task_wm_timer_begin(task, f->event, f->wm);
  ksnap__task_set_current(task, NULL, t.nokey ? NULL : t.key,
                          t.nokey ? 0 : t.klen, t.time_ms);
  err = timer_entry(task, &t, 0, error);
  if (!err && op->ops->on_timer &&
      (err = op->ops->on_timer(&op->ctx, op->inst, t.nokey ? NULL : t.key,
                               t.nokey ? 0 : t.klen, t.time_ms, error)))
    ksnap_error_prefix(error, "%s: on_timer failed in the epoch replay "
                       "(timer of time %lld)", task->id,
                       (long long)t.time_ms);
  if (!err && ksnap__task_op_misused(task, &misuse))
    err = ksnap_error_set(error, misuse->code, "%s", misuse->msg);
  ksnap__task_set_current(task, NULL, NULL, 0, 0);
  ksnap__task_wm_timer_end(task);
  return err;
}

void ksnap__task_fired_cut(ksnap_task_t *task, int64_t id) {
  if (id > task->op.fired_tag)
    task->op.fired_tag = id;
}

ksnap_err_t ksnap__task_fired_prune(ksnap_task_t *task, int64_t id,
                                    ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  const void *k;
  size_t klen, keep = 0;
  ksnap_err_t err;

  if (!op->nfired || !op->state)
    return KSNAP_ERR_OK;
  nokey_key(task, &k, &klen);
  op->key_set = 0;
  if ((err = ksnap_state_set_key(op->state, k, klen, error)))
    return ksnap_error_prefix(error, "%s: the timers' firing log", task->id);
  for (size_t i = 0; i < op->nfired; i++) {
    uint8_t uk[16];
    if (op->fired[i][0] >= id) {
      op->fired[keep][0] = op->fired[i][0];
      op->fired[keep++][1] = op->fired[i][1];
      continue;
    }
    ksnap__fired_user_key(op->fired[i][0], op->fired[i][1], uk);
    ksnap_state_map_remove(op->state, op->fired_state, uk, sizeof(uk));
  }
  op->nfired = keep;
  return KSNAP_ERR_OK;
}

void ksnap__task_restore_fired(ksnap_task_t *task, const uint8_t *uk,
                               size_t uklen, int tombstone) {
  ksnap__task_op_t *op = &task->op;
  int64_t tag, seq;

  if (uklen != 16)
    return;
  ksnap__fired_parse_key(uk, &tag, &seq);
  for (size_t i = 0; i < op->nfired; i++)
    if (op->fired[i][0] == tag && op->fired[i][1] == seq) {
      op->fired[i][0] = op->fired[op->nfired - 1][0];
      op->fired[i][1] = op->fired[--op->nfired][1];
      break;
    }
  if (!tombstone)
    index_fired(op, tag, seq, NULL);
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
  task->op.nfired = 0;
  task->op.fired_tag = 0;
  task->op.fired_seq = 0;
}
