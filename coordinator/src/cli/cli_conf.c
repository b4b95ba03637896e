/* Loading a job file for the subcommands, with the errors printed on
 * stderr one per line (the format of `ksnap config check`). */
#include <string.h>

#include "cli.h"
#include "ksnap/log.h"

void cli_print_error(void *opaque, const char *msg) {
  (void)opaque;
  fprintf(stderr, "%s\n", msg);
}

int cli_conf_read(const char *path, ksnap_conf_t **confp) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_err_t err;

  *confp = NULL;
  if (!conf) {
    fprintf(stderr, "ksnap: out of memory\n");
    return KSNAP_EXIT_FAIL;
  }
  err = ksnap_conf_load_file(conf, path, cli_print_error, NULL);
  if (err) {
    /* finalize's problems too, so that one run shows them all */
    if (err != KSNAP_ERR_IO && err != KSNAP_ERR_NOMEM)
      ksnap_conf_finalize(conf, cli_print_error, NULL);
    ksnap_conf_destroy(conf);
    return KSNAP_EXIT_FAIL;
  }
  *confp = conf;
  return KSNAP_EXIT_OK;
}

int cli_conf_load(const char *path, ksnap_conf_t **confp) {
  int rc = cli_conf_read(path, confp);

  if (rc || !ksnap_conf_finalize(*confp, cli_print_error, NULL))
    return rc;
  ksnap_conf_destroy(*confp);
  *confp = NULL;
  return KSNAP_EXIT_FAIL;
}

int cli_log_from_conf(const ksnap_conf_t *conf) {
  static const char *const names[] = {"error", "warning", "notice", "info",
                                      "debug"};
  const char *level = NULL, *debug = NULL;
  char errstr[256];
  uint32_t mask = 0;

  if (!ksnap_conf_get_str(conf, "log.level", &level) && level) {
    for (int i = 0; i < 5; i++)
      if (!strcmp(level, names[i]))
        ksnap_log_set_level(KSNAP_LOG_ERR + i);
  }
  if (!ksnap_conf_get_str(conf, "log.debug", &debug) && debug && *debug) {
    if (ksnap_log_parse_debug(debug, &mask, errstr, sizeof(errstr))) {
      fprintf(stderr, "ksnap: log.debug: %s\n", errstr);
      return KSNAP_EXIT_FAIL;
    }
    ksnap_log_set_debug(mask);
  }
  return KSNAP_EXIT_OK;
}

int cli_parse_duration(const char *s, int64_t *ms) {
  ksnap_conf_t *c = ksnap_conf_new();
  char errstr[256];
  int rc = -1;

  /* the configuration's duration syntax, through a duration property */
  if (c && !ksnap_conf_set(c, "execution.checkpointing.timeout", s, errstr,
                           sizeof(errstr)) &&
      !ksnap_conf_get_duration_ms(c, "execution.checkpointing.timeout", ms))
    rc = 0;
  ksnap_conf_destroy(c);
  return rc;
}
