/* Running the built `ksnap` binary from a Check suite (clitest.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

static char *slurp(FILE *fp) {
  ksnap_buf_t buf;
  char chunk[4096];
  size_t n;

  ksnap_buf_init(&buf);
  ksnap_buf_append(&buf, "", 0);
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
    ksnap_buf_append(&buf, chunk, n);
  return (char *)ksnap_buf_detach(&buf, NULL);
}

int ksnap_test_cli(const char *env, const char *args, char **outp,
                   char **errp) {
  char cmd[4096], errfile[] = "/tmp/ksnap-cli-XXXXXX";
  int fd = mkstemp(errfile), status;
  FILE *fp, *ef;

  ck_assert_int_ge(fd, 0);
  snprintf(cmd, sizeof(cmd), "env %s %s %s 2>%s", env, KSNAP_TEST_BIN, args,
           errfile);
  ck_assert_ptr_nonnull(fp = popen(cmd, "r"));
  *outp = slurp(fp);
  status = pclose(fp);
  ck_assert_ptr_nonnull(ef = fdopen(fd, "r"));
  *errp = slurp(ef);
  fclose(ef);
  unlink(errfile);
  ck_assert_msg(WIFEXITED(status), "%s: did not exit", cmd);
  return WEXITSTATUS(status);
}
