#include "conntest.h"

#include <check.h>

#include "testutil.h"

void ksnap_test_conn_set(ksnap_conf_t *conf, const char *key,
                         const char *value) {
  char errstr[512];

  ck_assert_msg(ksnap_conf_set(conf, key, value, errstr, sizeof(errstr)) ==
                    KSNAP_ERR_OK,
                "conf %s=%s: %s", key, value, errstr);
}

ksnap_conf_t *ksnap_test_conn_conf(const char *job, const char *const *kv) {
  ksnap_conf_t *conf = ksnap_conf_new();

  ck_assert_ptr_nonnull(conf);
  ksnap_test_conn_set(conf, "job.name", job);
  ksnap_test_conn_set(conf, "kafka.bootstrap.servers",
                      ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"));
  for (size_t i = 0; kv && kv[i]; i += 2)
    ksnap_test_conn_set(conf, kv[i], kv[i + 1]);
  return conf;
}
