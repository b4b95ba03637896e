/*
 * Reading a configuration: typed getters, kafka.* / stage.* iteration,
 * secrets, and the effective-configuration dump.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"

/* Finds the value of a table or stage.* key (a stage default if unset). */
static ksnap_err_t lookup(const ksnap_conf_t *conf, const char *key,
                          ksnap_conf_type_t type, int any_type,
                          ksnap__conf_val_t *tmp,
                          const ksnap__conf_val_t **valp) {
  const ksnap__conf_prop_t *prop = NULL;
  const ksnap__conf_val_t *val = ksnap__conf_val_find(conf, key, &prop);

  if (!val && !strncmp(key, "stage.", 6)) {
    const char *dot = strchr(key + 6, '.');
    const ksnap__conf_dyn_t *d = NULL;
    for (size_t i = 0; i < conf->stage.n && !d; i++)
      if (!strcmp(conf->stage.v[i].key, key))
        d = &conf->stage.v[i];
    prop = d ? d->prop
         : dot ? ksnap__conf_stage_prop_find(dot + 1)
               : NULL;
    val = d ? &d->val : tmp;
    memset(tmp, 0, sizeof(*tmp));
    if (!d && prop && prop->sdef) { /* an unset stage key's default */
      char *norm, errstr[256];
      if (ksnap__conf_parse_value(prop, key, prop->sdef, &norm, &tmp->num,
                                  errstr, sizeof(errstr)) == 0) {
        free(norm);
        tmp->text = (char *)prop->sdef; /* static: never freed */
      }
    }
  }
  if (!prop)
    return KSNAP_ERR_NOT_FOUND;
  if (!any_type && prop->type != type)
    return KSNAP_ERR_INVALID_ARG;
  if (!val->text)
    return KSNAP_ERR_NOT_FOUND;
  *valp = val;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_conf_get_str(const ksnap_conf_t *conf, const char *key,
                               const char **valuep) {
  const ksnap__conf_val_t *val;
  ksnap__conf_val_t tmp;
  ksnap_err_t err = lookup(conf, key, KSNAP_CONF_STRING, 1, &tmp, &val);

  if (!err)
    *valuep = val->text;
  return err;
}

static ksnap_err_t get_num(const ksnap_conf_t *conf, const char *key,
                           ksnap_conf_type_t type, int64_t *valuep) {
  const ksnap__conf_val_t *val;
  ksnap__conf_val_t tmp;
  ksnap_err_t err = lookup(conf, key, type, 0, &tmp, &val);

  if (!err)
    *valuep = val->num;
  return err;
}

ksnap_err_t ksnap_conf_get_int(const ksnap_conf_t *conf, const char *key,
                               int64_t *valuep) {
  return get_num(conf, key, KSNAP_CONF_INT, valuep);
}

ksnap_err_t ksnap_conf_get_bool(const ksnap_conf_t *conf, const char *key,
                                int *valuep) {
  int64_t v;
  ksnap_err_t err = get_num(conf, key, KSNAP_CONF_BOOL, &v);

  if (!err)
    *valuep = (int)v;
  return err;
}

ksnap_err_t ksnap_conf_get_duration_ms(const ksnap_conf_t *conf,
                                       const char *key, int64_t *valuep) {
  return get_num(conf, key, KSNAP_CONF_DURATION, valuep);
}

ksnap_err_t ksnap_conf_get_size(const ksnap_conf_t *conf, const char *key,
                                int64_t *valuep) {
  return get_num(conf, key, KSNAP_CONF_SIZE, valuep);
}

ksnap_err_t ksnap_conf_get_double(const ksnap_conf_t *conf, const char *key,
                                  double *valuep) {
  int64_t v;
  ksnap_err_t err = get_num(conf, key, KSNAP_CONF_DOUBLE, &v);

  if (!err)
    *valuep = (double)v / KSNAP__CONF_MICRO;
  return err;
}

int ksnap_conf_is_set(const ksnap_conf_t *conf, const char *key) {
  const ksnap__conf_val_t *val = ksnap__conf_val_find(conf, key, NULL);

  if (val)
    return val->set;
  if (!strncmp(key, "kafka.", 6))
    for (size_t i = 0; i < conf->kafka.n; i++)
      if (!strcmp(conf->kafka.v[i].key, key + 6))
        return 1;
  for (size_t i = 0; i < conf->stage.n; i++)
    if (!strcmp(conf->stage.v[i].key, key))
      return 1;
  return 0;
}

const char *ksnap_conf_where(const ksnap_conf_t *conf, const char *key) {
  const ksnap__conf_val_t *val = ksnap__conf_val_find(conf, key, NULL);
  const ksnap__conf_dynlist_t *list = &conf->stage;

  if (val)
    return val->where;
  if (!strncmp(key, "kafka.", 6)) {
    list = &conf->kafka;
    key += 6;
  }
  for (size_t i = 0; i < list->n; i++)
    if (!strcmp(list->v[i].key, key))
      return list->v[i].val.where;
  return NULL;
}

const char *ksnap_conf_origin(const ksnap_conf_t *conf) {
  return conf->origin;
}

static int foreach(const ksnap__conf_dynlist_t *list,
                   int (*cb)(void *, const char *, const char *),
                   void *opaque) {
  for (size_t i = 0; i < list->n; i++) {
    int r = cb(opaque, list->v[i].key, list->v[i].val.text);
    if (r)
      return r;
  }
  return 0;
}

int ksnap_conf_foreach_kafka(const ksnap_conf_t *conf,
                             int (*cb)(void *, const char *, const char *),
                             void *opaque) {
  return foreach(&conf->kafka, cb, opaque);
}

int ksnap_conf_foreach_stage(const ksnap_conf_t *conf,
                             int (*cb)(void *, const char *, const char *),
                             void *opaque) {
  return foreach(&conf->stage, cb, opaque);
}

int ksnap__conf_kafka_is_secret(const char *name) {
  size_t n = strlen(name);

  if (strstr(name, "password") || strstr(name, "secret"))
    return 1;
  if (!strcmp(name, "ssl.key.pem") || !strcmp(name, "sasl.oauthbearer.config"))
    return 1;
  return (!strncmp(name, "ssl.", 4) || !strncmp(name, "sasl.", 5)) &&
         n >= 4 && !strcmp(name + n - 4, ".key");
}

int ksnap_conf_is_secret(const char *key) {
  const ksnap__conf_prop_t *prop =
      ksnap__conf_prop_find(ksnap__conf_props, ksnap__conf_nprops, key);

  if (prop)
    return !!(prop->flags & KSNAP__CONF_SECRET);
  return !strncmp(key, "kafka.", 6) && ksnap__conf_kafka_is_secret(key + 6);
}

/*
 * One entry, under a "# ORIGIN" comment line whenever the origin changes,
 * so that the output stays a valid .properties file; unset properties are
 * commented out.
 */
static void dump_one(FILE *fp, const char *prefix, const char *key,
                     const ksnap__conf_val_t *val, int masked,
                     const char **lastp) {
  const char *origin = val->where ? val->where
                       : val->set ? "set by the application"
                       : val->text ? "default"
                                   : "unset";
  char full[512];

  if (!*lastp || strcmp(*lastp, origin) || val->where)
    fprintf(fp, "# %s\n", origin);
  *lastp = origin;
  snprintf(full, sizeof(full), "%s%s", prefix, key);
  if (!val->text)
    fputc('#', fp);
  ksnap__conf_print_escaped(fp, full, 1);
  fputc('=', fp);
  if (val->text && masked && *val->text && ksnap_conf_is_secret(full))
    fputs(KSNAP__CONF_MASK, fp);
  else if (val->text)
    ksnap__conf_print_escaped(fp, val->text, 0);
  fputc('\n', fp);
}

void ksnap_conf_dump(const ksnap_conf_t *conf, FILE *fp, int masked) {
  const char *last = NULL;

  for (size_t i = 0; i < ksnap__conf_nprops; i++)
    dump_one(fp, "", ksnap__conf_props[i].name, &conf->vals[i], masked,
             &last);
  for (size_t i = 0; i < conf->kafka.n; i++)
    dump_one(fp, "kafka.", conf->kafka.v[i].key, &conf->kafka.v[i].val,
             masked, &last);
  for (size_t i = 0; i < conf->stage.n; i++)
    dump_one(fp, "", conf->stage.v[i].key, &conf->stage.v[i].val, masked,
             &last);
}
