/*
 * Router operators (librouter.so): routing by content to named outputs,
 * a side output for bad records, and headers carried end to end.
 *   route: a payment's value is "ACCOUNT AMOUNT[ MORE]" (text; MORE,
 *          e.g. a payment id, is kept as it is), AMOUNT an integer. It
 *          is emitted with key ACCOUNT (the input's key is not used) to
 *          one output by its content:
 *            AMOUNT >= ROUTE_LARGE  -> named output "large"
 *            0 <= AMOUNT < ROUTE_LARGE -> the default output
 *            malformed              -> named output "bad" (a side output:
 *                                      the record, kept as it came, its
 *                                      key too; not a failure)
 *            AMOUNT < 0             -> the record fails (an operator
 *                                      error: with errors.tolerance=all
 *                                      it goes to the dead-letter topic,
 *                                      its headers with it)
 *          Every emit forwards the input record's headers and adds
 *          "router.route" (large, small, bad; bad records also get
 *          "router.reason"). ksnap does not copy headers by itself.
 *   total: keyed by account; the running total of an account's
 *          amounts. Emits (ACCOUNT, "VALUE TOTAL"), forwarding the input record's
 *          headers (those route set, through the exchange topic).
 * Loaded by `stage.<name>.operator=librouter.so:route` (or :total).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

#define ROUTE_LARGE 1000
#define MAX_HEADERS 32

/* Parses "ACCOUNT AMOUNT[ MORE]": @returns 0 with the account's length
 * (*@p alenp, from the value's start) and *@p amountp, -1 if malformed. */
static int parse(const ksnap_record_t *rec, size_t *alenp,
                 long long *amountp) {
  char buf[256], *sp, *end;

  if (!rec->value || rec->value_len == 0 || rec->value_len >= sizeof(buf))
    return -1;
  memcpy(buf, rec->value, rec->value_len);
  buf[rec->value_len] = '\0';
  if (!(sp = strchr(buf, ' ')) || sp == buf || !sp[1] || sp[1] == ' ')
    return -1;
  errno = 0;
  *amountp = strtoll(sp + 1, &end, 10);
  if (errno || end == sp + 1 || (*end && *end != ' '))
    return -1;
  *alenp = (size_t)(sp - buf);
  return 0;
}

/* The input's headers and @p extra (a NULL-terminated name, value list). */
static size_t with_headers(const ksnap_record_t *rec, ksnap_header_t *h,
                           const char *const *extra) {
  size_t n = 0;

  for (size_t i = 0; i < rec->header_cnt && n < MAX_HEADERS - 2; i++)
    h[n++] = rec->headers[i];
  for (; extra[0]; extra += 2)
    h[n++] = (ksnap_header_t){extra[0], extra[1], strlen(extra[1])};
  return n;
}

static ksnap_err_t route_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  ksnap_header_t h[MAX_HEADERS];
  long long amount;
  size_t n, alen;

  (void)inst;
  if (parse(rec, &alen, &amount)) {
    const char *extra[] = {"router.route", "bad", "router.reason",
                           "not ACCOUNT AMOUNT with an integer AMOUNT",
                           NULL};
    n = with_headers(rec, h, extra);
    return ksnap_ctx_emit_to(ctx, "bad", rec->key, rec->key_len, rec->value,
                             rec->value_len, h, n, error);
  }
  if (amount < 0)
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                           "negative amount %lld", amount);
  if (amount >= ROUTE_LARGE) {
    const char *extra[] = {"router.route", "large", NULL};
    n = with_headers(rec, h, extra);
    return ksnap_ctx_emit_to(ctx, "large", rec->value, alen, rec->value,
                             rec->value_len, h, n, error);
  }
  const char *extra[] = {"router.route", "small", NULL};
  n = with_headers(rec, h, extra);
  return ksnap_ctx_emit(ctx, rec->value, alen, rec->value, rec->value_len, h,
                        n, error);
}

static const ksnap_operator_t route_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "route",
    .process = route_process,
};

const ksnap_operator_t *ksnap_operator_route(void) { return &route_op; }

typedef struct total_s {
  int total_id;
} total_t;

static ksnap_err_t total_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  total_t *t = calloc(1, sizeof(*t));
  ksnap_state_t *state;
  ksnap_err_t err;

  if (!t)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, "total", KSNAP_STATE_VALUE, 0,
                                  &t->total_id, error))) {
    free(t);
    return err;
  }
  *instp = t;
  return KSNAP_ERR_OK;
}

static ksnap_err_t total_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  total_t *t = inst;
  ksnap_state_t *state;
  const void *v;
  size_t len;
  long long amount, total = 0;
  char out[320];
  size_t alen;
  int n;
  ksnap_err_t err;

  if (parse(rec, &alen, &amount))
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE,
                           "not ACCOUNT AMOUNT: %.*s", (int)rec->value_len,
                           (const char *)rec->value);
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (ksnap_state_value_get(state, t->total_id, &v, &len) == KSNAP_ERR_OK &&
      len == sizeof(total))
    memcpy(&total, v, sizeof(total));
  total += amount;
  if ((err = ksnap_state_value_put(state, t->total_id, &total, sizeof(total),
                                   error)))
    return err;
  n = snprintf(out, sizeof(out), "%.*s %lld", (int)rec->value_len,
               (const char *)rec->value, total);
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, (size_t)n,
                        rec->headers, rec->header_cnt, error);
}

static void total_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t total_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "total",
    .open = total_open,
    .process = total_process,
    .close = total_close,
};

const ksnap_operator_t *ksnap_operator_total(void) { return &total_op; }
