/*
 * The rules on the configuration of a job that runs (see conf_job.h).
 * Like finalize's, each problem is one line naming the file and line of
 * the setting that makes it wrong; an unset key names the file only.
 */
#include "conf_job.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"

#define DEFAULT_TXN_TIMEOUT_MS 60000 /* librdkafka's default */

typedef struct job_ctx_s {
  const ksnap_conf_t *conf;
  ksnap_conf_error_cb_t *cb;
  void *opaque;
  ksnap_err_t first;
} job_ctx_t;

/* The value of kafka.@p name (the last setting), or NULL. */
static const ksnap__conf_val_t *kafka_val(const ksnap_conf_t *conf,
                                          const char *name) {
  for (size_t i = 0; i < conf->kafka.n; i++)
    if (!strcmp(conf->kafka.v[i].key, name))
      return &conf->kafka.v[i].val;
  return NULL;
}

static int64_t num(const ksnap_conf_t *conf, const char *key) {
  return ksnap__conf_val_find(conf, key, NULL)->num;
}

int ksnap__conf_check_txn_timeout(const ksnap_conf_t *conf, char *errstr,
                                  size_t errstr_size) {
  const ksnap__conf_val_t *t = kafka_val(conf, "transaction.timeout.ms");
  int64_t txn = t ? strtoll(t->text, NULL, 10) : DEFAULT_TXN_TIMEOUT_MS;
  int64_t interval = num(conf, "execution.checkpointing.interval"),
          pool = num(conf, "sink.producer-pool-size"),
          timeout = num(conf, "execution.checkpointing.timeout");
  int64_t need = interval * pool + timeout;

  if (txn > need)
    return 0;
  snprintf(errstr, errstr_size,
           "kafka.transaction.timeout.ms (%" PRId64 "%s) must exceed "
           "execution.checkpointing.interval (%" PRId64
           " ms) * sink.producer-pool-size (%" PRId64
           ") + execution.checkpointing.timeout (%" PRId64 " ms) = %" PRId64
           " ms, or a pending sink transaction can time out before its "
           "checkpoint completes; raise kafka.transaction.timeout.ms (up to "
           "the broker's transaction.max.timeout.ms, default 900000) or "
           "lower the others",
           txn, t ? "" : ", librdkafka's default", interval, pool, timeout,
           need);
  return -1;
}

/* Emits "PREFIX: MSG" (PREFIX "FILE:LINE", else the origin "FILE", else
 * nothing) and records @p code. */
static void problem(job_ctx_t *ctx, ksnap_err_t code, const char *where,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void problem(job_ctx_t *ctx, ksnap_err_t code, const char *where,
                    const char *fmt, ...) {
  char msg[1024];
  va_list ap;

  if (!where)
    where = ctx->conf->origin;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ksnap__conf_emit(ctx->cb, ctx->opaque, "%s%s%s", where ? where : "",
                   where ? ": " : "", msg);
  if (!ctx->first)
    ctx->first = code;
}

/* The transaction timeout rule, at the line of the first of its keys
 * that was read from a file (the timeout itself first). */
static void check_txn(job_ctx_t *ctx) {
  static const char *const keys[] = {"execution.checkpointing.interval",
                                     "sink.producer-pool-size",
                                     "execution.checkpointing.timeout"};
  const ksnap__conf_val_t *t = kafka_val(ctx->conf, "transaction.timeout.ms");
  const char *where = t ? t->where : NULL;
  char msg[1024];

  if (!ksnap__conf_check_txn_timeout(ctx->conf, msg, sizeof(msg)))
    return;
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !where; i++)
    where = ksnap__conf_val_find(ctx->conf, keys[i], NULL)->where;
  problem(ctx, KSNAP_ERR_CONF_VALUE, where, "%s", msg);
}

static int env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

static void check_storage(job_ctx_t *ctx) {
  const ksnap__conf_val_t *dir =
      ksnap__conf_val_find(ctx->conf, "state.checkpoints.dir", NULL);
  int ak = ksnap__conf_val_find(ctx->conf, "s3.access-key", NULL)->set,
      sk = ksnap__conf_val_find(ctx->conf, "s3.secret-key", NULL)->set;

  if (!dir->text) {
    problem(ctx, KSNAP_ERR_CONF_MISSING, NULL,
            "missing required property \"state.checkpoints.dir\" (where the "
            "coordinator and the tasks store checkpoints)");
    return;
  }
  /* one key without the other: finalize said so already */
  if (strncmp(dir->text, "s3://", 5) || ak != sk ||
      ((ak || env_set("AWS_ACCESS_KEY_ID")) &&
       (sk || env_set("AWS_SECRET_ACCESS_KEY"))))
    return;
  problem(ctx, KSNAP_ERR_CONF_MISSING, dir->where,
          "state.checkpoints.dir: %s needs credentials: set s3.access-key "
          "and s3.secret-key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
          "in the environment)",
          dir->text);
}

static void check_rest(job_ctx_t *ctx) {
  const ksnap__conf_val_t *addr =
      ksnap__conf_val_find(ctx->conf, "rest.address", NULL);
  struct in_addr in;

  if (num(ctx->conf, "rest.port") == 0 ||
      inet_pton(AF_INET, addr->text, &in) == 1)
    return;
  problem(ctx, KSNAP_ERR_CONF_VALUE, addr->where,
          "rest.address: \"%s\" is not an IPv4 address (the coordinator "
          "listens there because rest.port is set)",
          addr->text);
}

ksnap_err_t ksnap__conf_check_job(const ksnap_conf_t *conf,
                                  ksnap_conf_error_cb_t *error_cb,
                                  void *opaque) {
  job_ctx_t ctx = {conf, error_cb, opaque, KSNAP_ERR_OK};
  const ksnap__conf_val_t *bs = kafka_val(conf, "bootstrap.servers");

  if (!bs || !*bs->text)
    problem(&ctx, KSNAP_ERR_CONF_MISSING, bs ? bs->where : NULL,
            "missing required property \"kafka.bootstrap.servers\"");
  check_storage(&ctx);
  check_txn(&ctx);
  check_rest(&ctx);
  return ctx.first;
}
