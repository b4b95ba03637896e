/* Record codecs, schema version 6 (a bounded job that finishes): the
 * input_ended flag of HEARTBEAT and ACK, the JOB_FINISHED control record,
 * and v5 records, which still decode (input_ended false) with their own
 * schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

START_TEST(job_finished_round_trips) {
  ksnap_control_record_t in, out;
  ksnap_buf_t a, b;
  ksnap_error_t err;

  ksnap_buf_init(&a);
  ksnap_buf_init(&b);
  memset(&in, 0, sizeof(in));
  in.type = KSNAP_CONTROL_JOB_FINISHED;
  in.u.job_finished = (ksnap_job_finished_t){7, 1796000000321LL, 88};
  ck_assert_int_eq(ksnap_codec_control_encode(&in, &a, &err), 0);
  ck_assert_int_ge(a.data[2], 6);
  ck_assert_int_eq(ksnap_codec_control_decode(a.data, a.len, &out, &err), 0);
  ck_assert_int_eq(out.type, KSNAP_CONTROL_JOB_FINISHED);
  ck_assert_int_eq(out.u.job_finished.generation, 7);
  ck_assert_int_eq(out.u.job_finished.timestamp_ms, 1796000000321LL);
  ck_assert_int_eq(out.u.job_finished.checkpoint_id, 88);
  ck_assert_int_eq(ksnap_codec_control_encode(&out, &b, &err), 0);
  ck_assert_uint_eq(a.len, b.len);
  ck_assert_mem_eq(a.data, b.data, a.len);
  ck_assert_str_eq(ksnap_control_type_name(KSNAP_CONTROL_JOB_FINISHED),
                   "JOB_FINISHED");
  ksnap_control_record_cleanup(&out);
  ksnap_buf_cleanup(&a);
  ksnap_buf_cleanup(&b);
}
END_TEST

START_TEST(input_ended_round_trips) {
  ksnap_ack_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t a;

  ksnap_buf_init(&a);
  for (int i = 0; i < 2; i++) {
    if (i == 0) {
      ksnap_test_sample_heartbeat(&in);
      in.u.heartbeat.input_ended = true;
    } else {
      ksnap_test_sample_ack(&in, 0);
      in.u.ack.input_ended = true;
    }
    ck_assert_int_eq(ksnap_codec_ack_encode(&in, &a, &err), 0);
    ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err), 0);
    ck_assert_int_eq(out.type, in.type);
    ck_assert(i == 0 ? out.u.heartbeat.input_ended : out.u.ack.input_ended);
    if (i == 1) /* the rest of the ACK is kept */
      ck_assert_uint_eq(out.u.ack.snapshot.handle_cnt,
                        in.u.ack.snapshot.handle_cnt);
    ksnap_ack_record_cleanup(&out);
  }
  ksnap_buf_cleanup(&a);
}
END_TEST

/* A v6 HEARTBEAT or ACK whose input_ended is false, turned into the v5
 * record: input_ended is the body's last field and the body the record's
 * last, so v5 is the same bytes without the last one, with version 5 in
 * the envelope and in schema_version (zig-zag 0x0a). The encoder writes
 * v7, whose HEARTBEAT and ACK are v6's bytes (zig-zag 7: 0x0e). */
static void to_v5(ksnap_buf_t *buf) {
  ck_assert_int_eq(buf->data[2], 7);
  ck_assert_int_eq(buf->data[3], 0x0e);
  ck_assert_int_eq(buf->data[buf->len - 1], 0x00);
  buf->data[2] = 5;
  buf->data[3] = 0x0a;
  buf->len--;
}

START_TEST(v5_heartbeat_and_ack_decode) {
  ksnap_ack_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t a;

  ksnap_buf_init(&a);
  for (int i = 0; i < 2; i++) {
    if (i == 0)
      ksnap_test_sample_heartbeat(&in);
    else
      ksnap_test_sample_ack(&in, 0);
    ck_assert_int_eq(ksnap_codec_ack_encode(&in, &a, &err), 0);
    to_v5(&a);
    ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err), 0);
    ck_assert_int_eq(out.type, in.type);
    if (i == 0) {
      ck_assert(!out.u.heartbeat.input_ended);
      ck_assert_int_eq(out.u.heartbeat.records_out,
                       in.u.heartbeat.records_out);
    } else {
      ck_assert(!out.u.ack.input_ended);
      ck_assert_int_eq(out.u.ack.align.paused_us, in.u.ack.align.paused_us);
      ck_assert_uint_eq(out.u.ack.snapshot.channel_cnt,
                        in.u.ack.snapshot.channel_cnt);
    }
    ksnap_ack_record_cleanup(&out);
    /* the same bytes claiming v6 lack the flag: read with v6's schema */
    a.data[2] = 6;
    a.data[3] = 0x0c;
    ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err),
                     KSNAP_ERR_TRUNCATED);
  }
  ksnap_buf_cleanup(&a);
}
END_TEST

START_TEST(v5_control_has_no_job_finished) {
  /* body branch 8 (JOB_FINISHED) in a v5 record: v5 has 8 branches */
  static const uint8_t job_finished_v5[] = {
      'K', KSNAP_RECORD_CONTROL, 0x05, 0x0a, 0x10, 0x02, 0x04, 0x06};
  static const uint8_t job_finished_v6[] = {
      'K', KSNAP_RECORD_CONTROL, 0x06, 0x0c, 0x10, 0x02, 0x04, 0x06};
  ksnap_control_record_t c;
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_codec_control_decode(job_finished_v5,
                                              sizeof(job_finished_v5), &c,
                                              &err), KSNAP_ERR_CORRUPT);
  ck_assert_int_eq(ksnap_codec_control_decode(job_finished_v6,
                                              sizeof(job_finished_v6), &c,
                                              &err), 0);
  ck_assert_int_eq(c.type, KSNAP_CONTROL_JOB_FINISHED);
  ck_assert_int_eq(c.u.job_finished.generation, 1);
  ck_assert_int_eq(c.u.job_finished.timestamp_ms, 2);
  ck_assert_int_eq(c.u.job_finished.checkpoint_id, 3);
  ksnap_control_record_cleanup(&c);
}
END_TEST

int main(void) {
  Suite *s = suite_create("codec_v6");
  TCase *tc = tcase_create("codec_v6");

  tcase_add_test(tc, job_finished_round_trips);
  tcase_add_test(tc, input_ended_round_trips);
  tcase_add_test(tc, v5_heartbeat_and_ack_decode);
  tcase_add_test(tc, v5_control_has_no_job_finished);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
