/* `ksnap verify` on the word-count example (verifytest.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "testutil.h"
#include "verifytest.h"

#define NLINES 2000

static void make_input(const char *path) {
  static const char *const words[] = {"alpha", "bravo", "charlie", "delta",
                                      "echo", "foxtrot", "golf", "hotel",
                                      "india", "juliet", "kilo", "lima"};
  FILE *f = fopen(path, "w");
  unsigned seed = 11;

  ck_assert_ptr_nonnull(f);
  for (int l = 0; l < NLINES; l++) {
    int n = 1 + rand_r(&seed) % 8;
    for (int w = 0; w < n; w++)
      fprintf(f, "%s%s", w ? " " : "", words[rand_r(&seed) % 12]);
    fputc('\n', f);
  }
  ck_assert_int_eq(fclose(f), 0);
}

int ksnap_test_verify(int seed, const char *opts, const char *fault,
                      char **outp, char **errp) {
  char *dir = ksnap_test_tmpdir("verify");
  char input[512], env[4096], args[4096];
  int rc;

  snprintf(input, sizeof(input), "%s/input.txt", dir);
  make_input(input);
  snprintf(env, sizeof(env),
           "KAFKA_BOOTSTRAP=%s S3_ENDPOINT=%s S3_BUCKET=%s AWS_REGION=%s "
           "AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s "
           "KSNAP_OPERATOR_PATH=%s/examples/wordcount %s%s",
           ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
           ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"),
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"),
           ksnap_test_require_env("KSNAP_TEST_S3_REGION"),
           ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"),
           ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY"),
           KSNAP_BINARY_DIR, fault ? "KSNAP_FAULT=" : "", fault ? fault : "");
  snprintf(args, sizeof(args),
           "verify --input %s --seed %d --duration 8s --timeout 150s "
           "--dir %s/runs --set execution.checkpointing.interval=1s "
           "--set heartbeat.interval=200ms --set heartbeat.timeout=2s %s "
           "%s/examples/wordcount/wordcount.properties",
           input, seed, dir, opts, KSNAP_SOURCE_DIR);
  rc = ksnap_test_cli(env, args, outp, errp);
  ksnap_test_rmtree(dir);
  free(dir);
  return rc;
}

int ksnap_test_count(const char *s, const char *needle) {
  int n = 0;

  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}
