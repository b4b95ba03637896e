/* The whole job in one process (see runner.h). */
#include "runner.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "driver/coord_driver.h"
#include "ksnap/job.h"
#include "ksnap/log.h"
#include "task/task.h"
#include "task/worker.h"

struct ksnap_runner_s {
  const ksnap_conf_t *conf;
  ksnap_job_t *job;
  ksnap_worker_t *worker;
  pthread_t coord_thread;
  int coord_started;
  volatile sig_atomic_t coord_stop;
  pthread_mutex_t lock; /* guards the fields below */
  int coord_done;
  ksnap_err_t coord_result;
  ksnap_error_t coord_error;
  ksnap_stats_summary_t summary;
};

static void observe(void *opaque, const ksnap_stats_summary_t *summary) {
  ksnap_runner_t *r = opaque;

  pthread_mutex_lock(&r->lock);
  r->summary = *summary;
  pthread_mutex_unlock(&r->lock);
}

static void *coord_main(void *arg) {
  ksnap_runner_t *r = arg;
  ksnap_error_t error;
  ksnap_err_t err;

  ksnap_error_clear(&error);
  err = ksnap_coord_run_observed(r->conf, &r->coord_stop, observe, r, &error);
  pthread_mutex_lock(&r->lock);
  r->coord_done = 1;
  r->coord_result = err;
  r->coord_error = error;
  pthread_mutex_unlock(&r->lock);
  return NULL;
}

ksnap_err_t ksnap_runner_start(const ksnap_conf_t *conf, const char *job_dir,
                               ksnap_runner_t **runnerp,
                               ksnap_error_t *error) {
  ksnap_runner_t *r = calloc(1, sizeof(*r));
  ksnap_err_t err;

  *runnerp = NULL;
  if (!r)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  r->conf = conf;
  pthread_mutex_init(&r->lock, NULL);
  if ((err = ksnap_job_new(conf, &r->job, NULL, NULL))) {
    ksnap_error_set(error, err, "the job's stages are not valid (see above)");
    ksnap_runner_stop(r);
    return err;
  }
  if (pthread_create(&r->coord_thread, NULL, coord_main, r)) {
    ksnap_runner_stop(r);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "cannot start the coordinator thread");
  }
  r->coord_started = 1;
  if ((err = ksnap_worker_new(conf, job_dir, NULL, &r->worker, error)) ||
      (err = ksnap_worker_start(r->worker, error))) {
    ksnap_runner_stop(r);
    return err;
  }
  *runnerp = r;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_runner_tick(ksnap_runner_t *r, ksnap_error_t *error) {
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_worker_tick(r->worker);
  pthread_mutex_lock(&r->lock);
  if (r->coord_done) {
    err = r->coord_result;
    if (err && error)
      *error = r->coord_error;
  }
  pthread_mutex_unlock(&r->lock);
  return err;
}

int ksnap_runner_coordinator_done(ksnap_runner_t *r) {
  int done;

  pthread_mutex_lock(&r->lock);
  done = r->coord_done;
  pthread_mutex_unlock(&r->lock);
  return done;
}

/* @returns the stage of task id "stage[i]". */
static const ksnap_job_stage_t *task_stage(const ksnap_job_t *job,
                                           const char *id) {
  char name[KSNAP_JOB_TASK_ID_SIZE];
  size_t n = strcspn(id, "[");

  if (n >= sizeof(name))
    return NULL;
  memcpy(name, id, n);
  name[n] = '\0';
  return ksnap_job_stage_find(job, name);
}

void ksnap_runner_stats(ksnap_runner_t *r, ksnap_runner_stats_t *out) {
  memset(out, 0, sizeof(*out));
  for (size_t i = 0; r->worker && i < ksnap_worker_task_cnt(r->worker); i++) {
    ksnap_task_t *t = ksnap_worker_task(r->worker, i);
    const ksnap_job_stage_t *st = task_stage(r->job, ksnap_task_id(t));
    if (st && ksnap_job_stage_is_source(st))
      out->records_in += ksnap_task_records_in(t);
    if (st && ksnap_job_stage_is_sink(st))
      out->records_out += ksnap_task_records_out(t);
    out->failed_tasks += ksnap_task_failed(t) ? 1 : 0;
  }
  pthread_mutex_lock(&r->lock);
  out->ckpt = r->summary;
  pthread_mutex_unlock(&r->lock);
}

void ksnap_runner_stop(ksnap_runner_t *r) {
  if (!r)
    return;
  if (r->coord_started) {
    r->coord_stop = 1;
    pthread_join(r->coord_thread, NULL);
  }
  ksnap_worker_destroy(r->worker);
  ksnap_job_destroy(r->job);
  pthread_mutex_destroy(&r->lock);
  free(r);
}
