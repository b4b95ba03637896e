/*
 * The operator side of a task (task_ctx.h): the operator's callbacks,
 * the state a run or the epoch replay processes with, and the operator
 * context (ksnap/context.h): emit routed to the stage's outputs, keyed
 * state of the current key, counters, task info; timers are in
 * task_timer.c. task->op is this file's (and task_timer.c's). Owner: the
 * task's processing thread (counters are atomics, readable from any
 * thread).
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
  task->op.cur = rec;
  task->op.cur_key = key;
  task->op.cur_klen = klen;
  task->op.key_set = 0;
}

ksnap_err_t ksnap__task_op_init(ksnap_task_t *task, const char *job_dir,
                                ksnap_error_t *error) {
  ksnap_err_t err;

  task->op.ctx.task = task;
  if ((err = ksnap_operator_resolve(ksnap_job_stage_operator(task->stage),
                                    job_dir, &task->op.oph, error))) {
    ksnap_error_prefix(error, "stage.%s.operator",
                       ksnap_job_stage_name(task->stage));
    return err;
  }
  task->op.ops = ksnap_operator_handle_ops(task->op.oph);
  return KSNAP_ERR_OK;
}

void ksnap__task_op_cleanup(ksnap_task_t *task) {
  for (int i = 0; i < KSNAP__TASK_MAX_COUNTERS; i++)
    free(task->op.counter_names[i]);
  free(task->op.timers);
  ksnap_operator_handle_destroy(task->op.oph);
}

ksnap_err_t ksnap__task_op_open(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap_err_t err;

  if (op->ops->open && (err = op->ops->open(&op->ctx, &op->inst, error)))
    return err;
  op->opened = 1;
  return KSNAP_ERR_OK;
}

void ksnap__task_op_close(ksnap_task_t *task) {
  ksnap__task_op_t *op = &task->op;

  if (op->opened && op->ops->close)
    op->ops->close(&op->ctx, op->inst);
  op->opened = 0;
  op->inst = NULL;
}

ksnap_err_t ksnap__task_op_pre_barrier(ksnap_task_t *task, int64_t id,
                                       ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;

  if (op->ops->prepare_snapshot_pre_barrier &&
      op->ops->prepare_snapshot_pre_barrier(&op->ctx, op->inst, id, error))
    return ksnap_error_prefix(error, "%s: prepare_snapshot_pre_barrier(%lld)",
                              task->id, (long long)id);
  return KSNAP_ERR_OK;
}

void ksnap__task_op_complete(ksnap_task_t *task, int64_t id) {
  if (task->op.ops->notify_checkpoint_complete)
    task->op.ops->notify_checkpoint_complete(&task->op.ctx, task->op.inst, id);
}

void ksnap__task_op_aborted(ksnap_task_t *task, int64_t id) {
  if (task->op.ops->notify_checkpoint_aborted)
    task->op.ops->notify_checkpoint_aborted(&task->op.ctx, task->op.inst, id);
}

ksnap_err_t ksnap__task_process(ksnap_task_t *task, const ksnap_record_t *rec,
                                ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap_err_t err;

  atomic_fetch_add(&op->records_in, 1);
  ksnap__task_set_current(task, rec, rec->key, rec->key_len);
  err = op->ops->process(&op->ctx, op->inst, rec, error);
  ksnap__task_set_current(task, NULL, NULL, 0);
  if (err)
    ksnap_error_prefix(error, "%s: operator %s failed on %s[%d]@%lld",
                       task->id, op->ops->name, rec->topic,
                       (int)rec->partition, (long long)rec->offset);
  return err;
}

static void state_conf(const ksnap_task_t *task, ksnap_state_conf_t *sc) {
  int64_t buffer;

  ksnap_state_conf_init(sc);
  sc->max_parallelism = task->max_par;
  sc->parallelism = task->parallelism;
  sc->task_index = task->index;
  if (!ksnap_conf_get_size(task->conf, "state.backend.write-buffer-size",
                           &buffer))
    sc->buffer_size = (size_t)buffer;
}

ksnap_err_t ksnap__task_state_open(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_state_conf_t sc;
  ksnap_err_t err;

  state_conf(task, &sc);
  ksnap_conf_get_bool(task->conf, "state.backend.incremental",
                      &sc.incremental);
  if ((err = ksnap_state_new(&sc, &task->op.state, error)))
    return err;
  return ksnap_state_register(task->op.state, KSNAP__TIMER_STATE,
                              KSNAP_STATE_MAP, 0, &task->op.timer_state,
                              error);
}

void ksnap__task_state_close(ksnap_task_t *task) {
  ksnap_state_destroy(task->op.state);
  task->op.state = NULL;
}

ksnap_state_t *ksnap__task_state(ksnap_task_t *task) { return task->op.state; }

/* The replay's state: not incremental, no timers' map state registered
 * (timers registered during the replay are dropped, not fired). */
ksnap_err_t ksnap__task_replay_enter(ksnap_task_t *task, ksnap_state_t **livep,
                                     ksnap_error_t *error) {
  ksnap_state_conf_t sc;
  ksnap_state_t *rs = NULL;
  ksnap_err_t err;

  state_conf(task, &sc);
  if ((err = ksnap_state_new(&sc, &rs, error)))
    return err;
  *livep = task->op.state;
  task->op.state = rs;
  return KSNAP_ERR_OK;
}

void ksnap__task_replay_leave(ksnap_task_t *task, ksnap_state_t *live) {
  ksnap_state_t *rs = task->op.state;

  task->op.state = live;
  ksnap_state_destroy(rs);
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
  while ((err = ksnap__task_exchange_produce(
              task, key, key_len, value, value_len, hdrs, header_cnt,
              atomic_load(&task->op.records_out), error)) &&
         retry(error, &deadline))
    ;
  if (err)
    return err;
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
  atomic_fetch_add(&task->op.records_out, 1);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_ctx_state(ksnap_operator_ctx_t *ctx, ksnap_state_t **statep,
                            ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  ksnap__task_op_t *op = &task->op;
  ksnap_err_t err;

  *statep = op->state;
  if (!op->key_set && op->cur_key) {
    if ((err = ksnap_state_set_key(op->state, op->cur_key, op->cur_klen,
                                   error)))
      return ksnap_error_prefix(error, "%s", task->id);
    op->key_set = 1;
  }
  return KSNAP_ERR_OK;
}

static int counter_index(ksnap_task_t *task, const char *name, int create) {
  for (int i = 0; i < KSNAP__TASK_MAX_COUNTERS; i++) {
    if (task->op.counter_names[i] && !strcmp(task->op.counter_names[i], name))
      return i;
    if (!task->op.counter_names[i]) {
      if (!create || !(task->op.counter_names[i] = strdup(name)))
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
    atomic_fetch_add(&ctx->task->op.counters[i], delta);
}

int64_t ksnap_ctx_counter_get(ksnap_operator_ctx_t *ctx, const char *name) {
  int i;

  if (!strcmp(name, "records_in"))
    return atomic_load(&ctx->task->op.records_in);
  if (!strcmp(name, "records_out"))
    return atomic_load(&ctx->task->op.records_out);
  i = counter_index(ctx->task, name, 0);
  return i < 0 ? 0 : atomic_load(&ctx->task->op.counters[i]);
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

int64_t ksnap_task_records_in(const ksnap_task_t *task) {
  return atomic_load(&task->op.records_in);
}
int64_t ksnap_task_records_out(const ksnap_task_t *task) {
  return atomic_load(&task->op.records_out);
}
