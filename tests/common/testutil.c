#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fault.h"
#include "ksnap/ksnap.h" /* ksnap_buf_t */

int ksnap_test_run(Suite *suite) {
  SRunner *runner = srunner_create(suite);
  int failed;

  srunner_run_all(runner, CK_NORMAL);
  failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

const char *ksnap_test_require_env(const char *name) {
  const char *value = getenv(name);

  if (!value || !*value) {
    fprintf(stderr,
            "%s is not set: integration tests need the real servers.\n"
            "Start them with tests/servers/up.sh and source tests/.run/env,\n"
            "or run tests/run.sh, which does both.\n",
            name);
    exit(1);
  }
  return value;
}

void ksnap_test_require_faults(const char *suite) {
  if (KSNAP_FAULT_INJECTION)
    return;
  fprintf(stderr,
          "%s: skipped: it needs the fault hooks (KSNAP_FAULT), and this "
          "build has none.\nConfigure with -DKSNAP_FAULT_INJECTION=ON, or "
          "run tests/run.sh, which does.\n",
          suite);
  exit(KSNAP_TEST_SKIP);
}

char *ksnap_test_tmpdir(const char *tag) {
  char tmpl[256];
  const char *base = getenv("TMPDIR");

  snprintf(tmpl, sizeof(tmpl), "%s/ksnap-%s-XXXXXX", base ? base : "/tmp",
           tag);
  if (!mkdtemp(tmpl)) {
    perror("mkdtemp");
    abort();
  }
  return strdup(tmpl);
}

int ksnap_test_free_port(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof(sa);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;

  ck_assert_int_ge(fd, 0);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

char *ksnap_test_read_all(FILE *fp) {
  ksnap_buf_t buf;
  char chunk[4096];
  size_t n;

  ksnap_buf_init(&buf);
  ksnap_buf_append(&buf, "", 0);
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
    ksnap_buf_append(&buf, chunk, n);
  return (char *)ksnap_buf_detach(&buf, NULL);
}

void ksnap_test_rmtree(const char *path) {
  char cmd[1024];

  if (!path || !strstr(path, "ksnap-"))
    return; /* refuse anything that is not one of ours */
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", path);
}
