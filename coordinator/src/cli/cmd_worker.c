/* `ksnap worker JOB.properties [--tasks stage:0,stage:1 | --join]`: runs
 * tasks of a job (all of them by default, or those the coordinator gives
 * it as a member with --join) until SIGINT or SIGTERM, with the public
 * API (ksnap/run.h, KSNAP_RUN_TASKS). */
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap worker [--tasks STAGE:I[,STAGE:I...] | --join] FILE\n"
          "\n"
          "Runs tasks of the job in FILE until SIGINT or SIGTERM: creates\n"
          "the job's internal and exchange topics, reads the control topic\n"
          "to find the generation and the checkpoint to restore from (the\n"
          "last RESTORE record; none: a fresh start in generation 1), then\n"
          "runs one processing thread per task, acknowledges checkpoints\n"
          "and sends heartbeats. A job file that `ksnap config check`\n"
          "refuses is refused first (exit 1, every problem on stderr),\n"
          "before anything connects. Exit 0 on SIGINT/SIGTERM, and when the\n"
          "job was stopped with a savepoint (`ksnap savepoint --stop`), the\n"
          "savepoint named on stderr; a worker started after that waits for\n"
          "`ksnap coordinator --from-savepoint URL` to start the job again.\n"
          "Exit 1 when the job failed or the worker cannot run.\n"
          "  --tasks LIST  only these tasks (default: every task of the job)\n"
          "  --join        join the job as a member (worker.join=true): run\n"
          "                the tasks the coordinator gives this worker, up to\n"
          "                worker.slots (default: the number of cores); the\n"
          "                coordinator balances the tasks over the members,\n"
          "                moves a lost member's tasks to the others in one\n"
          "                restore, and gives a member that joins tasks at the\n"
          "                next checkpoint; a member removed after missing its\n"
          "                heartbeats (e.g. paused) stops, exit 1. `ksnap job\n"
          "                status FILE` shows the members and their tasks\n");
}

int cmd_worker(int argc, char **argv) {
  const char *file = NULL, *tasks = NULL;
  int join = 0;
  ksnap_conf_t *conf = NULL;
  int rc = KSNAP_EXIT_FAIL;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
      tasks = argv[++i];
    else if (!strcmp(argv[i], "--join"))
      join = 1;
    else if (argv[i][0] == '-' || file) {
      usage(stderr);
      return KSNAP_EXIT_USAGE;
    } else
      file = argv[i];
  }
  if (!file || (join && tasks)) {
    if (join && tasks)
      fprintf(stderr, "ksnap worker: --join and --tasks exclude each other "
              "(a member runs the tasks the coordinator gives it)\n");
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  /* refused before anything is read or written on Kafka */
  if (cli_conf_read(file, &conf))
    return KSNAP_EXIT_FAIL;
  if (join) {
    char errstr[256];
    if (ksnap_conf_set(conf, "worker.join", "true", errstr, sizeof(errstr))) {
      fprintf(stderr, "ksnap worker: %s\n", errstr);
      ksnap_conf_destroy(conf);
      return KSNAP_EXIT_FAIL;
    }
  }
  if (!cli_job_check(conf, file, CLI_JOB_NO_EMBEDDED, NULL) &&
      !cli_log_from_conf(conf))
    rc = cli_run_parts(conf, KSNAP_RUN_TASKS, tasks, "worker");
  ksnap_conf_destroy(conf);
  return rc;
}
