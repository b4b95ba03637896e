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

/* @returns the index of @p name in @p specs[0..n), or n. */
static size_t spec_find(const ksnap_topic_spec_t *specs, size_t n,
                        const char *name) {
  size_t i = 0;

  while (i < n && strcmp(specs[i].name, name))
    i++;
  return i;
}

size_t cli_job_external_topics(const ksnap_job_t *job,
                               ksnap_topic_spec_t *specs, size_t max) {
  size_t n = 0;

  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++) {
    const ksnap_job_stage_t *st = ksnap_job_stage(job, s);
    int p = (int)ksnap_job_stage_parallelism(st);
    size_t nin = ksnap_job_stage_input_cnt(st);
    for (size_t i = 0; i < nin + ksnap_job_stage_output_cnt(st); i++) {
      const ksnap_job_topic_t *t =
          i < nin ? ksnap_job_stage_input(st, i)
                  : ksnap_job_stage_output(st, i - nin);
      size_t k;
      if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_EXCHANGE)
        continue;
      k = spec_find(specs, n, ksnap_job_topic_name(t));
      if (k == n && n < max)
        specs[n++] = (ksnap_topic_spec_t){ksnap_job_topic_name(t), p, 0};
      else if (k < n && specs[k].partitions < p)
        specs[k].partitions = p;
    }
  }
  return n;
}

const char *cli_job_single_source(const ksnap_job_t *job, const char *cmd) {
  const char *name = NULL;

  for (size_t i = 0; i < ksnap_job_topic_cnt(job); i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(job, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_SOURCE)
      continue;
    if (name) {
      fprintf(stderr, "ksnap %s: --input needs a job with one source topic "
                      "(this one reads %s and %s)\n", cmd, name,
              ksnap_job_topic_name(t));
      return NULL;
    }
    name = ksnap_job_topic_name(t);
  }
  if (!name)
    fprintf(stderr, "ksnap %s: the job has no source topic\n", cmd);
  return name;
}
