/* Helpers shared by the configuration suites (test_conf*.c). */
#ifndef KSNAP_CONFTEST_H
#define KSNAP_CONFTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "testutil.h"

static char errors[8192];

static inline void collect(void *opaque, const char *msg) {
  (void)opaque;
  strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
  strcat(errors, "\n");
}

static ksnap_conf_t *conf;
static char errstr[512];

static inline void setup(void) {
  conf = ksnap_conf_new();
  ck_assert_ptr_nonnull(conf);
  errors[0] = errstr[0] = '\0';
}

static inline void teardown(void) { ksnap_conf_destroy(conf); }

/* Sets key=value and expects @p code with error line @p msg (or OK). */
static inline void set_expect(const char *key, const char *value, ksnap_err_t code,
                       const char *msg) {
  errstr[0] = '\0';
  ck_assert_msg(ksnap_conf_set(conf, key, value, errstr, sizeof(errstr)) ==
                    code,
                "%s=%s: got \"%s\"", key, value, errstr);
  if (msg)
    ck_assert_str_eq(errstr, msg);
}
#define SET_OK(k, v) set_expect((k), (v), KSNAP_ERR_OK, NULL)
#define SET_BAD(k, v, msg) set_expect((k), (v), KSNAP_ERR_CONF_VALUE, (msg))

static inline int64_t get_dur(const char *key) {
  int64_t v = -1;
  ck_assert_int_eq(ksnap_conf_get_duration_ms(conf, key, &v), KSNAP_ERR_OK);
  return v;
}

static inline int64_t get_size(const char *key) {
  int64_t v = -1;
  ck_assert_int_eq(ksnap_conf_get_size(conf, key, &v), KSNAP_ERR_OK);
  return v;
}

static inline int64_t get_int(const char *key) {
  int64_t v = -1;
  ck_assert_int_eq(ksnap_conf_get_int(conf, key, &v), KSNAP_ERR_OK);
  return v;
}

static inline const char *get_str(const char *key) {
  const char *v = NULL;
  ck_assert_int_eq(ksnap_conf_get_str(conf, key, &v), KSNAP_ERR_OK);
  return v;
}

/* The effective configuration as a malloc'd string. */
static inline char *dump(int masked) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);

  ksnap_conf_dump(conf, fp, masked);
  fclose(fp);
  return text;
}

#endif /* KSNAP_CONFTEST_H */
