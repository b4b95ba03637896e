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

static void print_error(void *opaque, const char *msg) {
  (void)opaque;
  fprintf(stderr, "%s\n", msg);
}

static int check(const char *path) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_err_t err, ferr;

  if (!conf) {
    fprintf(stderr, "ksnap config check: out of memory\n");
    return KSNAP_EXIT_FAIL;
  }
  err = ksnap_conf_load_file(conf, path, print_error, NULL);
  if (err == KSNAP_ERR_IO || err == KSNAP_ERR_NOMEM) {
    ksnap_conf_destroy(conf);
    return KSNAP_EXIT_FAIL;
  }
  ferr = ksnap_conf_finalize(conf, print_error, NULL);
  if (!err && !ferr)
    ksnap_conf_dump(conf, stdout, 1);
  ksnap_conf_destroy(conf);
  return err || ferr ? KSNAP_EXIT_FAIL : KSNAP_EXIT_OK;
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
