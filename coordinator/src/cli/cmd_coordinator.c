/* `ksnap coordinator [--resume-failed] JOB.properties`: runs the job's
 * checkpoint coordinator with the public API (ksnap/run.h,
 * KSNAP_RUN_COORDINATOR) until SIGINT/SIGTERM, a stop with savepoint, or
 * the job's failure. */
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap coordinator [--resume-failed] [--from-savepoint URL\n"
          "                         [--allow-non-restored-state]] "
          "JOB.properties\n"
          "\n"
          "Runs the checkpoint coordinator of the job: triggers checkpoints\n"
          "(execution.checkpointing.*), collects the tasks' acks on\n"
          "<job>.ksnap.acks, writes chk-N/_metadata to state.checkpoints.dir\n"
          "and TRIGGER/COMPLETE/ABORT/RESTORE to <job>.ksnap.control with\n"
          "the fenced transactional id <job>.ksnap.coordinator. A restarted\n"
          "coordinator resumes from the control topic; starting a second one\n"
          "fences the first. With rest.port set it serves GET /checkpoints\n"
          "(JSON), GET /metrics (Prometheus) and the dashboard page (GET /)\n"
          "on rest.address.\n"
          "\n"
          "Runs until SIGINT/SIGTERM (exit 0), a `ksnap savepoint --stop`\n"
          "completes and the sinks committed it (exit 0: JOB_STOPPED on the\n"
          "control topic stops every worker), or the job fails (exit 1, the\n"
          "cause on stderr). A job stopped so is not run again: started\n"
          "without --from-savepoint the coordinator exits 0 at once, naming\n"
          "the savepoint. A failed task, a silent one or too many failed\n"
          "checkpoints restore the job as restart-strategy.type says; when\n"
          "the strategy gives up, or a task cannot start with the job's\n"
          "configuration, the job FAILS: the coordinator writes JOB_FAILED\n"
          "on the control topic, every worker stops, and a coordinator\n"
          "started again refuses to resume the job (exit 1) unless given\n"
          "--resume-failed. A job file that `ksnap config check` refuses is\n"
          "refused first (exit 1, every problem on stderr), before anything\n"
          "connects.\n"
          "\n"
          "Options:\n"
          "  --resume-failed  resume a job that FAILED: restore it in a new\n"
          "                   generation from its latest completed\n"
          "                   checkpoint (fix the cause first; workers\n"
          "                   started after this run again)\n"
          CLI_RESTORE_OPTS_HELP);
}

int cmd_coordinator(int argc, char **argv) {
  const char *file = NULL;
  ksnap_conf_t *conf = NULL;
  int parts = KSNAP_RUN_COORDINATOR;
  cli_restore_opts_t ro = {NULL, 0};
  int rc, r, bad = 0;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--resume-failed"))
      parts |= KSNAP_RUN_RESUME_FAILED;
    else if ((r = cli_restore_opt(argc, argv, &i, &ro)))
      bad |= r < 0;
    else if (argv[i][0] == '-' || file)
      bad = 1;
    else
      file = argv[i];
  }
  if (bad || !file) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if ((rc = cli_conf_read(file, &conf)))
    return rc;
  if ((rc = cli_restore_apply(&ro, conf))) {
    ksnap_conf_destroy(conf);
    return rc;
  }
  /* refused before anything is read or written on Kafka */
  if (!(rc = cli_job_check(conf, file, CLI_JOB_NO_EMBEDDED, NULL)) &&
      !(rc = cli_log_from_conf(conf)))
    rc = cli_run_parts(conf, parts, NULL, "coordinator");
  ksnap_conf_destroy(conf);
  return rc;
}
