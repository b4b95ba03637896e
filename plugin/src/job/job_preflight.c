/*
 * The job's preflight (ksnap/job.h): the configuration's rules, the job
 * graph and the operators, checked the way the coordinator, the workers
 * and their tasks check them at start, before anything connects. Each
 * check reports its own problems; this file only runs them in order and
 * adds the operators, which the graph does not load.
 */
#include <stdio.h>

#include "conf/conf_job.h"
#include "ksnap/job.h"
#include "ksnap/log.h"
#include "ksnap/operator.h"

static void emit(ksnap_conf_error_cb_t *cb, void *opaque, const char *msg) {
  if (cb)
    cb(opaque, msg);
  else
    KSNAP_ERR("CONF", "%s", msg);
}

/* Resolves (then releases) every stage's operator as a task does;
 * reports "[FILE:LINE: ]stage.S.operator: why". */
static ksnap_err_t check_operators(const ksnap_conf_t *conf,
                                   const ksnap_job_t *job,
                                   const char *job_dir,
                                   ksnap_conf_error_cb_t *cb, void *opaque) {
  ksnap_err_t first = KSNAP_ERR_OK;

  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const ksnap_job_stage_t *s = ksnap_job_stage(job, i);
    ksnap_operator_handle_t *h;
    ksnap_error_t error;
    ksnap_err_t err;
    const char *where;
    char key[160], msg[1024];

    ksnap_error_clear(&error);
    err = ksnap_operator_resolve(ksnap_job_stage_operator(s), job_dir, &h,
                                 &error);
    ksnap_operator_handle_destroy(h);
    if (!err)
      continue;
    snprintf(key, sizeof(key), "stage.%s.operator", ksnap_job_stage_name(s));
    where = ksnap_conf_where(conf, key);
    snprintf(msg, sizeof(msg), "%s%s%s: %s", where ? where : "",
             where ? ": " : "", key, error.msg);
    emit(cb, opaque, msg);
    if (!first)
      first = err;
  }
  return first;
}

ksnap_err_t ksnap_job_preflight(ksnap_conf_t *conf, const char *job_dir,
                                ksnap_job_t **jobp,
                                ksnap_conf_error_cb_t *error_cb,
                                void *opaque) {
  ksnap_job_t *job = NULL;
  ksnap_err_t first, err;
  const char *name = NULL;

  if (jobp)
    *jobp = NULL;
  first = ksnap_conf_finalize(conf, error_cb, opaque);
  err = ksnap__conf_check_job(conf, error_cb, opaque);
  if (!first)
    first = err;
  /* without job.name finalize said so; the graph would say it again */
  if (ksnap_conf_get_str(conf, "job.name", &name) || !name)
    return first;
  if ((err = ksnap_job_new(conf, &job, error_cb, opaque)))
    return first ? first : err;
  err = check_operators(conf, job, job_dir, error_cb, opaque);
  if (!first)
    first = err;
  if (first || !jobp)
    ksnap_job_destroy(job);
  else
    *jobp = job;
  return first;
}
