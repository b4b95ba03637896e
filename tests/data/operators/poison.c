/*
 * libksnap_test_poison.so: the word count of examples/wordcount with
 * poison records, for the tests of error tolerance, dead-letter output
 * and restart strategies. Deterministic, so a run's output can be
 * compared with a model computed from the input.
 *   split  as wordcount's split, but a line that contains "POISON"
 *          (upper case, anywhere) fails with KSNAP_ERR_OPERATOR before
 *          it emits anything.
 *   count  as wordcount's count, but a word that starts with "poison"
 *          (split lower-cases words) fails with KSNAP_ERR_OPERATOR AFTER
 *          it wrote the new count to its state and emitted it: what a
 *          failed record changed must not be applied.
 * Lower-case "poison" in a line passes split and fails count, so one
 * input can poison either stage.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

static int contains(const char *s, size_t len, const char *needle) {
  size_t n = strlen(needle);

  for (size_t i = 0; i + n <= len; i++)
    if (!memcmp(s + i, needle, n))
      return 1;
  return 0;
}

static ksnap_err_t split_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  const char *s = rec->value;
  char word[256];
  size_t n = 0;
  ksnap_err_t err;

  (void)inst;
  if (s && contains(s, rec->value_len, "POISON"))
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                           "split: poison line at offset %lld",
                           (long long)rec->offset);
  for (size_t i = 0; i <= rec->value_len; i++) {
    int c = i < rec->value_len ? (unsigned char)s[i] : ' ';
    if (isalnum(c)) {
      if (n < sizeof(word))
        word[n++] = (char)tolower(c);
      continue;
    }
    if (n && (err = ksnap_ctx_emit(ctx, word, n, "1", 1, NULL, 0, error)))
      return err;
    n = 0;
  }
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t split_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "split",
    .process = split_process,
};

const ksnap_operator_t *ksnap_operator_split(void) { return &split_op; }

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
      (err = ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)len,
                            NULL, 0, error)))
    return err;
  if (rec->key_len >= 6 && !memcmp(rec->key, "poison", 6))
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                           "count: poison word \"%.*s\"", (int)rec->key_len,
                           (const char *)rec->key);
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
    .close = count_close,
};

const ksnap_operator_t *ksnap_operator_count(void) { return &count_op; }
