/*
 * A worker process's runtime (see worker.h). Owner: the caller's thread;
 * the control client's thread only calls dispatch(), which posts to the
 * tasks' queues.
 */
#include "worker.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ksnap/job.h"
#include "ksnap/log.h"
#include "kafka/topics.h"
#include "base/util.h"

#define TOPICS_TIMEOUT_MS 30000
#define CATCH_UP_TIMEOUT_MS 30000

struct ksnap_worker_s {
  const ksnap_conf_t *conf;
  ksnap_job_t *job;
  ksnap_control_client_t *cc;
  ksnap__snap_pool_t *pool;
  ksnap_task_t **tasks;
  size_t ntasks;
  int64_t hb_interval_us, next_hb_us;
  int64_t gen, base_id; /* from the last RESTORE seen while catching up */
  char *base_url;       /* and its metadata URL */
  /* From the catch-up: whether the coordinator ever decided task owners
   * (a RESTORE with an owner table, or an ASSIGN), and per task whether
   * an instance registered it in gen (acks topic). */
  int owners_decided;
  int *ran_before;
  char instance[192]; /* this process's instance id: host:pid:nonce */
  /* JOB_FAILED read (catch-up: not followed by a RESTORE): the cause is
   * written before failed is set (the control client's thread), read
   * after (the owner's) */
  char failed_cause[KSNAP_ERROR_MSG_SIZE];
  int64_t failed_gen;
  atomic_int failed;
  /* JOB_STOPPED read (catch-up: not followed by a RESTORE): the
   * savepoint's URL, written before stopped is set, as failed_cause */
  char stopped_url[KSNAP_ERROR_MSG_SIZE];
  atomic_int stopped;
  /* JOB_FINISHED read (a bounded job ended; stopped is set too, its URL
   * empty): the final checkpoint, written before stopped is set */
  int64_t finished_id;
  int resume_stopped; /* ksnap_worker_resume_stopped() */
  int waiting; /* found the job stopped: waits for a RESTORE to start */
  /* A member (worker.join): the coordinator decides which of its tasks
   * run; a MEMBER record every heartbeat; removed: it stops. */
  int member;
  int32_t slots;
  char removed_why[KSNAP_ERROR_MSG_SIZE]; /* written before removed set */
  atomic_int removed;
};

/* host:pid:nonce, unique per process start (a pid is reused, and two
 * hosts may share a pid). */
static void set_instance(ksnap_worker_t *w) {
  char host[128] = "localhost";
  struct timespec ts;

  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(w->instance, sizeof(w->instance), "%s:%d:%llx", host,
           (int)getpid(),
           (unsigned long long)((uint64_t)ts.tv_sec * 1000000000u +
                                (uint64_t)ts.tv_nsec));
}

static void conf_error(void *opaque, const char *msg) {
  (void)opaque;
  KSNAP_ERR("worker", "%s", msg);
}

static ksnap_err_t add_task(ksnap_worker_t *w, const ksnap_job_stage_t *stage,
                            int32_t index, const char *job_dir,
                            ksnap_error_t *error) {
  ksnap_task_t **t = realloc(w->tasks, (w->ntasks + 1) * sizeof(*t));

  if (!t)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  w->tasks = t;
  if (index < 0 || index >= ksnap_job_stage_parallelism(stage))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "task %s:%d: the stage has %d tasks",
                           ksnap_job_stage_name(stage), (int)index,
                           (int)ksnap_job_stage_parallelism(stage));
  return ksnap_task_new(w->conf, w->job, stage, index, job_dir, w->cc,
                        w->pool, &w->tasks[w->ntasks++], error) == KSNAP_ERR_OK
             ? KSNAP_ERR_OK
             : (w->ntasks--, error->code);
}

/* "stage:0,stage:1" */
static ksnap_err_t parse_tasks(ksnap_worker_t *w, const char *spec,
                               const char *job_dir, ksnap_error_t *error) {
  char *copy = strdup(spec), *save = NULL, *item;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!copy)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (item = strtok_r(copy, ",", &save); item && !err;
       item = strtok_r(NULL, ",", &save)) {
    char *colon = strrchr(item, ':'), *end;
    const ksnap_job_stage_t *stage;
    long idx;
    if (!colon) {
      err = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                            "task \"%s\": expected STAGE:INDEX", item);
      break;
    }
    *colon = '\0';
    idx = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 ||
        !(stage = ksnap_job_stage_find(w->job, item)))
      err = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                            "task \"%s:%s\": no such stage or bad index", item,
                            colon + 1);
    else
      err = add_task(w, stage, (int32_t)idx, job_dir, error);
  }
  free(copy);
  return err;
}

ksnap_err_t ksnap_worker_new(const ksnap_conf_t *conf, const char *job_dir,
                             const char *tasks, ksnap_worker_t **workerp,
                             ksnap_error_t *error) {
  ksnap_worker_t *w = calloc(1, sizeof(*w));
  int64_t hb = 1000;
  ksnap_err_t err;

  *workerp = NULL;
  if (!w)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  w->conf = conf;
  w->gen = KSNAP_GENERATION_FIRST;
  set_instance(w);
  ksnap_conf_get_duration_ms(conf, "heartbeat.interval", &hb);
  w->hb_interval_us = hb * 1000;
  if ((err = ksnap_job_new(conf, &w->job, conf_error, NULL))) {
    ksnap_error_set(error, err, "the job graph is invalid (see above)");
    goto fail;
  }
  if (!(w->pool = ksnap__snap_pool_new(2, error)) ||
      !(w->cc = ksnap_control_client_new(conf, error))) {
    err = error->code;
    goto fail;
  }
  if (!(tasks && *tasks)) { /* --tasks: a fixed set, no member */
    int64_t slots = 0;
    int join = 0;
    ksnap_conf_get_bool(conf, "worker.join", &join);
    ksnap_conf_get_int(conf, "worker.slots", &slots);
    w->member = join;
    w->slots = slots > 0 ? (int32_t)slots : (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    if (w->slots <= 0)
      w->slots = 1;
  }
  if (tasks && *tasks)
    err = parse_tasks(w, tasks, job_dir, error);
  else
    for (size_t s = 0; s < ksnap_job_stage_cnt(w->job) && !err; s++) {
      const ksnap_job_stage_t *stage = ksnap_job_stage(w->job, s);
      for (int32_t i = 0; i < ksnap_job_stage_parallelism(stage) && !err; i++)
        err = add_task(w, stage, i, job_dir, error);
    }
  if (err)
    goto fail;
  *workerp = w;
  return KSNAP_ERR_OK;
fail:
  ksnap_worker_destroy(w);
  return err;
}

static ksnap_err_t ensure_topics(ksnap_worker_t *w, ksnap_error_t *error) {
  size_t n = ksnap_job_topic_cnt(w->job), k = 0;
  ksnap_topic_spec_t *specs = calloc(n + 1, sizeof(*specs));
  ksnap_err_t err;

  if (!specs)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(w->job, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_EXCHANGE)
      specs[k++] = (ksnap_topic_spec_t){ksnap_job_topic_name(t),
                                        ksnap_job_topic_partitions(t), 0};
  }
  err = ksnap_topics_ensure_job(w->conf, specs, k, TOPICS_TIMEOUT_MS, error);
  free(specs);
  return err;
}

static int task_index(const ksnap_worker_t *w, const ksnap_task_id_t *id) {
  for (size_t i = 0; i < w->ntasks; i++)
    if (ksnap_task_is(w->tasks[i], id))
      return (int)i;
  return -1;
}

/* JOB_FAILED: the job failed for good; every task stops with the worker.
 * The first one read stays (the owner's thread may be reading it). */
static void job_failed(ksnap_worker_t *w, const ksnap_job_failed_t *f) {
  if (atomic_load(&w->failed))
    return;
  snprintf(w->failed_cause, sizeof(w->failed_cause), "%s",
           f->cause ? f->cause : "");
  w->failed_gen = f->generation;
  atomic_store(&w->failed, 1);
}

/* JOB_STOPPED: the job was stopped with a savepoint, after its sinks
 * committed it; every task stops with the worker. The first one stays. */
static void job_stopped(ksnap_worker_t *w, const ksnap_job_stopped_t *s) {
  if (atomic_load(&w->stopped))
    return;
  snprintf(w->stopped_url, sizeof(w->stopped_url), "%s",
           s->savepoint_url ? s->savepoint_url : "");
  atomic_store(&w->stopped, 1);
}

/* JOB_FINISHED: the bounded job ended, its output committed; every task
 * stops with the worker, as on JOB_STOPPED. */
static void job_finished(ksnap_worker_t *w, const ksnap_job_finished_t *f) {
  if (atomic_load(&w->stopped))
    return;
  w->stopped_url[0] = '\0';
  w->finished_id = f->checkpoint_id > 0 ? f->checkpoint_id : 1;
  atomic_store(&w->stopped, 1);
}

/* The end of the job, for the log: "stopped with savepoint URL" or
 * "finished (final checkpoint N)". */
static const char *ended_words(ksnap_worker_t *w, char *buf, size_t size) {
  if (w->finished_id)
    snprintf(buf, size, "finished (final checkpoint %lld)",
             (long long)w->finished_id);
  else
    snprintf(buf, size, "stopped with savepoint %s", w->stopped_url);
  return buf;
}

/* The job FINISHED before this worker started a task: it starts none. */
static void finished_no_task(ksnap_worker_t *w) {
  char words[KSNAP_ERROR_MSG_SIZE + 64];

  KSNAP_LOG(KSNAP_LOG_NOTICE, "worker", "job %s %s: this worker starts no "
            "task (a new run needs a new job.name, or `ksnap coordinator "
            "--from-savepoint`)", ksnap_job_name(w->job),
            ended_words(w, words, sizeof(words)));
}

/* Catch-up: the last RESTORE (generation, checkpoint), whether the
 * coordinator decides owners, and whether the job failed. */
static void on_catch_up(void *opaque, const void *rec, size_t len,
                        int64_t offset) {
  ksnap_worker_t *w = opaque;
  ksnap_control_record_t cr;
  ksnap_error_t error;

  (void)offset;
  if (ksnap_codec_control_decode(rec, len, &cr, &error))
    return;
  if (cr.type == KSNAP_CONTROL_RESTORE && cr.u.restore.generation >= w->gen) {
    w->gen = cr.u.restore.generation;
    w->base_id = cr.u.restore.checkpoint_id > 0 ? cr.u.restore.checkpoint_id
                                                : 0;
    free(w->base_url);
    w->base_url = w->base_id && cr.u.restore.metadata_path
                      ? strdup(cr.u.restore.metadata_path)
                      : NULL;
  }
  if ((cr.type == KSNAP_CONTROL_RESTORE && cr.u.restore.owner_cnt) ||
      cr.type == KSNAP_CONTROL_ASSIGN)
    w->owners_decided = 1;
  if (cr.type == KSNAP_CONTROL_RESTORE) { /* a restore resumed the job */
    atomic_store(&w->failed, 0);
    atomic_store(&w->stopped, 0);
    w->finished_id = 0;
  } else if (cr.type == KSNAP_CONTROL_JOB_FAILED) {
    job_failed(w, &cr.u.job_failed);
  } else if (cr.type == KSNAP_CONTROL_JOB_STOPPED) {
    job_stopped(w, &cr.u.job_stopped);
  } else if (cr.type == KSNAP_CONTROL_JOB_FINISHED) {
    job_finished(w, &cr.u.job_finished);
  }
  ksnap_control_record_cleanup(&cr);
}

/* Acks scan: a REGISTER of one of our tasks in the current generation. */
static void on_ack(void *opaque, const void *rec, size_t len,
                   int64_t offset) {
  ksnap_worker_t *w = opaque;
  ksnap_ack_record_t ar;
  ksnap_error_t error;
  int i;

  (void)offset;
  if (ksnap_codec_ack_decode(rec, len, &ar, &error))
    return;
  if (ar.type == KSNAP_ACKT_REGISTER && !ar.u.reg.claim &&
      ar.u.reg.generation == w->gen &&
      (i = task_index(w, &ar.u.reg.task)) >= 0)
    w->ran_before[i] = 1;
  ksnap_ack_record_cleanup(&ar);
}

/* Whether task i claims instead of taking the task: once the coordinator
 * decides owners, every new instance asks it (a take without its answer
 * races with the claim of an instance it presumed dead, task.c); before
 * (a job's first start, or a RESTORE written by a tool), only when
 * another instance already ran the task in this generation. */
static int must_claim(const ksnap_worker_t *w, size_t i) {
  return w->owners_decided || w->ran_before[i];
}

static void dispatch(void *opaque, const void *rec, size_t len,
                     int64_t offset) {
  ksnap_worker_t *w = opaque;
  ksnap_control_record_t cr;
  ksnap_error_t error;

  (void)offset;
  if (!ksnap_codec_control_decode(rec, len, &cr, &error)) {
    if (cr.type == KSNAP_CONTROL_JOB_FAILED)
      job_failed(w, &cr.u.job_failed);
    else if (cr.type == KSNAP_CONTROL_JOB_STOPPED)
      job_stopped(w, &cr.u.job_stopped);
    else if (cr.type == KSNAP_CONTROL_JOB_FINISHED)
      job_finished(w, &cr.u.job_finished);
    else if (cr.type == KSNAP_CONTROL_MEMBER && w->member &&
             !cr.u.member.present && cr.u.member.worker_id &&
             !strcmp(cr.u.member.worker_id, w->instance) &&
             !atomic_load(&w->removed)) {
      snprintf(w->removed_why, sizeof(w->removed_why), "%s",
               cr.u.member.reason ? cr.u.member.reason : "");
      atomic_store(&w->removed, 1);
    }
    ksnap_control_record_cleanup(&cr);
  }
  for (size_t i = 0; i < w->ntasks; i++)
    ksnap_task_post(w->tasks[i], rec, len);
}

/* A member's MEMBER record: its join, then its heartbeat. */
static ksnap_err_t announce(ksnap_worker_t *w, bool flush,
                            ksnap_error_t *error) {
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_MEMBER};
  char host[128] = "localhost";
  ksnap_err_t err;

  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  rec.u.member = (ksnap_member_hb_t){w->instance, host, (int32_t)getpid(),
                                     w->slots, ksnap__wallclock_ms()};
  if ((err = ksnap_control_client_send(w->cc, &rec, error)) || !flush)
    return err;
  return ksnap_control_client_flush(w->cc, 30000, error);
}

static ksnap_err_t start_tasks(ksnap_worker_t *w, ksnap_error_t *error);

/* The error a worker of a FAILED job ends with. */
static ksnap_err_t failed_error(const ksnap_worker_t *w, const char *what,
                                ksnap_error_t *error) {
  return ksnap_error_set(error, KSNAP_ERR_JOB_FAILED,
                         "job %s failed in generation %" PRId64 ": %s; %s",
                         ksnap_job_name(w->job), w->failed_gen,
                         w->failed_cause, what);
}

/* A worker that finds the job FAILED starts no task. */
static ksnap_err_t failed_at_start(const ksnap_worker_t *w,
                                   ksnap_error_t *error) {
  return failed_error(w, "this worker does not start its tasks (`ksnap "
                      "coordinator --resume-failed` resumes the job)",
                      error);
}

ksnap_err_t ksnap_worker_start(ksnap_worker_t *w, ksnap_error_t *error) {
  char words[KSNAP_ERROR_MSG_SIZE + 64];
  ksnap_err_t err;

  if (!(w->ran_before = calloc(w->ntasks + 1, sizeof(*w->ran_before))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ensure_topics(w, error)) ||
      (err = ksnap_control_client_catch_up(w->cc, on_catch_up, w,
                                           CATCH_UP_TIMEOUT_MS, error)))
    return err;
  if (atomic_load(&w->failed))
    return failed_at_start(w, error);
  if (atomic_load(&w->stopped) && w->resume_stopped) {
    KSNAP_INFO("worker", "job %s %s: its coordinator in this process starts "
               "it from a savepoint", ksnap_job_name(w->job),
               ended_words(w, words, sizeof(words)));
    atomic_store(&w->stopped, 0);
    w->finished_id = 0;
  }
  if (atomic_load(&w->stopped) && w->finished_id) {
    finished_no_task(w);
    return KSNAP_ERR_OK;
  }
  if (atomic_load(&w->stopped)) { /* its RESTORE may be on its way */
    KSNAP_LOG(KSNAP_LOG_NOTICE, "worker", "job %s stopped with savepoint %s: "
              "this worker waits for the job to start again (`ksnap "
              "coordinator --from-savepoint %s`) before it starts its tasks",
              ksnap_job_name(w->job), w->stopped_url, w->stopped_url);
    w->waiting = 1;
    return KSNAP_ERR_OK;
  }
  return start_tasks(w, error);
}

/* A worker that found the job stopped (ksnap_worker_start()): reads the
 * control topic on until a RESTORE resumes the job, then starts its
 * tasks in that generation; a job resumed and FINISHED meanwhile leaves
 * it nothing to run (ksnap_worker_run() returns). */
static ksnap_err_t wait_resumed(ksnap_worker_t *w, ksnap_error_t *error) {
  ksnap_err_t err = ksnap_control_client_catch_up(
      w->cc, on_catch_up, w, CATCH_UP_TIMEOUT_MS, error);

  if (err)
    return err;
  if (atomic_load(&w->failed))
    return failed_at_start(w, error);
  if (atomic_load(&w->stopped) && w->finished_id) {
    finished_no_task(w);
    w->waiting = 0; /* resumed, and FINISHED already: nothing to run */
    return KSNAP_ERR_OK;
  }
  if (atomic_load(&w->stopped)) {
    usleep(200 * 1000);
    return KSNAP_ERR_OK;
  }
  KSNAP_INFO("worker", "job %s started again in generation %lld: this "
             "worker starts its tasks", ksnap_job_name(w->job),
             (long long)w->gen);
  w->waiting = 0;
  return start_tasks(w, error);
}

/* After the catch-up: the tasks, in the generation it found. */
static ksnap_err_t start_tasks(ksnap_worker_t *w, ksnap_error_t *error) {
  size_t claims = 0;
  ksnap_err_t err;

  /* the acks topic's history only matters before owners are decided
   * (must_claim), and it grows with every heartbeat */
  if (!w->owners_decided &&
      (err = ksnap_control_client_scan_acks(w->cc, w->conf, on_ack, w,
                                            CATCH_UP_TIMEOUT_MS, error)))
    return err;
  if (w->member) {
    KSNAP_INFO("worker", "job %s: member %s joins with %d slot%s in "
               "generation %lld; the coordinator gives it tasks",
               ksnap_job_name(w->job), w->instance, (int)w->slots,
               w->slots == 1 ? "" : "s", (long long)w->gen);
    for (size_t i = 0; i < w->ntasks; i++) {
      ksnap_task_set_member(w->tasks[i]);
      ksnap_task_set_base_url(w->tasks[i], w->base_url);
      if ((err = ksnap_task_start(w->tasks[i], w->gen, w->base_id,
                                  w->instance, 0, error)))
        return err;
    }
    if ((err = ksnap_control_client_start(w->cc, dispatch, w, error)))
      return err;
    return announce(w, true, error);
  }
  for (size_t i = 0; i < w->ntasks; i++)
    claims += (size_t)must_claim(w, i);
  KSNAP_INFO("worker", "job %s: instance %s starts %zu task%s in generation "
             "%lld%s (%zu claimed from the coordinator)",
             ksnap_job_name(w->job), w->instance, w->ntasks,
             w->ntasks == 1 ? "" : "s", (long long)w->gen,
             w->base_id ? ", restoring" : "", claims);
  for (size_t i = 0; i < w->ntasks; i++)
    ksnap_task_set_base_url(w->tasks[i], w->base_url);
  for (size_t i = 0; i < w->ntasks; i++)
    if ((err = ksnap_task_start(w->tasks[i], w->gen, w->base_id, w->instance,
                                must_claim(w, i), error)))
      return err;
  return ksnap_control_client_start(w->cc, dispatch, w, error);
}

void ksnap_worker_tick(ksnap_worker_t *w) {
  int64_t now = ksnap__now_us();

  for (size_t i = 0; i < w->ntasks; i++) /* an end of input: told at once */
    if (ksnap_task_ended_untold(w->tasks[i]))
      ksnap_task_heartbeat(w->tasks[i]);
  if (now < w->next_hb_us)
    return;
  w->next_hb_us = now + w->hb_interval_us;
  for (size_t i = 0; i < w->ntasks; i++)
    ksnap_task_heartbeat(w->tasks[i]);
  if (w->member) { /* after its tasks': see coord_balance.c */
    ksnap_error_t error;
    if (announce(w, false, &error))
      KSNAP_WARN("worker", "member %s: cannot send MEMBER: %s", w->instance,
                 error.msg);
  }
}

ksnap_err_t ksnap_worker_run(ksnap_worker_t *w, volatile sig_atomic_t *stop,
                             ksnap_error_t *error) {
  ksnap_err_t err = ksnap_worker_start(w, error);
  int was_stopped; /* at start, and not waiting: no task runs */
  char words[KSNAP_ERROR_MSG_SIZE + 64];

  while (!err && !*stop && w->waiting)
    err = wait_resumed(w, error);
  was_stopped = atomic_load(&w->stopped);

  while (!err && !*stop && !was_stopped) {
    ksnap_worker_tick(w);
    if (atomic_load(&w->failed))
      return failed_error(w, "this worker stops its tasks", error);
    if (atomic_load(&w->stopped)) {
      KSNAP_LOG(KSNAP_LOG_NOTICE, "worker", "job %s %s: this worker stops "
                "its tasks", ksnap_job_name(w->job),
                ended_words(w, words, sizeof(words)));
      return KSNAP_ERR_OK;
    }
    if (atomic_load(&w->removed))
      return ksnap_error_set(error, KSNAP_ERR_FENCED,
                             "member %s was removed from job %s (%s): its "
                             "tasks went to the other members; this worker "
                             "stops (a new one may join)",
                             w->instance, ksnap_job_name(w->job),
                             w->removed_why);
    if (ksnap_worker_replaced(w))
      return ksnap_error_set(error, KSNAP_ERR_FENCED,
                             "every task of instance %s was taken over by a "
                             "newer instance: this worker stops",
                             w->instance);
    usleep(100 * 1000);
  }
  return err;
}

void ksnap_worker_destroy(ksnap_worker_t *w) {
  if (!w)
    return;
  for (size_t i = 0; i < w->ntasks; i++)
    ksnap_task_stop(w->tasks[i]);
  ksnap_control_client_destroy(w->cc); /* stops dispatching first */
  for (size_t i = 0; i < w->ntasks; i++)
    ksnap_task_destroy(w->tasks[i]);
  ksnap__snap_pool_destroy(w->pool);
  ksnap_job_destroy(w->job);
  free(w->base_url);
  free(w->ran_before);
  free(w->tasks);
  free(w);
}

void ksnap_worker_resume_stopped(ksnap_worker_t *w) { w->resume_stopped = 1; }

const char *ksnap_worker_job_stopped(const ksnap_worker_t *w) {
  return atomic_load(&w->stopped) ? w->stopped_url : NULL;
}

const char *ksnap_worker_job_failed(const ksnap_worker_t *w) {
  return atomic_load(&w->failed) ? w->failed_cause : NULL;
}

int ksnap_worker_replaced(const ksnap_worker_t *w) {
  for (size_t i = 0; i < w->ntasks; i++)
    if (!ksnap_task_replaced(w->tasks[i]))
      return 0;
  return w->ntasks > 0;
}

size_t ksnap_worker_task_cnt(const ksnap_worker_t *w) { return w->ntasks; }
ksnap_task_t *ksnap_worker_task(ksnap_worker_t *w, size_t i) {
  return i < w->ntasks ? w->tasks[i] : NULL;
}
