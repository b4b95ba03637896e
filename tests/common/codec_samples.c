/* Sample records for the codec suites (see codec_samples.h). */
#include "codec_samples.h"

#include <string.h>

/* 300 characters: a string whose length prefix takes two bytes. */
#define LONG_REASON                                                          \
  "upload of chk-42/map-3/state failed after 5 attempts: HTTP 503 Slow "    \
  "Down from s3://ksnap-test/jobs/orders/chk-42/map-3-0.state (request id " \
  "4442587FB7D0A2F9, host id sG9zdC1pZA==); the object store is throttling " \
  "this prefix, retry with a longer backoff or spread the keys over more "  \
  "prefixes ......................"

static ksnap_task_id_t task(const char *stage, int32_t index) {
  ksnap_task_id_t t = {(char *)stage, index};
  return t;
}

void ksnap_test_sample_barrier(ksnap_barrier_t *b) {
  memset(b, 0, sizeof(*b));
  b->kind = KSNAP_BARRIER_KIND_BARRIER;
  b->checkpoint_id = 7;
  b->timestamp_ms = 1000;
  b->options.mode = KSNAP_CKPT_UNALIGNED;
  b->options.is_savepoint = true;
  b->writer = task("map", 2);
  b->generation = 3;
}

void ksnap_test_sample_trigger(ksnap_control_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_CONTROL_TRIGGER;
  rec->u.trigger.checkpoint_id = 123456789012LL;
  rec->u.trigger.timestamp_ms = 1796000000000LL;
  rec->u.trigger.options.mode = KSNAP_CKPT_AT_LEAST_ONCE;
  rec->u.trigger.generation = 4;
}

void ksnap_test_sample_restore(ksnap_control_record_t *rec, int with_chk) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_CONTROL_RESTORE;
  rec->u.restore.generation = 9;
  rec->u.restore.checkpoint_id = with_chk ? 41 : KSNAP_CHECKPOINT_NONE;
  rec->u.restore.metadata_path =
      with_chk ? "s3://ksnap-test/jobs/orders/chk-41/_metadata" : NULL;
  if (with_chk) { /* an owner table: one owned task, one vacant */
    static ksnap_task_owner_t owners[2];
    owners[0] = (ksnap_task_owner_t){task("enrich", 11),
                                     "node-3:31337:18a7f3c2d4e5b6a7"};
    owners[1] = (ksnap_task_owner_t){task(KSNAP_TEST_UNICODE_TOPIC, 0), ""};
    rec->u.restore.owners = owners;
    rec->u.restore.owner_cnt = 2;
  }
}

void ksnap_test_sample_assign(ksnap_control_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_CONTROL_ASSIGN;
  rec->u.assign.generation = 9;
  rec->u.assign.task = task("enrich", 11);
  rec->u.assign.instance = "node-3:31337:18a7f3c2d4e5b6a7";
  rec->u.assign.refused = "node-3:2210:18a7f3a0b1c2d3e4";
}

void ksnap_test_sample_job_failed(ksnap_control_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_CONTROL_JOB_FAILED;
  rec->u.job_failed.generation = 4;
  rec->u.job_failed.timestamp_ms = 1796000000789LL;
  rec->u.job_failed.cause = LONG_REASON;
}

void ksnap_test_sample_register(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_REGISTER;
  rec->u.reg.task = task("enrich", 11);
  rec->u.reg.worker_id = "worker-7f3a";
  rec->u.reg.host = "node-3.eu-west-1.compute.internal";
  rec->u.reg.pid = 31337;
  rec->u.reg.generation = 2;
  rec->u.reg.claim = true;
}

void ksnap_test_sample_heartbeat(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_HEARTBEAT;
  rec->u.heartbeat.task = task("enrich", 0);
  rec->u.heartbeat.generation = 2;
  rec->u.heartbeat.timestamp_ms = 1796000000123LL;
  rec->u.heartbeat.records_in = 98765432100LL;
  rec->u.heartbeat.records_out = 0;
}

static ksnap_state_handle_t handles[] = {
    {"s3://ksnap-test/jobs/orders/chk-42/enrich-3-0.state", 10485760,
     "crc32c:1a2b3c4d", 0, 63},
    {"file:///var/lib/ksnap/orders/chk-42/enrich-3-1.state", 0,
     "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
     64, 127},
};
static ksnap_source_offset_t offsets[] = {
    {"orders", 0, 0},
    {"orders", 17, 9007199254740993LL},
    {KSNAP_TEST_UNICODE_TOPIC, 3, 42},
};
static ksnap_channel_pos_t channels[] = {
    {"orders.ksnap.x.map-enrich", 1, {"map", 0}, 1200, true},
    {KSNAP_TEST_UNICODE_TOPIC, 2, {"map", 5}, -1, false},
};

static void sample_snapshot(ksnap_task_snapshot_t *s, const char *stage,
                            int32_t index, int empty) {
  memset(s, 0, sizeof(*s));
  s->task = task(stage, index);
  if (!empty) {
    s->handles = handles;
    s->handle_cnt = 2;
    s->offsets = offsets;
    s->offset_cnt = 3;
    s->channels = channels;
    s->channel_cnt = 2;
  }
  s->timings.sync_us = 180;
  s->timings.async_us = 2500000;
  s->timings.alignment_us = 320;
  s->timings.start_delay_us = 15;
  s->timings.bytes_buffered = 65536;
}

void ksnap_test_sample_ack(ksnap_ack_record_t *rec, int empty) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_ACK;
  rec->u.ack.checkpoint_id = 42;
  rec->u.ack.generation = 2;
  sample_snapshot(&rec->u.ack.snapshot, "enrich", 3, empty);
  if (!empty)
    rec->u.ack.errors = (ksnap_record_errors_t){12, 9007199254740993LL};
}

void ksnap_test_sample_decline(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_DECLINE;
  rec->u.decline.checkpoint_id = 42;
  rec->u.decline.task = task("map", 3);
  rec->u.decline.generation = 2;
  rec->u.decline.reason = LONG_REASON;
  rec->u.decline.task_failed = true;
}

void ksnap_test_sample_committed(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_COMMITTED;
  rec->u.committed.checkpoint_id = 42;
  rec->u.committed.task = task("sink", 1);
  rec->u.committed.generation = 2;
}

void ksnap_test_sample_request(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_REQUEST;
  rec->u.request.kind = KSNAP_REQUEST_SAVEPOINT_STOP;
  rec->u.request.requester = "ksnap-cli@host:42";
  rec->u.request.timestamp_ms = 1700000000000;
}

void ksnap_test_sample_failure(ksnap_ack_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_FAILURE;
  rec->u.failure.task = task("sink", 1);
  rec->u.failure.worker_id = "node-3:31337:18a7f3c2d4e5b6a7";
  rec->u.failure.generation = 3;
  rec->u.failure.reason = "kafka.transaction.timeout.ms (10000) must exceed";
  rec->u.failure.retriable = false;
}

void ksnap_test_sample_progress(ksnap_sink_progress_t *p) {
  memset(p, 0, sizeof(*p));
  p->sink_task = task("sink", 1);
  p->transaction_id = 42;
  p->generation = 2;
}

/* Per thread: the thread-safety test builds samples concurrently. */
static _Thread_local ksnap_task_snapshot_t meta_tasks[3];

void ksnap_test_sample_meta(ksnap_checkpoint_meta_t *m, size_t task_cnt) {
  static const char *const stages[] = {"source", "enrich", "sink"};

  memset(m, 0, sizeof(*m));
  m->job = "orders";
  m->checkpoint_id = 42;
  m->generation = 2;
  m->parent_id = task_cnt ? 40 : KSNAP_CHECKPOINT_NONE;
  m->timestamp_ms = 1796000000456LL;
  m->is_savepoint = task_cnt == 0;
  for (size_t i = 0; i < task_cnt && i < 3; i++)
    sample_snapshot(&meta_tasks[i], stages[i], (int32_t)i, i == 2);
  m->tasks = task_cnt ? meta_tasks : NULL;
  m->task_cnt = task_cnt;
}

/* ---------------------------------------------------------- the table */

#define CONTROL_SAMPLE(fn, build)                                          \
  static ksnap_err_t fn(ksnap_buf_t *out, ksnap_error_t *error) {          \
    ksnap_control_record_t rec;                                            \
    build;                                                                 \
    return ksnap_codec_control_encode(&rec, out, error);                   \
  }
#define ACK_SAMPLE(fn, build)                                              \
  static ksnap_err_t fn(ksnap_buf_t *out, ksnap_error_t *error) {          \
    ksnap_ack_record_t rec;                                                \
    build;                                                                 \
    return ksnap_codec_ack_encode(&rec, out, error);                       \
  }

static ksnap_err_t enc_barrier(ksnap_buf_t *out, ksnap_error_t *error) {
  ksnap_barrier_t b;
  ksnap_test_sample_barrier(&b);
  b.kind = KSNAP_BARRIER_KIND_CANCEL;
  return ksnap_codec_barrier_encode(&b, out, error);
}
CONTROL_SAMPLE(enc_trigger, ksnap_test_sample_trigger(&rec))
CONTROL_SAMPLE(enc_complete, {
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_COMPLETE;
  rec.u.complete.checkpoint_id = 42;
  rec.u.complete.generation = 2;
  rec.u.complete.metadata_path = "s3://ksnap-test/jobs/orders/chk-42/_metadata";
})
CONTROL_SAMPLE(enc_abort, {
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_ABORT;
  rec.u.abort.checkpoint_id = 43;
  rec.u.abort.generation = 2;
  rec.u.abort.reason = LONG_REASON;
})
CONTROL_SAMPLE(enc_restore, ksnap_test_sample_restore(&rec, 1))
CONTROL_SAMPLE(enc_restore_none, ksnap_test_sample_restore(&rec, 0))
CONTROL_SAMPLE(enc_assign, ksnap_test_sample_assign(&rec))
CONTROL_SAMPLE(enc_job_failed, ksnap_test_sample_job_failed(&rec))
ACK_SAMPLE(enc_register, ksnap_test_sample_register(&rec))
ACK_SAMPLE(enc_heartbeat, ksnap_test_sample_heartbeat(&rec))
ACK_SAMPLE(enc_ack, ksnap_test_sample_ack(&rec, 0))
ACK_SAMPLE(enc_ack_empty, ksnap_test_sample_ack(&rec, 1))
ACK_SAMPLE(enc_decline, ksnap_test_sample_decline(&rec))
ACK_SAMPLE(enc_committed, ksnap_test_sample_committed(&rec))
ACK_SAMPLE(enc_failure, ksnap_test_sample_failure(&rec))

static ksnap_err_t enc_progress(ksnap_buf_t *out, ksnap_error_t *error) {
  ksnap_sink_progress_t p;
  ksnap_test_sample_progress(&p);
  return ksnap_codec_progress_encode(&p, out, error);
}
static ksnap_err_t enc_meta(ksnap_buf_t *out, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t m;
  ksnap_test_sample_meta(&m, 3);
  return ksnap_codec_meta_encode(&m, out, error);
}
static ksnap_err_t enc_meta_empty(ksnap_buf_t *out, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t m;
  ksnap_test_sample_meta(&m, 0);
  return ksnap_codec_meta_encode(&m, out, error);
}

#define DECODER(fn, type, decode, cleanup)                                 \
  static ksnap_err_t fn(const void *buf, size_t len, ksnap_error_t *error) { \
    type rec;                                                              \
    ksnap_err_t err = decode(buf, len, &rec, error);                       \
    if (!err)                                                              \
      cleanup(&rec);                                                       \
    return err;                                                            \
  }
DECODER(dec_barrier, ksnap_barrier_t, ksnap_codec_barrier_decode,
        ksnap_barrier_cleanup)
DECODER(dec_control, ksnap_control_record_t, ksnap_codec_control_decode,
        ksnap_control_record_cleanup)
DECODER(dec_ack, ksnap_ack_record_t, ksnap_codec_ack_decode,
        ksnap_ack_record_cleanup)
DECODER(dec_progress, ksnap_sink_progress_t, ksnap_codec_progress_decode,
        ksnap_sink_progress_cleanup)
DECODER(dec_meta, ksnap_checkpoint_meta_t, ksnap_codec_meta_decode,
        ksnap_checkpoint_meta_cleanup)

const ksnap_test_codec_sample_t ksnap_test_codec_samples[] = {
    {"barrier-cancel", enc_barrier, dec_barrier},
    {"trigger", enc_trigger, dec_control},
    {"complete", enc_complete, dec_control},
    {"abort", enc_abort, dec_control},
    {"restore", enc_restore, dec_control},
    {"restore-none", enc_restore_none, dec_control},
    {"assign", enc_assign, dec_control},
    {"job-failed", enc_job_failed, dec_control},
    {"register", enc_register, dec_ack},
    {"heartbeat", enc_heartbeat, dec_ack},
    {"ack", enc_ack, dec_ack},
    {"ack-empty", enc_ack_empty, dec_ack},
    {"decline", enc_decline, dec_ack},
    {"committed", enc_committed, dec_ack},
    {"failure", enc_failure, dec_ack},
    {"progress", enc_progress, dec_progress},
    {"metadata", enc_meta, dec_meta},
    {"metadata-empty", enc_meta_empty, dec_meta},
};

const size_t ksnap_test_codec_sample_cnt =
    sizeof(ksnap_test_codec_samples) / sizeof(ksnap_test_codec_samples[0]);
