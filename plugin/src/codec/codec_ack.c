/* Ack-topic codec (ack_v7; reads v1 to v6): REGISTER, HEARTBEAT, ACK,
 * DECLINE, COMMITTED, REQUEST, FAILURE, MEMBER in the AckRecord envelope, whose
 * body union follows the order of ksnap_ack_type_t. Fields a version added
 * are read when the record has them, else they keep their defaults (v1 has
 * no claims and no task_failed, v1 and v2 no ACK error counts); v1 and v2
 * have no FAILURE branch, v1 to v4 no MEMBER branch, v1 to v5 no
 * input_ended in HEARTBEAT and ACK, v1 to v6 no SAVEPOINT_DRAIN request
 * kind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "base/util.h"

const char *ksnap_ack_type_name(ksnap_ack_type_t type) {
  static const char *const names[] = {"REGISTER",  "HEARTBEAT", "ACK",
                                      "DECLINE",   "COMMITTED", "REQUEST",
                                      "FAILURE",   "MEMBER"};
  return (unsigned)type < KSNAP_ARRAY_SIZE(names) ? names[type] : "UNKNOWN";
}

const char *ksnap_request_kind_name(ksnap_request_kind_t kind) {
  static const char *const names[] = {"CHECKPOINT", "SAVEPOINT",
                                      "SAVEPOINT_STOP", "RESTORE",
                                      "SAVEPOINT_DRAIN"};
  return (unsigned)kind < KSNAP_ARRAY_SIZE(names) ? names[kind] : "UNKNOWN";
}

static int set_body(avro_value_t *b, const void *in) {
  const ksnap_ack_record_t *rec = in;
  int rc = 0;

  switch (rec->type) {
  case KSNAP_ACKT_REGISTER: {
    const ksnap_register_t *r = &rec->u.reg;
    KSNAP__AV(ksnap__av_set_task(b, "task", &r->task));
    KSNAP__AV(ksnap__av_set_string(b, "worker_id", r->worker_id));
    KSNAP__AV(ksnap__av_set_string(b, "host", r->host));
    KSNAP__AV(ksnap__av_set_int(b, "pid", r->pid));
    KSNAP__AV(ksnap__av_set_long(b, "generation", r->generation));
    KSNAP__AV(ksnap__av_set_bool(b, "claim", r->claim));
    break;
  }
  case KSNAP_ACKT_HEARTBEAT: {
    const ksnap_heartbeat_t *h = &rec->u.heartbeat;
    KSNAP__AV(ksnap__av_set_task(b, "task", &h->task));
    KSNAP__AV(ksnap__av_set_long(b, "generation", h->generation));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", h->timestamp_ms));
    KSNAP__AV(ksnap__av_set_long(b, "records_in", h->records_in));
    KSNAP__AV(ksnap__av_set_long(b, "records_out", h->records_out));
    KSNAP__AV(ksnap__av_set_bool(b, "input_ended", h->input_ended));
    break;
  }
  case KSNAP_ACKT_ACK: {
    const ksnap_ack_t *a = &rec->u.ack;
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", a->checkpoint_id));
    KSNAP__AV(ksnap__av_set_long(b, "generation", a->generation));
    KSNAP__AV(ksnap__av_set_snapshot(b, "snapshot", &a->snapshot));
    KSNAP__AV(ksnap__av_set_long(b, "records_failed", a->errors.failed));
    KSNAP__AV(ksnap__av_set_long(b, "records_dead_lettered",
                                 a->errors.dead_lettered));
    KSNAP__AV(ksnap__av_set_int(b, "unaligned_reason",
                                a->align.unaligned_reason));
    KSNAP__AV(ksnap__av_set_long(b, "paused_us", a->align.paused_us));
    KSNAP__AV(ksnap__av_set_bool(b, "input_ended", a->input_ended));
    break;
  }
  case KSNAP_ACKT_DECLINE: {
    const ksnap_decline_t *d = &rec->u.decline;
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", d->checkpoint_id));
    KSNAP__AV(ksnap__av_set_task(b, "task", &d->task));
    KSNAP__AV(ksnap__av_set_long(b, "generation", d->generation));
    KSNAP__AV(ksnap__av_set_string(b, "reason", d->reason));
    KSNAP__AV(ksnap__av_set_bool(b, "task_failed", d->task_failed));
    break;
  }
  case KSNAP_ACKT_COMMITTED: {
    const ksnap_committed_t *c = &rec->u.committed;
    KSNAP__AV(ksnap__av_set_long(b, "checkpoint_id", c->checkpoint_id));
    KSNAP__AV(ksnap__av_set_task(b, "task", &c->task));
    KSNAP__AV(ksnap__av_set_long(b, "generation", c->generation));
    break;
  }
  case KSNAP_ACKT_REQUEST: {
    const ksnap_request_t *q = &rec->u.request;
    KSNAP__AV(ksnap__av_set_enum(b, "kind", (int)q->kind, 5));
    KSNAP__AV(ksnap__av_set_string(b, "requester", q->requester));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", q->timestamp_ms));
    break;
  }
  case KSNAP_ACKT_FAILURE: {
    const ksnap_task_failure_t *f = &rec->u.failure;
    KSNAP__AV(ksnap__av_set_task(b, "task", &f->task));
    KSNAP__AV(ksnap__av_set_string(b, "worker_id", f->worker_id));
    KSNAP__AV(ksnap__av_set_long(b, "generation", f->generation));
    KSNAP__AV(ksnap__av_set_string(b, "reason", f->reason));
    KSNAP__AV(ksnap__av_set_bool(b, "retriable", f->retriable));
    break;
  }
  case KSNAP_ACKT_MEMBER: {
    const ksnap_member_hb_t *m = &rec->u.member;
    KSNAP__AV(ksnap__av_set_string(b, "worker_id", m->worker_id));
    KSNAP__AV(ksnap__av_set_string(b, "host", m->host ? m->host : ""));
    KSNAP__AV(ksnap__av_set_int(b, "pid", m->pid));
    KSNAP__AV(ksnap__av_set_int(b, "slots", m->slots));
    KSNAP__AV(ksnap__av_set_long(b, "timestamp_ms", m->timestamp_ms));
    break;
  }
  }
fail:
  return rc;
}

static int get_body(const avro_value_t *b, int disc, void *out) {
  ksnap_ack_record_t *rec = out;
  int rc;

  rec->type = (ksnap_ack_type_t)disc;
  switch (rec->type) {
  case KSNAP_ACKT_REGISTER: {
    ksnap_register_t *r = &rec->u.reg;
    KSNAP__AV(ksnap__av_get_task(b, "task", &r->task));
    KSNAP__AV(ksnap__av_get_string(b, "worker_id", &r->worker_id));
    KSNAP__AV(ksnap__av_get_string(b, "host", &r->host));
    KSNAP__AV(ksnap__av_get_int(b, "pid", &r->pid));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &r->generation));
    r->claim = false; /* ack_v1: no claims */
    if (ksnap__av_has(b, "claim"))
      KSNAP__AV(ksnap__av_get_bool(b, "claim", &r->claim));
    break;
  }
  case KSNAP_ACKT_HEARTBEAT: {
    ksnap_heartbeat_t *h = &rec->u.heartbeat;
    KSNAP__AV(ksnap__av_get_task(b, "task", &h->task));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &h->generation));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &h->timestamp_ms));
    KSNAP__AV(ksnap__av_get_long(b, "records_in", &h->records_in));
    KSNAP__AV(ksnap__av_get_long(b, "records_out", &h->records_out));
    h->input_ended = false; /* before ack_v6: not said */
    if (ksnap__av_has(b, "input_ended"))
      KSNAP__AV(ksnap__av_get_bool(b, "input_ended", &h->input_ended));
    break;
  }
  case KSNAP_ACKT_ACK: {
    ksnap_ack_t *a = &rec->u.ack;
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &a->checkpoint_id));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &a->generation));
    KSNAP__AV(ksnap__av_get_snapshot(b, "snapshot", &a->snapshot));
    if (ksnap__av_has(b, "records_failed")) /* ack_v3 */
      KSNAP__AV(ksnap__av_get_long(b, "records_failed", &a->errors.failed));
    if (ksnap__av_has(b, "records_dead_lettered"))
      KSNAP__AV(ksnap__av_get_long(b, "records_dead_lettered",
                                   &a->errors.dead_lettered));
    if (ksnap__av_has(b, "unaligned_reason")) /* ack_v4 */
      KSNAP__AV(ksnap__av_get_int(b, "unaligned_reason",
                                  &a->align.unaligned_reason));
    if (ksnap__av_has(b, "paused_us"))
      KSNAP__AV(ksnap__av_get_long(b, "paused_us", &a->align.paused_us));
    a->input_ended = false; /* before ack_v6: not said */
    if (ksnap__av_has(b, "input_ended"))
      KSNAP__AV(ksnap__av_get_bool(b, "input_ended", &a->input_ended));
    break;
  }
  case KSNAP_ACKT_DECLINE: {
    ksnap_decline_t *d = &rec->u.decline;
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &d->checkpoint_id));
    KSNAP__AV(ksnap__av_get_task(b, "task", &d->task));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &d->generation));
    KSNAP__AV(ksnap__av_get_string(b, "reason", &d->reason));
    d->task_failed = false; /* ack_v1: not said */
    if (ksnap__av_has(b, "task_failed"))
      KSNAP__AV(ksnap__av_get_bool(b, "task_failed", &d->task_failed));
    break;
  }
  case KSNAP_ACKT_COMMITTED: {
    ksnap_committed_t *c = &rec->u.committed;
    KSNAP__AV(ksnap__av_get_long(b, "checkpoint_id", &c->checkpoint_id));
    KSNAP__AV(ksnap__av_get_task(b, "task", &c->task));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &c->generation));
    break;
  }
  case KSNAP_ACKT_REQUEST: {
    ksnap_request_t *q = &rec->u.request;
    int kind = 0;
    KSNAP__AV(ksnap__av_get_enum(b, "kind", &kind));
    q->kind = (ksnap_request_kind_t)kind;
    KSNAP__AV(ksnap__av_get_string(b, "requester", &q->requester));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &q->timestamp_ms));
    break;
  }
  case KSNAP_ACKT_FAILURE: {
    ksnap_task_failure_t *f = &rec->u.failure;
    KSNAP__AV(ksnap__av_get_task(b, "task", &f->task));
    KSNAP__AV(ksnap__av_get_string(b, "worker_id", &f->worker_id));
    KSNAP__AV(ksnap__av_get_long(b, "generation", &f->generation));
    KSNAP__AV(ksnap__av_get_string(b, "reason", &f->reason));
    KSNAP__AV(ksnap__av_get_bool(b, "retriable", &f->retriable));
    break;
  }
  case KSNAP_ACKT_MEMBER: {
    ksnap_member_hb_t *m = &rec->u.member;
    KSNAP__AV(ksnap__av_get_string(b, "worker_id", &m->worker_id));
    KSNAP__AV(ksnap__av_get_string(b, "host", &m->host));
    KSNAP__AV(ksnap__av_get_int(b, "pid", &m->pid));
    KSNAP__AV(ksnap__av_get_int(b, "slots", &m->slots));
    KSNAP__AV(ksnap__av_get_long(b, "timestamp_ms", &m->timestamp_ms));
    break;
  }
  default:
    return ksnap__codec_fail(EINVAL, "unknown ack-topic record branch %d",
                             (int)rec->type);
  }
fail:
  return rc;
}

static const char *branch_name(int disc) {
  return ksnap_ack_type_name((ksnap_ack_type_t)disc);
}

static void cleanup(void *rec) { ksnap_ack_record_cleanup(rec); }

static const ksnap__codec_union_t ack_union = {
    KSNAP_RECORD_ACK, "ack-topic", branch_name, set_body, get_body, cleanup};

ksnap_err_t ksnap_codec_ack_encode(const ksnap_ack_record_t *rec,
                                   ksnap_buf_t *out, ksnap_error_t *error) {
  if ((unsigned)rec->type > KSNAP_ACKT_MEMBER)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "unknown ack-topic record type %d", (int)rec->type);
  return ksnap__codec_union_encode(&ack_union, (int)rec->type, rec, out,
                                   error);
}

ksnap_err_t ksnap_codec_ack_decode(const void *buf, size_t len,
                                   ksnap_ack_record_t *out,
                                   ksnap_error_t *error) {
  memset(out, 0, sizeof(*out));
  return ksnap__codec_union_decode(&ack_union, buf, len, out, error);
}

void ksnap_ack_record_cleanup(ksnap_ack_record_t *rec) {
  if (!rec)
    return;
  switch (rec->type) {
  case KSNAP_ACKT_REGISTER:
    ksnap_task_id_cleanup(&rec->u.reg.task);
    free(rec->u.reg.worker_id);
    free(rec->u.reg.host);
    break;
  case KSNAP_ACKT_HEARTBEAT:
    ksnap_task_id_cleanup(&rec->u.heartbeat.task);
    break;
  case KSNAP_ACKT_ACK:
    ksnap_task_snapshot_cleanup(&rec->u.ack.snapshot);
    break;
  case KSNAP_ACKT_DECLINE:
    ksnap_task_id_cleanup(&rec->u.decline.task);
    free(rec->u.decline.reason);
    break;
  case KSNAP_ACKT_COMMITTED:
    ksnap_task_id_cleanup(&rec->u.committed.task);
    break;
  case KSNAP_ACKT_REQUEST:
    free(rec->u.request.requester);
    break;
  case KSNAP_ACKT_FAILURE:
    ksnap_task_id_cleanup(&rec->u.failure.task);
    free(rec->u.failure.worker_id);
    free(rec->u.failure.reason);
    break;
  case KSNAP_ACKT_MEMBER:
    free(rec->u.member.worker_id);
    free(rec->u.member.host);
    break;
  }
  memset(rec, 0, sizeof(*rec));
}
