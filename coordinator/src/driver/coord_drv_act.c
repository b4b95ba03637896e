/*
 * The coordinator driver's edges (see coord_driver.h): ack-topic records
 * and storage results in as state-machine events; state-machine actions
 * out as control records, storage operations, logs, the end of the loop.
 *
 * Thread: the coordinator thread, called from the loop of coord_driver.c
 * (ksnap__drv_on_ack() as the ack consumer's callback, inside its poll).
 * Storage operations are only queued here; the storage worker performs
 * them and its results come back through ksnap__drv_store_results().
 *
 * Fields of ksnap__drv_t (coord_drv_int.h): owns done, result and the
 * message of *error (ksnap__drv_fail(), STOP_JOB); uses conf, job_name,
 * sm, prod, store and start_ms, which coord_driver.c sets up and destroys.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_drv_int.h"
#include "coord_savepoint.h"
#include "base/fault.h"
#include "ksnap/buf.h"
#include "ksnap/log.h"
#include "base/util.h"

void ksnap__drv_fail(ksnap__drv_t *d, ksnap_err_t code, const char *fmt,
                     ...) {
  va_list ap;

  if (d->done && d->result)
    return;
  d->done = 1;
  d->result = code;
  va_start(ap, fmt);
  ksnap_error_vset(d->error, code, fmt, ap);
  va_end(ap);
}

static void on_request(ksnap__drv_t *d, int64_t now,
                       const ksnap_request_t *q) {
  const char *what = ksnap_request_kind_name(q->kind);
  int64_t id = KSNAP_CHECKPOINT_NONE;
  ksnap_err_t err;

  if (q->timestamp_ms < d->start_ms) {
    KSNAP_INFO("COORD", "job %s: Ignoring %s request by %s made before this "
               "coordinator started", d->job_name, what, q->requester);
    return;
  }
  switch (q->kind) {
  case KSNAP_REQUEST_CHECKPOINT:
    err = ksnap_coord_sm_request_checkpoint(d->sm, now);
    break;
  case KSNAP_REQUEST_SAVEPOINT:
  case KSNAP_REQUEST_SAVEPOINT_STOP:
    err = ksnap_coord_sm_request_savepoint(
        d->sm, now, q->kind == KSNAP_REQUEST_SAVEPOINT_STOP, &id);
    break;
  case KSNAP_REQUEST_SAVEPOINT_DRAIN:
    err = ksnap_coord_sm_request_drain(d->sm, now);
    break;
  case KSNAP_REQUEST_RESTORE:
    err = ksnap_coord_sm_request_restore(d->sm, now, "requested by operator");
    break;
  default:
    err = KSNAP_ERR_INVALID_ARG;
  }
  if (err)
    KSNAP_WARN("COORD", "job %s: %s request by %s refused: job is %s",
               d->job_name, what, q->requester,
               ksnap_coord_state_name(ksnap_coord_sm_state(d->sm)));
  else
    KSNAP_INFO("COORD", "job %s: %s request by %s accepted", d->job_name,
               what, q->requester);
}

int ksnap__drv_on_ack(void *opaque, const void *buf, size_t len,
                      int64_t timestamp_ms) {
  ksnap__drv_t *d = opaque;
  int64_t now = ksnap__wallclock_ms();
  ksnap_ack_record_t rec;
  ksnap_error_t error;

  (void)timestamp_ms;
  if (ksnap_codec_ack_decode(buf, len, &rec, &error)) {
    KSNAP_WARN("COORD", "job %s: Skipping an undecodable ack-topic record: "
               "%s", d->job_name, error.msg);
    return 0;
  }
  switch (rec.type) {
  case KSNAP_ACKT_REGISTER:
    ksnap_coord_sm_register(d->sm, now, &rec.u.reg);
    break;
  case KSNAP_ACKT_HEARTBEAT:
    ksnap_coord_sm_heartbeat(d->sm, now, &rec.u.heartbeat);
    /* the record counts are statistics only (no memory: not shown) */
    (void)ksnap_coord_stats_heartbeat(ksnap_coord_sm_stats(d->sm), now,
                                      &rec.u.heartbeat);
    break;
  case KSNAP_ACKT_ACK:
    ksnap_coord_sm_ack(d->sm, now, &rec.u.ack);
    break;
  case KSNAP_ACKT_DECLINE:
    ksnap_coord_sm_decline(d->sm, now, &rec.u.decline);
    break;
  case KSNAP_ACKT_COMMITTED:
    ksnap_coord_sm_committed(d->sm, now, &rec.u.committed);
    break;
  case KSNAP_ACKT_REQUEST:
    on_request(d, now, &rec.u.request);
    break;
  case KSNAP_ACKT_FAILURE:
    ksnap_coord_sm_failure(d->sm, now, &rec.u.failure);
    break;
  case KSNAP_ACKT_MEMBER:
    ksnap_coord_sm_member(d->sm, now, &rec.u.member);
    break;
  }
  ksnap_ack_record_cleanup(&rec);
  /* act at once: WRITE_METADATA's meta is valid until the next event */
  ksnap__drv_actions(d);
  return d->done;
}

void ksnap__drv_store_results(ksnap__drv_t *d) {
  ksnap__store_op_t op;
  int64_t id;
  char *errmsg;

  while (!d->done && ksnap__coord_store_result(d->store, &op, &id, &errmsg)) {
    if (op == KSNAP__STORE_PUT_META) {
      ksnap_coord_sm_metadata_written(d->sm, ksnap__wallclock_ms(), id,
                                      errmsg);
      ksnap__drv_actions(d);
    } else if (errmsg) {
      KSNAP_WARN("COORD", "job %s: Retiring checkpoint %" PRId64 " failed "
                 "(its objects stay): %s", d->job_name, id, errmsg);
    } else {
      KSNAP_DBG(COORD, "COORD", "job %s: Retired checkpoint %" PRId64,
                d->job_name, id);
    }
    free(errmsg);
  }
}

/* Writes one control record; a fatal error ends the loop. @returns the
 * code (KSNAP_ERR_TXN_ABORTABLE: not written, the producer lives on). */
static ksnap_err_t write_ctl(ksnap__drv_t *d, ksnap_control_record_t *rec) {
  ksnap_error_t error;
  ksnap_err_t err;

  ksnap_error_clear(&error);
  err = ksnap__coord_producer_write(d->prod, rec, KSNAP__DRV_TXN_TIMEOUT_MS,
                                    &error);
  if (!err)
    return KSNAP_ERR_OK;
  if (err == KSNAP_ERR_TXN_ABORTABLE && !error.fatal) {
    KSNAP_WARN("COORD", "job %s: %s record not written (transaction "
               "aborted): %s", d->job_name,
               ksnap_control_type_name(rec->type), error.msg);
    return err;
  }
  if (err == KSNAP_ERR_FENCED)
    ksnap__drv_fail(d, err, "fenced by a newer coordinator of job %s (%s): "
                    "this one stops", d->job_name, error.msg);
  else
    ksnap__drv_fail(d, err, "writing %s to the control topic failed: %s",
                    ksnap_control_type_name(rec->type), error.msg);
  KSNAP_ERR("COORD", "job %s: %s", d->job_name,
            d->error ? d->error->msg : error.msg);
  return err;
}

/* A savepoint's directory, planned now; its URL kept for its COMPLETE. */
static ksnap_err_t plan_savepoint(ksnap__drv_t *d,
                                  const ksnap_coord_action_t *a,
                                  ksnap__coord_savepoint_t **spp,
                                  ksnap_error_t *error) {
  char *url;
  ksnap_err_t err;

  *spp = NULL;
  if (!a->meta->is_savepoint)
    return KSNAP_ERR_OK;
  if ((err = ksnap__coord_savepoint_plan(d->conf, a->meta, spp, error)))
    return err;
  if (!(url = strdup((*spp)->url))) {
    ksnap__coord_savepoint_free(*spp);
    *spp = NULL;
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  free(d->sp_url);
  d->sp_url = url;
  d->sp_id = a->checkpoint_id;
  return KSNAP_ERR_OK;
}

static void write_metadata(ksnap__drv_t *d, const ksnap_coord_action_t *a) {
  ksnap__coord_savepoint_t *sp = NULL;
  ksnap_buf_t buf;
  ksnap_error_t error;
  size_t len;
  uint8_t *data;

  ksnap_buf_init(&buf);
  if (ksnap_codec_meta_encode(a->meta, &buf, &error) ||
      plan_savepoint(d, a, &sp, &error)) {
    ksnap_buf_cleanup(&buf);
    ksnap_coord_sm_metadata_written(d->sm, ksnap__wallclock_ms(),
                                    a->checkpoint_id, error.msg);
    return;
  }
  data = ksnap_buf_detach(&buf, &len);
  if (ksnap__coord_store_put_meta(d->store, a->checkpoint_id, data, len,
                                  sp)) {
    free(data);
    ksnap__coord_savepoint_free(sp);
    ksnap_coord_sm_metadata_written(d->sm, ksnap__wallclock_ms(),
                                    a->checkpoint_id, "out of memory");
  }
}

/* COMPLETE's URL: a savepoint's directory, else chk-<id>/_metadata. */
static char *complete_url(ksnap__drv_t *d, int64_t id) {
  if (d->sp_url && d->sp_id == id)
    return strdup(d->sp_url);
  return ksnap__coord_meta_url(d->conf, d->job_name, id);
}

/* FAIL_JOB (the state machine logged it): JOB_FAILED(G, cause) on the
 * control topic, so that every worker stops and a restarted coordinator
 * does not resume the job; then the loop ends. */
static void job_failed(ksnap__drv_t *d, const ksnap_coord_action_t *a) {
  const char *cause = a->text ? a->text : "(no reason)";
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_JOB_FAILED};

  rec.u.job_failed = (ksnap_job_failed_t){a->generation,
                                          ksnap__wallclock_ms(),
                                          (char *)cause};
  /* first: the run's error names the cause even if the write fails */
  ksnap__drv_fail(d, KSNAP_ERR_JOB_FAILED, "job %s failed: %s", d->job_name,
                  cause);
  if (write_ctl(d, &rec) == KSNAP_ERR_TXN_ABORTABLE)
    write_ctl(d, &rec); /* once more: the record is what makes it last */
}

/* STOP_JOB: the stop-with-savepoint completed (its COMPLETE committed);
 * JOB_STOPPED waits for the sinks' commits (ksnap__drv_stop_check()). */
static void stop_job(ksnap__drv_t *d, const ksnap_coord_action_t *a) {
  free(d->stop_url);
  d->stop_url = complete_url(d, a->checkpoint_id);
  d->stop_id = a->checkpoint_id;
  d->stop_deadline_ms = ksnap__wallclock_ms() + KSNAP__DRV_STOP_COMMIT_WAIT_MS;
  KSNAP_INFO("COORD", "job %s: savepoint %" PRId64 " of the stop completed; "
             "waiting for the sinks to commit it", d->job_name,
             a->checkpoint_id);
  ksnap__drv_stop_check(d, ksnap__wallclock_ms());
}

void ksnap__drv_stop_check(ksnap__drv_t *d, int64_t now_ms) {
  int64_t committed = ksnap_coord_sm_fully_committed(d->sm);
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_JOB_STOPPED};
  const char *url = d->stop_url ? d->stop_url : "";
  bool all;

  if (!d->stop_id || d->done)
    return;
  all = ksnap_coord_sm_all_committed(d->sm, d->stop_id);
  if (!all && now_ms < d->stop_deadline_ms)
    return;
  if (!all)
    KSNAP_WARN("COORD", "job %s: the sinks committed up to %" PRId64 ", not "
               "savepoint %" PRId64 ", within %d ms: the stop is recorded "
               "anyway (a start from the savepoint commits its output)",
               d->job_name, committed, d->stop_id,
               KSNAP__DRV_STOP_COMMIT_WAIT_MS);
  ksnap__fault("coord.before-job-stopped");
  rec.u.job_stopped = (ksnap_job_stopped_t){
      ksnap_coord_sm_generation(d->sm), ksnap__wallclock_ms(), d->stop_id,
      (char *)url};
  if (write_ctl(d, &rec) == KSNAP_ERR_TXN_ABORTABLE &&
      write_ctl(d, &rec) == KSNAP_ERR_TXN_ABORTABLE) {
    ksnap__drv_fail(d, KSNAP_ERR_KAFKA, "job %s: JOB_STOPPED could not be "
                    "written; the job was not stopped (its workers run on)",
                    d->job_name);
    return;
  }
  if (d->done) /* write_ctl failed for good */
    return;
  KSNAP_INFO("COORD", "job %s: job stopped with savepoint %s", d->job_name,
             url);
  d->done = 1;
}

/* A bounded job's end (plugin/PROTOCOL.md section 5.9): once the final
 * checkpoint completed and every sink task committed it (no time limit:
 * a sink task that died restores and commits it again, in a new
 * generation with a final checkpoint of its own), JOB_FINISHED; a
 * drained job's final checkpoint is a savepoint, and JOB_STOPPED with
 * its URL records the stop (section 5.11). */
void ksnap__drv_finish_check(ksnap__drv_t *d) {
  int64_t id = ksnap_coord_sm_final_checkpoint(d->sm);
  bool drained = ksnap_coord_sm_draining(d->sm);
  ksnap_control_record_t rec = {.type = drained ? KSNAP_CONTROL_JOB_STOPPED
                                                : KSNAP_CONTROL_JOB_FINISHED};
  char *url = NULL;

  if (d->done || id == KSNAP_CHECKPOINT_NONE ||
      !ksnap_coord_sm_all_committed(d->sm, id))
    return;
  ksnap__fault(drained ? "coord.before-job-stopped"
                       : "coord.before-job-finished");
  if (drained) {
    if (!(url = complete_url(d, id)))
      return; /* no memory: tried again on the next loop */
    rec.u.job_stopped = (ksnap_job_stopped_t){
        ksnap_coord_sm_generation(d->sm), ksnap__wallclock_ms(), id, url};
  } else {
    rec.u.job_finished = (ksnap_job_finished_t){
        ksnap_coord_sm_generation(d->sm), ksnap__wallclock_ms(), id};
  }
  if (write_ctl(d, &rec) == KSNAP_ERR_TXN_ABORTABLE &&
      write_ctl(d, &rec) == KSNAP_ERR_TXN_ABORTABLE) {
    free(url);
    return; /* tried again on the next loop */
  }
  if (d->done) { /* write_ctl failed for good */
    free(url);
    return;
  }
  ksnap_coord_sm_job_finished(d->sm);
  ksnap__drv_actions(d); /* its log line */
  if (drained)
    KSNAP_INFO("COORD", "job %s: job stopped with savepoint %s after the "
               "drain (committed by every sink task)", d->job_name, url);
  else
    KSNAP_INFO("COORD", "job %s: job finished (final checkpoint %" PRId64
               ", committed by every sink task)", d->job_name, id);
  free(url);
  d->done = 1;
}

static void do_action(ksnap__drv_t *d, ksnap_coord_action_t *a) {
  ksnap_control_record_t rec;
  char *url = NULL;
  ksnap_err_t err;

  memset(&rec, 0, sizeof(rec));
  switch (a->type) {
  case KSNAP_COORD_ACT_TRIGGER:
    rec.type = KSNAP_CONTROL_TRIGGER;
    rec.u.trigger = (ksnap_trigger_t){a->checkpoint_id, a->timestamp_ms,
                                      a->options, a->generation};
    if (!write_ctl(d, &rec) && a->options.is_savepoint &&
        ksnap_coord_sm_state(d->sm) == KSNAP_COORD_STOPPING)
      ksnap__fault("coord.after-stop-trigger");
    break;
  case KSNAP_COORD_ACT_SEND_ABORT:
    rec.type = KSNAP_CONTROL_ABORT;
    rec.u.abort = (ksnap_abort_t){a->checkpoint_id, a->generation,
                                  a->text ? a->text : ""};
    write_ctl(d, &rec);
    break;
  case KSNAP_COORD_ACT_SEND_RESTORE:
    if (a->checkpoint_id != KSNAP_CHECKPOINT_NONE)
      url = a->text ? strdup(a->text) /* a restore point from outside */
                    : ksnap__coord_meta_url(d->conf, d->job_name,
                                            a->checkpoint_id);
    rec.type = KSNAP_CONTROL_RESTORE;
    rec.u.restore = (ksnap_restore_t){a->generation, a->checkpoint_id, url,
                                      a->owners, a->owner_cnt};
    write_ctl(d, &rec);
    break;
  case KSNAP_COORD_ACT_SEND_ASSIGN:
    rec.type = KSNAP_CONTROL_ASSIGN;
    rec.u.assign = (ksnap_assign_t){a->generation, a->task, a->instance,
                                    a->refused};
    write_ctl(d, &rec);
    break;
  case KSNAP_COORD_ACT_SEND_COMPLETE:
    ksnap__fault("coord.before-complete");
    url = complete_url(d, a->checkpoint_id);
    rec.type = KSNAP_CONTROL_COMPLETE;
    rec.u.complete = (ksnap_complete_t){a->checkpoint_id, a->generation,
                                        url ? url : ""};
    err = write_ctl(d, &rec);
    if (!err && d->sp_url && d->sp_id == a->checkpoint_id)
      (void)ksnap_coord_stats_external_path(ksnap_coord_sm_stats(d->sm),
                                            a->checkpoint_id, d->sp_url);
    if (!err)
      ksnap_coord_sm_complete_committed(d->sm, ksnap__wallclock_ms(),
                                        a->checkpoint_id, NULL);
    else if (err == KSNAP_ERR_TXN_ABORTABLE && !d->done)
      ksnap_coord_sm_complete_committed(d->sm, ksnap__wallclock_ms(),
                                        a->checkpoint_id,
                                        "COMPLETE transaction aborted");
    break;
  case KSNAP_COORD_ACT_WRITE_METADATA:
    write_metadata(d, a);
    break;
  case KSNAP_COORD_ACT_RETIRE:
    if (ksnap__coord_store_retire(d->store, a->checkpoint_id))
      KSNAP_WARN("COORD", "job %s: Cannot queue the retirement of "
                 "checkpoint %" PRId64, d->job_name, a->checkpoint_id);
    break;
  case KSNAP_COORD_ACT_FAIL_JOB:
    job_failed(d, a);
    break;
  case KSNAP_COORD_ACT_STOP_JOB:
    stop_job(d, a);
    break;
  case KSNAP_COORD_ACT_SEND_MEMBER:
    rec.type = KSNAP_CONTROL_MEMBER;
    rec.u.member = (ksnap_member_t){a->generation, a->instance,
                                    a->refused ? a->refused : "", a->slots,
                                    a->present, a->text ? a->text : ""};
    write_ctl(d, &rec);
    break;
  case KSNAP_COORD_ACT_LOG:
    if (a->level >= KSNAP_LOG_DEBUG)
      KSNAP_DBG(COORD, "COORD", "job %s: %s", d->job_name,
                a->text ? a->text : "");
    else
      KSNAP_LOG(a->level, "COORD", "job %s: %s", d->job_name,
                a->text ? a->text : "");
    break;
  }
  free(url);
}

void ksnap__drv_actions(ksnap__drv_t *d) {
  ksnap_coord_action_t a;

  /* after a fatal error nothing more is written; the rest is dropped */
  while (ksnap_coord_sm_next_action(d->sm, &a)) {
    if (!d->done || a.type == KSNAP_COORD_ACT_LOG)
      do_action(d, &a);
    ksnap_coord_action_cleanup(&a);
  }
}
