/*
 * ksnap_conf_finalize(): the checks that need the whole configuration,
 * all in one place: required properties, then cross-property rules. Each
 * problem is one error line naming the file:line of the setting that
 * makes the combination wrong (the one set explicitly).
 */
#include <stdio.h>
#include <string.h>

#include "conf_int.h"

typedef struct check_ctx_s {
  const ksnap_conf_t *conf;
  ksnap_conf_error_cb_t *cb;
  void *opaque;
  ksnap_err_t first;
} check_ctx_t;

static const ksnap__conf_val_t *val(const check_ctx_t *ctx, const char *key) {
  return ksnap__conf_val_find(ctx->conf, key, NULL);
}

/* "FILE:LINE: " of the first explicitly set value, or "". */
static const char *where(const ksnap__conf_val_t *a,
                         const ksnap__conf_val_t *b, char *buf, size_t size) {
  const ksnap__conf_val_t *v = a->set ? a : b;

  if (!v->where)
    return "";
  snprintf(buf, size, "%s: ", v->where);
  return buf;
}

static const char *shown(const char *key, const ksnap__conf_val_t *v) {
  if (!v->text)
    return "unset";
  return ksnap_conf_is_secret(key) ? KSNAP__CONF_MASK : v->text;
}

/* Reports "A (va) must RELATION B (vb)" unless @p ok. */
static void rule(check_ctx_t *ctx, int ok, const char *a, const char *rel,
                 const char *b) {
  const ksnap__conf_val_t *va = val(ctx, a), *vb = val(ctx, b);
  char buf[1024];

  if (ok)
    return;
  ksnap__conf_emit(ctx->cb, ctx->opaque, "%s%s (%s) must %s %s (%s)",
                   where(va, vb, buf, sizeof(buf)), a, shown(a, va), rel, b,
                   shown(b, vb));
  if (!ctx->first)
    ctx->first = KSNAP_ERR_CONF_VALUE;
}

static void check_required(check_ctx_t *ctx) {
  const ksnap_conf_t *conf = ctx->conf;

  for (size_t i = 0; i < ksnap__conf_nprops; i++) {
    if (!(ksnap__conf_props[i].flags & KSNAP__CONF_REQUIRED) ||
        conf->vals[i].set)
      continue;
    ksnap__conf_emit(ctx->cb, ctx->opaque,
                     "%s%smissing required property \"%s\"",
                     conf->origin ? conf->origin : "",
                     conf->origin ? ": " : "", ksnap__conf_props[i].name);
    if (!ctx->first)
      ctx->first = KSNAP_ERR_CONF_MISSING;
  }
}

static void check_stages(check_ctx_t *ctx) {
  const ksnap__conf_val_t *maxp = val(ctx, "pipeline.max-parallelism");
  const ksnap__conf_dynlist_t *stages = &ctx->conf->stage;

  for (size_t i = 0; i < stages->n; i++) {
    const ksnap__conf_dyn_t *d = &stages->v[i];
    char buf[1024];

    if (strcmp(d->prop->name, "parallelism") || d->val.num <= maxp->num)
      continue;
    ksnap__conf_emit(ctx->cb, ctx->opaque,
                     "%s%s (%s) must not exceed pipeline.max-parallelism (%s)",
                     where(&d->val, maxp, buf, sizeof(buf)), d->key,
                     d->val.text, maxp->text);
    if (!ctx->first)
      ctx->first = KSNAP_ERR_CONF_VALUE;
  }
}

/* The alignment buffer must hold one record of the largest size a producer
 * may write (kafka.message.max.bytes, librdkafka's default 1000000): with
 * a smaller one every alignment that has to hold one would switch to
 * unaligned (a savepoint: wait and read again) at its first record. */
static void check_alignment_buffer(check_ctx_t *ctx) {
  const char *key = "execution.checkpointing.alignment.max-buffered-bytes";
  const ksnap__conf_val_t *lim = val(ctx, key);
  const ksnap__conf_dynlist_t *kafka = &ctx->conf->kafka;
  char buf[1024];

  for (size_t i = 0; i < kafka->n; i++) {
    const ksnap__conf_dyn_t *d = &kafka->v[i];
    long long max;
    if (strcmp(d->key, "message.max.bytes") || !d->val.text ||
        sscanf(d->val.text, "%lld", &max) != 1 || lim->num >= max)
      continue;
    ksnap__conf_emit(ctx->cb, ctx->opaque,
                     "%s%s (%s) must be at least kafka.message.max.bytes "
                     "(%s): the largest record must fit",
                     where(lim, &d->val, buf, sizeof(buf)), key, lim->text,
                     d->val.text);
    if (!ctx->first)
      ctx->first = KSNAP_ERR_CONF_VALUE;
  }
}

ksnap_err_t ksnap_conf_finalize(ksnap_conf_t *conf,
                                ksnap_conf_error_cb_t *error_cb,
                                void *opaque) {
  check_ctx_t ctx = {conf, error_cb, opaque, KSNAP_ERR_OK};
  const ksnap__conf_val_t *ak = val(&ctx, "s3.access-key"),
                          *sk = val(&ctx, "s3.secret-key");
  const char *cp = "execution.checkpointing.";
  const char *ed = "restart-strategy.exponential-delay.";
  char a[128], b[128];

  check_required(&ctx);
  rule(&ctx,
       val(&ctx, "heartbeat.timeout")->num >
           val(&ctx, "heartbeat.interval")->num,
       "heartbeat.timeout", "be greater than", "heartbeat.interval");
  snprintf(a, sizeof(a), "%saligned-checkpoint-timeout", cp);
  snprintf(b, sizeof(b), "%stimeout", cp);
  rule(&ctx, val(&ctx, a)->num == 0 || val(&ctx, a)->num < val(&ctx, b)->num,
       a, "be less than", b);
  snprintf(a, sizeof(a), "%sunaligned.enabled", cp);
  snprintf(b, sizeof(b), "%smode", cp);
  rule(&ctx, !val(&ctx, a)->num || val(&ctx, b)->num == 0 /* EXACTLY_ONCE */,
       a, "not be combined with", b);
  check_alignment_buffer(&ctx);
  snprintf(a, sizeof(a), "%sinitial-backoff", ed);
  snprintf(b, sizeof(b), "%smax-backoff", ed);
  rule(&ctx, val(&ctx, a)->num <= val(&ctx, b)->num, a, "not exceed", b);
  if (ak->set != sk->set) {
    char buf[1024];
    ksnap__conf_emit(error_cb, opaque, "%s%s is set but %s is not",
                     where(ak, sk, buf, sizeof(buf)),
                     ak->set ? "s3.access-key" : "s3.secret-key",
                     ak->set ? "s3.secret-key" : "s3.access-key");
    if (!ctx.first)
      ctx.first = KSNAP_ERR_CONF_VALUE;
  }
  check_stages(&ctx);
  return ctx.first;
}
