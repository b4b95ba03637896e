/* Record codecs against hostile input: every truncation point of every
 * sample record, thousands of random mutations per record (byte flips,
 * inserted and deleted bytes, 0xff runs), and
 * hand-crafted length prefixes (huge, negative, overlong varints) that
 * would make avro-c allocate gigabytes if they reached it. Run this suite
 * under -DKSNAP_ASAN=ON -DKSNAP_UBSAN=ON: "never crash" is the assertion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define DEFAULT_MUTATIONS 3000

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

/* KSNAP_FUZZ_ITERATIONS=N runs N mutations per sample (default 3000). */
static long fuzz_iterations(void) {
  const char *env = getenv("KSNAP_FUZZ_ITERATIONS");
  long n = env ? atol(env) : 0;
  return n > 0 ? n : DEFAULT_MUTATIONS;
}

/* One random mutation of @p src into @p dst (room for len + 16 bytes):
 * flip 1-3 bytes, insert or delete a byte, or overwrite a run with 0xff
 * (turns a varint into a huge or overlong one). @returns the new length. */
static size_t mutate(const uint8_t *src, size_t len, uint8_t *dst) {
  size_t at = rng() % len;

  memcpy(dst, src, len);
  switch (rng() % 6) {
  case 0: /* insert */
    memmove(dst + at + 1, dst + at, len - at);
    dst[at] = (uint8_t)rng();
    return len + 1;
  case 1: /* delete */
    memmove(dst + at, dst + at + 1, len - at - 1);
    return len - 1;
  case 2: /* run of 0xff */
    for (size_t k = at; k < len && k < at + 1 + rng() % 10; k++)
      dst[k] = 0xff;
    return len;
  default: /* flips, mostly in the Avro body, sometimes the envelope */
    for (int f = 1 + (int)(rng() % 3); f > 0; f--)
      dst[rng() % len] ^= (uint8_t)(1 + rng() % 255);
    return len;
  }
}

START_TEST(random_mutations_never_crash) {
  const ksnap_test_codec_sample_t *sample = &ksnap_test_codec_samples[_i];
  long iterations = fuzz_iterations(), decoded = 0, refused = 0;
  ksnap_error_t err;
  ksnap_buf_t buf;

  rng_state += (uint64_t)_i;
  ksnap_buf_init(&buf);
  ck_assert_int_eq(sample->encode(&buf, &err), 0);
  for (long n = 0; n < iterations; n++) {
    uint8_t *copy = malloc(buf.len + 16);
    size_t len = mutate(buf.data, buf.len, copy);
    /* Exactly len bytes, so ASan sees any read past the end. */
    uint8_t *exact = realloc(copy, len ? len : 1);
    ksnap_err_t code = sample->decode(exact, len, &err);

    if (code == KSNAP_ERR_OK) {
      char *json = NULL;
      /* Whatever decodes also renders (inspection tools rely on it). */
      ck_assert_int_eq(ksnap_codec_to_json(exact, len, &json, &err), 0);
      free(json);
      decoded++;
    } else if (is_decode_error(code))
      refused++;
    else
      ck_abort_msg("%s mutation %ld: unexpected %s (%s)", sample->name, n,
                   ksnap_err2name(code), err.msg);
    free(exact);
  }
  ck_assert_int_eq(decoded + refused, iterations);
  ck_assert_int_gt(refused, 0);
  fprintf(stderr, "%s: %ld mutated copies decoded, %ld refused\n",
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

  c = ack_prefix(6); /* AckRecord.body has 6 branches: 0..5 */
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
  add_looped(tc, random_mutations_never_crash);
  tcase_add_test(tc, huge_and_negative_lengths_are_refused_before_allocating);
  tcase_add_test(tc, bad_indices_and_booleans_are_corrupt);
  tcase_add_test(tc, huge_array_counts_and_bad_branches_are_refused);
  tcase_add_test(tc, negative_optional_id_is_corrupt);
  tcase_add_test(tc, utf8_validation);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
