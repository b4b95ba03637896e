/* `ksnap config check|list|doc`: job configuration files. */
#include <string.h>

#include "cli.h"
#include "ksnap/conf.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap config check FILE\n"
          "       ksnap config list\n"
          "       ksnap config doc\n"
          "\n"
          "check  Validates the job file FILE (.properties). Prints every\n"
          "       problem, one per line as FILE:LINE: MESSAGE, on stderr and\n"
          "       exits 1; otherwise prints the effective configuration\n"
          "       (every property, its value, and where it came from) with\n"
          "       secret values masked, and exits 0.\n"
          "list   Lists every property with its type, default and\n"
          "       description.\n"
          "doc    Prints CONFIGURATION.md (Markdown) generated from the\n"
          "       property table.\n");
}

static int check(const char *path) {
  ksnap_conf_t *conf;
  int rc = cli_conf_load(path, &conf);

  if (rc == KSNAP_EXIT_OK)
    ksnap_conf_dump(conf, stdout, 1);
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
