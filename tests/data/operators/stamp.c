/*
 * libksnap_test_stamp.so: record timestamps end to end, for the crash
 * case tests/e2e/stamprun.py. A source line is "KEY SEQ TS".
 *   restamp  emits (KEY, "SEQ") with timestamp TS, set from the line's
 *            content with ksnap_ctx_set_timestamp(); a line without TS
 *            fails the record (UNDECODABLE)
 *   count    keyed: counts the records of each key and emits (KEY,
 *            "SEQ N SEEN"), N the key's count so far and SEEN the input
 *            record's timestamp as the operator saw it; the emit keeps
 *            the default timestamp, the input record's
 * So a sink record's Kafka timestamp and its SEEN both come from TS
 * through two hops: the exchange record's Kafka timestamp, then the
 * default of an emit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

static ksnap_err_t restamp_process(ksnap_operator_ctx_t *ctx, void *inst,
                                   const ksnap_record_t *rec,
                                   ksnap_error_t *error) {
  char line[128], key[64], seq[32];
  long long ts;

  (void)inst;
  if (!rec->value || rec->value_len >= sizeof(line))
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE,
                           "%s[%d]@%lld: not a line \"KEY SEQ TS\"",
                           rec->topic, (int)rec->partition,
                           (long long)rec->offset);
  memcpy(line, rec->value, rec->value_len);
  line[rec->value_len] = '\0';
  if (sscanf(line, "%63s %31s %lld", key, seq, &ts) != 3)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE,
                           "%s[%d]@%lld: \"%s\" is not \"KEY SEQ TS\"",
                           rec->topic, (int)rec->partition,
                           (long long)rec->offset, line);
  ksnap_ctx_set_timestamp(ctx, (int64_t)ts);
  return ksnap_ctx_emit(ctx, key, strlen(key), seq, strlen(seq), NULL, 0,
                        error);
}

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

static ksnap_err_t count_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  count_t *c = inst;
  ksnap_state_t *state;
  const void *v;
  size_t vlen;
  char buf[32], out[96];
  long long n = 0;
  int len;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (!ksnap_state_value_get(state, c->state_id, &v, &vlen) &&
      vlen < sizeof(buf)) {
    memcpy(buf, v, vlen);
    buf[vlen] = '\0';
    n = strtoll(buf, NULL, 10);
  }
  n++;
  len = snprintf(buf, sizeof(buf), "%lld", n);
  if ((err = ksnap_state_value_put(state, c->state_id, buf, (size_t)len,
                                   error)))
    return err;
  len = snprintf(out, sizeof(out), "%.*s %lld %" PRId64,
                 (int)(rec->value_len < 32 ? rec->value_len : 32),
                 rec->value ? (const char *)rec->value : "", n,
                 rec->timestamp_ms);
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)len, NULL,
                        0, error);
}

static void count_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t restamp = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "restamp",
    .process = restamp_process,
};

static const ksnap_operator_t count = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "stamp_count",
    .open = count_open,
    .process = count_process,
    .close = count_close,
};

const ksnap_operator_t *ksnap_operator_restamp(void) { return &restamp; }
const ksnap_operator_t *ksnap_operator_count(void) { return &count; }
