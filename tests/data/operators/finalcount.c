/*
 * libksnap_test_finish.so: an operator that emits only in finish, for the
 * crash case tests/e2e/finishrun.py (a bounded job that ends by itself).
 *   finalcount  keyed: counts the records of each key in a value state
 *               and emits nothing in process; in finish it emits (KEY,
 *               "N") once per key, N the key's count: the final
 *               aggregate. The keys it saw are in an operator list state
 *               (finish reads their counts back with
 *               ksnap_state_set_key()). finish does not clear them: a
 *               second finish after a restore would emit every key again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

typedef struct fc_s {
  int count_id, keys_id;
} fc_t;

static ksnap_err_t fc_open(ksnap_operator_ctx_t *ctx, void **instp,
                           ksnap_error_t *error) {
  fc_t *f = calloc(1, sizeof(*f));
  ksnap_state_t *st;
  ksnap_err_t err;

  if (!f)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &st, error)) ||
      (err = ksnap_state_register(st, "count", KSNAP_STATE_VALUE, 0,
                                  &f->count_id, error)) ||
      (err = ksnap_state_register(st, "keys", KSNAP_STATE_OP_SPLIT, 0,
                                  &f->keys_id, error))) {
    free(f);
    return err;
  }
  *instp = f;
  return KSNAP_ERR_OK;
}

static ksnap_err_t fc_process(ksnap_operator_ctx_t *ctx, void *inst,
                              const ksnap_record_t *rec,
                              ksnap_error_t *error) {
  fc_t *f = inst;
  ksnap_state_t *st;
  const void *v;
  size_t vl;
  long long n = 0;
  char buf[32];
  ksnap_err_t err;

  if (!rec->key || !rec->key_len)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE, "record without key");
  if ((err = ksnap_ctx_state(ctx, &st, error)))
    return err;
  if (!ksnap_state_value_get(st, f->count_id, &v, &vl) && vl < sizeof(buf)) {
    memcpy(buf, v, vl);
    buf[vl] = '\0';
    n = atoll(buf);
  } else if ((err = ksnap_state_op_add(st, f->keys_id, rec->key,
                                       rec->key_len, error))) {
    return err; /* a new key */
  }
  snprintf(buf, sizeof(buf), "%lld", n + 1);
  return ksnap_state_value_put(st, f->count_id, buf, strlen(buf), error);
}

static ksnap_err_t fc_finish(ksnap_operator_ctx_t *ctx, void *inst,
                             ksnap_error_t *error) {
  fc_t *f = inst;
  ksnap_state_t *st;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &st, error)))
    return err;
  for (size_t i = 0; i < ksnap_state_op_count(st, f->keys_id); i++) {
    const void *k, *v;
    size_t kl, vl;
    if ((err = ksnap_state_op_get(st, f->keys_id, i, &k, &kl)) ||
        (err = ksnap_state_set_key(st, k, kl, error)))
      return err;
    if (ksnap_state_value_get(st, f->count_id, &v, &vl))
      return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                             "finalcount: a key without count");
    if ((err = ksnap_ctx_emit(ctx, k, kl, v, vl, NULL, 0, error)))
      return err;
  }
  return KSNAP_ERR_OK;
}

static void fc_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t finalcount = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "finalcount",
    .open = fc_open,
    .process = fc_process,
    .finish = fc_finish,
    .close = fc_close,
};

const ksnap_operator_t *ksnap_operator_finalcount(void) {
  return &finalcount;
}
