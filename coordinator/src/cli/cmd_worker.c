/* `ksnap worker JOB.properties [--tasks stage:0,stage:1]`: runs tasks of a
 * job (all of them by default) until SIGINT or SIGTERM. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/log.h"
#include "task/worker.h"

/* ksnap_conf_foreach_kafka callback: 1 for bootstrap.servers=embedded. */
static int is_embedded(void *opaque, const char *name, const char *value) {
  (void)opaque;
  return !strcmp(name, "bootstrap.servers") && !strcmp(value, "embedded");
}

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap worker [--tasks STAGE:I[,STAGE:I...]] FILE\n"
          "\n"
          "Runs tasks of the job in FILE until SIGINT or SIGTERM: creates\n"
          "the job's internal and exchange topics, reads the control topic\n"
          "to find the generation and the checkpoint to restore from (the\n"
          "last RESTORE record; none: a fresh start in generation 1), then\n"
          "runs one processing thread per task, acknowledges checkpoints\n"
          "and sends heartbeats.\n"
          "  --tasks LIST  only these tasks (default: every task of the job)\n");
}

int cmd_worker(int argc, char **argv) {
  const char *file = NULL, *tasks = NULL;
  ksnap_conf_t *conf = NULL;
  ksnap_worker_t *w = NULL;
  ksnap_error_t error;
  char *dir = NULL;
  int rc = KSNAP_EXIT_FAIL;
  const char *level = NULL;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
      tasks = argv[++i];
    else if (argv[i][0] == '-' || file) {
      usage(stderr);
      return KSNAP_EXIT_USAGE;
    } else
      file = argv[i];
  }
  if (!file) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if (cli_conf_load(file, &conf))
    return KSNAP_EXIT_FAIL;
  if (ksnap_conf_foreach_kafka(conf, is_embedded, NULL)) {
    fprintf(stderr, "ksnap worker: %s: kafka.bootstrap.servers=embedded "
            "runs only inside one process: use `ksnap run`\n", file);
    ksnap_conf_destroy(conf);
    return KSNAP_EXIT_FAIL;
  }
  if (!ksnap_conf_get_str(conf, "log.level", &level) && level) {
    static const char *names[] = {"error", "warning", "notice", "info",
                                  "debug"};
    for (int l = 0; l < 5; l++)
      if (!strcmp(level, names[l]))
        ksnap_log_set_level(KSNAP_LOG_ERR + l);
  }
  cli_stop_on_signals();
  dir = strdup(file);
  ksnap_error_clear(&error);
  if (ksnap_worker_new(conf, dir ? dirname(dir) : NULL, tasks, &w, &error) ||
      ksnap_worker_run(w, &cli_stop_requested, &error))
    fprintf(stderr, "ksnap worker: %s\n", error.msg);
  else
    rc = KSNAP_EXIT_OK;
  ksnap_worker_destroy(w);
  ksnap_conf_destroy(conf);
  free(dir);
  return rc;
}
