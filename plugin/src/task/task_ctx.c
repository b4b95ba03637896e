/*
 * The operator context (ksnap/context.h): emit routed to the stage's
 * outputs, keyed state of the current key, processing-time timers,
 * counters, task info. Owner: the task's processing thread (counters are
 * atomics, readable from any thread).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksnap/context.h"
#include "ksnap/log.h"
#include "task_int.h"
#include "base/util.h"

void ksnap__task_set_current(ksnap_task_t *task, const ksnap_record_t *rec,
                             const void *key, size_t klen) {
  task->cur = rec;
  task->cur_key = key;
  task->cur_klen = klen;
  task->key_set = 0;
}

/* One record through the operator: what the live loop (task_input.c) and
 * the epoch replay (replay_segment.c) share. */
ksnap_err_t ksnap__task_process(ksnap_task_t *task, const ksnap_record_t *rec,
                                ksnap_error_t *error) {
  ksnap_err_t err;

  atomic_fetch_add(&task->records_in, 1);
  ksnap__task_set_current(task, rec, rec->key, rec->key_len);
  err = task->ops->process(&task->ctx, task->inst, rec, error);
  ksnap__task_set_current(task, NULL, NULL, 0);
  if (err)
    ksnap_error_prefix(error, "%s: operator %s failed on %s[%d]@%lld",
                       task->id, task->ops->name, rec->topic,
                       (int)rec->partition, (long long)rec->offset);
  return err;
}

int32_t ksnap__exchange_partition(const void *key, size_t klen, int32_t n,
                                  int32_t p, int max_par, int64_t seq) {
  int32_t t, nt, kg;

  if (!key)
    return (int32_t)(seq % n);
  kg = ksnap_state_key_group(key, klen, max_par);
  t = ksnap_state_task_of_key_group(max_par, p, kg);
  nt = (n - t + p - 1) / p;
  if (nt < 1)
    return t % n;
  return t + p * (kg % nt);
}

static int32_t ex_partition(ksnap_task_t *task, const void *key,
                            size_t klen) {
  return ksnap__exchange_partition(key, klen, task->ex_parts,
                                   task->ex_reader_p, task->max_par,
                                   atomic_load(&task->records_out));
}

#define EMIT_RETRY_MS 60000

/* Backpressure: a full local producer queue (retriable) is retried, one
 * output at a time (an output that took the record is not written again),
 * until the queue drains or EMIT_RETRY_MS passes. */
static int retry(ksnap_error_t *error, int64_t *deadline_us) {
  if (error->code != KSNAP_ERR_KAFKA || !error->retriable)
    return 0;
  if (!*deadline_us)
    *deadline_us = ksnap__now_us() + EMIT_RETRY_MS * 1000LL;
  if (ksnap__now_us() > *deadline_us)
    return 0;
  usleep(1000);
  return 1;
}

ksnap_err_t ksnap_ctx_emit(ksnap_operator_ctx_t *ctx, const void *key,
                           size_t key_len, const void *value,
                           size_t value_len, const ksnap_header_t *headers,
                           size_t header_cnt, ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap_kafka_header_t hdrs[16];
  int64_t deadline = 0;
  int32_t part;
  ksnap_err_t err;

  if (header_cnt > 16)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: at most 16 headers per record", task->id);
  for (size_t i = 0; i < header_cnt; i++) {
    if (!strncmp(headers[i].name, "ksnap.", 6))
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "%s: header %s is reserved", task->id,
                             headers[i].name);
    hdrs[i] = (ksnap_kafka_header_t){headers[i].name, headers[i].value,
                                     headers[i].value_len};
  }
  if (task->writer) {
    part = ex_partition(task, key, key_len);
    while ((err = ksnap_exchange_produce(task->writer, task->ex_topic, part,
                                         key, key_len, value, value_len, hdrs,
                                         header_cnt, error)) &&
           retry(error, &deadline))
      ;
    if (err)
      return err;
  }
  for (size_t i = 0; task->sink && i < ksnap_job_stage_output_cnt(task->stage);
       i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_SINK)
      continue;
    while ((err = ksnap_2pc_produce(task->sink, ksnap_job_topic_name(t), -1,
                                    key, key_len, value, value_len, hdrs,
                                    header_cnt, error)) &&
           retry(error, &deadline))
      ;
    if (err)
      return err;
  }
  atomic_fetch_add(&task->records_out, 1);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_ctx_state(ksnap_operator_ctx_t *ctx, ksnap_state_t **statep,
                            ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap_err_t err;

  *statep = task->state;
  if (!task->key_set && task->cur_key) {
    if ((err = ksnap_state_set_key(task->state, task->cur_key, task->cur_klen,
                                   error)))
      return ksnap_error_prefix(error, "%s", task->id);
    task->key_set = 1;
  }
  return KSNAP_ERR_OK;
}

/* A timer's user key in the reserved map state: the time, big-endian. */
static void time_key(int64_t time_ms, uint8_t out[8]) {
  for (int i = 7; i >= 0; i--, time_ms >>= 8)
    out[i] = (uint8_t)(time_ms & 0xff);
}

ksnap_err_t ksnap__task_add_timer(ksnap_task_t *task, int64_t time_ms,
                                  const void *key, size_t klen,
                                  ksnap_error_t *error) {
  ksnap__timer_t *t;

  if (task->ntimers == task->captimers) {
    size_t cap = task->captimers ? task->captimers * 2 : 16;
    void *p = realloc(task->timers, cap * sizeof(*task->timers));
    if (!p)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    task->timers = p;
    task->captimers = cap;
  }
  t = &task->timers[task->ntimers];
  t->time_ms = time_ms;
  t->klen = key ? klen : 0;
  t->key = NULL;
  if (key && !(t->key = malloc(t->klen ? t->klen : 1)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (t->key)
    memcpy(t->key, key, t->klen);
  task->ntimers++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_ctx_timer_register(ksnap_operator_ctx_t *ctx,
                                     int64_t time_ms, ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap_state_t *state;
  uint8_t uk[8];
  ksnap_err_t err;

  if (task->cur_key) { /* keyed: kept in the snapshot */
    time_key(time_ms, uk);
    if ((err = ksnap_ctx_state(ctx, &state, error)) ||
        (err = ksnap_state_map_put(state, task->timer_state, uk, sizeof(uk),
                                   "", 0, error)))
      return err;
  }
  return ksnap__task_add_timer(task, time_ms, task->cur_key, task->cur_klen,
                               error);
}

void ksnap__task_fire_timers(ksnap_task_t *task, int64_t now_ms) {
  ksnap_error_t error;

  for (size_t i = 0; i < task->ntimers;) {
    ksnap__timer_t t = task->timers[i];
    if (t.time_ms > now_ms) {
      i++;
      continue;
    }
    task->timers[i] = task->timers[--task->ntimers];
    ksnap__task_set_current(task, NULL, t.key, t.klen);
    if (t.key) {
      uint8_t uk[8];
      ksnap_state_t *state;
      time_key(t.time_ms, uk);
      if (!ksnap_ctx_state(&task->ctx, &state, &error))
        ksnap_state_map_remove(state, task->timer_state, uk, sizeof(uk));
    }
    if (task->ops->on_timer &&
        task->ops->on_timer(&task->ctx, task->inst, t.key, t.klen, t.time_ms,
                            &error)) {
      KSNAP_ERR("task", "%s: on_timer failed: %s", task->id, error.msg);
      atomic_store(&task->failed, 1);
    }
    ksnap__task_set_current(task, NULL, NULL, 0);
    free(t.key);
  }
}

void ksnap__task_free_timers(ksnap_task_t *task) {
  for (size_t i = 0; i < task->ntimers; i++)
    free(task->timers[i].key);
  task->ntimers = 0;
}

static int counter_index(ksnap_task_t *task, const char *name, int create) {
  for (int i = 0; i < KSNAP__TASK_MAX_COUNTERS; i++) {
    if (task->counter_names[i] && !strcmp(task->counter_names[i], name))
      return i;
    if (!task->counter_names[i]) {
      if (!create || !(task->counter_names[i] = strdup(name)))
        return -1;
      return i;
    }
  }
  return -1;
}

void ksnap_ctx_counter_add(ksnap_operator_ctx_t *ctx, const char *name,
                           int64_t delta) {
  int i = counter_index(ctx->task, name, 1);

  if (i >= 0)
    atomic_fetch_add(&ctx->task->counters[i], delta);
}

int64_t ksnap_ctx_counter_get(ksnap_operator_ctx_t *ctx, const char *name) {
  int i;

  if (!strcmp(name, "records_in"))
    return atomic_load(&ctx->task->records_in);
  if (!strcmp(name, "records_out"))
    return atomic_load(&ctx->task->records_out);
  i = counter_index(ctx->task, name, 0);
  return i < 0 ? 0 : atomic_load(&ctx->task->counters[i]);
}

const char *ksnap_ctx_stage_name(const ksnap_operator_ctx_t *ctx) {
  return ksnap_job_stage_name(ctx->task->stage);
}
int32_t ksnap_ctx_task_index(const ksnap_operator_ctx_t *ctx) {
  return ctx->task->index;
}
int32_t ksnap_ctx_parallelism(const ksnap_operator_ctx_t *ctx) {
  return ctx->task->parallelism;
}
int64_t ksnap_ctx_generation(const ksnap_operator_ctx_t *ctx) {
  return atomic_load(&ctx->task->gen);
}
const ksnap_conf_t *ksnap_ctx_conf(const ksnap_operator_ctx_t *ctx) {
  return ctx->task->conf;
}
