/*
 * The operator side of a task (task_ctx.h): the operator's callbacks,
 * the state a run or the epoch replay processes with, and the operator
 * context (ksnap/context.h): emit routed to the stage's outputs (or held
 * while a record of a stage that tolerates failures runs, see
 * task_record.c), keyed state of the current key, counters, task info;
 * timers are in task_timer.c. task->op is this file's (and
 * task_timer.c's). Owner: the task's processing thread (counters are
 * atomics, readable from any thread).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fired.h"
#include "ksnap/context.h"
#include "ksnap/log.h"
#include "task_int.h"
#include "base/util.h"

/* A held emit: its bytes (key, value, header names and values) are in
 * the arena, by offset, so the arena may grow. */
typedef struct held_s {
  size_t koff, klen, voff, vlen, hfirst, hcnt;
  int has_key, has_value;
  int64_t ts;       /* the timestamp at the emit */
  const char *out;  /* its output (the job's string), NULL: the default */
} held_t;

typedef struct held_hdr_s {
  size_t noff, voff, vlen;
  int has_value;
} held_hdr_t;

struct ksnap__task_held_s {
  held_t *v;
  size_t n, cap;
  held_hdr_t *h;
  size_t nh, caph;
  ksnap_buf_t arena;
};

void ksnap__task_set_current(ksnap_task_t *task, const ksnap_record_t *rec,
                             const void *key, size_t klen, int64_t ts_ms) {
  task->op.cur = rec;
  task->op.cur_key = key;
  task->op.cur_klen = klen;
  task->op.key_set = 0;
  task->op.emit_ts = ts_ms;
}

/* A callback without record or timer: its emits get the producer's clock
 * unless it sets a timestamp. */
static void hook_begin(ksnap_task_t *task) { task->op.emit_ts = 0; }

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
  if (task->op.held) {
    free(task->op.held->v);
    free(task->op.held->h);
    ksnap_buf_cleanup(&task->op.held->arena);
    free(task->op.held);
  }
  free(task->op.timers);
  free(task->op.fired);
  ksnap_operator_handle_destroy(task->op.oph);
}

ksnap_err_t ksnap__task_op_open(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap_err_t err;

  hook_begin(task);
  op->misused = 0;
  if (op->ops->open && (err = op->ops->open(&op->ctx, &op->inst, error))) {
    if (error->code != KSNAP_ERR_INCOMPATIBLE)
      return err;
    /* a restored state the operator registers with another kind: the
     * operator may return any code, the restore point does not fit */
    ksnap_error_prefix(error, "stage %s", ksnap_job_stage_name(task->stage));
    return KSNAP_ERR_INCOMPATIBLE;
  }
  op->opened = 1;
  return KSNAP_ERR_OK;
}

void ksnap__task_op_close(ksnap_task_t *task) {
  ksnap__task_op_t *op = &task->op;

  hook_begin(task);
  if (op->opened && op->ops->close)
    op->ops->close(&op->ctx, op->inst);
  op->opened = 0;
  op->inst = NULL;
}

ksnap_err_t ksnap__task_op_pre_barrier(ksnap_task_t *task, int64_t id,
                                       ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;

  hook_begin(task);
  if (op->ops->prepare_snapshot_pre_barrier &&
      op->ops->prepare_snapshot_pre_barrier(&op->ctx, op->inst, id, error))
    return ksnap_error_prefix(error, "%s: prepare_snapshot_pre_barrier(%lld)",
                              task->id, (long long)id);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_op_finish(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;

  ksnap__task_set_current(task, NULL, NULL, 0, 0); /* no record, no key */
  if (op->ops->abi_version >= 2 && op->ops->finish && /* ABI 1: none */
      op->ops->finish(&op->ctx, op->inst, error))
    return ksnap_error_prefix(error, "%s: finish", task->id);
  return KSNAP_ERR_OK;
}

void ksnap__task_op_complete(ksnap_task_t *task, int64_t id) {
  hook_begin(task);
  if (task->op.ops->notify_checkpoint_complete)
    task->op.ops->notify_checkpoint_complete(&task->op.ctx, task->op.inst, id);
}

void ksnap__task_op_aborted(ksnap_task_t *task, int64_t id) {
  hook_begin(task);
  if (task->op.ops->notify_checkpoint_aborted)
    task->op.ops->notify_checkpoint_aborted(&task->op.ctx, task->op.inst, id);
}

/* Which of the stage's inputs @p topic is (inputs are distinct topics);
 * @returns its index, or 0 if none (a stage has at least one input). */
static int32_t input_of(const ksnap_task_t *task, const char *topic) {
  size_t n = ksnap_job_stage_input_cnt(task->stage);

  for (size_t i = 0; i < n && topic; i++)
    if (!strcmp(ksnap_job_topic_name(ksnap_job_stage_input(task->stage, i)),
                topic))
      return (int32_t)i;
  return 0;
}

ksnap_err_t ksnap__task_op_process(ksnap_task_t *task,
                                   const ksnap_record_t *in,
                                   ksnap_error_t *error) {
  ksnap__task_op_t *op = &task->op;
  ksnap_record_t r = *in, *rec = &r;
  ksnap_err_t err;

  r.input_index = input_of(task, in->topic);
  r.input = ksnap_job_stage_input_name(task->stage, (size_t)r.input_index);
  atomic_fetch_add(&op->records_in, 1);
  ksnap__task_set_current(task, rec, rec->key, rec->key_len,
                          rec->timestamp_ms);
  err = op->ops->process(&op->ctx, op->inst, rec, error);
  op->event_ts = op->emit_ts;
  ksnap__task_set_current(task, NULL, NULL, 0, 0);
  return err;
}

int64_t ksnap__task_op_event_time(const ksnap_task_t *task) {
  return task->op.event_ts;
}

const char *ksnap__task_op_name(const ksnap_task_t *task) {
  return task->op.ops->name;
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

/* The timers' reserved map states in @p state: the keyed ones', those
 * without a key. */
static ksnap_err_t register_timers(ksnap_state_t *state, int *keyed,
                                   int *nokey, int *fired,
                                   ksnap_error_t *error) {
  ksnap_err_t err = ksnap_state_register(state, KSNAP__TIMER_STATE,
                                         KSNAP_STATE_MAP, 0, keyed, error);

  if (!err)
    err = ksnap_state_register(state, KSNAP__TIMER_NOKEY_STATE,
                               KSNAP_STATE_MAP, 0, nokey, error);
  return err ? err
             : ksnap_state_register(state, KSNAP__FIRED_STATE,
                                    KSNAP_STATE_MAP, 0, fired, error);
}

ksnap_err_t ksnap__task_state_scratch(ksnap_task_t *task, int kg,
                                      ksnap_state_t **statep,
                                      ksnap_error_t *error) {
  ksnap_state_conf_t sc;

  state_conf(task, &sc);
  /* as task kg of max-parallelism tasks: key group kg alone */
  sc.parallelism = sc.max_parallelism;
  sc.task_index = kg;
  return ksnap_state_new(&sc, statep, error);
}

ksnap_err_t ksnap__task_state_open(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_state_conf_t sc;
  ksnap_err_t err;

  int64_t chain;

  state_conf(task, &sc);
  ksnap_conf_get_bool(task->conf, "state.backend.incremental",
                      &sc.incremental);
  if (!ksnap_conf_get_int(task->conf,
                          "state.backend.incremental.max-chain-length",
                          &chain))
    sc.max_chain = (int)chain;
  if ((err = ksnap_state_new(&sc, &task->op.state, error)))
    return err;
  return register_timers(task->op.state, &task->op.timer_state,
                         &task->op.nokey_state, &task->op.fired_state, error);
}

void ksnap__task_state_close(ksnap_task_t *task) {
  ksnap_state_destroy(task->op.state);
  task->op.state = NULL;
}

ksnap_state_t *ksnap__task_state(ksnap_task_t *task) { return task->op.state; }

/* The replay's state: not incremental, with the timers' states of its
 * own (a timer registered during the replay is written there, as in the
 * run the replay repeats, so the record's processing does not differ; the
 * timer itself is dropped afterwards, not fired). */
ksnap_err_t ksnap__task_replay_enter(ksnap_task_t *task,
                                     ksnap__task_replay_t *live,
                                     ksnap_error_t *error) {
  ksnap_state_conf_t sc;
  ksnap_state_t *rs = NULL;
  int timer_state, nokey_state, fired_state;
  ksnap_err_t err;

  state_conf(task, &sc);
  if ((err = ksnap_state_new(&sc, &rs, error)) ||
      (err = register_timers(rs, &timer_state, &nokey_state, &fired_state,
                             error))) {
    ksnap_state_destroy(rs);
    return err;
  }
  *live = (ksnap__task_replay_t){task->op.state, task->op.timer_state,
                                 task->op.nokey_state, task->op.fired_state};
  task->op.state = rs;
  task->op.timer_state = timer_state;
  task->op.nokey_state = nokey_state;
  task->op.fired_state = fired_state;
  return KSNAP_ERR_OK;
}

void ksnap__task_replay_leave(ksnap_task_t *task,
                              const ksnap__task_replay_t *live) {
  ksnap_state_t *rs = task->op.state;

  task->op.state = live->state;
  task->op.timer_state = live->timer_state;
  task->op.nokey_state = live->nokey_state;
  task->op.fired_state = live->fired_state;
  ksnap_state_destroy(rs);
}

#define EMIT_RETRY_MS 60000

int ksnap__task_emit_retry(ksnap_error_t *error, int64_t *deadline_us) {
  if (error->code != KSNAP_ERR_KAFKA || !error->retriable)
    return 0;
  if (!*deadline_us)
    *deadline_us = ksnap__now_us() + EMIT_RETRY_MS * 1000LL;
  if (ksnap__now_us() > *deadline_us)
    return 0;
  usleep(1000);
  return 1;
}

/* @returns 1 if output @p a is @p b (NULL: the default output). */
static int same_out(const char *a, const char *b) {
  return a && b ? !strcmp(a, b) : a == b;
}

/* One record to every topic of output @p out of the stage (NULL: the
 * default output), now, with Kafka timestamp @p ts_ms (<= 0: the
 * producer's clock). */
static ksnap_err_t emit_now(ksnap_task_t *task, const char *out,
                            const void *key, size_t key_len,
                            const void *value,
                            size_t value_len, int64_t ts_ms,
                            const ksnap_kafka_header_t *hdrs,
                            size_t header_cnt, ksnap_error_t *error) {
  int64_t deadline = 0;
  ksnap_err_t err;

  while ((err = ksnap__task_exchange_produce(
              task, out, key, key_len, value, value_len, ts_ms, hdrs,
              header_cnt,
              atomic_load(&task->op.records_out), error)) &&
         ksnap__task_emit_retry(error, &deadline))
    ;
  if (err) {
    ksnap__task_exchange_give_up(task); /* the next record starts afresh */
    return err;
  }
  for (size_t i = 0; task->sink && i < ksnap_job_stage_output_cnt(task->stage);
       i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_SINK ||
        !same_out(ksnap_job_stage_output_name(task->stage, i), out))
      continue;
    while ((err = ksnap_2pc_produce(task->sink, ksnap_job_topic_name(t), -1,
                                    key, key_len, value, value_len, ts_ms,
                                    hdrs, header_cnt, error)) &&
           ksnap__task_emit_retry(error, &deadline))
      ;
    if (err)
      return err;
  }
  atomic_fetch_add(&task->op.records_out, 1);
  return KSNAP_ERR_OK;
}

/* ---- emits held while a record of a tolerant stage runs ---- */

static int grow(void **p, size_t *cap, size_t need, size_t size) {
  size_t ncap = *cap ? *cap : 16;
  void *np;

  if (need <= *cap)
    return 0;
  while (ncap < need)
    ncap *= 2;
  if (!(np = realloc(*p, ncap * size)))
    return -1;
  *p = np;
  *cap = ncap;
  return 0;
}

static int arena_add(ksnap_buf_t *a, const void *p, size_t len,
                     size_t *offp) {
  *offp = a->len;
  return len && ksnap_buf_append(a, p, len) ? -1 : 0;
}

/* Copies one emit into the held list. */
static ksnap_err_t hold(ksnap_task_t *task, const char *out,
                        const void *key, size_t key_len,
                        const void *value, size_t value_len,
                        const ksnap_header_t *headers, size_t header_cnt,
                        ksnap_error_t *error) {
  struct ksnap__task_held_s *hd = task->op.held;
  held_t *e;

  if (grow((void **)&hd->v, &hd->cap, hd->n + 1, sizeof(*hd->v)) ||
      grow((void **)&hd->h, &hd->caph, hd->nh + header_cnt, sizeof(*hd->h)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  e = &hd->v[hd->n];
  *e = (held_t){0,           key_len,          0,
                value_len,   hd->nh,           header_cnt,
                key != NULL, value != NULL,    task->op.emit_ts,
                out};
  if (arena_add(&hd->arena, key, key_len, &e->koff) ||
      arena_add(&hd->arena, value, value_len, &e->voff))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < header_cnt; i++) {
    held_hdr_t *h = &hd->h[hd->nh + i];
    h->vlen = headers[i].value_len;
    h->has_value = headers[i].value != NULL;
    if (arena_add(&hd->arena, headers[i].name, strlen(headers[i].name) + 1,
                  &h->noff) ||
        arena_add(&hd->arena, headers[i].value, h->vlen, &h->voff))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  hd->nh += header_cnt;
  hd->n++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_emits_hold(ksnap_task_t *task, ksnap_error_t *error) {
  if (!task->op.held) {
    if (!(task->op.held = calloc(1, sizeof(*task->op.held))))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    ksnap_buf_init(&task->op.held->arena);
  }
  task->op.holding = 1;
  return KSNAP_ERR_OK;
}

static void held_clear(struct ksnap__task_held_s *hd) {
  hd->n = hd->nh = 0;
  ksnap_buf_reset(&hd->arena);
}

ksnap_err_t ksnap__task_emits_release(ksnap_task_t *task, int keep,
                                      ksnap_error_t *error) {
  struct ksnap__task_held_s *hd = task->op.held;
  ksnap_err_t err = KSNAP_ERR_OK;

  task->op.holding = 0;
  for (size_t i = 0; keep && i < hd->n && !err; i++) {
    const held_t *e = &hd->v[i];
    /* an empty arena has no buffer: an empty key is still a key */
    const uint8_t *a = hd->arena.data ? hd->arena.data : (const uint8_t *)"";
    ksnap_kafka_header_t hdrs[KSNAP__EMIT_MAX_HEADERS];
    for (size_t k = 0; k < e->hcnt; k++) {
      const held_hdr_t *h = &hd->h[e->hfirst + k];
      hdrs[k] = (ksnap_kafka_header_t){(const char *)a + h->noff,
                                       h->has_value ? a + h->voff : NULL,
                                       h->vlen};
    }
    err = emit_now(task, e->out, e->has_key ? a + e->koff : NULL, e->klen,
                   e->has_value ? a + e->voff : NULL, e->vlen, e->ts, hdrs,
                   e->hcnt, error);
  }
  held_clear(hd);
  return err;
}

/* An emit the operator cannot mean (an output the stage does not have):
 * the task fails with @p error's message, also when the operator ignores
 * the code, and no restart helps (ksnap__task_op_misused()). */
static ksnap_err_t misuse(ksnap_task_t *task, ksnap_error_t *error) {
  if (!task->op.misused) {
    task->op.misused = 1;
    task->op.misuse = *error;
  }
  return error->code;
}

/* The outputs of the stage as text, for an error: "a, b" or "none". */
static void outputs_text(const ksnap_task_t *task, char *buf, size_t size) {
  size_t n = ksnap_job_stage_named_output_cnt(task->stage), off = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? ", " : "",
                            ksnap_job_stage_named_output(task->stage, i));
  if (!n)
    snprintf(buf, size, "none");
}

static ksnap_err_t emit(ksnap_task_t *task, const char *out, const void *key,
                        size_t key_len, const void *value, size_t value_len,
                        const ksnap_header_t *headers, size_t header_cnt,
                        ksnap_error_t *error) {
  ksnap_kafka_header_t hdrs[KSNAP__EMIT_MAX_HEADERS];

  if (header_cnt > KSNAP__EMIT_MAX_HEADERS)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: at most %d headers per record", task->id,
                           KSNAP__EMIT_MAX_HEADERS);
  for (size_t i = 0; i < header_cnt; i++) {
    if (!headers[i].name || !strncmp(headers[i].name, "ksnap.", 6))
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "%s: header %s is reserved", task->id,
                             headers[i].name ? headers[i].name : "(null)");
    hdrs[i] = (ksnap_kafka_header_t){headers[i].name, headers[i].value,
                                     headers[i].value_len};
  }
  if (task->op.holding)
    return hold(task, out, key, key_len, value, value_len, headers,
                header_cnt, error);
  return emit_now(task, out, key, key_len, value, value_len,
                  task->op.emit_ts, hdrs, header_cnt, error);
}

ksnap_err_t ksnap_ctx_emit(ksnap_operator_ctx_t *ctx, const void *key,
                           size_t key_len, const void *value,
                           size_t value_len, const ksnap_header_t *headers,
                           size_t header_cnt, ksnap_error_t *error) {
  return ksnap_ctx_emit_to(ctx, NULL, key, key_len, value, value_len,
                           headers, header_cnt, error);
}

ksnap_err_t ksnap_ctx_emit_to(ksnap_operator_ctx_t *ctx, const char *output,
                              const void *key, size_t key_len,
                              const void *value, size_t value_len,
                              const ksnap_header_t *headers,
                              size_t header_cnt, ksnap_error_t *error) {
  ksnap_task_t *task = ctx->task;
  const char *out = NULL;
  char names[512];

  if (output && !(out = ksnap_job_stage_output_find(task->stage, output))) {
    outputs_text(task, names, sizeof(names));
    ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                    "%s: stage %s has no output \"%s\" (its named outputs: "
                    "%s; declare it with stage.%s.output.%s)", task->id,
                    ksnap_job_stage_name(task->stage), output, names,
                    ksnap_job_stage_name(task->stage), output);
    return misuse(task, error);
  }
  if (!out && !ksnap_job_stage_has_default_output(task->stage)) {
    outputs_text(task, names, sizeof(names));
    ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                    "%s: stage %s has no default output (no "
                    "stage.%s.output and no stage reads stage:%s): emit to "
                    "one of its named outputs (%s) with ksnap_ctx_emit_to()",
                    task->id, ksnap_job_stage_name(task->stage),
                    ksnap_job_stage_name(task->stage),
                    ksnap_job_stage_name(task->stage), names);
    return misuse(task, error);
  }
  return emit(task, out, key, key_len, value, value_len, headers, header_cnt,
              error);
}

int ksnap__task_op_misused(const ksnap_task_t *task,
                           const ksnap_error_t **errorp) {
  if (errorp)
    *errorp = &task->op.misuse;
  return task->op.misused;
}

void ksnap_ctx_set_timestamp(ksnap_operator_ctx_t *ctx, int64_t ms) {
  ctx->task->op.emit_ts = ms;
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
