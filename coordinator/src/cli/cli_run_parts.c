/* `ksnap worker` and `ksnap coordinator` on the public API (ksnap/run.h):
 * one part of a job in this process until a signal stops it or it ends
 * by itself (see cli.h). */
#include "cli.h"

int cli_run_parts(ksnap_conf_t *conf, int parts, const char *tasks,
                  const char *cmd) {
  ksnap_run_t *run = NULL;
  ksnap_error_t error;
  int rc = KSNAP_EXIT_FAIL;

  ksnap_error_clear(&error);
  cli_stop_on_signals(); /* a signal while starting stops it after */
  if (!ksnap_run_start(conf, parts, tasks, &run, &error)) {
    cli_stop_run_on_signals(run);
    ksnap_run_wait(run, -1);
    cli_stop_run_on_signals(NULL);
    if (!ksnap_run_result(run, &error))
      rc = KSNAP_EXIT_OK;
  }
  if (rc)
    fprintf(stderr, "ksnap %s: %s\n", cmd, error.msg);
  ksnap_run_destroy(run);
  return rc;
}
