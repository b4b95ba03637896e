/**
 * @file conf.h
 * @brief Job configuration: one property table, one setter, typed getters.
 *
 * A ksnap_conf_t holds the effective value of every property of the table
 * (plugin/src/conf/conf_table.c, documented in CONFIGURATION.md, which
 * ksnap_conf_doc() generates), plus two families of dynamic keys:
 *  - `kafka.<name>`: handed to librdkafka untouched (prefix stripped);
 *    each value is checked with rd_kafka_conf_set() on a scratch
 *    configuration, so librdkafka's own error text is the one reported;
 *  - `stage.<stage>.<prop>`: the job's pipeline description, checked
 *    against a small sub-table (parallelism, operator, input, output,
 *    partitions).
 *
 * Values may reference environment variables, `${NAME}` or
 * `${NAME:-default}` (default used when NAME is unset or empty); `$${`
 * stands for a literal `${`. Substitution happens before validation.
 *
 * Error lines have a fixed wording (modelled on librdkafka's):
 *   FILE:LINE: No such configuration property: "KEY"[ (did you mean "K2"?)]
 *   FILE:LINE: KEY: invalid duration "V" (expected a number with unit ms, s, min or h)
 *   FILE:LINE: KEY: value V is outside allowed range MIN..MAX
 *   FILE:LINE: KEY: environment variable "NAME" is not set
 *   FILE:LINE: kafka.KEY: <librdkafka's message>
 *   FILE: missing required property "KEY"
 * (without "FILE:LINE: " when the value came from ksnap_conf_set()).
 * Values of secret properties never appear in an error or a log line.
 *
 * Threading: a ksnap_conf_t belongs to one thread while it is being
 * built; after ksnap_conf_finalize() the const getters may be called from
 * any thread concurrently. No global state.
 */
#ifndef KSNAP_CONF_H
#define KSNAP_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_conf_s ksnap_conf_t;

/** Property value types. */
typedef enum ksnap_conf_type_e {
  KSNAP_CONF_STRING,
  KSNAP_CONF_INT,
  KSNAP_CONF_BOOL,
  KSNAP_CONF_DURATION, /**< integer milliseconds; units ms, s, min, h */
  KSNAP_CONF_SIZE,     /**< integer bytes; units b, k(b), m(b), g(b), kib.. */
  KSNAP_CONF_ENUM,
  KSNAP_CONF_URL, /**< s3://bucket/prefix, file:///path or a plain path */
  KSNAP_CONF_DOUBLE, /**< decimal number, held to 6 decimal places */
} ksnap_conf_type_t;

/** Receives one complete error line (no trailing newline). */
typedef void(ksnap_conf_error_cb_t)(void *opaque, const char *msg);

/** @returns a configuration holding only defaults, or NULL (no memory). */
ksnap_conf_t *ksnap_conf_new(void);

/** Frees @p conf. NULL is a no-op. */
void ksnap_conf_destroy(ksnap_conf_t *conf);

/**
 * Sets @p key to @p value (after `${VAR}` substitution), validating it.
 * A later set of the same key replaces the earlier value.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_CONF_UNKNOWN (no such key) or
 * KSNAP_ERR_CONF_VALUE (bad value, unset variable, or a kafka.* value
 * librdkafka refused), with the error line in @p errstr; KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_conf_set(ksnap_conf_t *conf, const char *key,
                           const char *value, char *errstr,
                           size_t errstr_size);

/**
 * Parses the .properties file at @p path and sets every entry in file
 * order (a later duplicate wins). Every problem (syntax, unknown key, bad
 * value) is passed to @p error_cb as one line naming FILE:LINE; loading
 * goes on after an error so that all problems are reported at once.
 * @p error_cb NULL logs the lines at level ERR instead.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_IO (unreadable file), or the code of
 * the first problem (KSNAP_ERR_CONF_SYNTAX, _UNKNOWN, _VALUE).
 */
ksnap_err_t ksnap_conf_load_file(ksnap_conf_t *conf, const char *path,
                                 ksnap_conf_error_cb_t *error_cb,
                                 void *opaque);

/** As ksnap_conf_load_file() for text in memory named @p name. */
ksnap_err_t ksnap_conf_load_string(ksnap_conf_t *conf, const char *name,
                                   const char *text,
                                   ksnap_conf_error_cb_t *error_cb,
                                   void *opaque);

/**
 * Runs the checks that involve the whole configuration: required
 * properties, then cross-property rules (e.g. heartbeat.timeout greater
 * than heartbeat.interval). Every problem goes to @p error_cb.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_CONF_MISSING or KSNAP_ERR_CONF_VALUE.
 */
ksnap_err_t ksnap_conf_finalize(ksnap_conf_t *conf,
                                ksnap_conf_error_cb_t *error_cb,
                                void *opaque);

/**
 * Typed getters. @p key is a table property or a stage.X.Y key.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_NOT_FOUND if the key is unknown or has
 * neither a value nor a default; KSNAP_ERR_INVALID_ARG if the property
 * has another type (get_str works for every type and returns the
 * normalized text).
 * @remark get_str's string is owned by @p conf, valid until the key is set
 * again or @p conf is destroyed.
 */
ksnap_err_t ksnap_conf_get_str(const ksnap_conf_t *conf, const char *key,
                               const char **valuep);
ksnap_err_t ksnap_conf_get_int(const ksnap_conf_t *conf, const char *key,
                               int64_t *valuep);
ksnap_err_t ksnap_conf_get_bool(const ksnap_conf_t *conf, const char *key,
                                int *valuep);
ksnap_err_t ksnap_conf_get_duration_ms(const ksnap_conf_t *conf,
                                       const char *key, int64_t *valuep);
ksnap_err_t ksnap_conf_get_size(const ksnap_conf_t *conf, const char *key,
                                int64_t *valuep);
ksnap_err_t ksnap_conf_get_double(const ksnap_conf_t *conf, const char *key,
                                  double *valuep);

/**
 * @returns "FILE:LINE" where @p key (a table, kafka.* or stage.* key) was
 * last set, or NULL if it was set through ksnap_conf_set(), is unset, or
 * holds its default. Owned by @p conf, valid until the key is set again.
 */
const char *ksnap_conf_where(const ksnap_conf_t *conf, const char *key);

/**
 * @returns the path of the first file loaded into @p conf, or NULL; owned
 * by @p conf. Used to name a problem that has no line ("FILE: ...").
 */
const char *ksnap_conf_origin(const ksnap_conf_t *conf);

/** @returns 1 if @p key was set explicitly (not a default). */
int ksnap_conf_is_set(const ksnap_conf_t *conf, const char *key);

/**
 * Calls @p cb for every kafka.* entry in the order first set, with the
 * prefix stripped, e.g. ("bootstrap.servers", "127.0.0.1:9092"), as a
 * caller hands them to rd_kafka_conf_set(). Stops at the first non-zero
 * return of @p cb and returns it; 0 otherwise.
 */
int ksnap_conf_foreach_kafka(const ksnap_conf_t *conf,
                             int (*cb)(void *opaque, const char *name,
                                       const char *value),
                             void *opaque);

/**
 * Calls @p cb for every stage.* entry (full key, e.g.
 * "stage.map.parallelism") in the order first set; stops as above.
 */
int ksnap_conf_foreach_stage(const ksnap_conf_t *conf,
                             int (*cb)(void *opaque, const char *key,
                                       const char *value),
                             void *opaque);

/**
 * Prints the effective configuration as a valid .properties file: every
 * table property with its value, then the kafka.* and stage.* entries,
 * each under a comment line naming where it came from ("# FILE:LINE",
 * "# default", "# set by the application"; printed when it changes);
 * properties without value or default are commented out under "# unset".
 * With @p masked, secret values print as "********".
 */
void ksnap_conf_dump(const ksnap_conf_t *conf, FILE *fp, int masked);

/** Prints every table property: name, type, default, description. */
void ksnap_conf_list(FILE *fp);

/** Prints CONFIGURATION.md (Markdown), generated from the table. */
void ksnap_conf_doc(FILE *fp);

/** @returns 1 if @p key (a table, kafka.* or stage.* key) is secret. */
int ksnap_conf_is_secret(const char *key);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_CONF_H */
