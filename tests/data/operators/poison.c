/*
 * libksnap_test_poison.so: the word count of examples/wordcount with
 * poison records, for the tests of error tolerance, dead-letter output
 * and restart strategies. Deterministic, so a run's output can be
 * compared with a model computed from the input.
 *   split  wordcount's split, but a line that contains "POISON" (upper
 *          case, anywhere) fails with KSNAP_ERR_OPERATOR before it emits
 *          anything.
 *   count  wordcount's count, but a word that starts with "poison"
 *          (split lower-cases words) fails with KSNAP_ERR_OPERATOR AFTER
 *          it wrote the new count to its state and emitted it: what a
 *          failed record changed must not be applied.
 * Lower-case "poison" in a line passes split and fails count, so one
 * input can poison either stage.
 *   count_map  a new version of count whose state "count" is a map
 *          state: restoring count's state into it must be refused. wordcount.c is compiled into this
 * module with its operators renamed wordcount_split and wordcount_count
 * (tests/CMakeLists.txt), so the counting is the example's own code.
 */
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"
#include "ksnap/state.h"

const ksnap_operator_t *wordcount_split(void);
const ksnap_operator_t *wordcount_count(void);

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
  if (rec->value && contains(rec->value, rec->value_len, "POISON"))
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                           "split: poison line at offset %lld",
                           (long long)rec->offset);
  return wordcount_split()->process(ctx, inst, rec, error);
}

static ksnap_err_t count_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  return wordcount_count()->open(ctx, instp, error);
}

static ksnap_err_t count_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  ksnap_err_t err = wordcount_count()->process(ctx, inst, rec, error);

  if (err || !rec->key || rec->key_len < 6 || memcmp(rec->key, "poison", 6))
    return err;
  return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                         "count: poison word \"%.*s\"", (int)rec->key_len,
                         (const char *)rec->key);
}

static void count_close(ksnap_operator_ctx_t *ctx, void *inst) {
  wordcount_count()->close(ctx, inst);
}

static const ksnap_operator_t split_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "split",
    .process = split_process,
};

static const ksnap_operator_t count_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "count",
    .open = count_open,
    .process = count_process,
    .close = count_close,
};

const ksnap_operator_t *ksnap_operator_split(void) { return &split_op; }
const ksnap_operator_t *ksnap_operator_count(void) { return &count_op; }

/* count_map: a new version of count whose state "count" became a map
 * state (a state whose kind changed: a restore must refuse it). It
 * counts nothing. */
static ksnap_err_t count_map_open(ksnap_operator_ctx_t *ctx, void **instp,
                                  ksnap_error_t *error) {
  ksnap_state_t *state;
  ksnap_err_t err;
  int id;

  *instp = NULL;
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  return ksnap_state_register(state, "count", KSNAP_STATE_MAP, 0, &id, error);
}

static ksnap_err_t count_map_process(ksnap_operator_ctx_t *ctx, void *inst,
                                     const ksnap_record_t *rec,
                                     ksnap_error_t *error) {
  (void)ctx;
  (void)inst;
  (void)rec;
  (void)error;
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t count_map_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "count_map",
    .open = count_map_open,
    .process = count_map_process,
};

const ksnap_operator_t *ksnap_operator_count_map(void) {
  return &count_map_op;
}
