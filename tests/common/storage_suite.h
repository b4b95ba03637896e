/*
 * The behavioural storage suite, one body for every backend:
 * test_storage_file.c runs it on file://, test_storage_s3.c on the S3
 * test server. A backend describes itself with a ksnap_test_storage_env_t.
 */
#ifndef KSNAP_STORAGE_SUITE_H
#define KSNAP_STORAGE_SUITE_H

#include <check.h>
#include <stdint.h>

#include "ksnap/storage.h"

typedef struct ksnap_test_storage_env_s {
  const char *name;
  /** A fresh, unique storage URL for one test (malloc'd). */
  char *(*new_url)(const char *tag);
  /** Fills options (credentials, endpoint) on top of ksnap defaults. */
  void (*opts)(ksnap_storage_opts_t *opts);
} ksnap_test_storage_env_t;

/** The backend under test; set by the suite's main() before running. */
extern const ksnap_test_storage_env_t *ksnap_test_storage_env;

/** Opens a fresh storage (part size 5 MiB) for a test; asserts success. */
ksnap_storage_t *ksnap_test_storage_open(const char *tag);

/** Deletes every object under @p st (list + delete), then destroys it. */
void ksnap_test_storage_close(ksnap_storage_t *st);

/** The shared test cases (timeout 120 s). */
TCase *ksnap_test_storage_tcase(void);

/** Adds the cases of streamed writers with a head and a writer thread,
 *  and of ranged reads (storage_suite_writer.c). */
void ksnap_test_storage_writer_cases(TCase *tc);

/** @p len deterministic pseudo-random bytes (malloc'd). */
uint8_t *ksnap_test_pattern(size_t len, unsigned seed);

#endif /* KSNAP_STORAGE_SUITE_H */
