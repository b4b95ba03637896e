/*
 * Internals of the configuration module (ksnap/conf.h), shared by
 * conf.c (setter, loader), conf_check.c (finalize), conf_get.c (getters,
 * secrets, dump), conf_table.c (the property table), conf_value.c (typed
 * value parsing and formatting) and conf_doc.c (list and
 * CONFIGURATION.md). kafka.* values are checked through conf_kafka.h,
 * which the Kafka wrapper implements: no file of conf includes librdkafka.
 */
#ifndef KSNAP_CONF_INT_H
#define KSNAP_CONF_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf_kafka.h"
#include "ksnap/conf.h"

#define KSNAP__CONF_REQUIRED 0x1 /* finalize fails if unset */
#define KSNAP__CONF_SECRET 0x2   /* value printed as KSNAP__CONF_MASK */

#define KSNAP__CONF_MASK "********"

/* A DOUBLE is held as an integer count of millionths (num, vmin, vmax),
 * so that ranges and normalized text share the integer code. */
#define KSNAP__CONF_MICRO 1000000

/*
 * Extra check of a string-like value after type parsing. Fills errstr
 * with the text after "KEY: " and returns -1 on a bad value.
 */
typedef int(ksnap__conf_check_fn_t)(const char *value, char *errstr,
                                    size_t errstr_size);

typedef struct ksnap__conf_prop_s {
  const char *name;
  ksnap_conf_type_t type;
  int64_t vmin, vmax; /* INT, DURATION (ms), SIZE (bytes), DOUBLE (in
                       * millionths: KSNAP__CONF_MICRO) */
  const char *sdef;   /* default as text; NULL: none */
  const char *enums;  /* ENUM: "A|B|C", canonical spelling */
  int flags;
  ksnap__conf_check_fn_t *check;
  const char *desc;
} ksnap__conf_prop_t;

/* The table, in documentation order (conf_table.c). */
extern const ksnap__conf_prop_t ksnap__conf_props[];
extern const size_t ksnap__conf_nprops;
/* Sub-keys of stage.<name>.<prop> (conf_table.c). */
extern const ksnap__conf_prop_t ksnap__conf_stage_props[];
extern const size_t ksnap__conf_stage_nprops;

/* @returns the stage.* row of sub-key @p sub ("parallelism", and
 * "output.OUT" for any valid output name OUT), or NULL. */
const ksnap__conf_prop_t *ksnap__conf_stage_prop_find(const char *sub);

/* @returns the row named @p name in @p table, or NULL. */
const ksnap__conf_prop_t *ksnap__conf_prop_find(const ksnap__conf_prop_t *table,
                                                size_t n, const char *name);

/*
 * conf_value.c: parses @p value for @p prop. On success sets *normp (malloc'd
 * normalized text) and *nump (INT/DURATION/SIZE/BOOL/ENUM index) and returns
 * 0; on error fills errstr with "KEY: ..." (naming @p key, never echoing a
 * secret value) and returns -1.
 */
int ksnap__conf_parse_value(const ksnap__conf_prop_t *prop, const char *key,
                            const char *value, char **normp, int64_t *nump,
                            char *errstr, size_t errstr_size);

/* Formats @p v of @p type ("10s", "16MiB", "5") into buf. */
void ksnap__conf_format_num(ksnap_conf_type_t type, int64_t v, char *buf,
                            size_t size);

/* Type name for docs ("duration"). */
const char *ksnap__conf_type_name(ksnap_conf_type_t type);

/*
 * Expands ${VAR} and ${VAR:-default} in @p value into *outp (malloc'd).
 * On error fills errstr (e.g. `environment variable "X" is not set`) and
 * returns -1.
 */
int ksnap__conf_substitute(const char *value, char **outp, char *errstr,
                           size_t errstr_size);

/*
 * Replaces every occurrence of @p secret in the NUL-terminated @p msg
 * (buffer of @p size) with KSNAP__CONF_MASK, truncating if needed: for
 * librdkafka messages about secret properties.
 */
void ksnap__conf_mask_in(char *msg, size_t size, const char *secret);

/* Levenshtein distance, capped: returns cap+1 when larger than @p cap. */
int ksnap__conf_edit_distance(const char *a, const char *b, int cap);

/* conf_get.c: @returns 1 if the librdkafka property @p name holds a
 * secret (a rule on names: no librdkafka call). */
int ksnap__conf_kafka_is_secret(const char *name);

/* The configuration object (conf.c owns it; conf_check.c, conf_get.c read). */
typedef struct ksnap__conf_val_s {
  char *text;  /* normalized value; NULL: unset without default */
  int64_t num; /* INT/DURATION/SIZE/BOOL value, ENUM index */
  char *where; /* "FILE:LINE" of the setting; NULL: default or API */
  int set;     /* explicitly set */
} ksnap__conf_val_t;

/* A kafka.* or stage.* entry. */
typedef struct ksnap__conf_dyn_s {
  char *key; /* kafka: name without "kafka."; stage: the full key */
  const ksnap__conf_prop_t *prop; /* stage sub-property; NULL for kafka */
  ksnap__conf_val_t val;
} ksnap__conf_dyn_t;

typedef struct ksnap__conf_dynlist_s {
  ksnap__conf_dyn_t *v;
  size_t n, cap;
} ksnap__conf_dynlist_t;

struct ksnap_conf_s {
  ksnap__conf_val_t *vals; /* one per ksnap__conf_props row */
  ksnap__conf_dynlist_t kafka, stage;
  ksnap__conf_kafka_t *kc;
  char *origin; /* first file loaded: names "missing required" errors */
};

/* Emits one error line to @p cb, or to the log without one (conf.c). */
void ksnap__conf_emit(ksnap_conf_error_cb_t *cb, void *opaque, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));

/* @returns a table property's value (and row in *propp), or NULL. */
const ksnap__conf_val_t *ksnap__conf_val_find(const ksnap_conf_t *conf,
                                              const char *key,
                                              const ksnap__conf_prop_t **propp);

/*
 * conf_doc.c: writes @p s to @p fp escaped for a .properties file (a key
 * also escapes '=', ':', ' ', and a leading '#' or '!').
 */
void ksnap__conf_print_escaped(FILE *fp, const char *s, int is_key);

#endif /* KSNAP_CONF_INT_H */
