/*
 * The checks before a command runs or describes a job (cli.h,
 * cli_job_check()): the job's preflight, and what an embedded job means
 * for each command. `ksnap config check` and `ksnap job describe` check
 * an embedded job with the defaults `ksnap run` would give it, so that
 * they accept exactly what `ksnap run` accepts.
 */
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int is_embedded(void *opaque, const char *name, const char *value) {
  (void)opaque;
  return !strcmp(name, "bootstrap.servers") && !strcmp(value, "embedded");
}

int cli_is_embedded(const ksnap_conf_t *conf) {
  return ksnap_conf_foreach_kafka(conf, is_embedded, NULL);
}

static int set(ksnap_conf_t *conf, const char *key, const char *value) {
  char errstr[512];

  if (ksnap_conf_set(conf, key, value, errstr, sizeof(errstr))) {
    fprintf(stderr, "ksnap: %s\n", errstr);
    return -1;
  }
  return 0;
}

/* `ksnap run`'s defaults for an embedded job: a new checkpoint directory
 * under $TMPDIR, and a transaction timeout that passes the sink's rule
 * (the embedded cluster does not enforce it). Each only when unset. */
static int embedded_defaults(ksnap_conf_t *conf) {
  int64_t interval = 0, timeout = 0, pool = 0, need;
  const char *job = "job", *tmp = getenv("TMPDIR");
  char buf[4096];

  if (!ksnap_conf_is_set(conf, "state.checkpoints.dir")) {
    ksnap_conf_get_str(conf, "job.name", &job);
    snprintf(buf, sizeof(buf), "%s/ksnap-run-%s-%ld",
             tmp && *tmp ? tmp : "/tmp", job ? job : "job", (long)getpid());
    if (set(conf, "state.checkpoints.dir", buf))
      return -1;
  }
  if (ksnap_conf_is_set(conf, "kafka.transaction.timeout.ms"))
    return 0;
  ksnap_conf_get_duration_ms(conf, "execution.checkpointing.interval",
                             &interval);
  ksnap_conf_get_duration_ms(conf, "execution.checkpointing.timeout",
                             &timeout);
  ksnap_conf_get_int(conf, "sink.producer-pool-size", &pool);
  need = interval * pool + timeout + 60000;
  snprintf(buf, sizeof(buf), "%" PRId64, need > 60000 ? need : 60000);
  return set(conf, "kafka.transaction.timeout.ms", buf);
}

int cli_job_check(ksnap_conf_t *conf, const char *path, int flags,
                  ksnap_job_t **jobp) {
  char *copy;
  ksnap_err_t err;

  if (jobp)
    *jobp = NULL;
  if (cli_is_embedded(conf)) {
    if (flags & CLI_JOB_NO_EMBEDDED) {
      const char *where = ksnap_conf_where(conf, "kafka.bootstrap.servers");
      fprintf(stderr, "%s: kafka.bootstrap.servers=embedded runs only "
              "inside one process: use `ksnap run`\n", where ? where : path);
      return KSNAP_EXIT_FAIL;
    }
    if ((flags & CLI_JOB_EMBEDDED_RUN) && embedded_defaults(conf))
      return KSNAP_EXIT_FAIL;
  }
  if (!(copy = strdup(path))) {
    fprintf(stderr, "ksnap: out of memory\n");
    return KSNAP_EXIT_FAIL;
  }
  err = ksnap_job_preflight(conf, dirname(copy), jobp, cli_print_error, NULL);
  free(copy);
  return err ? KSNAP_EXIT_FAIL : KSNAP_EXIT_OK;
}
