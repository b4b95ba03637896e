/* `ksnap config check|list|doc`: job configuration files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/conf.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap config check FILE\n"
          "       ksnap config list\n"
          "       ksnap config doc\n"
          "\n"
          "check  Validates the job file FILE (.properties) with every check\n"
          "       the coordinator, the workers and their tasks make at start\n"
          "       without a server: each value, the rules between them\n"
          "       (e.g. kafka.transaction.timeout.ms against the checkpoint\n"
          "       interval and timeout), the checkpoint storage URL and its\n"
          "       credentials, the job graph, and every stage's operator\n"
          "       (its library loaded as the worker loads it, next to FILE\n"
          "       or along $KSNAP_OPERATOR_PATH; its symbol; its ABI\n"
          "       version). Prints every problem, one per line as\n"
          "       FILE:LINE: MESSAGE, on stderr and exits 1; otherwise\n"
          "       prints the effective configuration (every property, its\n"
          "       value, and where it came from) with secret values masked,\n"
          "       and exits 0.\n"
          "list   Lists every property with its type, default and\n"
          "       description.\n"
          "doc    Prints CONFIGURATION.md (Markdown) generated from the\n"
          "       property table.\n");
}

/* The effective configuration is the file's, printed before an embedded
 * job gets `ksnap run`'s defaults for the checks. */
static int check(const char *path) {
  ksnap_conf_t *conf;
  char *dump = NULL;
  size_t len = 0;
  FILE *mem;
  int rc = cli_conf_read(path, &conf);

  if (rc)
    return rc;
  if (!(mem = open_memstream(&dump, &len))) {
    fprintf(stderr, "ksnap: out of memory\n");
    ksnap_conf_destroy(conf);
    return KSNAP_EXIT_FAIL;
  }
  ksnap_conf_dump(conf, mem, 1);
  fclose(mem);
  rc = cli_job_check(conf, path, CLI_JOB_EMBEDDED_RUN, NULL);
  if (rc == KSNAP_EXIT_OK)
    fwrite(dump, 1, len, stdout);
  free(dump);
  ksnap_conf_destroy(conf);
  return rc;
}

int cmd_config(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  if (argc == 3 && !strcmp(argv[1], "check"))
    return check(argv[2]);
  if (argc == 2 && !strcmp(argv[1], "list")) {
    ksnap_conf_list(stdout);
    return KSNAP_EXIT_OK;
  }
  if (argc == 2 && !strcmp(argv[1], "doc")) {
    ksnap_conf_doc(stdout);
    return KSNAP_EXIT_OK;
  }
  usage(stderr);
  return KSNAP_EXIT_USAGE;
}
