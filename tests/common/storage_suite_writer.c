/* Shared storage cases: streamed writers with a head written last and a
 * writer thread, and ranged reads, on every backend (see storage_suite.h).
 * On S3 with 5 MiB parts an object over 5 MiB is a multipart upload whose
 * first part (head included) goes up last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage_suite.h"

#define HEAD 300

/* Writes HEAD bytes of head then @p len of body through a writer with a
 * head and @p buffer_size; checks what the writer and the storage say. */
static void write_with_head(ksnap_storage_t *st, const char *key,
                            const uint8_t *all, size_t len,
                            size_t buffer_size) {
  ksnap_storage_writer_opts_t opts = {HEAD, buffer_size};
  ksnap_storage_writer_t *w;
  ksnap_storage_stat_t wstat, stat;
  ksnap_error_t err;
  ksnap_buf_t buf;

  ck_assert_msg(!ksnap_storage_writer_open_opts(st, key, &opts, &w, &err),
                "open: %s", err.msg);
  for (size_t off = 0; off < len; off += 7777)
    ck_assert_msg(!ksnap_storage_writer_write(w, all + HEAD + off,
                                              len - off < 7777 ? len - off
                                                               : 7777,
                                              &err),
                  "write: %s", err.msg);
  ck_assert_msg(!ksnap_storage_writer_set_head(w, all, HEAD, &err),
                "set_head: %s", err.msg);
  ksnap_storage_writer_stat(w, &wstat);
  ck_assert_msg(!ksnap_storage_writer_commit(w, &err), "commit: %s",
                err.msg);
  ck_assert_msg(!ksnap_storage_head(st, key, &stat, &err), "head: %s",
                err.msg);
  ck_assert_uint_eq(stat.size, HEAD + len);
  ck_assert_uint_eq(wstat.size, stat.size);
  ck_assert_uint_eq(wstat.crc32c, stat.crc32c);
  ksnap_buf_init(&buf);
  ck_assert_msg(!ksnap_storage_get(st, key, &buf, &err), "get: %s", err.msg);
  ck_assert_uint_eq(buf.len, HEAD + len);
  ck_assert(!memcmp(buf.data, all, HEAD + len));
  ksnap_buf_cleanup(&buf);
}

START_TEST(writer_head_written_last) {
  static const size_t lens[] = {0, 5000, (6u << 20) + 777};
  static const size_t buffers[] = {0, 1000, 1u << 20};
  ksnap_storage_t *st = ksnap_test_storage_open("head");
  uint8_t *all = ksnap_test_pattern(HEAD + lens[2], 11);
  char key[32];

  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) {
      snprintf(key, sizeof(key), "h/%zu-%zu", i, j);
      write_with_head(st, key, all, lens[i], buffers[j]);
    }
  free(all);
  ksnap_test_storage_close(st);
}
END_TEST

START_TEST(writer_head_misuse_is_refused) {
  ksnap_storage_t *st = ksnap_test_storage_open("headmis");
  ksnap_storage_writer_opts_t opts = {HEAD, 0};
  ksnap_storage_writer_t *w;
  ksnap_error_t err;
  ksnap_buf_t buf;
  char msg[256];

  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_writer_open_opts(st, "x", &opts, &w, &err));
  ck_assert(!ksnap_storage_writer_write(w, "body", 4, &err));
  ck_assert_int_eq(ksnap_storage_writer_set_head(w, "short", 5, &err),
                   KSNAP_ERR_INVALID_ARG);
  snprintf(msg, sizeof(msg), "%s: head of 5 bytes does not fit the writer "
           "(300 reserved)", ksnap_storage_url(st));
  ck_assert_str_eq(err.msg, msg);
  ck_assert_int_eq(ksnap_storage_writer_commit(w, &err),
                   KSNAP_ERR_INVALID_ARG);
  snprintf(msg, sizeof(msg), "%s: writer committed without its head",
           ksnap_storage_url(st));
  ck_assert_str_eq(err.msg, msg);
  ck_assert_int_eq(ksnap_storage_get(st, "x", &buf, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert(!ksnap_storage_writer_open(st, "y", &w, &err));
  ck_assert_int_eq(ksnap_storage_writer_set_head(w, "h", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ksnap_storage_writer_abort(w);
  /* an aborted writer with a thread and a full buffer leaves nothing */
  opts.buffer_size = 100;
  ck_assert(!ksnap_storage_writer_open_opts(st, "z", &opts, &w, &err));
  for (int i = 0; i < 50; i++)
    ck_assert(!ksnap_storage_writer_write(w, msg, 64, &err));
  ksnap_storage_writer_abort(w);
  ck_assert_int_eq(ksnap_storage_get(st, "z", &buf, &err),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_buf_cleanup(&buf);
  ksnap_test_storage_close(st);
}
END_TEST

START_TEST(ranged_reads) {
  ksnap_storage_t *st = ksnap_test_storage_open("range");
  size_t len = 200000;
  uint8_t *data = ksnap_test_pattern(len, 5), dst[70000];
  static const size_t spans[][2] = {{0, 1}, {0, 4096}, {123, 65536},
                                    {199999, 1}, {130000, 70000}};
  ksnap_error_t err;

  ck_assert(!ksnap_storage_put(st, "r", data, len, &err));
  for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
    memset(dst, 0, sizeof(dst));
    ck_assert_msg(!ksnap_storage_read_range(st, "r", spans[i][0],
                                            spans[i][1], dst, &err),
                  "range %zu: %s", i, err.msg);
    ck_assert(!memcmp(dst, data + spans[i][0], spans[i][1]));
  }
  /* past the stored bytes (data and its 16-byte trailer) */
  ck_assert_int_eq(ksnap_storage_read_range(st, "r", len + 10, 100, dst,
                                            &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_int_eq(ksnap_storage_read_range(st, "none", 0, 10, dst, &err),
                   KSNAP_ERR_NOT_FOUND);
  free(data);
  ksnap_test_storage_close(st);
}
END_TEST

void ksnap_test_storage_writer_cases(TCase *tc) {
  tcase_add_test(tc, writer_head_written_last);
  tcase_add_test(tc, writer_head_misuse_is_refused);
  tcase_add_test(tc, ranged_reads);
}
