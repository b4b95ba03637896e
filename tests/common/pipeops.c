#include "pipeops.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

static int line_word(size_t i, int k) {
  static const int mul[] = {1, 7, 3};
  return (int)((i * (size_t)mul[k] + (size_t)k) % PT_NWORDS);
}

void pt_line(size_t i, char *buf, size_t size) {
  snprintf(buf, size, "w%d w%d w%d", line_word(i, 0), line_word(i, 1),
           line_word(i, 2));
}

void pt_line_count(size_t i, long long *counts) {
  for (int k = 0; k < 3; k++)
    counts[line_word(i, k)]++;
}

static ksnap_err_t split(ksnap_operator_ctx_t *ctx, void *inst,
                         const ksnap_record_t *rec, ksnap_error_t *error) {
  const char *s = rec->value, *end = s + rec->value_len;
  ksnap_err_t err;

  (void)inst;
  while (s < end) {
    const char *w = s;
    while (s < end && *s != ' ')
      s++;
    if (s > w && (err = ksnap_ctx_emit(ctx, w, (size_t)(s - w), "1", 1, NULL,
                                       0, error)))
      return err;
    s++;
  }
  return KSNAP_ERR_OK;
}

static long long parse(const void *v, size_t len) {
  char buf[32];

  if (!v || len >= sizeof(buf))
    return 0;
  memcpy(buf, v, len);
  buf[len] = '\0';
  return strtoll(buf, NULL, 10);
}

/* Shared by t_count and t_max: the instance is the state id. */
static ksnap_err_t open_state(ksnap_operator_ctx_t *ctx, const char *name,
                              void **instp, ksnap_error_t *error) {
  ksnap_state_t *state;
  int *id = malloc(sizeof(*id));
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, name, KSNAP_STATE_VALUE, 0, id,
                                  error))) {
    free(id);
    return err;
  }
  *instp = id;
  return KSNAP_ERR_OK;
}

static ksnap_err_t count_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  return open_state(ctx, "count", instp, error);
}

static ksnap_err_t max_open(ksnap_operator_ctx_t *ctx, void **instp,
                            ksnap_error_t *error) {
  return open_state(ctx, "max", instp, error);
}

static void close_state(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static ksnap_err_t count(ksnap_operator_ctx_t *ctx, void *inst,
                         const ksnap_record_t *rec, ksnap_error_t *error) {
  ksnap_state_t *state;
  const void *v;
  size_t vlen;
  long long n = 0;
  char out[32];
  int len;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (!ksnap_state_value_get(state, *(int *)inst, &v, &vlen))
    n = parse(v, vlen);
  n += parse(rec->value, rec->value_len);
  len = snprintf(out, sizeof(out), "%lld", n);
  if ((err = ksnap_state_value_put(state, *(int *)inst, out, (size_t)len,
                                   error)))
    return err;
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)len, NULL,
                        0, error);
}

static ksnap_err_t max(ksnap_operator_ctx_t *ctx, void *inst,
                       const ksnap_record_t *rec, ksnap_error_t *error) {
  ksnap_state_t *state;
  const void *v;
  size_t vlen;
  long long cur = 0, n = parse(rec->value, rec->value_len);
  char out[64];
  int len;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (!ksnap_state_value_get(state, *(int *)inst, &v, &vlen))
    cur = parse(v, vlen);
  if (n > cur) {
    len = snprintf(out, sizeof(out), "%lld", n);
    if ((err = ksnap_state_value_put(state, *(int *)inst, out, (size_t)len,
                                     error)))
      return err;
  }
  len = snprintf(out, sizeof(out), "%.*s:%lld", (int)rec->key_len,
                 (const char *)rec->key, n);
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)len, NULL,
                        0, error);
}

int pt_slow_task = -1;
int pt_slow_ms = 1000;

/* t_split task pt_slow_task holds its barrier back for pt_slow_ms. */
static ksnap_err_t split_pre_barrier(ksnap_operator_ctx_t *ctx, void *inst,
                                     int64_t id, ksnap_error_t *error) {
  (void)inst;
  (void)id;
  (void)error;
  if (ksnap_ctx_task_index(ctx) == pt_slow_task)
    usleep((useconds_t)pt_slow_ms * 1000);
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t split_op = {
    KSNAP_OPERATOR_ABI_VERSION, "t_split", NULL, split, split_pre_barrier,
    NULL, NULL, NULL, NULL, NULL};
static const ksnap_operator_t count_op = {
    KSNAP_OPERATOR_ABI_VERSION, "t_count", count_open, count, NULL, NULL,
    NULL, NULL, close_state, NULL};
static const ksnap_operator_t max_op = {
    KSNAP_OPERATOR_ABI_VERSION, "t_max", max_open, max, NULL, NULL,
    NULL, NULL, close_state, NULL};

/* t_timer: a timer PT_TIMER_MS after each record for its key; the timer
 * emits (key, "timer:KEY"). */
static ksnap_err_t timer_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  struct timespec ts;

  (void)inst;
  (void)rec;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ksnap_ctx_timer_register(
      ctx, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + PT_TIMER_MS,
      error);
}

static ksnap_err_t timer_fired(ksnap_operator_ctx_t *ctx, void *inst,
                               const void *key, size_t klen, int64_t time_ms,
                               ksnap_error_t *error) {
  char out[64];
  int len = snprintf(out, sizeof(out), "timer:%.*s", (int)klen,
                     (const char *)key);

  (void)inst;
  (void)time_ms;
  return ksnap_ctx_emit(ctx, key, klen, out, (size_t)len, NULL, 0, error);
}

static const ksnap_operator_t timer_op = {
    KSNAP_OPERATOR_ABI_VERSION, "t_timer", NULL, timer_process, NULL,
    timer_fired, NULL, NULL, NULL, NULL};

void pt_register_operators(void) {
  ksnap_operator_register("t_timer", &timer_op, NULL);
  ksnap_operator_register("t_split", &split_op, NULL);
  ksnap_operator_register("t_count", &count_op, NULL);
  ksnap_operator_register("t_max", &max_op, NULL);
}
