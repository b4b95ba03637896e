/* Record codecs against hostile input: every truncation point of every
 * sample record, thousands of random byte flips per record, and
 * hand-crafted length prefixes (huge, negative, overlong varints) that
 * would make avro-c allocate gigabytes if they reached it. Run this suite
 * under -DKSNAP_ASAN=ON -DKSNAP_UBSAN=ON: "never crash" is the assertion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define FLIPS_PER_SAMPLE 3000

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void) { /* xorshift64*, deterministic */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dULL;
}

static int is_decode_error(ksnap_err_t err) {
  return err == KSNAP_ERR_TRUNCATED || err == KSNAP_ERR_CORRUPT ||
         err == KSNAP_ERR_SCHEMA_VERSION;
}

START_TEST(every_truncation_is_an_error) {
  const ksnap_test_codec_sample_t *sample = &ksnap_test_codec_samples[_i];
  ksnap_error_t err;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  ck_assert_int_eq(sample->encode(&buf, &err), 0);
  ck_assert_int_eq(sample->decode(buf.data, buf.len, &err), 0);
  for (size_t len = 0; len < buf.len; len++) {
    /* A copy of exactly len bytes, so ASan sees any read past the end. */
    uint8_t *cut = malloc(len ? len : 1);
    ksnap_err_t code;

    memcpy(cut, buf.data, len);
    code = sample->decode(cut, len, &err);
    if (code != KSNAP_ERR_TRUNCATED)
      ck_abort_msg("%s cut at %zu of %zu: got %s (%s)", sample->name, len,
                   buf.len, ksnap_err2name(code), err.msg);
    free(cut);
  }
  ksnap_buf_cleanup(&buf);
}
END_TEST

START_TEST(random_byte_flips_never_crash) {
  const ksnap_test_codec_sample_t *sample = &ksnap_test_codec_samples[_i];
  int decoded = 0, refused = 0;
  ksnap_error_t err;
  ksnap_buf_t buf;

  rng_state += (uint64_t)_i;
  ksnap_buf_init(&buf);
  ck_assert_int_eq(sample->encode(&buf, &err), 0);
  for (int n = 0; n < FLIPS_PER_SAMPLE; n++) {
    uint8_t *copy = malloc(buf.len);
    int flips = 1 + (int)(rng() % 3);
    ksnap_err_t code;

    memcpy(copy, buf.data, buf.len);
    for (int f = 0; f < flips; f++) {
      /* Mostly the Avro body; sometimes the envelope. */
      size_t at = rng() % buf.len;
      copy[at] ^= (uint8_t)(1 + rng() % 255);
    }
    code = sample->decode(copy, buf.len, &err);
    if (code == KSNAP_ERR_OK)
      decoded++;
    else if (is_decode_error(code))
      refused++;
    else
      ck_abort_msg("%s flip %d: unexpected %s (%s)", sample->name, n,
                   ksnap_err2name(code), err.msg);
    free(copy);
  }
  ck_assert_int_eq(decoded + refused, FLIPS_PER_SAMPLE);
  ck_assert_int_gt(refused, 0);
  fprintf(stderr, "%s: %d flipped copies decoded, %d refused\n",
          sample->name, decoded, refused);
  ksnap_buf_cleanup(&buf);
}
END_TEST

/* ------------------------------------------------ hand-crafted bodies */

typedef struct craft_s {
  uint8_t data[64];
  size_t len;
} craft_t;

static void put(craft_t *c, uint8_t byte) { c->data[c->len++] = byte; }

static void put_long(craft_t *c, int64_t v) {
  uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  while (n & ~(uint64_t)0x7f) {
    put(c, (uint8_t)((n & 0x7f) | 0x80));
    n >>= 7;
  }
  put(c, (uint8_t)n);
}

/* A barrier up to (not including) writer.stage. */
static craft_t barrier_prefix(void) {
  craft_t c = {{0}, 0};
  put(&c, 'K');
  put(&c, KSNAP_RECORD_BARRIER);
  put(&c, 1);
  put_long(&c, 1);    /* schema_version */
  put_long(&c, 0);    /* kind */
  put_long(&c, 7);    /* checkpoint_id */
  put_long(&c, 1000); /* timestamp_ms */
  put_long(&c, 0);    /* mode */
  put(&c, 0);         /* is_savepoint */
  return c;
}

static ksnap_err_t decode_barrier(const craft_t *c, ksnap_error_t *err) {
  ksnap_barrier_t out;
  ksnap_err_t code = ksnap_codec_barrier_decode(c->data, c->len, &out, err);
  if (!code)
    ksnap_barrier_cleanup(&out);
  return code;
}

START_TEST(huge_and_negative_lengths_are_refused_before_allocating) {
  ksnap_error_t err;
  craft_t c;

  /* 2^62 bytes of stage name: avro-c 1.11 would malloc it. */
  c = barrier_prefix();
  put_long(&c, (int64_t)1 << 62);
  put(&c, 'x');
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "BARRIER record truncated at byte 10 of 21");

  c = barrier_prefix();
  put_long(&c, INT64_MAX);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_TRUNCATED);

  c = barrier_prefix();
  put_long(&c, -3);
  put(&c, 'x');
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record corrupt at byte 10 of 12: "
                            "negative length");

  c = barrier_prefix(); /* 11-byte varint */
  for (int i = 0; i < 10; i++)
    put(&c, 0xff);
  put(&c, 0x01);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);

  c = barrier_prefix(); /* NUL inside the stage name */
  put_long(&c, 3);
  put(&c, 'm');
  put(&c, 0);
  put(&c, 'p');
  put_long(&c, 0);
  put_long(&c, 1);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record corrupt at byte 10 of 16: "
                            "NUL byte inside a string");

  c = barrier_prefix(); /* invalid UTF-8 in the stage name */
  put_long(&c, 2);
  put(&c, 0xc3);
  put(&c, 0x28);
  put_long(&c, 0);
  put_long(&c, 1);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record corrupt at byte 10 of 15: "
                            "string is not valid UTF-8");

  c = barrier_prefix(); /* writer.index outside int32 */
  put_long(&c, 1);
  put(&c, 'm');
  put_long(&c, (int64_t)1 << 40);
  put_long(&c, 1);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
}
END_TEST

START_TEST(bad_indices_and_booleans_are_corrupt) {
  ksnap_error_t err;
  craft_t c;

  c = barrier_prefix();
  c.data[4] = 0x04; /* kind 2: BarrierKind has 2 symbols */
  put_long(&c, 1);
  put(&c, 'm');
  put_long(&c, 0);
  put_long(&c, 1);
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record corrupt at byte 4 of 14: "
                            "enum symbol out of range");
  c.data[4] = 0x01; /* kind -1 */
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  c.data[4] = 0x00;
  c.data[9] = 2; /* is_savepoint = 2 */
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "BARRIER record corrupt at byte 9 of 14: "
                            "boolean is neither 0 nor 1");
  c.data[9] = 1;
  ck_assert_int_eq(decode_barrier(&c, &err), KSNAP_ERR_OK);
}
END_TEST

static ksnap_err_t decode_ack(const craft_t *c, ksnap_error_t *err) {
  ksnap_ack_record_t out;
  ksnap_err_t code = ksnap_codec_ack_decode(c->data, c->len, &out, err);
  if (!code)
    ksnap_ack_record_cleanup(&out);
  return code;
}

/* An ACK body up to (not including) the state_handles array. */
static craft_t ack_prefix(int64_t branch) {
  craft_t c = {{0}, 0};
  put(&c, 'K');
  put(&c, KSNAP_RECORD_ACK);
  put(&c, 1);
  put_long(&c, 1);      /* schema_version */
  put_long(&c, branch); /* body branch: 2 = Ack */
  put_long(&c, 42);     /* checkpoint_id */
  put_long(&c, 1);      /* generation */
  put_long(&c, 1);      /* task.stage "s" */
  put(&c, 's');
  put_long(&c, 0); /* task.index */
  return c;
}

START_TEST(huge_array_counts_and_bad_branches_are_refused) {
  ksnap_error_t err;
  craft_t c;

  c = ack_prefix(5); /* AckRecord.body has 5 branches: 0..4 */
  ck_assert_int_eq(decode_ack(&c, &err), KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "ack-topic record corrupt at byte 4 of 10: "
                            "union branch out of range");
  c = ack_prefix(-1);
  ck_assert_int_eq(decode_ack(&c, &err), KSNAP_ERR_CORRUPT);

  c = ack_prefix(2); /* a billion state handles in a 20-byte record */
  put_long(&c, 1000000000);
  put_long(&c, 0);
  ck_assert_int_eq(decode_ack(&c, &err), KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "ACK record truncated at byte 10 of 16");

  c = ack_prefix(2); /* negative block count: INT64_MIN cannot be negated */
  put_long(&c, INT64_MIN);
  put_long(&c, 0);
  ck_assert_int_eq(decode_ack(&c, &err), KSNAP_ERR_CORRUPT);

  c = ack_prefix(2); /* negative block count with a negative byte size */
  put_long(&c, -1);
  put_long(&c, -8);
  ck_assert_int_eq(decode_ack(&c, &err), KSNAP_ERR_CORRUPT);
}
END_TEST

START_TEST(negative_optional_id_is_corrupt) {
  ksnap_control_record_t out;
  ksnap_error_t err;
  craft_t c = {{0}, 0};

  put(&c, 'K');
  put(&c, KSNAP_RECORD_CONTROL);
  put(&c, 1);
  put_long(&c, 1);  /* schema_version */
  put_long(&c, 3);  /* body: Restore */
  put_long(&c, 5);  /* generation */
  put_long(&c, 1);  /* checkpoint_id: the long branch */
  put_long(&c, -5); /* ... negative */
  put_long(&c, 0);  /* metadata_path: null */
  ck_assert_int_eq(ksnap_codec_control_decode(c.data, c.len, &out, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "cannot decode RESTORE record: checkpoint_id: "
                            "negative id -5");
  ck_assert_ptr_null(out.u.restore.metadata_path);
  c.data[7] = 0x0a; /* 5: fine */
  ck_assert_int_eq(ksnap_codec_control_decode(c.data, c.len, &out, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(out.u.restore.checkpoint_id, 5);
  ksnap_control_record_cleanup(&out);
}
END_TEST

START_TEST(utf8_validation) {
  static const struct {
    const char *s;
    int ok;
  } cases[] = {
      {"", 1},
      {"orders", 1},
      {KSNAP_TEST_UNICODE_TOPIC, 1},
      {"\xc3\x28", 0},         /* bad continuation */
      {"\xc0\x80", 0},         /* overlong NUL */
      {"\xe0\x80\xaf", 0},     /* overlong '/' */
      {"\xed\xa0\x80", 0},     /* UTF-16 surrogate */
      {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
      {"\xf0\x9f\x9a", 0},     /* cut 4-byte sequence */
      {"\xef\xbf\xbd", 1},     /* U+FFFD */
  };

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(ksnap__utf8_valid((const uint8_t *)cases[i].s,
                                    strlen(cases[i].s)) == cases[i].ok,
                  "case %zu", i);
}
END_TEST

static void add_looped(TCase *tc, const TTest *test) {
  tcase_add_loop_test(tc, test, 0, (int)ksnap_test_codec_sample_cnt);
}

int main(void) {
  Suite *s = suite_create("codec_fuzz");
  TCase *tc = tcase_create("fuzz");

  tcase_set_timeout(tc, 100);
  add_looped(tc, every_truncation_is_an_error);
  add_looped(tc, random_byte_flips_never_crash);
  tcase_add_test(tc, huge_and_negative_lengths_are_refused_before_allocating);
  tcase_add_test(tc, bad_indices_and_booleans_are_corrupt);
  tcase_add_test(tc, huge_array_counts_and_bad_branches_are_refused);
  tcase_add_test(tc, negative_optional_id_is_corrupt);
  tcase_add_test(tc, utf8_validation);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
