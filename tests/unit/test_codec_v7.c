/* Record codecs, schema version 7 (stop with a savepoint after a drain):
 * the drain flag of TRIGGER (control_v7) and the SAVEPOINT_DRAIN request
 * kind (ack_v7); v6 TRIGGERs still decode (drain false), and a v6 REQUEST
 * cannot name SAVEPOINT_DRAIN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

START_TEST(trigger_drain_round_trips) {
  ksnap_control_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t a;

  ksnap_buf_init(&a);
  for (int drain = 0; drain < 2; drain++) {
    ksnap_test_sample_trigger(&in);
    in.u.trigger.options.drain = drain;
    ck_assert_int_eq(ksnap_codec_control_encode(&in, &a, &err), 0);
    ck_assert_int_eq(a.data[2], 7);
    ck_assert_int_eq(a.data[a.len - 1], drain); /* the body's last field */
    ck_assert_int_eq(ksnap_codec_control_decode(a.data, a.len, &out, &err),
                     0);
    ck_assert_int_eq(out.type, KSNAP_CONTROL_TRIGGER);
    ck_assert_int_eq(out.u.trigger.options.drain, drain);
    ck_assert_int_eq(out.u.trigger.options.is_savepoint,
                     in.u.trigger.options.is_savepoint);
    ck_assert_int_eq(out.u.trigger.generation, in.u.trigger.generation);
    ksnap_control_record_cleanup(&out);
  }
  ksnap_buf_cleanup(&a);
}
END_TEST

/* A v7 TRIGGER without drain, turned into the v6 record: drain is the
 * body's last field and the body the record's last, so v6 is the same
 * bytes without the last one, version 6 (schema_version zig-zag 0x0c). */
START_TEST(v6_trigger_decodes_without_drain) {
  ksnap_control_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t a;

  ksnap_buf_init(&a);
  ksnap_test_sample_trigger(&in);
  ck_assert_int_eq(ksnap_codec_control_encode(&in, &a, &err), 0);
  ck_assert_int_eq(a.data[3], 0x0e);
  a.data[2] = 6;
  a.data[3] = 0x0c;
  a.len--;
  ck_assert_int_eq(ksnap_codec_control_decode(a.data, a.len, &out, &err), 0);
  ck_assert_int_eq(out.type, KSNAP_CONTROL_TRIGGER);
  ck_assert(!out.u.trigger.options.drain);
  ck_assert_int_eq(out.u.trigger.checkpoint_id, in.u.trigger.checkpoint_id);
  ck_assert_int_eq(out.u.trigger.generation, in.u.trigger.generation);
  ksnap_control_record_cleanup(&out);
  /* the same bytes claiming v7 lack the flag */
  a.data[2] = 7;
  a.data[3] = 0x0e;
  ck_assert_int_eq(ksnap_codec_control_decode(a.data, a.len, &out, &err),
                   KSNAP_ERR_TRUNCATED);
  ksnap_buf_cleanup(&a);
}
END_TEST

START_TEST(request_drain_round_trips_only_in_v7) {
  ksnap_ack_record_t in, out;
  ksnap_error_t err;
  ksnap_buf_t a;

  ksnap_buf_init(&a);
  ksnap_test_sample_request(&in);
  in.u.request.kind = KSNAP_REQUEST_SAVEPOINT_DRAIN;
  ck_assert_int_eq(ksnap_codec_ack_encode(&in, &a, &err), 0);
  ck_assert_int_eq(a.data[2], 7);
  ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err), 0);
  ck_assert_int_eq(out.type, KSNAP_ACKT_REQUEST);
  ck_assert_int_eq(out.u.request.kind, KSNAP_REQUEST_SAVEPOINT_DRAIN);
  ck_assert_str_eq(ksnap_request_kind_name(out.u.request.kind),
                   "SAVEPOINT_DRAIN");
  ksnap_ack_record_cleanup(&out);
  /* v6's RequestKind has 4 symbols: index 4 is a bad enum index there */
  a.data[2] = 6;
  a.data[3] = 0x0c;
  ck_assert_int_eq(ksnap_codec_ack_decode(a.data, a.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  /* and a kind past the newest is refused by the encoder */
  in.u.request.kind = (ksnap_request_kind_t)5;
  ck_assert_int_ne(ksnap_codec_ack_encode(&in, &a, &err), 0);
  ksnap_buf_cleanup(&a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("codec_v7");
  TCase *tc = tcase_create("codec_v7");

  tcase_add_test(tc, trigger_drain_round_trips);
  tcase_add_test(tc, v6_trigger_decodes_without_drain);
  tcase_add_test(tc, request_drain_round_trips_only_in_v7);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
