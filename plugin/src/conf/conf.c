/*
 * Configuration: the one setter every value goes through (substitution,
 * lookup, typed validation), the .properties loader that reports every
 * problem, the finalize step with the cross-property rules, and getters.
 * The table is in conf_table.c, value syntax in conf_value.c.
 *
 * Threading: see ksnap/conf.h (one builder thread, then read-only).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "ksnap/log.h"
#include "base/props.h"

/* Emits one error line to @p cb, or to the log without one. */
void ksnap__conf_emit(ksnap_conf_error_cb_t *cb, void *opaque, const char *fmt,
                      ...) {
  char msg[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (cb)
    cb(opaque, msg);
  else
    KSNAP_ERR("CONF", "%s", msg);
}

static void val_cleanup(ksnap__conf_val_t *val) {
  free(val->text);
  free(val->where);
  memset(val, 0, sizeof(*val));
}

static int val_init_default(ksnap__conf_val_t *val, const ksnap__conf_prop_t *prop) {
  char errstr[256];

  memset(val, 0, sizeof(*val));
  if (!prop->sdef)
    return 0;
  /* Defaults go through the same parser; a bad one is a table bug. */
  return ksnap__conf_parse_value(prop, prop->name, prop->sdef, &val->text,
                                 &val->num, errstr, sizeof(errstr));
}

ksnap_conf_t *ksnap_conf_new(void) {
  ksnap_conf_t *conf = calloc(1, sizeof(*conf));

  if (!conf)
    return NULL;
  if (!(conf->vals = calloc(ksnap__conf_nprops, sizeof(*conf->vals))) ||
      !(conf->kc = ksnap__conf_kafka_new()))
    goto fail;
  for (size_t i = 0; i < ksnap__conf_nprops; i++)
    if (val_init_default(&conf->vals[i], &ksnap__conf_props[i]) == -1)
      goto fail;
  return conf;
fail:
  ksnap_conf_destroy(conf);
  return NULL;
}

static void dynlist_cleanup(ksnap__conf_dynlist_t *list) {
  for (size_t i = 0; i < list->n; i++) {
    free(list->v[i].key);
    val_cleanup(&list->v[i].val);
  }
  free(list->v);
}

void ksnap_conf_destroy(ksnap_conf_t *conf) {
  if (!conf)
    return;
  if (conf->vals)
    for (size_t i = 0; i < ksnap__conf_nprops; i++)
      val_cleanup(&conf->vals[i]);
  free(conf->vals);
  dynlist_cleanup(&conf->kafka);
  dynlist_cleanup(&conf->stage);
  ksnap__conf_kafka_destroy(conf->kc);
  free(conf->origin);
  free(conf);
}

static ksnap__conf_dyn_t *dynlist_find(const ksnap__conf_dynlist_t *list, const char *key) {
  for (size_t i = 0; i < list->n; i++)
    if (!strcmp(list->v[i].key, key))
      return &list->v[i];
  return NULL;
}

/* Stores @p text (taken over) as the value of @p val. */
static int val_store(ksnap__conf_val_t *val, char *text, int64_t num,
                     const char *where) {
  char *w = where ? strdup(where) : NULL;

  if (where && !w) {
    free(text);
    return -1;
  }
  val_cleanup(val);
  val->text = text;
  val->num = num;
  val->where = w;
  val->set = 1;
  return 0;
}

static int dynlist_store(ksnap__conf_dynlist_t *list, const char *key,
                         const ksnap__conf_prop_t *prop, char *text,
                         int64_t num, const char *where) {
  ksnap__conf_dyn_t *dyn = dynlist_find(list, key);

  if (!dyn) {
    if (list->n == list->cap) {
      size_t cap = list->cap ? list->cap * 2 : 8;
      void *v = realloc(list->v, cap * sizeof(*list->v));
      if (!v)
        return free(text), -1;
      list->v = v;
      list->cap = cap;
    }
    dyn = &list->v[list->n];
    memset(dyn, 0, sizeof(*dyn));
    if (!(dyn->key = strdup(key)))
      return free(text), -1;
    dyn->prop = prop;
    list->n++;
  }
  return val_store(&dyn->val, text, num, where);
}

/* Appends ` (did you mean "X"?)` for the closest key within distance 2. */
static void suggest(const ksnap_conf_t *conf, const char *key, char *errstr,
                    size_t size) {
  const char *best = NULL, *prefix = "";
  char stagekey[256] = "";
  int bestd = 3;

  for (size_t i = 0; i < ksnap__conf_nprops; i++) {
    int d = ksnap__conf_edit_distance(key, ksnap__conf_props[i].name, 2);
    if (d < bestd)
      bestd = d, best = ksnap__conf_props[i].name;
  }
  if (!strncmp(key, "stage.", 6) && strchr(key + 6, '.')) {
    const char *sub = strchr(key + 6, '.') + 1;
    for (size_t i = 0; i < ksnap__conf_stage_nprops; i++) {
      int d = ksnap__conf_edit_distance(sub, ksnap__conf_stage_props[i].name, 2);
      if (d < bestd) {
        bestd = d;
        snprintf(stagekey, sizeof(stagekey), "%.*s%s", (int)(sub - key), key,
                 ksnap__conf_stage_props[i].name);
        best = stagekey;
      }
    }
  }
  if (!best && ksnap__conf_kafka_known(conf->kc, key))
    best = key, prefix = "kafka.";
  if (best) {
    size_t n = strlen(errstr);
    snprintf(errstr + n, size - n, " (did you mean \"%s%s\"?)", prefix, best);
  }
}

static ksnap_err_t unknown(const ksnap_conf_t *conf, const char *key,
                           char *errstr, size_t size) {
  snprintf(errstr, size, "No such configuration property: \"%s\"", key);
  suggest(conf, key, errstr, size);
  return KSNAP_ERR_CONF_UNKNOWN;
}

static ksnap_err_t set_kafka(ksnap_conf_t *conf, const char *key,
                             const char *value, const char *where,
                             char *errstr, size_t size) {
  const char *name = key + 6;
  char kerr[512];
  char *text;

  if (!*name)
    return unknown(conf, key, errstr, size);
  if (ksnap__conf_kafka_check(conf->kc, name, value, kerr, sizeof(kerr))) {
    if (ksnap__conf_kafka_is_secret(name))
      ksnap__conf_mask_in(kerr, sizeof(kerr), value);
    snprintf(errstr, size, "%s: %s", key, kerr);
    return KSNAP_ERR_CONF_VALUE;
  }
  if (!(text = strdup(value)) ||
      dynlist_store(&conf->kafka, name, NULL, text, 0, where) == -1)
    return KSNAP_ERR_NOMEM;
  return KSNAP_ERR_OK;
}

static ksnap_err_t set_stage(ksnap_conf_t *conf, const char *key,
                             const char *value, const char *where,
                             char *errstr, size_t size) {
  const char *name = key + 6, *dot = strchr(name, '.');
  const ksnap__conf_prop_t *prop;
  size_t nlen;
  char *text;
  int64_t num;

  if (dot && !strncmp(dot + 1, "output.", 7) &&
      !ksnap__conf_stage_prop_find(dot + 1)) {
    snprintf(errstr, size, "%s: invalid output name \"%s\" (1 to 100 "
             "characters of A-Z a-z 0-9 _ -)", key, dot + 8);
    return KSNAP_ERR_CONF_VALUE;
  }
  if (!dot || !(prop = ksnap__conf_stage_prop_find(dot + 1)))
    return unknown(conf, key, errstr, size);
  nlen = (size_t)(dot - name);
  if (nlen == 0 || nlen > 100 ||
      strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789_-") != nlen) {
    snprintf(errstr, size, "%s: invalid stage name \"%.*s\" (1 to 100 "
             "characters of A-Z a-z 0-9 _ -)", key, (int)nlen, name);
    return KSNAP_ERR_CONF_VALUE;
  }
  if (ksnap__conf_parse_value(prop, key, value, &text, &num, errstr, size))
    return KSNAP_ERR_CONF_VALUE;
  if (dynlist_store(&conf->stage, key, prop, text, num, where) == -1)
    return KSNAP_ERR_NOMEM;
  return KSNAP_ERR_OK;
}

/* The one setter: substitution, then dispatch by key family. */
static ksnap_err_t conf_set(ksnap_conf_t *conf, const char *key,
                            const char *raw, const char *where, char *errstr,
                            size_t size) {
  const ksnap__conf_prop_t *prop;
  char *value = NULL, *text;
  char serr[256];
  ksnap_err_t err;
  int64_t num;

  if (ksnap__conf_substitute(raw, &value, serr, sizeof(serr)) == -1) {
    snprintf(errstr, size, "%s: %s", key, serr);
    return KSNAP_ERR_CONF_VALUE;
  }
  if (!strncmp(key, "kafka.", 6)) {
    err = set_kafka(conf, key, value, where, errstr, size);
  } else if (!strncmp(key, "stage.", 6)) {
    err = set_stage(conf, key, value, where, errstr, size);
  } else if (!(prop = ksnap__conf_prop_find(ksnap__conf_props,
                                            ksnap__conf_nprops, key))) {
    err = unknown(conf, key, errstr, size);
  } else if (ksnap__conf_parse_value(prop, key, value, &text, &num, errstr,
                                     size)) {
    err = KSNAP_ERR_CONF_VALUE;
  } else {
    err = val_store(&conf->vals[prop - ksnap__conf_props], text, num, where)
              ? KSNAP_ERR_NOMEM
              : KSNAP_ERR_OK;
  }
  free(value);
  return err;
}

ksnap_err_t ksnap_conf_set(ksnap_conf_t *conf, const char *key,
                           const char *value, char *errstr,
                           size_t errstr_size) {
  char buf[1024];
  ksnap_err_t err = conf_set(conf, key, value, NULL, buf, sizeof(buf));

  if (err && errstr_size > 0)
    snprintf(errstr, errstr_size, "%s",
             err == KSNAP_ERR_NOMEM ? "Out of memory" : buf);
  return err;
}

typedef struct load_ctx_s {
  ksnap_conf_error_cb_t *cb;
  void *opaque;
} load_ctx_t;

static void props_error(void *opaque, const char *msg) {
  load_ctx_t *ctx = opaque;
  ksnap__conf_emit(ctx->cb, ctx->opaque, "%s", msg);
}

static ksnap_err_t load_props(ksnap_conf_t *conf, ksnap_props_t *props,
                              ksnap_err_t first, const char *name,
                              ksnap_conf_error_cb_t *cb, void *opaque) {
  char errstr[1024], where[1024];

  if (!conf->origin && !(conf->origin = strdup(name)))
    return KSNAP_ERR_NOMEM;
  for (size_t i = 0; i < ksnap_props_count(props); i++) {
    const ksnap_props_entry_t *e = ksnap_props_get(props, i);
    ksnap_err_t err;

    snprintf(where, sizeof(where), "%s:%d", e->file, e->line);
    err = conf_set(conf, e->key, e->value, where, errstr, sizeof(errstr));
    if (err == KSNAP_ERR_NOMEM)
      return err;
    if (err) {
      ksnap__conf_emit(cb, opaque, "%s: %s", where, errstr);
      if (!first)
        first = err;
    }
  }
  return first;
}

ksnap_err_t ksnap_conf_load_file(ksnap_conf_t *conf, const char *path,
                                 ksnap_conf_error_cb_t *error_cb,
                                 void *opaque) {
  load_ctx_t ctx = {error_cb, opaque};
  ksnap_props_t *props;
  ksnap_err_t err = ksnap_props_parse_file(path, &props, props_error, &ctx);

  if (!props)
    return err;
  err = load_props(conf, props, err, path, error_cb, opaque);
  ksnap_props_destroy(props);
  return err;
}

ksnap_err_t ksnap_conf_load_string(ksnap_conf_t *conf, const char *name,
                                   const char *text,
                                   ksnap_conf_error_cb_t *error_cb,
                                   void *opaque) {
  load_ctx_t ctx = {error_cb, opaque};
  ksnap_props_t *props;
  ksnap_err_t err = ksnap_props_parse_string(name, text, strlen(text), &props,
                                             props_error, &ctx);

  if (!props)
    return err;
  err = load_props(conf, props, err, name, error_cb, opaque);
  ksnap_props_destroy(props);
  return err;
}

const ksnap__conf_val_t *ksnap__conf_val_find(const ksnap_conf_t *conf, const char *key,
                                  const ksnap__conf_prop_t **propp) {
  const ksnap__conf_prop_t *prop =
      ksnap__conf_prop_find(ksnap__conf_props, ksnap__conf_nprops, key);

  if (propp)
    *propp = prop;
  return prop ? &conf->vals[prop - ksnap__conf_props] : NULL;
}
