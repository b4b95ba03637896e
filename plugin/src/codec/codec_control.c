/* Control-topic codec (control_v7; reads v1 to v6): TRIGGER, COMPLETE,
 * ABORT, RESTORE, ASSIGN, JOB_FAILED, JOB_STOPPED, MEMBER, JOB_FINISHED in
 * the ControlRecord
 * envelope, whose body union follows the order of ksnap_control_type_t.
 * v1 records have no ASSIGN branch and no RESTORE owner table (decoded as
 * an empty one); v1 and v2 have no JOB_FAILED branch, v1 to v3 no
 * JOB_STOPPED branch, v1 to v4 no MEMBER branch, v1 to v5 no JOB_FINISHED
 * branch, v1 to v6 no Trigger.drain (decoded as false). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "base/util.h"

const char *ksnap_control_type_name(ksnap_control_type_t type) {
  static const char *const names[] = {"TRIGGER", "COMPLETE", "ABORT",
                                      "RESTORE", "ASSIGN",   "JOB_FAILED",
                                      "JOB_STOPPED", "MEMBER",
                                      "JOB_FINISHED"};
  return (unsigned)type < KSNAP_ARRAY_SIZE(names) ? names[type] : "UNKNOWN";
}

static int set_owner(avro_value_t *v, const void *item) {
  const ksnap_task_owner_t *o = item;
  int rc;

  KSNAP__AV(ksnap__av_set_task(v, "task", &o->task));
  KSNAP__AV(ksnap__av_set_string(v, "instance", o->instance));
fail:
  return rc;
}

static int get_owner(const avro_value_t *v, void *item) {
  ksnap_task_owner_t *o = item;
  int rc;

  KSNAP__AV(ksnap__av_get_task(v, "task", &o->task));
  KSNAP__AV(ksnap__av_get_string(v, "instance", &o->instance));
fail:
  return rc;
}

static int set_body(avro_value_t *b, const void *in) {
  const ksnap_control_record_t *rec = in;
  int rc = 0;

  switch (rec->type) {
  case KSNAP_CONTROL_TRIGGER: {
    const ksnap_trigger_t *t = &rec->u.trigger;
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", t->checkpoint_id));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", t->timestamp_ms));
    KSNAP__AV(ksnap__av_set_options(b, "options", &t->options));
    KSNAP__AV(ksnap__av_set_long(b, "generation", t->generation));
    KSNAP__AV(ksnap__av_set_bool(b, "drain", t->options.drain));
    break;
  }
  case KSNAP_CONTROL_COMPLETE:
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id",
                                 rec->u.complete.checkpoint_id));
    KSNAP__AV(ksnap__av_set_long(b, "generation", rec->u.complete.generation));
    KSNAP__AV(ksnap__av_set_string(b, "metadata_path",
                                   rec->u.complete.metadata_path));
    break;
  case KSNAP_CONTROL_ABORT:
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id",
                                 rec->u.abort.checkpoint_id));
    KSNAP__AV(ksnap__av_set_long(b, "generation", rec->u.abort.generation));
    KSNAP__AV(ksnap__av_set_string(b, "reason", rec->u.abort.reason));
    break;
  case KSNAP_CONTROL_RESTORE:
    KSNAP__AV(ksnap__av_set_long(b, "generation", rec->u.restore.generation));
    KSNAP__AV(ksnap__av_set_opt_id(b, "checkpoint_id",
                                   rec->u.restore.checkpoint_id));
    KSNAP__AV(ksnap__av_set_opt_string(b, "metadata_path",
                                       rec->u.restore.metadata_path));
    KSNAP__AV(ksnap__av_set_array(b, "owners", rec->u.restore.owners,
                                  rec->u.restore.owner_cnt,
                                  sizeof(*rec->u.restore.owners), set_owner));
    break;
  case KSNAP_CONTROL_ASSIGN:
    KSNAP__AV(ksnap__av_set_long(b, "generation", rec->u.assign.generation));
    KSNAP__AV(ksnap__av_set_task(b, "task", &rec->u.assign.task));
    KSNAP__AV(ksnap__av_set_string(b, "instance", rec->u.assign.instance));
    KSNAP__AV(ksnap__av_set_string(b, "refused", rec->u.assign.refused
                                                     ? rec->u.assign.refused
                                                     : ""));
    break;
  case KSNAP_CONTROL_JOB_FAILED:
    KSNAP__AV(ksnap__av_set_long(b, "generation",
                                 rec->u.job_failed.generation));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms",
                                 rec->u.job_failed.timestamp_ms));
    KSNAP__AV(ksnap__av_set_string(b, "cause", rec->u.job_failed.cause));
    break;
  case KSNAP_CONTROL_JOB_STOPPED: {
    const ksnap_job_stopped_t *j = &rec->u.job_stopped;
    KSNAP__AV(ksnap__av_set_long(b, "generation", j->generation));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", j->timestamp_ms));
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", j->checkpoint_id));
    KSNAP__AV(ksnap__av_set_string(b, "savepoint_url",
                                   j->savepoint_url ? j->savepoint_url : ""));
    break;
  }
  case KSNAP_CONTROL_MEMBER: {
    const ksnap_member_t *m = &rec->u.member;
    KSNAP__AV(ksnap__av_set_long(b, "generation", m->generation));
    KSNAP__AV(ksnap__av_set_string(b, "worker_id", m->worker_id));
    KSNAP__AV(ksnap__av_set_string(b, "host", m->host ? m->host : ""));
    KSNAP__AV(ksnap__av_set_int(b, "slots", m->slots));
    KSNAP__AV(ksnap__av_set_bool(b, "present", m->present));
    KSNAP__AV(ksnap__av_set_string(b, "reason", m->reason ? m->reason : ""));
    break;
  }
  case KSNAP_CONTROL_JOB_FINISHED: {
    const ksnap_job_finished_t *j = &rec->u.job_finished;
    KSNAP__AV(ksnap__av_set_long(b, "generation", j->generation));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", j->timestamp_ms));
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", j->checkpoint_id));
    break;
  }
  }
fail:
  return rc;
}

static int get_body(const avro_value_t *b, int disc, void *out) {
  ksnap_control_record_t *rec = out;
  int rc;

  rec->type = (ksnap_control_type_t)disc;
  switch (rec->type) {
  case KSNAP_CONTROL_TRIGGER: {
    ksnap_trigger_t *t = &rec->u.trigger;
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &t->checkpoint_id));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &t->timestamp_ms));
    KSNAP__AV(ksnap__av_get_options(b, "options", &t->options));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &t->generation));
    t->options.drain = false; /* before control_v7: not said */
    if (ksnap__av_has(b, "drain"))
      KSNAP__AV(ksnap__av_get_bool(b, "drain", &t->options.drain));
    break;
  }
  case KSNAP_CONTROL_COMPLETE:
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id",
                                 &rec->u.complete.checkpoint_id));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &rec->u.complete.generation));
    KSNAP__AV(ksnap__av_get_string(b, "metadata_path",
                                   &rec->u.complete.metadata_path));
    break;
  case KSNAP_CONTROL_ABORT:
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id",
                                 &rec->u.abort.checkpoint_id));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &rec->u.abort.generation));
    KSNAP__AV(ksnap__av_get_string(b, "reason", &rec->u.abort.reason));
    break;
  case KSNAP_CONTROL_RESTORE:
    KSNAP__AV(ksnap__av_get_long(b, "generation", &rec->u.restore.generation));
    KSNAP__AV(ksnap__av_get_opt_id(b, "checkpoint_id",
                                   &rec->u.restore.checkpoint_id));
    KSNAP__AV(ksnap__av_get_opt_string(b, "metadata_path",
                                       &rec->u.restore.metadata_path));
    if (ksnap__av_has(b, "owners")) /* control_v1: no owner table */
      KSNAP__AV(ksnap__av_get_array(b, "owners",
                                    (void **)&rec->u.restore.owners,
                                    &rec->u.restore.owner_cnt,
                                    sizeof(*rec->u.restore.owners),
                                    get_owner));
    break;
  case KSNAP_CONTROL_ASSIGN:
    KSNAP__AV(ksnap__av_get_long(b, "generation", &rec->u.assign.generation));
    KSNAP__AV(ksnap__av_get_task(b, "task", &rec->u.assign.task));
    KSNAP__AV(ksnap__av_get_string(b, "instance", &rec->u.assign.instance));
    KSNAP__AV(ksnap__av_get_string(b, "refused", &rec->u.assign.refused));
    break;
  case KSNAP_CONTROL_JOB_FAILED:
    KSNAP__AV(ksnap__av_get_long(b, "generation",
                                 &rec->u.job_failed.generation));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms",
                                 &rec->u.job_failed.timestamp_ms));
    KSNAP__AV(ksnap__av_get_string(b, "cause", &rec->u.job_failed.cause));
    break;
  case KSNAP_CONTROL_JOB_STOPPED: {
    ksnap_job_stopped_t *j = &rec->u.job_stopped;
    KSNAP__AV(ksnap__av_get_long(b, "generation", &j->generation));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &j->timestamp_ms));
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &j->checkpoint_id));
    KSNAP__AV(ksnap__av_get_string(b, "savepoint_url", &j->savepoint_url));
    break;
  }
  case KSNAP_CONTROL_MEMBER: {
    ksnap_member_t *m = &rec->u.member;
    KSNAP__AV(ksnap__av_get_long(b, "generation", &m->generation));
    KSNAP__AV(ksnap__av_get_string(b, "worker_id", &m->worker_id));
    KSNAP__AV(ksnap__av_get_string(b, "host", &m->host));
    KSNAP__AV(ksnap__av_get_int(b, "slots", &m->slots));
    KSNAP__AV(ksnap__av_get_bool(b, "present", &m->present));
    KSNAP__AV(ksnap__av_get_string(b, "reason", &m->reason));
    break;
  }
  case KSNAP_CONTROL_JOB_FINISHED: {
    ksnap_job_finished_t *j = &rec->u.job_finished;
    KSNAP__AV(ksnap__av_get_long(b, "generation", &j->generation));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &j->timestamp_ms));
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &j->checkpoint_id));
    break;
  }
  default:
    return ksnap__codec_fail(EINVAL, "unknown control record branch %d",
                             (int)rec->type);
  }
fail:
  return rc;
}

static const char *branch_name(int disc) {
  return ksnap_control_type_name((ksnap_control_type_t)disc);
}

static void cleanup(void *rec) { ksnap_control_record_cleanup(rec); }

static const ksnap__codec_union_t control_union = {
    KSNAP_RECORD_CONTROL, "control-topic", branch_name, set_body, get_body,
    cleanup};

ksnap_err_t ksnap_codec_control_encode(const ksnap_control_record_t *rec,
                                       ksnap_buf_t *out,
                                       ksnap_error_t *error) {
  if ((unsigned)rec->type > KSNAP_CONTROL_JOB_FINISHED)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "unknown control record type %d", (int)rec->type);
  return ksnap__codec_union_encode(&control_union, (int)rec->type, rec, out,
                                   error);
}

ksnap_err_t ksnap_codec_control_decode(const void *buf, size_t len,
                                       ksnap_control_record_t *out,
                                       ksnap_error_t *error) {
  memset(out, 0, sizeof(*out));
  return ksnap__codec_union_decode(&control_union, buf, len, out, error);
}

void ksnap_control_record_cleanup(ksnap_control_record_t *rec) {
  if (!rec)
    return;
  switch (rec->type) {
  case KSNAP_CONTROL_COMPLETE:
    free(rec->u.complete.metadata_path);
    break;
  case KSNAP_CONTROL_ABORT:
    free(rec->u.abort.reason);
    break;
  case KSNAP_CONTROL_RESTORE:
    free(rec->u.restore.metadata_path);
    for (size_t i = 0; i < rec->u.restore.owner_cnt; i++) {
      ksnap_task_id_cleanup(&rec->u.restore.owners[i].task);
      free(rec->u.restore.owners[i].instance);
    }
    free(rec->u.restore.owners);
    break;
  case KSNAP_CONTROL_ASSIGN:
    ksnap_task_id_cleanup(&rec->u.assign.task);
    free(rec->u.assign.instance);
    free(rec->u.assign.refused);
    break;
  case KSNAP_CONTROL_JOB_FAILED:
    free(rec->u.job_failed.cause);
    break;
  case KSNAP_CONTROL_JOB_STOPPED:
    free(rec->u.job_stopped.savepoint_url);
    break;
  case KSNAP_CONTROL_MEMBER:
    free(rec->u.member.worker_id);
    free(rec->u.member.host);
    free(rec->u.member.reason);
    break;
  default:
    break;
  }
  memset(rec, 0, sizeof(*rec));
}
