/*
 * libksnap_test_timers.so: operators of the tests of timers.
 *   count   the word count of examples/wordcount whose count also
 *           registers a keyed processing-time timer an hour ahead for
 *           every record (it never fires in a test). The timer is an
 *           entry of the task's reserved timers' state, written while the
 *           record is processed: for the tests of the epoch replay, which
 *           processes records on a state of its own and must give that
 *           write a timers' state there too; on_timer emits nothing.
 *   ticker  for records whose value is a number N (0-999): registers a
 *           timer 0.3 to 1.3 s ahead (without a key for a record without
 *           one, else under the record's key), at the first millisecond t
 *           with t % 1000 == N; when it fires, emits (tNNN, "fired"). It
 *           keeps no other state: the output holds each N once only if
 *           every timer is in the snapshot and fires once
 *           (tests/e2e/tickrun.py).
 *   relay   emits each record's value with the value as its key: ticker
 *           behind an exchange topic (keyed timers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

typedef struct count_s {
  int state_id;
} count_t;

static ksnap_err_t count_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  count_t *c = calloc(1, sizeof(*c));
  ksnap_state_t *state;
  ksnap_err_t err;

  if (!c)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, "count", KSNAP_STATE_VALUE, 0,
                                  &c->state_id, error))) {
    free(c);
    return err;
  }
  *instp = c;
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

static int64_t now_ms(void) {
  struct timeval tv;

  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static ksnap_err_t count_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  count_t *c = inst;
  ksnap_state_t *state;
  const void *v;
  size_t vlen;
  long long n = 0;
  char out[32];
  int len;
  ksnap_err_t err;

  if (!rec->key)
    return KSNAP_ERR_OK;
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (!ksnap_state_value_get(state, c->state_id, &v, &vlen))
    n = parse(v, vlen);
  n += parse(rec->value, rec->value_len);
  len = snprintf(out, sizeof(out), "%lld", n);
  if ((err = ksnap_state_value_put(state, c->state_id, out, (size_t)len,
                                   error)) ||
      (err = ksnap_ctx_timer_register(ctx, now_ms() + 3600 * 1000, error)))
    return err;
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)len, NULL,
                        0, error);
}

static ksnap_err_t count_on_timer(ksnap_operator_ctx_t *ctx, void *inst,
                                  const void *key, size_t klen, int64_t t,
                                  ksnap_error_t *error) {
  (void)ctx, (void)inst, (void)key, (void)klen, (void)t, (void)error;
  return KSNAP_ERR_OK;
}

static void count_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t count_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "count",
    .open = count_open,
    .process = count_process,
    .on_timer = count_on_timer,
    .close = count_close,
};

const ksnap_operator_t *ksnap_operator_count(void) { return &count_op; }

/* ticker: a timer without a key per record, its number in the time. */
static ksnap_err_t ticker_process(ksnap_operator_ctx_t *ctx, void *inst,
                                  const ksnap_record_t *rec,
                                  ksnap_error_t *error) {
  long long n = parse(rec->value, rec->value_len);
  int64_t t = now_ms() + 300;

  (void)inst;
  if (n < 0 || n > 999)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "ticker: a record of value 0-999");
  t += ((n - t % 1000) % 1000 + 1000) % 1000;
  return ksnap_ctx_timer_register(ctx, t, error);
}

static ksnap_err_t ticker_on_timer(ksnap_operator_ctx_t *ctx, void *inst,
                                   const void *key, size_t klen, int64_t t,
                                   ksnap_error_t *error) {
  char k[8];

  (void)inst, (void)key, (void)klen;
  snprintf(k, sizeof(k), "t%03d", (int)(t % 1000));
  return ksnap_ctx_emit(ctx, k, 4, "fired", 5, NULL, 0, error);
}

static ksnap_err_t ticker_open(ksnap_operator_ctx_t *ctx, void **instp,
                               ksnap_error_t *error) {
  (void)ctx, (void)error;
  *instp = NULL;
  return KSNAP_ERR_OK;
}

static void ticker_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx, (void)inst;
}

static const ksnap_operator_t ticker_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "ticker",
    .open = ticker_open,
    .process = ticker_process,
    .on_timer = ticker_on_timer,
    .close = ticker_close,
};

const ksnap_operator_t *ksnap_operator_ticker(void) { return &ticker_op; }

/* relay: the value, keyed by itself (ticker's input through an exchange). */
static ksnap_err_t relay_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  (void)inst;
  return ksnap_ctx_emit(ctx, rec->value, rec->value_len, rec->value,
                        rec->value_len, NULL, 0, error);
}

static const ksnap_operator_t relay_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "relay",
    .open = ticker_open,
    .process = relay_process,
    .close = ticker_close,
};

const ksnap_operator_t *ksnap_operator_relay(void) { return &relay_op; }
