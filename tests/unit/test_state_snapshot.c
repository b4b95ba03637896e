/* The snapshot file format: standard Avro (read back with avro-c), the
 * embedded schema equals plugin/schemas/state_v1.avsc, key-group ranges,
 * inspection, and corrupt, truncated or newer files rejected cleanly. */
#include <avro.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state/state_snapshot.h"
#include "testutil.h"

/* A small state: 200 keys over value, map and list states, 3 op blobs;
 * snapshots of it stream in @p buffer_size buffers (0: the default). */
static ksnap_state_t *make_state(int incremental_chain, size_t buffer_size) {
  ksnap_state_conf_t conf;
  ksnap_state_t *st;
  ksnap_error_t err;
  int v, m, l, op;
  char key[16];

  ksnap_state_conf_init(&conf);
  conf.incremental = incremental_chain;
  conf.buffer_size = buffer_size;
  ck_assert_int_eq(ksnap_state_new(&conf, &st, &err), 0);
  ksnap_state_register(st, "count", KSNAP_STATE_VALUE, 0, &v, &err);
  ksnap_state_register(st, "seen", KSNAP_STATE_MAP, 0, &m, &err);
  ksnap_state_register(st, "events", KSNAP_STATE_LIST, 60000, &l, &err);
  ksnap_state_register(st, "offsets", KSNAP_STATE_OP_SPLIT, 0, &op, &err);
  for (int i = 0; i < 200; i++) {
    int n = snprintf(key, sizeof(key), "user-%d", i);
    ksnap_state_set_key(st, key, (size_t)n, &err);
    ksnap_state_value_put(st, v, &i, sizeof(i), &err);
    ksnap_state_map_put(st, m, "x", 1, "yes", 3, &err);
    ksnap_state_list_add(st, l, "e1", 2, &err);
  }
  for (int i = 0; i < 3; i++)
    ksnap_state_op_add(st, op, &i, sizeof(i), &err);
  return st;
}

/* The file of make_state's snapshot, written whole into @p out. */
static void make_file_buffered(ksnap_buf_t *out, int incremental_chain,
                               size_t buffer_size) {
  ksnap_state_t *st = make_state(incremental_chain, buffer_size);
  ksnap_state_snapshot_t *snap;
  ksnap_error_t err;

  ksnap_state_snapshot_begin(st, 7, "chk-7/map-0", &snap, &err);
  ksnap_buf_init(out);
  ck_assert_int_eq(ksnap_state_snapshot_write(snap, out, &err), 0);
  ksnap_state_snapshot_end(snap, 1);
  ksnap_state_destroy(st);
}

static void make_file(ksnap_buf_t *out, int incremental_chain) {
  make_file_buffered(out, incremental_chain, 0);
}

typedef struct {
  int entries, ops, maps, last_kg;
  int64_t ckpt;
} tally_t;

static void on_info(void *opaque, const ksnap_state_file_info_t *info) {
  tally_t *t = opaque;
  t->ckpt = info->checkpoint_id;
  ck_assert_int_eq(info->version, 1);
  ck_assert_int_eq(info->kg_end, 128);
  ck_assert_uint_eq(info->nmanifest, 1);
  ck_assert_str_eq(info->manifest[0], "chk-7/map-0");
}

static int on_entry(void *opaque, const ksnap_state_entry_t *e) {
  tally_t *t = opaque;

  if (e->key_group < 0) {
    ck_assert_str_eq(e->state, "offsets");
    t->ops++;
  } else {
    ck_assert_int_ge(e->key_group, t->last_kg); /* grouped, ascending */
    ck_assert_int_eq(e->key_group,
                     ksnap_state_key_group(e->key, e->klen, 128));
    t->last_kg = e->key_group;
    t->entries++;
    if (e->has_user_key) {
      ck_assert_str_eq(e->state, "seen");
      t->maps++;
    }
  }
  return 0;
}

/* Bit by bit, the definition. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t len) {
  uint32_t c = 0xffffffffu;
  while (len--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

START_TEST(crc32_matches_zlib) {
  uint8_t buf[4200];
  uint32_t x = 12345;

  ck_assert_uint_eq(ksnap__crc32(0, "123456789", 9), 0xcbf43926u);
  ck_assert_uint_eq(ksnap__crc32(ksnap__crc32(0, "1234", 4), "56789", 5),
                    0xcbf43926u);
  ck_assert_uint_eq(ksnap__crc32(0, "", 0), 0);
  /* the folded path (64 bytes and more), every alignment and tail, and
   * split at every length: as the definition */
  for (size_t i = 0; i < sizeof(buf); i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (uint8_t)(x >> 16);
  }
  for (size_t off = 0; off < 16; off++)
    for (size_t len = 0; len + off <= sizeof(buf); len += len < 300 ? 1 : 97)
      ck_assert_uint_eq(ksnap__crc32(0, buf + off, len),
                        crc32_bitwise(buf + off, len));
  for (size_t cut = 0; cut <= 1000; cut += 7)
    ck_assert_uint_eq(ksnap__crc32(ksnap__crc32(0, buf, cut), buf + cut,
                                   1000 - cut),
                      crc32_bitwise(buf, 1000));
}
END_TEST

START_TEST(decode_groups_by_key_group) {
  ksnap_buf_t out;
  tally_t t = {0, 0, 0, 0, 0};
  ksnap_error_t err;

  make_file(&out, 0);
  ck_assert_int_eq(ksnap_state_file_decode(out.data, out.len, on_info,
                                           on_entry, &t, &err), 0);
  ck_assert_int_eq(t.entries, 600);
  ck_assert_int_eq(t.maps, 200);
  ck_assert_int_eq(t.ops, 3);
  ck_assert_int_eq(t.ckpt, 7);
  ksnap_buf_cleanup(&out);
}
END_TEST

START_TEST(readable_by_avro_c_and_schema_matches_avsc) {
  ksnap_buf_t out;
  FILE *fp;
  avro_file_reader_t reader;
  avro_schema_t wschema, fschema;
  avro_value_iface_t *iface;
  avro_value_t value;
  int n = 0, ops = 0;
  char *avsc;
  long size;
  FILE *sf = fopen(KSNAP_SOURCE_DIR "/plugin/schemas/state_v1.avsc", "r");

  ck_assert_ptr_nonnull(sf);
  fseek(sf, 0, SEEK_END);
  size = ftell(sf);
  rewind(sf);
  avsc = calloc(1, (size_t)size + 1);
  ck_assert_int_eq(fread(avsc, 1, (size_t)size, sf), size);
  fclose(sf);
  ck_assert_int_eq(avro_schema_from_json_length(avsc, (size_t)size, &fschema),
                   0);

  /* default buffers, and 64-byte ones: one Avro block per entry */
  make_file_buffered(&out, 0, _i ? 64 : 0);
  fp = fmemopen(out.data, out.len, "rb");
  ck_assert_int_eq(avro_file_reader_fp(fp, "mem", 1, &reader), 0);
  wschema = avro_file_reader_get_writer_schema(reader);
  ck_assert(avro_schema_equal(wschema, fschema));
  iface = avro_generic_class_from_schema(wschema);
  avro_generic_value_new(iface, &value);
  while (avro_file_reader_read_value(reader, &value) == 0) {
    avro_value_t field;
    int32_t kg;
    avro_value_get_by_name(&value, "keyGroup", &field, NULL);
    avro_value_get_int(&field, &kg);
    ops += kg < 0;
    n++;
  }
  ck_assert_int_eq(n, 603);
  ck_assert_int_eq(ops, 3);
  avro_value_decref(&value);
  avro_value_iface_decref(iface);
  avro_schema_decref(wschema); /* get_writer_schema returns a reference */
  avro_file_reader_close(reader);
  avro_schema_decref(fschema);
  free(avsc);
  ksnap_buf_cleanup(&out);
}
END_TEST

static int count_cb(void *opaque, const ksnap_state_entry_t *e) {
  (void)e;
  (*(int *)opaque)++;
  return 0;
}

START_TEST(range_reads_only_owned_key_groups) {
  ksnap_buf_t out;
  uint64_t off, end, prev_end = 0;
  ksnap_error_t err;
  int total = 0;

  make_file(&out, 0);
  for (int i = 0; i < 3; i++) {
    int s, e, n = 0;
    ksnap__snap_reader_t r;
    ksnap_state_key_group_range(128, 3, i, &s, &e);
    /* the header alone is enough to compute the byte range */
    ck_assert_int_eq(ksnap_state_file_range(out.data, 4096, s, e, &off, &end,
                                            &err), 0);
    if (i)
      ck_assert_uint_eq(off, prev_end); /* contiguous ranges */
    prev_end = end;
    ck_assert_int_eq(ksnap__snap_reader_open(&r, out.data, out.len, 0, &err),
                     0);
    ck_assert_int_eq(ksnap__snap_reader_read(&r, s, e, count_cb, &n, &err), 0);
    ksnap__snap_reader_cleanup(&r);
    total += n;
  }
  ck_assert_int_eq(total, 600);
  ksnap_buf_cleanup(&out);
}
END_TEST

/* Every single-byte corruption and every truncation is an error, never a
 * crash and never a silent success. */
START_TEST(corrupt_and_truncated_files_rejected) {
  ksnap_buf_t out;
  ksnap_error_t err;
  int n;

  make_file(&out, 0);
  for (size_t i = 0; i < out.len; i += 1 + i / 512) {
    uint8_t *copy = malloc(out.len);
    memcpy(copy, out.data, out.len);
    copy[i] ^= (uint8_t)(1u << (i % 8));
    n = 0;
    ck_assert_msg(ksnap_state_file_decode(copy, out.len, NULL, count_cb, &n,
                                          &err) != KSNAP_ERR_OK,
                  "flip at byte %zu accepted", i);
    free(copy);
  }
  for (size_t len = 0; len < out.len; len += 1 + len / 256) {
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    memcpy(copy, out.data, len);
    ksnap_err_t rc = ksnap_state_file_decode(copy, len, NULL, count_cb, &n,
                                             &err);
    ck_assert_msg(rc == KSNAP_ERR_TRUNCATED || rc == KSNAP_ERR_CORRUPT,
                  "truncated to %zu: %s", len, ksnap_err2name(rc));
    free(copy);
  }
  ck_assert_int_eq(ksnap_state_file_decode(out.data, out.len - 1, NULL,
                                           count_cb, &n, &err),
                   KSNAP_ERR_TRUNCATED);
  {
    char want[128];
    snprintf(want, sizeof(want),
             "snapshot file is truncated: %zu bytes, index says %zu",
             out.len - 1, out.len);
    ck_assert_str_eq(err.msg, want);
  }
  ksnap_buf_cleanup(&out);
}
END_TEST

START_TEST(newer_format_version_rejected) {
  ksnap_buf_t out;
  ksnap_error_t err;
  uint8_t *p;
  int n = 0;

  make_file(&out, 0);
  p = memmem(out.data, out.len, "ksnap.version\x02" "1", 15);
  ck_assert_ptr_nonnull(p);
  p[14] = '2';
  ck_assert_int_eq(ksnap_state_file_decode(out.data, out.len, NULL, count_cb,
                                           &n, &err),
                   KSNAP_ERR_SCHEMA_VERSION);
  ck_assert_str_eq(err.msg, "snapshot format version 2 is newer than the "
                            "supported version 1");
  ksnap_buf_cleanup(&out);
}
END_TEST

static int to_json(void *opaque, const ksnap_state_entry_t *e) {
  return ksnap_state_entry_to_json(e, opaque) != KSNAP_ERR_OK;
}

START_TEST(json_lines_for_inspect) {
  ksnap_buf_t out, json;
  ksnap_error_t err;

  make_file(&out, 0);
  ksnap_buf_init(&json);
  ck_assert_int_eq(ksnap_state_file_decode(out.data, out.len, NULL, to_json,
                                           &json, &err), 0);
  ck_assert_ptr_nonnull(strstr((char *)json.data,
                               "{\"state\":\"seen\",\"kind\":\"map\","
                               "\"keyGroup\":"));
  ck_assert_ptr_nonnull(strstr((char *)json.data,
                               "\"key\":\"user-0\",\"value\":"
                               "{\"base64\":\"AAAAAA==\"}"));
  ck_assert_ptr_nonnull(strstr((char *)json.data,
                               "\"userKey\":\"x\",\"value\":\"yes\""));
  ck_assert_ptr_nonnull(strstr((char *)json.data,
                               "\"kind\":\"list\""));
  ck_assert_ptr_nonnull(strstr((char *)json.data, "\"value\":[\"e1\"]"));
  ck_assert_ptr_nonnull(strstr((char *)json.data,
                               "{\"state\":\"offsets\",\"kind\":\"split\","
                               "\"keyGroup\":-1,\"op\":\"put\",\"value\":"
                               "{\"base64\":\"AgAAAA==\"},\"timestamp\":0}\n"));
  ksnap_buf_cleanup(&json);
  ksnap_buf_cleanup(&out);
}
END_TEST

/* Records what a snapshot hands to its output, checking the order
 * begin, write*, head; assembles the file. */
typedef struct rec_s {
  ksnap_buf_t file;
  size_t head_len, max_write;
  int begins, writes, heads;
  int fail_at; /* write number that fails with IO; 0: none */
} rec_t;

static ksnap_err_t rec_begin(void *opaque, size_t head_len,
                             ksnap_error_t *error) {
  rec_t *r = opaque;
  (void)error;
  ck_assert_int_eq(r->begins++ + r->writes + r->heads, 0);
  r->head_len = head_len;
  ck_assert_int_eq(ksnap_buf_reserve(&r->file, head_len), 0);
  memset(r->file.data, 0, head_len);
  r->file.len = head_len;
  return KSNAP_ERR_OK;
}

static ksnap_err_t rec_write(void *opaque, const void *data, size_t len,
                             ksnap_error_t *error) {
  rec_t *r = opaque;
  ck_assert_int_eq(r->begins, 1);
  ck_assert_int_eq(r->heads, 0);
  if (++r->writes == r->fail_at)
    return ksnap_error_set(error, KSNAP_ERR_IO, "disk full (test)");
  r->max_write = len > r->max_write ? len : r->max_write;
  ck_assert_int_eq(ksnap_buf_append(&r->file, data, len), 0);
  return KSNAP_ERR_OK;
}

static ksnap_err_t rec_head(void *opaque, const void *data, size_t len,
                            ksnap_error_t *error) {
  rec_t *r = opaque;
  (void)error;
  ck_assert_int_eq(r->heads++, 0);
  ck_assert_uint_eq(len, r->head_len);
  memcpy(r->file.data, data, len);
  return KSNAP_ERR_OK;
}

static int to_json(void *opaque, const ksnap_state_entry_t *e);

/* Streamed in small buffers (an Avro block per entry at 16 bytes) or
 * large ones, a file holds the same entries, in the same order, as the
 * same snapshot written whole, and every write is one block of at most
 * half a buffer (or one entry, if larger). */
START_TEST(streams_in_bounded_writes) {
  static const size_t sizes[] = {16, 700, 1u << 20};
  ksnap_buf_t whole, json_whole, json;
  ksnap_error_t err;

  for (size_t i = 0; i < 3; i++) {
    ksnap_state_t *st = make_state(0, sizes[i]);
    ksnap_state_snapshot_t *snap;
    rec_t r = {.fail_at = 0};
    ksnap_state_out_t out = {rec_begin, rec_write, rec_head, &r};
    ksnap_buf_init(&whole);
    ksnap_buf_init(&json_whole);
    ksnap_buf_init(&r.file);
    ksnap_buf_init(&json);
    ck_assert_int_eq(ksnap_state_snapshot_begin(st, 7, "chk-7/map-0", &snap,
                                                &err), 0);
    ck_assert_int_eq(ksnap_state_snapshot_write(snap, &whole, &err), 0);
    ck_assert_msg(!ksnap_state_snapshot_stream(snap, &out, &err), "%s",
                  err.msg);
    ck_assert_int_eq(r.heads, 1);
    ck_assert_uint_eq(r.file.len, whole.len); /* same bytes but sync */
    /* a block: count and size varints, records, 16-byte sync marker */
    ck_assert_uint_le(r.max_write, sizes[i] / 2 + 60 + 20 + 16);
    if (i == 0)
      ck_assert_int_gt(r.writes, 600); /* one block per entry */
    ck_assert_int_eq(ksnap_state_file_decode(whole.data, whole.len, NULL,
                                             to_json, &json_whole, &err), 0);
    ck_assert_int_eq(ksnap_state_file_decode(r.file.data, r.file.len, NULL,
                                             to_json, &json, &err), 0);
    ck_assert_uint_eq(json.len, json_whole.len);
    ck_assert(!memcmp(json.data, json_whole.data, json.len));
    ksnap_state_snapshot_end(snap, 1);
    ksnap_state_destroy(st);
    ksnap_buf_cleanup(&r.file);
    ksnap_buf_cleanup(&json);
    ksnap_buf_cleanup(&whole);
    ksnap_buf_cleanup(&json_whole);
  }
}
END_TEST

/* An output error stops the snapshot: returned as is, no header. */
START_TEST(stream_stops_at_an_output_error) {
  ksnap_state_t *st = make_state(0, 64);
  ksnap_state_snapshot_t *snap;
  rec_t r = {.fail_at = 3};
  ksnap_state_out_t out = {rec_begin, rec_write, rec_head, &r};
  ksnap_error_t err;

  ksnap_buf_init(&r.file);
  ck_assert_int_eq(ksnap_state_snapshot_begin(st, 7, "x", &snap, &err), 0);
  ck_assert_int_eq(ksnap_state_snapshot_stream(snap, &out, &err),
                   KSNAP_ERR_IO);
  ck_assert_str_eq(err.msg, "disk full (test)");
  ck_assert_int_eq(r.writes, 3);
  ck_assert_int_eq(r.heads, 0);
  ksnap_state_snapshot_end(snap, 0);
  ksnap_state_destroy(st);
  ksnap_buf_cleanup(&r.file);
}
END_TEST

int main(void) {
  Suite *s = suite_create("state_snapshot");
  TCase *tc = tcase_create("format");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, crc32_matches_zlib);
  tcase_add_test(tc, decode_groups_by_key_group);
  tcase_add_loop_test(tc, readable_by_avro_c_and_schema_matches_avsc, 0, 2);
  tcase_add_test(tc, range_reads_only_owned_key_groups);
  tcase_add_test(tc, corrupt_and_truncated_files_rejected);
  tcase_add_test(tc, newer_format_version_rejected);
  tcase_add_test(tc, json_lines_for_inspect);
  tcase_add_test(tc, streams_in_bounded_writes);
  tcase_add_test(tc, stream_stops_at_an_output_error);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
