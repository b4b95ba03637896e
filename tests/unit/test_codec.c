/* Record codecs: round trips of every record type, the golden wire bytes
 * of a barrier, and the envelope errors (magic, type, version, trailing
 * bytes, truncation) with their exact messages. Corruption loops are in
 * test_codec_fuzz.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codec/codec.h"
#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

/* The barrier sample, byte by byte (see plugin/PROTOCOL.md 2.3 and barrier_v1.avsc). */
static const uint8_t barrier_golden[] = {
    'K', 0x01, 0x01, /* magic, type BARRIER, version 1 */
    0x02,            /* schema_version 1 (zig-zag) */
    0x00,            /* kind BARRIER */
    0x0e,            /* checkpoint_id 7 */
    0xd0, 0x0f,      /* timestamp_ms 1000 */
    0x02,            /* mode UNALIGNED */
    0x01,            /* is_savepoint */
    0x06, 'm', 'a', 'p', /* writer.stage at byte 10 */
    0x04,            /* writer.index 2 */
    0x06,            /* generation 3 */
};

START_TEST(barrier_wire_bytes_are_stable) {
  ksnap_barrier_t in, out;
  ksnap_error_t err;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  ksnap_test_sample_barrier(&in);
  ck_assert_int_eq(ksnap_codec_barrier_encode(&in, &buf, &err), 0);
  ck_assert_uint_eq(buf.len, sizeof(barrier_golden));
  ck_assert_mem_eq(buf.data, barrier_golden, sizeof(barrier_golden));

  ck_assert_int_eq(ksnap_codec_barrier_decode(barrier_golden,
                                              sizeof(barrier_golden), &out,
                                              &err), 0);
  ck_assert_int_eq(out.kind, KSNAP_BARRIER_KIND_BARRIER);
  ck_assert_int_eq(out.checkpoint_id, 7);
  ck_assert_int_eq(out.timestamp_ms, 1000);
  ck_assert_int_eq(out.options.mode, KSNAP_CKPT_UNALIGNED);
  ck_assert(out.options.is_savepoint);
  ck_assert_str_eq(out.writer.stage, "map");
  ck_assert_int_eq(out.writer.index, 2);
  ck_assert_int_eq(out.generation, 3);
  ksnap_barrier_cleanup(&out);
  ksnap_buf_cleanup(&buf);
}
END_TEST

/* Encode, decode, re-encode: the bytes must match (every field kept). */
static void assert_reencodes(const ksnap_buf_t *first,
                             const ksnap_buf_t *again) {
  ck_assert_uint_eq(first->len, again->len);
  ck_assert_mem_eq(first->data, again->data, first->len);
}

START_TEST(control_records_round_trip) {
  ksnap_control_record_t in, out;
  ksnap_buf_t a, b;
  ksnap_error_t err;

  ksnap_buf_init(&a);
  ksnap_buf_init(&b);
  for (int i = 0; i < 8; i++) {
    if (i == 0)
      ksnap_test_sample_trigger(&in);
    else if (i == 1 || i == 2)
      ksnap_test_sample_restore(&in, i == 1);
    else if (i == 4)
      ksnap_test_sample_assign(&in);
    else if (i == 5)
      ksnap_test_sample_job_failed(&in);
    else if (i == 6) {
      memset(&in, 0, sizeof(in));
      in.type = KSNAP_CONTROL_JOB_STOPPED;
      in.u.job_stopped = (ksnap_job_stopped_t){
          5, 1796000000999LL, 77, "file:///sp/savepoint-orders-77-a1b2"};
    } else if (i == 7) { /* control_v5 */
      memset(&in, 0, sizeof(in));
      in.type = KSNAP_CONTROL_MEMBER;
      in.u.member = (ksnap_member_t){6, "node-3:31337:18a7f3c2d4e5b6a7",
                                     "node-3", 4, false,
                                     "no MEMBER heartbeat for 2001 ms"};
    } else {
      memset(&in, 0, sizeof(in));
      in.type = KSNAP_CONTROL_COMPLETE;
      in.u.complete.checkpoint_id = 42;
      in.u.complete.generation = 2;
      in.u.complete.metadata_path = "s3://b/orders/chk-42/_metadata";
    }
    ck_assert_int_eq(ksnap_codec_control_encode(&in, &a, &err), 0);
    ck_assert_int_eq(ksnap_codec_control_decode(a.data, a.len, &out, &err), 0);
    ck_assert_int_eq(out.type, in.type);
    ck_assert_int_eq(ksnap_codec_control_encode(&out, &b, &err), 0);
    assert_reencodes(&a, &b);
    if (i == 0) {
      ck_assert_int_eq(out.u.trigger.checkpoint_id, 123456789012LL);
      ck_assert_int_eq(out.u.trigger.options.mode, KSNAP_CKPT_AT_LEAST_ONCE);
      ck_assert(!out.u.trigger.options.is_savepoint);
    } else if (i == 1) {
      ck_assert_int_eq(out.u.restore.checkpoint_id, 41);
      ck_assert_str_eq(out.u.restore.metadata_path,
                       "s3://ksnap-test/jobs/orders/chk-41/_metadata");
      ck_assert_uint_eq(out.u.restore.owner_cnt, 2);
      ck_assert_str_eq(out.u.restore.owners[0].task.stage, "enrich");
      ck_assert_int_eq(out.u.restore.owners[0].task.index, 11);
      ck_assert_str_eq(out.u.restore.owners[0].instance,
                       "node-3:31337:18a7f3c2d4e5b6a7");
      ck_assert_str_eq(out.u.restore.owners[1].task.stage,
                       KSNAP_TEST_UNICODE_TOPIC);
      ck_assert_str_eq(out.u.restore.owners[1].instance, "");
    } else if (i == 2) {
      ck_assert_int_eq(out.u.restore.checkpoint_id, KSNAP_CHECKPOINT_NONE);
      ck_assert_ptr_null(out.u.restore.metadata_path);
      ck_assert_int_eq(out.u.restore.generation, 9);
      ck_assert_uint_eq(out.u.restore.owner_cnt, 0);
    } else if (i == 4) {
      ck_assert_int_eq(out.u.assign.generation, 9);
      ck_assert_str_eq(out.u.assign.task.stage, "enrich");
      ck_assert_str_eq(out.u.assign.instance,
                       "node-3:31337:18a7f3c2d4e5b6a7");
      ck_assert_str_eq(out.u.assign.refused, "node-3:2210:18a7f3a0b1c2d3e4");
    } else if (i == 5) {
      ck_assert_int_eq(out.u.job_failed.generation, 4);
      ck_assert_int_eq(out.u.job_failed.timestamp_ms, 1796000000789LL);
      ck_assert_str_eq(out.u.job_failed.cause, in.u.job_failed.cause);
    } else if (i == 6) {
      ck_assert_int_eq(out.u.job_stopped.generation, 5);
      ck_assert_int_eq(out.u.job_stopped.timestamp_ms, 1796000000999LL);
      ck_assert_int_eq(out.u.job_stopped.checkpoint_id, 77);
      ck_assert_str_eq(out.u.job_stopped.savepoint_url,
                       "file:///sp/savepoint-orders-77-a1b2");
    } else if (i == 7) {
      ck_assert_int_eq(out.u.member.generation, 6);
      ck_assert_str_eq(out.u.member.worker_id, in.u.member.worker_id);
      ck_assert_str_eq(out.u.member.host, "node-3");
      ck_assert_int_eq(out.u.member.slots, 4);
      ck_assert(!out.u.member.present);
      ck_assert_str_eq(out.u.member.reason, in.u.member.reason);
    } else {
      ck_assert_str_eq(out.u.complete.metadata_path,
                       "s3://b/orders/chk-42/_metadata");
    }
    ksnap_control_record_cleanup(&out);
  }
  ksnap_buf_cleanup(&a);
  ksnap_buf_cleanup(&b);
}
END_TEST

START_TEST(ack_topic_records_round_trip) {
  ksnap_ack_record_t in, out;
  ksnap_buf_t a, b;
  ksnap_error_t err;

  ksnap_buf_init(&a);
  ksnap_buf_init(&b);
  for (int i = 0; i < 9; i++) {
    switch (i) {
    case 8: /* ack_v5 */
      memset(&in, 0, sizeof(in));
      in.type = KSNAP_ACKT_MEMBER;
      in.u.member = (ksnap_member_hb_t){"node-3:31337:18a7f3c2d4e5b6a7",
                                        "node-3", 31337, 4, 1796000000111LL};
      break;
    case 7: ksnap_test_sample_failure(&in); break;
    case 0: ksnap_test_sample_register(&in); break;
    case 1: ksnap_test_sample_heartbeat(&in); break;
    case 2: ksnap_test_sample_ack(&in, 0); break;
    case 3: ksnap_test_sample_ack(&in, 1); break;
    case 4: ksnap_test_sample_decline(&in); break;
    case 5: ksnap_test_sample_request(&in); break;
    default: ksnap_test_sample_committed(&in); break;
    }
    ck_assert_int_eq(ksnap_codec_ack_encode(&in, &a, &err), 0);
    ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err), 0);
    ck_assert_int_eq(out.type, in.type);
    ck_assert_int_eq(ksnap_codec_ack_encode(&out, &b, &err), 0);
    assert_reencodes(&a, &b);
    if (i == 0)
      ck_assert(out.u.reg.claim);
    if (i == 4)
      ck_assert(out.u.decline.task_failed);
    if (i == 7) {
      ck_assert_str_eq(out.u.failure.task.stage, "sink");
      ck_assert_str_eq(out.u.failure.worker_id,
                       "node-3:31337:18a7f3c2d4e5b6a7");
      ck_assert_int_eq(out.u.failure.generation, 3);
      ck_assert_str_eq(out.u.failure.reason, in.u.failure.reason);
      ck_assert(!out.u.failure.retriable);
    }
    if (i == 8) {
      ck_assert_str_eq(out.u.member.worker_id, in.u.member.worker_id);
      ck_assert_str_eq(out.u.member.host, "node-3");
      ck_assert_int_eq(out.u.member.pid, 31337);
      ck_assert_int_eq(out.u.member.slots, 4);
      ck_assert_int_eq(out.u.member.timestamp_ms, 1796000000111LL);
    }
    ksnap_ack_record_cleanup(&out);
  }
  ksnap_buf_cleanup(&a);
  ksnap_buf_cleanup(&b);
}
END_TEST

START_TEST(ack_keeps_handles_offsets_channels_timings) {
  ksnap_ack_record_t in, out;
  const ksnap_task_snapshot_t *s = &out.u.ack.snapshot;
  ksnap_error_t err;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  ksnap_test_sample_ack(&in, 0);
  in.u.ack.align = (ksnap_align_stats_t){3, 4500}; /* ack_v4 */
  ck_assert_int_eq(ksnap_codec_ack_encode(&in, &buf, &err), 0);
  ck_assert_int_eq(ksnap_codec_ack_decode(buf.data, buf.len, &out, &err), 0);
  ck_assert_int_eq(out.u.ack.checkpoint_id, 42);
  ck_assert_int_eq(out.u.ack.align.unaligned_reason, 3);
  ck_assert_int_eq(out.u.ack.align.paused_us, 4500);
  ck_assert_str_eq(s->task.stage, "enrich");
  ck_assert_int_eq(s->task.index, 3);
  ck_assert_uint_eq(s->handle_cnt, 2);
  ck_assert_int_eq(s->handles[0].size, 10485760);
  ck_assert_str_eq(s->handles[0].checksum, "crc32c:1a2b3c4d");
  ck_assert_int_eq(s->handles[1].key_group_start, 64);
  ck_assert_int_eq(s->handles[1].key_group_end, 127);
  ck_assert_uint_eq(s->offset_cnt, 3);
  ck_assert_int_eq(s->offsets[1].offset, 9007199254740993LL);
  ck_assert_str_eq(s->offsets[2].topic, KSNAP_TEST_UNICODE_TOPIC);
  ck_assert_uint_eq(s->channel_cnt, 2);
  ck_assert_str_eq(s->channels[1].topic, KSNAP_TEST_UNICODE_TOPIC);
  ck_assert_str_eq(s->channels[1].writer.stage, "map");
  ck_assert_int_eq(s->channels[1].writer.index, 5);
  ck_assert_int_eq(s->channels[0].off_c, 1200);
  ck_assert(s->channels[0].passed);
  ck_assert(!s->channels[1].passed);
  ck_assert_int_eq(s->timings.async_us, 2500000);
  ck_assert_int_eq(s->timings.bytes_buffered, 65536);
  ck_assert_int_eq(out.u.ack.errors.failed, 12);
  ck_assert_int_eq(out.u.ack.errors.dead_lettered, 9007199254740993LL);
  ksnap_ack_record_cleanup(&out);
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(progress_and_metadata_round_trip) {
  ksnap_sink_progress_t pin, pout;
  ksnap_checkpoint_meta_t min, mout;
  ksnap_buf_t a, b;
  ksnap_error_t err;

  ksnap_buf_init(&a);
  ksnap_buf_init(&b);
  ksnap_test_sample_progress(&pin);
  ck_assert_int_eq(ksnap_codec_progress_encode(&pin, &a, &err), 0);
  ck_assert_int_eq(ksnap_codec_progress_decode(a.data, a.len, &pout, &err), 0);
  ck_assert_str_eq(pout.sink_task.stage, "sink");
  ck_assert_int_eq(pout.transaction_id, 42);
  ksnap_sink_progress_cleanup(&pout);

  for (size_t n = 0; n <= 3; n += 3) {
    ksnap_test_sample_meta(&min, n);
    ck_assert_int_eq(ksnap_codec_meta_encode(&min, &a, &err), 0);
    ck_assert_int_eq(ksnap_codec_meta_decode(a.data, a.len, &mout, &err), 0);
    ck_assert_str_eq(mout.job, "orders");
    ck_assert_uint_eq(mout.task_cnt, n);
    ck_assert_int_eq(mout.parent_id, n ? 40 : KSNAP_CHECKPOINT_NONE);
    ck_assert(mout.is_savepoint == (n == 0));
    ck_assert_int_eq(ksnap_codec_meta_encode(&mout, &b, &err), 0);
    assert_reencodes(&a, &b);
    if (n) {
      ck_assert_str_eq(mout.tasks[2].task.stage, "sink");
      ck_assert_uint_eq(mout.tasks[2].handle_cnt, 0);
      ck_assert_uint_eq(mout.tasks[1].channel_cnt, 2);
    }
    ksnap_checkpoint_meta_cleanup(&mout);
  }
  ksnap_buf_cleanup(&a);
  ksnap_buf_cleanup(&b);
}
END_TEST

START_TEST(long_strings_round_trip) {
  size_t n = 200000;
  char *big = malloc(n + 1);
  ksnap_ack_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t buf;

  for (size_t i = 0; i < n; i++)
    big[i] = (char)('a' + i % 26);
  big[n] = '\0';
  ksnap_buf_init(&buf);
  ksnap_test_sample_decline(&in);
  in.u.decline.reason = big;
  ck_assert_int_eq(ksnap_codec_ack_encode(&in, &buf, &err), 0);
  ck_assert_int_eq(ksnap_codec_ack_decode(buf.data, buf.len, &out, &err), 0);
  ck_assert_uint_eq(strlen(out.u.decline.reason), n);
  ck_assert_int_eq(memcmp(out.u.decline.reason, big, n), 0);
  ksnap_ack_record_cleanup(&out);
  ksnap_buf_cleanup(&buf);
  free(big);
}
END_TEST

/* The ACK's TaskSnapshot and the metadata's are the same bytes. */
START_TEST(task_snapshot_is_the_same_in_ack_and_metadata) {
  ksnap_ack_record_t ack;
  ksnap_checkpoint_meta_t meta;
  ksnap_buf_t a, m;
  ksnap_error_t err;
  size_t snap_len;

  ksnap_buf_init(&a);
  ksnap_buf_init(&m);
  ksnap_test_sample_ack(&ack, 0);
  ack.u.ack.errors = (ksnap_record_errors_t){0, 0};
  ack.u.ack.align = (ksnap_align_stats_t){0, 0};
  ksnap_test_sample_meta(&meta, 1);
  meta.tasks[0] = ack.u.ack.snapshot;
  ck_assert_int_eq(ksnap_codec_ack_encode(&ack, &a, &err), 0);
  ck_assert_int_eq(ksnap_codec_meta_encode(&meta, &m, &err), 0);
  /* ack: header 3, version 1, branch 1, checkpoint 42 (1), generation 2
   * (1), the snapshot, then the v3 counts 0 and 0, the v4 alignment
   * figures 0 and 0 and the v6 input_ended false (1 byte each) */
  snap_len = a.len - 7 - 5;
  ck_assert_uint_gt(m.len, snap_len + 2);
  ck_assert_int_eq(m.data[m.len - 1], 0x00);            /* end of array */
  ck_assert_int_eq(m.data[m.len - 2 - snap_len], 0x02); /* 1 item */
  ck_assert_mem_eq(m.data + m.len - 1 - snap_len, a.data + 7, snap_len);
  ksnap_buf_cleanup(&a);
  ksnap_buf_cleanup(&m);
}
END_TEST

static ksnap_buf_t encoded_barrier(void) {
  ksnap_barrier_t in;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  ksnap_test_sample_barrier(&in);
  ck_assert_int_eq(ksnap_codec_barrier_encode(&in, &buf, NULL), 0);
  return buf;
}

START_TEST(envelope_errors_name_the_problem) {
  ksnap_buf_t buf = encoded_barrier();
  ksnap_barrier_t out;
  ksnap_error_t err;

  buf.data[0] = 'X';
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg,
                   "BARRIER record: bad magic byte 0x58 (expected 'K')");
  buf.data[0] = 'K';

  buf.data[2] = 2;
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_SCHEMA_VERSION);
  ck_assert_str_eq(err.msg,
                   "schema version 2 is newer than this ksnap supports (1)");
  buf.data[2] = 0;
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record: invalid schema version 0");
  buf.data[2] = 1;

  ck_assert_int_eq(ksnap_codec_progress_decode(buf.data, buf.len,
                                               &(ksnap_sink_progress_t){0},
                                               &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg,
                   "expected a SINK_PROGRESS record (type 4), got type 1");

  buf.data[3] = 0x04; /* schema_version field 2 under envelope version 1 */
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record: schema_version field 2 does not "
                            "match envelope version 1");
  buf.data[3] = 0x02;

  ck_assert_int_eq(ksnap_buf_append(&buf, "\0\0", 2), 0);
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg,
                   "BARRIER record has 2 trailing bytes after byte 16");
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(truncation_names_record_and_offset) {
  ksnap_buf_t buf = encoded_barrier();
  ksnap_ack_record_t ack;
  ksnap_barrier_t out;
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, 12, &out, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "BARRIER record truncated at byte 10 of 12");
  ck_assert_int_eq(ksnap_codec_barrier_decode(buf.data, 0, &out, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "BARRIER record truncated at byte 0 of 0");
  ck_assert_int_eq(ksnap_codec_barrier_decode(NULL, 0, &out, &err),
                   KSNAP_ERR_TRUNCATED);

  /* Once the union branch is read, the message names the ACK itself. */
  ksnap_test_sample_ack(&ack, 0);
  ck_assert_int_eq(ksnap_codec_ack_encode(&ack, &buf, &err), 0);
  ck_assert_int_eq(ksnap_codec_ack_decode(buf.data, 52, &ack, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "ACK record truncated at byte 16 of 52");
  ck_assert_int_eq(ksnap_codec_ack_decode(buf.data, 4, &ack, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "ack-topic record truncated at byte 4 of 4");
  ksnap_buf_cleanup(&buf);
}
END_TEST

/* Records written by a ksnap of schema version 1 (before task owners),
 * byte by byte: they decode with the defaults of the fields v2 added. */
START_TEST(version_1_records_decode_with_defaults) {
  static const uint8_t restore_v1[] = {
      'K', KSNAP_RECORD_CONTROL, 0x01,
      0x02,       /* schema_version 1 */
      0x06,       /* body branch 3: Restore */
      0x0a,       /* generation 5 */
      0x02, 0x0e, /* checkpoint_id: long 7 */
      0x00,       /* metadata_path: null */
  };
  static const uint8_t register_v1[] = {
      'K', KSNAP_RECORD_ACK, 0x01,
      0x02,            /* schema_version 1 */
      0x00,            /* body branch 0: Register */
      0x02, 'a', 0x00, /* task a[0] */
      0x02, 'w',       /* worker_id */
      0x02, 'h',       /* host */
      0x02,            /* pid 1 */
      0x04,            /* generation 2 */
  };
  static const uint8_t assign_v1[] = {'K', KSNAP_RECORD_CONTROL, 0x01, 0x02,
                                      0x08};
  static const uint8_t ack_v1[] = {
      'K', KSNAP_RECORD_ACK, 0x01,
      0x02,                         /* schema_version 1 */
      0x04,                         /* body branch 2: Ack */
      0x0e,                         /* checkpoint_id 7 */
      0x04,                         /* generation 2 */
      0x02, 'a', 0x00,              /* task a[0] */
      0x00, 0x00, 0x00,             /* no handles, offsets, channels */
      0x02, 0x04, 0x06, 0x08, 0x0a, /* timings 1..5 */
  };
  ksnap_control_record_t c;
  ksnap_ack_record_t a;
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_codec_control_decode(restore_v1, sizeof(restore_v1),
                                              &c, &err), 0);
  ck_assert_int_eq(c.type, KSNAP_CONTROL_RESTORE);
  ck_assert_int_eq(c.u.restore.generation, 5);
  ck_assert_int_eq(c.u.restore.checkpoint_id, 7);
  ck_assert_uint_eq(c.u.restore.owner_cnt, 0); /* no owner table */
  ksnap_control_record_cleanup(&c);
  ck_assert_int_eq(ksnap_codec_ack_decode(register_v1, sizeof(register_v1),
                                          &a, &err), 0);
  ck_assert_str_eq(a.u.reg.worker_id, "w");
  ck_assert_int_eq(a.u.reg.generation, 2);
  ck_assert(!a.u.reg.claim);
  ksnap_ack_record_cleanup(&a);
  /* an ACK without the v3 counts: 0 */
  ck_assert_int_eq(ksnap_codec_ack_decode(ack_v1, sizeof(ack_v1), &a, &err),
                   0);
  ck_assert_int_eq(a.u.ack.checkpoint_id, 7);
  ck_assert_int_eq(a.u.ack.snapshot.timings.bytes_buffered, 5);
  ck_assert_int_eq(a.u.ack.errors.failed, 0);
  ck_assert_int_eq(a.u.ack.errors.dead_lettered, 0);
  ksnap_ack_record_cleanup(&a);
  /* v1 has no ASSIGN branch */
  ck_assert_int_eq(ksnap_codec_control_decode(assign_v1, sizeof(assign_v1),
                                              &c, &err), KSNAP_ERR_CORRUPT);
}
END_TEST

/* Records of schema version 2 (before JOB_FAILED, FAILURE and an ACK's
 * error counts) decode with the v2 schema: its unions have no JOB_FAILED
 * or FAILURE branch, and an ACK's counts are 0. */
START_TEST(version_2_records_decode) {
  static const uint8_t decline_v2[] = {
      'K', KSNAP_RECORD_ACK, 0x02,
      0x04,            /* schema_version 2 */
      0x06,            /* body branch 3: Decline */
      0x0e,            /* checkpoint_id 7 */
      0x02, 'a', 0x00, /* task a[0] */
      0x04,            /* generation 2 */
      0x02, 'r',       /* reason */
      0x01,            /* task_failed true */
  };
  static const uint8_t ack_v2[] = {
      'K', KSNAP_RECORD_ACK, 0x02,
      0x04,                         /* schema_version 2 */
      0x04,                         /* body branch 2: Ack */
      0x0e,                         /* checkpoint_id 7 */
      0x04,                         /* generation 2 */
      0x02, 'a', 0x00,              /* task a[0] */
      0x00, 0x00, 0x00,             /* no handles, offsets, channels */
      0x02, 0x04, 0x06, 0x08, 0x0a, /* timings 1..5 */
  };
  static const uint8_t failure_v2[] = {'K', KSNAP_RECORD_ACK, 0x02, 0x04,
                                       0x0c};
  static const uint8_t job_failed_v2[] = {'K', KSNAP_RECORD_CONTROL, 0x02,
                                          0x04, 0x0a};
  static const uint8_t job_stopped_v3[] = {
      'K', KSNAP_RECORD_CONTROL, 0x03, 0x06, 0x0c, /* branch 6 */
      0x02, 0x02, 0x02, 0x02, 'u'};
  ksnap_control_record_t c;
  ksnap_ack_record_t a;
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_codec_ack_decode(decline_v2, sizeof(decline_v2), &a,
                                          &err), 0);
  ck_assert_int_eq(a.type, KSNAP_ACKT_DECLINE);
  ck_assert_int_eq(a.u.decline.checkpoint_id, 7);
  ck_assert(a.u.decline.task_failed);
  ksnap_ack_record_cleanup(&a);
  /* an ACK without the v3 error counts: 0 */
  ck_assert_int_eq(ksnap_codec_ack_decode(ack_v2, sizeof(ack_v2), &a, &err),
                   0);
  ck_assert_int_eq(a.u.ack.checkpoint_id, 7);
  ck_assert_int_eq(a.u.ack.snapshot.timings.bytes_buffered, 5);
  ck_assert_int_eq(a.u.ack.errors.failed, 0);
  ck_assert_int_eq(a.u.ack.errors.dead_lettered, 0);
  ksnap_ack_record_cleanup(&a);
  ck_assert_int_eq(ksnap_codec_ack_decode(failure_v2, sizeof(failure_v2), &a,
                                          &err), KSNAP_ERR_CORRUPT);
  ck_assert_int_eq(ksnap_codec_control_decode(job_failed_v2,
                                              sizeof(job_failed_v2), &c,
                                              &err), KSNAP_ERR_CORRUPT);
  /* v3 has no JOB_STOPPED branch (body branch 6) */
  ck_assert_int_eq(ksnap_codec_control_decode(job_stopped_v3,
                                              sizeof(job_stopped_v3), &c,
                                              &err), KSNAP_ERR_CORRUPT);
}
END_TEST

START_TEST(peek_reads_type_and_version) {
  ksnap_buf_t buf = encoded_barrier();
  ksnap_record_type_t type;
  ksnap_error_t err;
  int version;

  ck_assert_int_eq(ksnap_codec_peek(buf.data, buf.len, &type, &version, &err),
                   0);
  ck_assert_int_eq(type, KSNAP_RECORD_BARRIER);
  ck_assert_int_eq(version, 1);
  buf.data[1] = 99;
  ck_assert_int_eq(ksnap_codec_peek(buf.data, buf.len, &type, &version, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "unknown record type 99");
  ck_assert_int_eq(ksnap_codec_schema_version(KSNAP_RECORD_ACK), 7);
  ck_assert_int_eq(ksnap_codec_schema_version(KSNAP_RECORD_CONTROL), 7);
  ck_assert_int_eq(ksnap_codec_schema_version((ksnap_record_type_t)99), 0);
  ck_assert_str_eq(ksnap_record_type_name(KSNAP_RECORD_ACK), "ACK_TOPIC");
  ck_assert_str_eq(ksnap_ack_type_name(KSNAP_ACKT_COMMITTED), "COMMITTED");
  ck_assert_str_eq(ksnap_ack_type_name(KSNAP_ACKT_REQUEST), "REQUEST");
  ck_assert_str_eq(ksnap_request_kind_name(KSNAP_REQUEST_SAVEPOINT_STOP),
                   "SAVEPOINT_STOP");
  ck_assert_str_eq(ksnap_control_type_name(KSNAP_CONTROL_RESTORE), "RESTORE");
  ck_assert_str_eq(ksnap_control_type_name(KSNAP_CONTROL_JOB_FAILED),
                   "JOB_FAILED");
  ck_assert_str_eq(ksnap_ack_type_name(KSNAP_ACKT_FAILURE), "FAILURE");
  ck_assert_str_eq(ksnap_ckpt_mode_name(KSNAP_CKPT_AT_LEAST_ONCE),
                   "AT_LEAST_ONCE");
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(encoder_refuses_bad_input) {
  ksnap_barrier_t b;
  ksnap_control_record_t c;
  ksnap_ack_record_t a;
  ksnap_state_handle_t h;
  ksnap_error_t err;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  ksnap_test_sample_barrier(&b);
  b.writer.stage = NULL;
  ck_assert_int_eq(ksnap_codec_barrier_encode(&b, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg, "cannot encode BARRIER record: stage is NULL");
  ksnap_test_sample_barrier(&b);
  b.writer.stage = "caf\xe9"; /* Latin-1, not UTF-8 */
  ck_assert_int_eq(ksnap_codec_barrier_encode(&b, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg,
                   "cannot encode BARRIER record: stage is not valid UTF-8");
  ksnap_test_sample_barrier(&b);
  b.options.mode = (ksnap_ckpt_mode_t)7;
  ck_assert_int_eq(ksnap_codec_barrier_encode(&b, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  ksnap_test_sample_restore(&c, 1);
  c.u.restore.checkpoint_id = -5;
  ck_assert_int_eq(ksnap_codec_control_encode(&c, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  c.type = (ksnap_control_type_t)9;
  ck_assert_int_eq(ksnap_codec_control_encode(&c, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg, "unknown control record type 9");
  ksnap_test_sample_ack(&a, 1);
  h = (ksnap_state_handle_t){"p", 1, "md5:00", 0, 1};
  a.u.ack.snapshot.handles = &h;
  a.u.ack.snapshot.handle_cnt = 1;
  ck_assert_int_eq(ksnap_codec_ack_encode(&a, &buf, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg, "cannot encode ACK record: state handle p: "
                            "checksum \"md5:00\" is not crc32c:... or "
                            "sha256:...");
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(decoder_refuses_unknown_checksum_algorithm) {
  ksnap_ack_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t buf;
  uint8_t *at;

  ksnap_buf_init(&buf);
  ksnap_test_sample_ack(&in, 0);
  ck_assert_int_eq(ksnap_codec_ack_encode(&in, &buf, &err), 0);
  at = memmem(buf.data, buf.len, "crc32c:", 7);
  ck_assert_ptr_nonnull(at);
  memcpy(at, "xxh64c", 6);
  ck_assert_int_eq(ksnap_codec_ack_decode(buf.data, buf.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "cannot decode ACK record: state handle "
                            "s3://ksnap-test/jobs/orders/chk-42/enrich-3-0."
                            "state: bad checksum \"xxh64c:1a2b3c4d\"");
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(any_record_renders_as_json) {
  ksnap_buf_t buf = encoded_barrier();
  ksnap_error_t err;
  char *json;

  ck_assert_int_eq(ksnap_codec_to_json(buf.data, buf.len, &json, &err), 0);
  ck_assert_str_eq(json, "{\"schema_version\": 1, \"kind\": \"BARRIER\", "
                         "\"checkpoint_id\": 7, \"timestamp_ms\": 1000, "
                         "\"options\": {\"mode\": \"UNALIGNED\", "
                         "\"is_savepoint\": true}, \"writer\": {\"stage\": "
                         "\"map\", \"index\": 2}, \"generation\": 3}");
  free(json);
  buf.len--;
  ck_assert_int_eq(ksnap_codec_to_json(buf.data, buf.len, &json, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_ptr_null(json);
  ksnap_buf_cleanup(&buf);
}
END_TEST

/* `ksnap record decode FILE` prints the record, or why it is invalid. */
START_TEST(cli_record_decode_prints_json) {
  ksnap_buf_t buf = encoded_barrier();
  char *dir = ksnap_test_tmpdir("codec");
  char path[512], cmd[1024], out[1024] = "";
  FILE *f, *p;

  snprintf(path, sizeof(path), "%s/barrier.bin", dir);
  f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf.data, 1, buf.len - 1, f), buf.len - 1);
  fclose(f);
  snprintf(cmd, sizeof(cmd), "%s/bin/ksnap record decode %s 2>&1",
           KSNAP_BINARY_DIR, path);
  p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(fgets(out, sizeof(out), p));
  ck_assert_int_eq(WEXITSTATUS(pclose(p)), 1);
  snprintf(cmd, sizeof(cmd), "ksnap record decode: %s: BARRIER record "
           "truncated at byte 15 of 15\n", path);
  ck_assert_str_eq(out, cmd);

  f = fopen(path, "wb");
  ck_assert_uint_eq(fwrite(buf.data, 1, buf.len, f), buf.len);
  fclose(f);
  snprintf(cmd, sizeof(cmd), "%s/bin/ksnap record decode - < %s",
           KSNAP_BINARY_DIR, path);
  p = popen(cmd, "r");
  ck_assert_ptr_nonnull(fgets(out, sizeof(out), p));
  ck_assert_int_eq(WEXITSTATUS(pclose(p)), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"writer\": {\"stage\": \"map\""));
  ksnap_test_rmtree(dir);
  free(dir);
  ksnap_buf_cleanup(&buf);
}
END_TEST

/* First use from several threads at once: schemas parse exactly once. */
static void *encode_decode_loop(void *arg) {
  ksnap_buf_t buf;
  long ok = 1;

  (void)arg;
  ksnap_buf_init(&buf);
  for (int i = 0; i < 200 && ok; i++)
    for (size_t s = 0; s < ksnap_test_codec_sample_cnt && ok; s++) {
      const ksnap_test_codec_sample_t *sample = &ksnap_test_codec_samples[s];
      ok = !sample->encode(&buf, NULL) &&
           !sample->decode(buf.data, buf.len, NULL);
    }
  ksnap_buf_cleanup(&buf);
  return (void *)ok;
}

START_TEST(codecs_are_thread_safe) {
  pthread_t threads[4];
  void *ok;

  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, encode_decode_loop,
                                    NULL), 0);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(pthread_join(threads[i], &ok), 0);
    ck_assert_ptr_nonnull(ok);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("codec");
  TCase *tc = tcase_create("codec");

  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, barrier_wire_bytes_are_stable);
  tcase_add_test(tc, control_records_round_trip);
  tcase_add_test(tc, ack_topic_records_round_trip);
  tcase_add_test(tc, ack_keeps_handles_offsets_channels_timings);
  tcase_add_test(tc, progress_and_metadata_round_trip);
  tcase_add_test(tc, long_strings_round_trip);
  tcase_add_test(tc, task_snapshot_is_the_same_in_ack_and_metadata);
  tcase_add_test(tc, envelope_errors_name_the_problem);
  tcase_add_test(tc, truncation_names_record_and_offset);
  tcase_add_test(tc, peek_reads_type_and_version);
  tcase_add_test(tc, version_1_records_decode_with_defaults);
  tcase_add_test(tc, version_2_records_decode);
  tcase_add_test(tc, encoder_refuses_bad_input);
  tcase_add_test(tc, decoder_refuses_unknown_checksum_algorithm);
  tcase_add_test(tc, any_record_renders_as_json);
  tcase_add_test(tc, cli_record_decode_prints_json);
  tcase_add_test(tc, codecs_are_thread_safe);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
