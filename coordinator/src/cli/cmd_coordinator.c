/* `ksnap coordinator JOB.properties`: runs the job's checkpoint
 * coordinator with the public API (ksnap/run.h, KSNAP_RUN_COORDINATOR)
 * until SIGINT/SIGTERM, a stop with savepoint, or the job's failure. */
#include "cli.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap coordinator JOB.properties\n"
          "\n"
          "Runs the checkpoint coordinator of the job: triggers checkpoints\n"
          "(execution.checkpointing.*), collects the tasks' acks on\n"
          "<job>.ksnap.acks, writes chk-N/_metadata to state.checkpoints.dir\n"
          "and TRIGGER/COMPLETE/ABORT/RESTORE to <job>.ksnap.control with\n"
          "the fenced transactional id <job>.ksnap.coordinator. A restarted\n"
          "coordinator resumes from the control topic; starting a second one\n"
          "fences the first. With rest.port set it serves GET /checkpoints\n"
          "(JSON) and GET /metrics (Prometheus) on rest.address.\n"
          "\n"
          "Runs until SIGINT/SIGTERM (exit 0), a `ksnap savepoint --stop`\n"
          "completes (exit 0), or the job fails (exit 1, the reason on\n"
          "stderr). A job file that `ksnap config check` refuses is\n"
          "refused first (exit 1, every problem on stderr), before anything\n"
          "connects.\n");
}

int cmd_coordinator(int argc, char **argv) {
  ksnap_conf_t *conf = NULL;
  int rc;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  if (argc != 2 || argv[1][0] == '-') {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if ((rc = cli_conf_read(argv[1], &conf)))
    return rc;
  /* refused before anything is read or written on Kafka */
  if (!(rc = cli_job_check(conf, argv[1], CLI_JOB_NO_EMBEDDED, NULL)) &&
      !(rc = cli_log_from_conf(conf)))
    rc = cli_run_parts(conf, KSNAP_RUN_COORDINATOR, NULL, "coordinator");
  ksnap_conf_destroy(conf);
  return rc;
}
