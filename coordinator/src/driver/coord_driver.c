/*
 * The coordinator process loop: start-up (topics, fencing, replay of the
 * control topic, verification of the latest checkpoint) and the loop
 * around the state machine. See coord_driver.h; the edges are in
 * coord_drv_act.c.
 *
 * Thread: the caller of ksnap_coord_run_with() (the coordinator
 * thread) runs all of it. The storage worker (coord_store.c), the HTTP
 * thread (coord_rest.c) and the source-lag reader (coord_lag.c) have
 * their own state behind their queues and locks; the observer is called
 * on this thread.
 *
 * Owns: every handle of the run. start() creates them and the end of
 * ksnap_coord_run_with() destroys them; those the edges use are in
 * ksnap__drv_t (coord_drv_int.h: conf, job_name, sm, prod, store,
 * start_ms, error), the others are private to this file (loop_t: the job,
 * the ack-topic consumer, the REST endpoint, the observer). It only reads
 * done and result, which coord_drv_act.c sets.
 */
#include "coord_driver.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_drv_int.h"
#include "coord_from.h"
#include "coord_lag.h"
#include "coord_rest.h"
#include "kafka/consumer.h"
#include "ksnap/buf.h"
#include "ksnap/log.h"
#include "kafka/topics.h"
#include "base/util.h"

#define STARTUP_TIMEOUT_MS 60000
#define POLL_MS 50
#define BUSY_POLL_MS 2
#define PUBLISH_EVERY_MS 500

/* The run: the part the edges share, and what only this file uses. */
typedef struct loop_s {
  ksnap__drv_t d;
  ksnap_job_t *job;
  ksnap_kafka_consumer_t *acks;
  ksnap__rest_t *rest;
  ksnap__lag_t *lag; /* with rest: the source lag of /metrics */
  ksnap_coord_observer_t *observer; /* NULL: none */
  void *observer_opaque;
  int resume_failed; /* --resume-failed */
  ksnap__drv_from_t from; /* --from-savepoint */
  /* the history ends with JOB_STOPPED (no RESTORE after it): its
   * savepoint's URL, else NULL */
  char *stopped_url;
  /* the history ends with JOB_FINISHED: its final checkpoint, else 0 */
  int64_t finished_id;
} loop_t;

typedef struct replay_s {
  ksnap__drv_t *d;
  size_t cnt;
  ksnap_err_t err;
  ksnap__drv_from_t *from;
  char **stopped_url;
  int64_t *finished_id;
} replay_t;

static int replay_cb(void *opaque, const void *buf, size_t len,
                     int64_t timestamp_ms) {
  replay_t *r = opaque;
  ksnap_control_record_t rec;
  ksnap_error_t error;

  (void)timestamp_ms;
  if (ksnap_codec_control_decode(buf, len, &rec, &error)) {
    KSNAP_WARN("COORD", "job %s: Skipping an undecodable control record: %s",
               r->d->job_name, error.msg);
    return 0;
  }
  r->err = ksnap_coord_sm_replay(r->d->sm, &rec);
  if (!r->err && rec.type == KSNAP_CONTROL_RESTORE) {
    ksnap__drv_from_replayed(r->d, r->from, &rec.u.restore);
    free(*r->stopped_url); /* a start from a savepoint resumed it */
    *r->stopped_url = NULL;
    *r->finished_id = 0;
  } else if (!r->err && rec.type == KSNAP_CONTROL_JOB_FINISHED) {
    *r->finished_id = rec.u.job_finished.checkpoint_id > 0
                          ? rec.u.job_finished.checkpoint_id
                          : 1;
  } else if (!r->err && rec.type == KSNAP_CONTROL_JOB_STOPPED) {
    free(*r->stopped_url);
    if (!(*r->stopped_url = strdup(rec.u.job_stopped.savepoint_url
                                       ? rec.u.job_stopped.savepoint_url
                                       : "")))
      r->err = KSNAP_ERR_NOMEM;
  }
  r->cnt++;
  ksnap_control_record_cleanup(&rec);
  return r->err != KSNAP_ERR_OK;
}

/* Steps 3 and 4 of coord_driver.h: replay, verify the latest checkpoint. */
static ksnap_err_t recover(ksnap__drv_t *d, size_t *cntp,
                           ksnap__drv_from_t *from, char **stopped_url,
                           int64_t *finished_id, ksnap_error_t *error) {
  replay_t r = {d, 0, KSNAP_ERR_OK, from, stopped_url, finished_id};
  ksnap_checkpoint_meta_t meta;
  ksnap_storage_t *st = NULL;
  char topic[300];
  int64_t latest;
  ksnap_err_t err;

  ksnap__coord_topic(topic, sizeof(topic), d->job_name,
                     KSNAP_COORD_CONTROL_SUFFIX);
  if ((err = ksnap__coord_read_history(d->conf, topic, STARTUP_TIMEOUT_MS,
                                       replay_cb, &r, error)))
    return err;
  if (r.err)
    return ksnap_error_set(error, r.err, "replaying %s failed", topic);
  *cntp = r.cnt;
  latest = ksnap_coord_sm_latest_completed(d->sm);
  KSNAP_INFO("COORD", "job %s: Recovered from %zu control records: "
             "generation %" PRId64 ", latest completed checkpoint %" PRId64
             ", highest id %" PRId64, d->job_name, r.cnt,
             ksnap_coord_sm_generation(d->sm), latest,
             ksnap_coord_sm_max_id(d->sm));
  if (latest == KSNAP_CHECKPOINT_NONE) /* the store is read now, or never */
    return ksnap__coord_storage_probe(d->conf, d->job_name, error);
  if ((err = ksnap__coord_storage_open(d->conf, &st, error)))
    return err;
  err = ksnap__coord_meta_load(st, d->job_name, latest, &meta, error);
  if (!err)
    err = ksnap__coord_meta_verify(st, &meta, error);
  ksnap_storage_destroy(st);
  if (err) {
    ksnap_checkpoint_meta_cleanup(&meta);
    ksnap_error_prefix(error, "cannot restart: the latest completed "
                       "checkpoint is unusable");
    return err;
  }
  if (meta.checkpoint_id != latest)
    err = ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                          "cannot restart: chk-%" PRId64 "/_metadata names "
                          "checkpoint %" PRId64, latest, meta.checkpoint_id);
  else
    ksnap_coord_sm_replay_metadata(d->sm, &meta);
  ksnap_checkpoint_meta_cleanup(&meta);
  return err;
}

/* A ksnap_conf_error_cb_t keeping the first problem of the job. */
static void job_error(void *opaque, const char *msg) {
  ksnap_error_t *error = opaque;

  if (!error->msg[0])
    snprintf(error->msg, sizeof(error->msg), "%s", msg);
}

/* The history ends with JOB_FAILED and no --resume-failed: this
 * coordinator does not resume the job (the state machine said why). */
static ksnap_err_t refuse_failed(ksnap__drv_t *d, ksnap_error_t *error) {
  int64_t latest = ksnap_coord_sm_latest_completed(d->sm);
  char from[64] = "with empty state";

  ksnap__drv_actions(d); /* its log line */
  if (latest != KSNAP_CHECKPOINT_NONE)
    snprintf(from, sizeof(from), "from checkpoint %" PRId64, latest);
  return ksnap_error_set(
      error, KSNAP_ERR_JOB_FAILED,
      "job %s failed in generation %" PRId64 " and is not resumed: %s "
      "(ksnap coordinator --resume-failed restores it %s)",
      d->job_name, ksnap_coord_sm_generation(d->sm),
      ksnap_coord_sm_failure_cause(d->sm), from);
}

/* The history ends with JOB_STOPPED and no --from-savepoint that starts
 * the job again: the job is over (as a Flink job stopped with a savepoint
 * is FINISHED); this coordinator writes nothing and ends at once, with OK.
 * A start from the beginning would commit the job's output a second time:
 * it resumes from the savepoint, or the operator deletes the job's topics
 * to start afresh. */
static void stopped_start(ksnap__drv_t *d, const char *url) {
  KSNAP_LOG(KSNAP_LOG_NOTICE, "COORD", "job %s was stopped with savepoint "
            "%s: nothing to run (to resume it: ksnap coordinator "
            "--from-savepoint %s)", d->job_name, url, url);
  d->done = 1;
  d->result = KSNAP_ERR_OK;
}

/* The history ends with JOB_FINISHED: the bounded job ran to its end and
 * its output is committed; as for a stopped job, this coordinator writes
 * nothing and ends at once, with OK (a new run needs a new job.name, or
 * --from-savepoint). */
static void finished_start(ksnap__drv_t *d, int64_t id) {
  KSNAP_LOG(KSNAP_LOG_NOTICE, "COORD", "job %s finished (final checkpoint "
            "%" PRId64 "): nothing to run (a new run needs a new job.name, "
            "or --from-savepoint)", d->job_name, id);
  d->done = 1;
  d->result = KSNAP_ERR_OK;
}

/* A coordinator that finds a control history restarts a job that ran
 * before: its tasks may have restarted too (fresh, in the old generation,
 * recounting their input) or be waiting for a RESTORE, and this
 * coordinator has seen none of their registrations. Restore the whole job
 * from the latest completed checkpoint in a new generation (Flink's global
 * failover after a JobManager failover); with --resume-failed that is
 * also what resumes a job that had failed. */
static ksnap_err_t failover(ksnap__drv_t *d, size_t history,
                            const ksnap__drv_from_t *from) {
  const char *failed = ksnap_coord_sm_replayed_failure(d->sm);
  char why[KSNAP_ERROR_MSG_SIZE + 96];

  if (!history && !from->restore)
    return KSNAP_ERR_OK;
  if (from->restore)
    snprintf(why, sizeof(why), "started from %s (--from-savepoint)",
             from->url);
  else if (failed)
    snprintf(why, sizeof(why), "resumed by the operator (--resume-failed) "
             "after the job failed: %s", failed);
  else
    snprintf(why, sizeof(why), "the coordinator restarted (global "
             "failover)");
  return ksnap_coord_sm_request_restore(d->sm, d->start_ms, why);
}

static ksnap_err_t start(loop_t *l, ksnap_error_t *error) {
  ksnap__drv_t *d = &l->d;
  ksnap_coord_sm_conf_t smconf;
  const char *addr = "127.0.0.1";
  char topic[300];
  size_t history = 0;
  int64_t port = 0;
  ksnap_err_t err;

  if ((err = ksnap_job_new(d->conf, &l->job, job_error, error))) {
    error->code = err;
    return err;
  }
  d->job_name = ksnap_job_name(l->job);
  if (ksnap_coord_sm_conf_load(d->conf, &smconf))
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "checkpointing settings missing in the job");
  /* two coordinators (of two jobs) restarting together draw apart */
  smconf.restart.jitter_seed =
      (uint64_t)ksnap__wallclock_ms() ^ ((uint64_t)getpid() << 32);
  if ((err = ksnap_coord_sm_new(l->job, &smconf, &d->sm, error)))
    return err;
  if (l->resume_failed)
    ksnap_coord_sm_resume_failed(d->sm);
  if ((err = ksnap_topics_ensure_job(d->conf, NULL, 0, STARTUP_TIMEOUT_MS,
                                     error)))
    return err;
  d->prod = ksnap__coord_producer_new(d->conf, d->job_name,
                                      STARTUP_TIMEOUT_MS, error);
  if (!d->prod)
    return error->code;
  if ((err = recover(d, &history, &l->from, &l->stopped_url,
                     &l->finished_id, error)) ||
      (err = ksnap__drv_from_prepare(d, &l->from, l->job, error)))
    return err;
  if (l->stopped_url && !l->from.restore) {
    stopped_start(d, l->stopped_url);
    return KSNAP_ERR_OK;
  }
  if (l->finished_id && !l->from.restore) {
    finished_start(d, l->finished_id);
    return KSNAP_ERR_OK;
  }
  if (l->from.restore) /* the operator's deliberate start */
    ksnap_coord_sm_resume_failed(d->sm);
  if (!(d->store = ksnap__coord_store_new(d->conf, d->job_name, error)))
    return error->code;
  ksnap__coord_topic(topic, sizeof(topic), d->job_name,
                     KSNAP_COORD_ACKS_SUFFIX);
  l->acks = ksnap__coord_consumer_open(
      d->conf, topic, history ? KSNAP_OFFSET_END : KSNAP_OFFSET_BEGINNING, 0,
      error);
  if (!l->acks)
    return error->code;
  ksnap_conf_get_int(d->conf, "rest.port", &port);
  ksnap_conf_get_str(d->conf, "rest.address", &addr);
  if (port > 0 &&
      !(l->rest = ksnap__rest_start(addr ? addr : "127.0.0.1", (int)port,
                                    error)))
    return error->code;
  if (l->rest && !(l->lag = ksnap__lag_start(d->conf, d->job_name, error)))
    return error->code;
  if (l->rest)
    KSNAP_INFO("COORD", "job %s: Serving the dashboard (/), /checkpoints "
               "and /metrics on http://%s:%d", d->job_name,
               addr ? addr : "127.0.0.1", ksnap__rest_port(l->rest));
  d->start_ms = ksnap__wallclock_ms();
  ksnap_coord_sm_start(d->sm, d->start_ms);
  if (ksnap_coord_sm_state(d->sm) == KSNAP_COORD_FAILED)
    return refuse_failed(d, error);
  if (l->from.cause[0]) /* JOB_FAILED goes out first thing in the loop */
    return ksnap_coord_sm_refuse_start(d->sm, d->start_ms, l->from.cause);
  return failover(d, history, &l->from);
}

static void publish(loop_t *l) {
  ksnap_coord_stats_t *stats = ksnap_coord_sm_stats(l->d.sm);
  ksnap_buf_t json, prom;

  ksnap__lag_exchange(l->lag, stats);
  ksnap_buf_init(&json);
  ksnap_buf_init(&prom);
  if (!ksnap_coord_stats_json(stats, &json) &&
      !ksnap_coord_stats_prometheus(stats, l->d.job_name, &prom))
    ksnap__rest_publish(l->rest, (const char *)json.data,
                        (const char *)prom.data);
  ksnap_buf_cleanup(&json);
  ksnap_buf_cleanup(&prom);
}

static void loop(loop_t *l, volatile sig_atomic_t *stop) {
  ksnap__drv_t *d = &l->d;
  int64_t next_publish = 0, next_warn = 0, now;
  int poll_ms;
  ksnap_error_t error;

  ksnap__drv_actions(d); /* start's aborts of unresolved checkpoints */
  while (!d->done && !(stop && *stop)) {
    /* a storage result is awaited: poll briefly so it is fed soon */
    poll_ms = ksnap__coord_store_busy(d->store) ? BUSY_POLL_MS : POLL_MS;
    if (ksnap__coord_consumer_poll(l->acks, poll_ms, ksnap__drv_on_ack, d,
                                   &error) < 0 &&
        ksnap__wallclock_ms() >= next_warn) { /* at most every 5 s */
      KSNAP_WARN("COORD", "job %s: Polling the ack topic: %s", d->job_name,
                 error.msg);
      next_warn = ksnap__wallclock_ms() + 5000;
    }
    ksnap__drv_store_results(d);
    if (d->done)
      break;
    now = ksnap__wallclock_ms();
    ksnap_coord_sm_tick(d->sm, now);
    ksnap__drv_actions(d);
    ksnap__drv_stop_check(d, now);
    ksnap__drv_finish_check(d);
    if (l->observer)
      l->observer(l->observer_opaque,
                  ksnap_coord_stats_summary(ksnap_coord_sm_stats(d->sm)));
    if (l->rest && now >= next_publish) {
      publish(l);
      next_publish = now + PUBLISH_EVERY_MS;
    }
  }
}

ksnap_err_t ksnap_coord_run(const ksnap_conf_t *conf,
                            volatile sig_atomic_t *stop,
                            ksnap_error_t *error) {
  return ksnap_coord_run_with(conf, stop, NULL, error);
}

ksnap_err_t ksnap_coord_run_with(const ksnap_conf_t *conf,
                                 volatile sig_atomic_t *stop,
                                 const ksnap_coord_opts_t *opts,
                                 ksnap_error_t *error) {
  loop_t l;
  ksnap_error_t local;
  ksnap_err_t err;

  if (!error)
    error = &local;
  ksnap_error_clear(error);
  memset(&l, 0, sizeof(l));
  l.d.conf = conf;
  l.d.error = error;
  /* --from-savepoint, --allow-non-restored-state (coord_from.h) */
  ksnap_conf_get_str(conf, "execution.savepoint.path", &l.from.url);
  ksnap_conf_get_bool(conf, "execution.savepoint.ignore-unclaimed-state",
                      &l.from.allow_non_restored);
  if (opts) {
    l.observer = opts->observer;
    l.observer_opaque = opts->observer_opaque;
    l.resume_failed = opts->resume_failed;
  }
  if (!(err = start(&l, error))) {
    if (!l.d.done) /* not a stopped job's start (stopped_start()) */
      KSNAP_INFO("COORD", "job %s: Coordinator running (generation %" PRId64
                 ")", l.d.job_name, ksnap_coord_sm_generation(l.d.sm));
    loop(&l, stop);
    err = l.d.result;
  } else if (l.d.job_name) {
    KSNAP_ERR("COORD", "job %s: Coordinator cannot start: %s", l.d.job_name,
              error->msg);
  }
  ksnap__rest_stop(l.rest);
  ksnap__lag_stop(l.lag);
  ksnap__coord_store_destroy(l.d.store); /* finishes queued work */
  ksnap_kafka_consumer_destroy(l.acks);
  ksnap__coord_producer_destroy(l.d.prod);
  ksnap_coord_sm_destroy(l.d.sm);
  ksnap_job_destroy(l.job);
  free(l.d.sp_url);
  free(l.d.stop_url);
  free(l.stopped_url);
  return err;
}
