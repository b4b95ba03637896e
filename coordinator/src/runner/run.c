/*
 * A job run in this process (ksnap/run.h): the coordinator on its own
 * thread, and the tasks of a worker (task/worker.h) on the watch thread,
 * which starts them, sends their heartbeats and ends the run. Threads and
 * ownership are in run_int.h.
 *
 * Life of a run:
 *
 *   ksnap_run_start() --> running --(stop flag: ksnap_run_stop(), or the
 *        |                coordinator ended | the tasks ended: their
 *        |                start failed, every one was replaced)--> ending
 *        | (the check or the tasks'                                 |
 *        v  creation fails: nothing     watch thread: stops the     |
 *      error                 runs)      coordinator, then the tasks |
 *                                                                   |
 *   ksnap_run_wait() returns 1 <-- ended (result set, cv broadcast) <-+
 *
 * The stop flag is the only thing a signal handler touches; every thread
 * of the run polls it (the coordinator's loop and the worker's at least
 * every 100 ms), so no lock or condition variable is needed on that path.
 * A coordinator that ends by itself raises the flag for the tasks.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/coord_driver.h"
#include "ksnap/log.h"
#include "ksnap/records.h"
#include "run_int.h"

#define WATCH_EVERY_MS 100

static void *coord_main(void *arg) {
  ksnap_run_t *r = arg;
  const ksnap_coord_opts_t opts = {
      ksnap__run_observe, r, (r->parts & KSNAP_RUN_RESUME_FAILED) != 0};
  ksnap_error_t error;
  ksnap_err_t err;

  ksnap_error_clear(&error);
  err = ksnap_coord_run_with(r->conf, &r->stop, &opts, &error);
  pthread_mutex_lock(&r->lock);
  r->coord_done = 1;
  r->coord_result = err;
  r->coord_error = error;
  pthread_mutex_unlock(&r->lock);
  r->stop = 1; /* the tasks stop with their coordinator */
  return NULL;
}

/* The end: the coordinator first (it may still write a decision the
 * tasks should hear of), then the tasks. The result is the tasks' error,
 * else the coordinator's (a coordinator that ended by itself stopped the
 * tasks, which then return OK). */
static void end_run(ksnap_run_t *r, ksnap_err_t err, ksnap_error_t *error) {
  ksnap_worker_t *w;

  r->stop = 1;
  if (r->coord_started)
    pthread_join(r->coord_thread, NULL);
  pthread_mutex_lock(&r->lock);
  if (!err && r->coord_done && r->coord_result) {
    err = r->coord_result;
    *error = r->coord_error;
  }
  ksnap__run_task_stats(r, &r->final);
  w = r->worker;
  r->worker = NULL;
  pthread_mutex_unlock(&r->lock);
  ksnap_worker_destroy(w);
  pthread_mutex_lock(&r->lock);
  r->ended = 1;
  r->result = err;
  r->error = *error;
  if (!err)
    ksnap_error_clear(&r->error);
  pthread_cond_broadcast(&r->ended_cv);
  pthread_mutex_unlock(&r->lock);
}

/* Runs the tasks (their start, then their heartbeats) until the stop
 * flag, or until they end by themselves (every one taken over by a newer
 * instance); a run without tasks only waits for the flag. */
static void *watch_main(void *arg) {
  ksnap_run_t *r = arg;
  const struct timespec tick = {0, WATCH_EVERY_MS * 1000 * 1000};
  ksnap_error_t error;
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_error_clear(&error);
  if (r->worker)
    err = ksnap_worker_run(r->worker, &r->stop, &error);
  else
    while (!r->stop)
      nanosleep(&tick, NULL);
  end_run(r, err, &error);
  return NULL;
}

typedef struct problems_s {
  char first[KSNAP_ERROR_MSG_SIZE];
  int cnt;
} problems_t;

static void on_problem(void *opaque, const char *msg) {
  problems_t *p = opaque;

  KSNAP_ERR("CONF", "%s", msg);
  if (!p->cnt++)
    snprintf(p->first, sizeof(p->first), "%s", msg);
}

/* The preflight, with operator libraries looked up next to the job file
 * first, as `ksnap worker FILE` does. */
static ksnap_err_t check(ksnap_run_t *r, char **job_dirp,
                         ksnap_error_t *error) {
  const char *origin = ksnap_conf_origin(r->conf);
  problems_t p = {"", 0};
  char *copy = origin ? strdup(origin) : NULL;
  ksnap_err_t err;

  *job_dirp = NULL;
  if (origin && !copy)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (copy) /* dirname() may return a static string: keep a copy */
    *job_dirp = strdup(dirname(copy));
  free(copy);
  if (origin && !*job_dirp)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  err = ksnap_job_preflight(r->conf, *job_dirp, &r->job, on_problem, &p);
  if (err && p.cnt > 1)
    ksnap_error_set(error, err, "%s (and %d more problems, logged)",
                    p.first, p.cnt - 1);
  else if (err)
    ksnap_error_set(error, err, "%s", p.cnt ? p.first : ksnap_err2str(err));
  return err;
}

static ksnap_err_t check_parts(int parts, const char *tasks,
                               ksnap_error_t *error) {
  if (!(parts & KSNAP_RUN_ALL) ||
      (parts & ~(KSNAP_RUN_ALL | KSNAP_RUN_RESUME_FAILED)))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "parts 0x%x: "
                           "expected KSNAP_RUN_COORDINATOR, KSNAP_RUN_TASKS "
                           "or both", (unsigned)parts);
  if ((parts & KSNAP_RUN_RESUME_FAILED) && !(parts & KSNAP_RUN_COORDINATOR))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "KSNAP_RUN_RESUME_"
                           "FAILED needs KSNAP_RUN_COORDINATOR");
  if (tasks && *tasks && !(parts & KSNAP_RUN_TASKS))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "a task list "
                           "(\"%s\") needs KSNAP_RUN_TASKS", tasks);
  return KSNAP_ERR_OK;
}

static ksnap_run_t *run_new(ksnap_conf_t *conf, int parts) {
  ksnap_run_t *r = calloc(1, sizeof(*r));
  pthread_condattr_t ca;

  if (!r)
    return NULL;
  r->conf = conf;
  r->parts = parts;
  r->summary.last_completed_id = KSNAP_CHECKPOINT_NONE;
  r->summary.last_failed_id = KSNAP_CHECKPOINT_NONE;
  r->summary.last_restored_id = KSNAP_CHECKPOINT_NONE;
  pthread_mutex_init(&r->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* for wait's timeout */
  pthread_cond_init(&r->ended_cv, &ca);
  pthread_condattr_destroy(&ca);
  return r;
}

/* Creates the tasks, then starts the coordinator's thread and the watch
 * thread, which starts the tasks. */
static ksnap_err_t start_parts(ksnap_run_t *r, const char *tasks,
                               const char *job_dir, ksnap_error_t *error) {
  const char *from = NULL;
  ksnap_err_t err;

  if ((r->parts & KSNAP_RUN_TASKS) &&
      (err = ksnap_worker_new(r->conf, job_dir, tasks, &r->worker, error)))
    return err;
  /* a stopped job started again from a savepoint: this run's coordinator
   * decides, not the JOB_STOPPED its tasks find on the control topic */
  if (r->worker && (r->parts & KSNAP_RUN_COORDINATOR) &&
      !ksnap_conf_get_str(r->conf, "execution.savepoint.path", &from) &&
      from && *from)
    ksnap_worker_resume_stopped(r->worker);
  if ((r->parts & KSNAP_RUN_COORDINATOR) &&
      pthread_create(&r->coord_thread, NULL, coord_main, r))
    return ksnap_error_set(error, KSNAP_ERR_IO, "cannot start the "
                           "coordinator's thread: %s", strerror(errno));
  r->coord_started = (r->parts & KSNAP_RUN_COORDINATOR) != 0;
  if (pthread_create(&r->watch_thread, NULL, watch_main, r))
    return ksnap_error_set(error, KSNAP_ERR_IO, "cannot start the run's "
                           "watch thread: %s", strerror(errno));
  r->watch_started = 1;
  return KSNAP_ERR_OK;
}

/* Frees a run whose start failed: stops what started. */
static void run_free(ksnap_run_t *r) {
  r->stop = 1;
  if (r->coord_started)
    pthread_join(r->coord_thread, NULL);
  ksnap_worker_destroy(r->worker);
  ksnap_job_destroy(r->job);
  pthread_cond_destroy(&r->ended_cv);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

ksnap_err_t ksnap_run_start(ksnap_conf_t *conf, int parts, const char *tasks,
                            ksnap_run_t **runp, ksnap_error_t *error) {
  ksnap_run_t *r = NULL;
  char *job_dir = NULL;
  ksnap_err_t err;

  *runp = NULL;
  if ((err = check_parts(parts, tasks, error)))
    return err;
  if (!(r = run_new(conf, parts)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = check(r, &job_dir, error)) ||
      (err = start_parts(r, tasks, job_dir, error))) {
    run_free(r);
    free(job_dir);
    return err;
  }
  free(job_dir);
  *runp = r;
  return KSNAP_ERR_OK;
}

void ksnap_run_stop(ksnap_run_t *run) { run->stop = 1; }

int ksnap_run_wait(ksnap_run_t *run, int timeout_ms) {
  struct timespec until;
  int ended;

  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&run->lock);
  while (!run->ended && timeout_ms != 0)
    if (timeout_ms > 0 ? pthread_cond_timedwait(&run->ended_cv, &run->lock,
                                                &until) == ETIMEDOUT
                       : pthread_cond_wait(&run->ended_cv, &run->lock) != 0)
      break;
  ended = run->ended;
  pthread_mutex_unlock(&run->lock);
  return ended;
}

ksnap_err_t ksnap_run_result(ksnap_run_t *run, ksnap_error_t *error) {
  ksnap_err_t err;

  pthread_mutex_lock(&run->lock);
  if (!run->ended)
    err = ksnap_error_set(error, KSNAP_ERR_STATE, "the run has not ended");
  else if ((err = run->result) && error)
    *error = run->error;
  pthread_mutex_unlock(&run->lock);
  if (!err)
    ksnap_error_clear(error);
  return err;
}

const ksnap_job_t *ksnap_run_job(const ksnap_run_t *run) { return run->job; }

void ksnap_run_destroy(ksnap_run_t *run) {
  if (!run)
    return;
  ksnap_run_stop(run);
  pthread_join(run->watch_thread, NULL); /* it ends the run */
  run->coord_started = 0;                /* joined by the watch thread */
  run_free(run);
}
