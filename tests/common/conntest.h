/*
 * Helpers for the connector integration suites (test_exchange, test_source,
 * test_sink): a job configuration pointing at KSNAP_TEST_BOOTSTRAP, and
 * polling loops with deadlines. Failures abort the current Check test.
 */
#ifndef KSNAP_CONNTEST_H
#define KSNAP_CONNTEST_H

#include "ksnap/conf.h"

/**
 * @returns a configuration with job.name=@p job,
 * kafka.bootstrap.servers=$KSNAP_TEST_BOOTSTRAP (required) and the extra
 * NULL-terminated key, value pairs @p kv (full ksnap keys).
 */
ksnap_conf_t *ksnap_test_conn_conf(const char *job, const char *const *kv);

/** Sets one more key on @p conf or fails the test. */
void ksnap_test_conn_set(ksnap_conf_t *conf, const char *key,
                         const char *value);

#endif /* KSNAP_CONNTEST_H */
