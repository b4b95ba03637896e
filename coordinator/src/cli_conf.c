/* Loading a job file for the subcommands, with the errors printed on
 * stderr one per line (the format of `ksnap config check`). */
#include "cli.h"

void cli_print_error(void *opaque, const char *msg) {
  (void)opaque;
  fprintf(stderr, "%s\n", msg);
}

int cli_conf_load(const char *path, ksnap_conf_t **confp) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_err_t err, ferr = KSNAP_ERR_OK;

  *confp = NULL;
  if (!conf) {
    fprintf(stderr, "ksnap: out of memory\n");
    return KSNAP_EXIT_FAIL;
  }
  err = ksnap_conf_load_file(conf, path, cli_print_error, NULL);
  if (err != KSNAP_ERR_IO && err != KSNAP_ERR_NOMEM)
    ferr = ksnap_conf_finalize(conf, cli_print_error, NULL);
  if (err || ferr) {
    ksnap_conf_destroy(conf);
    return KSNAP_EXIT_FAIL;
  }
  *confp = conf;
  return KSNAP_EXIT_OK;
}
