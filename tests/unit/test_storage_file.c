/* Storage on file:// (the shared behavioural suite) plus file-only cases:
 * on-disk corruption, atomic writes leave no temp files, plain paths, and
 * the CRC32C/trailer primitives. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/checksum.h"
#include "ksnap/storage.h"
#include "storage_suite.h"
#include "testutil.h"

static char *file_url(const char *tag) {
  char *dir = ksnap_test_tmpdir(tag);
  char *url = malloc(strlen(dir) + 16);
  sprintf(url, "file://%s/root", dir);
  free(dir);
  return url;
}

static void file_opts(ksnap_storage_opts_t *opts) { (void)opts; }

static const ksnap_test_storage_env_t file_env = {"file", file_url,
                                                  file_opts};

START_TEST(crc32c_known_vectors) {
  ck_assert_uint_eq(ksnap__crc32c(0, "123456789", 9), 0xE3069283u);
  ck_assert_uint_eq(ksnap__crc32c(0, "", 0), 0);
  /* incremental == one shot */
  ck_assert_uint_eq(ksnap__crc32c(ksnap__crc32c(0, "1234", 4), "56789", 5),
                    0xE3069283u);
  /* combined from the parts' CRCs, at every split */
  for (size_t cut = 0; cut <= 9; cut++)
    ck_assert_uint_eq(ksnap__crc32c_combine(ksnap__crc32c(0, "123456789",
                                                          cut),
                                            ksnap__crc32c(0, "123456789" +
                                                          cut, 9 - cut),
                                            9 - cut),
                      0xE3069283u);
  {
    uint8_t *big = ksnap_test_pattern(3u << 20, 9);
    size_t cut = 12345;
    ck_assert_uint_eq(ksnap__crc32c_combine(ksnap__crc32c(0, big, cut),
                                            ksnap__crc32c(0, big + cut,
                                                          (3u << 20) - cut),
                                            (3u << 20) - cut),
                      ksnap__crc32c(0, big, 3u << 20));
    free(big);
  }
}
END_TEST

START_TEST(trailer_encode_decode) {
  uint8_t t[16];
  uint32_t crc;
  uint64_t len;
  ksnap_error_t err;

  ksnap__trailer_encode(t, 0xdeadbeef, 42);
  ck_assert_int_eq(memcmp(t, "KSC1\xde\xad\xbe\xef", 8), 0);
  ck_assert(!ksnap__trailer_decode(t, 58, &crc, &len, "x", &err));
  ck_assert_uint_eq(crc, 0xdeadbeef);
  ck_assert_uint_eq(len, 42);
  ck_assert_int_eq(ksnap__trailer_decode(t, 57, &crc, &len, "s3://b/k", &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_str_eq(err.msg, "s3://b/k: object truncated (41 data bytes, "
                            "trailer says 42)");
}
END_TEST

static char *obj_path(ksnap_storage_t *st, const char *key) {
  const char *url = ksnap_storage_url(st) + strlen("file://");
  char *p = malloc(strlen(url) + strlen(key) + 2);
  sprintf(p, "%s/%s", url, key);
  return p;
}

START_TEST(on_disk_corruption_is_caught) {
  ksnap_storage_t *st = ksnap_test_storage_open("disk");
  char *path = obj_path(st, "chk-1/state");
  ksnap_buf_t buf;
  ksnap_error_t err;
  FILE *f;
  int c;

  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_put(st, "chk-1/state", "some state bytes", 16,
                               &err));
  f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 3, SEEK_SET);
  c = fgetc(f);
  fseek(f, 3, SEEK_SET);
  fputc(c ^ 0x20, f);
  fclose(f);
  ck_assert_int_eq(ksnap_storage_get(st, "chk-1/state", &buf, &err),
                   KSNAP_ERR_CHECKSUM);
  ck_assert_msg(strstr(err.msg, "/chk-1/state: checksum mismatch"), "%s",
                err.msg);
  ck_assert(truncate(path, 10) == 0);
  ck_assert_int_eq(ksnap_storage_get(st, "chk-1/state", &buf, &err),
                   KSNAP_ERR_TRUNCATED);
  free(path);
  ksnap_buf_cleanup(&buf);
  ksnap_storage_destroy(st);
}
END_TEST

START_TEST(writes_leave_no_temp_files) {
  ksnap_storage_t *st = ksnap_test_storage_open("tmp");
  ksnap_storage_writer_t *w;
  char *dir = obj_path(st, "d");
  ksnap_error_t err;
  struct dirent *de;
  int n = 0;
  DIR *d;

  ck_assert(!ksnap_storage_put(st, "d/a", "1", 1, &err));
  ck_assert(!ksnap_storage_writer_open(st, "d/b", &w, &err));
  ck_assert(!ksnap_storage_writer_write(w, "2", 1, &err));
  ksnap_storage_writer_abort(w);
  d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  while ((de = readdir(d)))
    if (de->d_name[0] != '.' || !strncmp(de->d_name, ".ksnap-tmp", 10))
      n++;
  closedir(d);
  ck_assert_int_eq(n, 1); /* only "a" */
  free(dir);
  ksnap_storage_destroy(st);
}
END_TEST

/* A failure of a writer's thread (here EFBIG past RLIMIT_FSIZE) comes
 * back from a later write or the commit, and nothing is stored. */
START_TEST(writer_thread_failure_is_reported) {
  ksnap_storage_t *st = ksnap_test_storage_open("efbig");
  ksnap_storage_writer_opts_t opts = {0, 4096};
  struct rlimit old, rl;
  ksnap_storage_writer_t *w;
  ksnap_error_t err;
  ksnap_buf_t buf;
  uint8_t chunk[1000];
  ksnap_err_t rc = KSNAP_ERR_OK;

  memset(chunk, 'x', sizeof(chunk));
  signal(SIGXFSZ, SIG_IGN);
  ck_assert(!ksnap_storage_writer_open_opts(st, "big", &opts, &w, &err));
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  rl = (struct rlimit){100000, old.rlim_max}; /* the soft limit only */
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
  for (int i = 0; i < 1000 && !rc; i++)
    rc = ksnap_storage_writer_write(w, chunk, sizeof(chunk), &err);
  if (rc)
    ksnap_storage_writer_abort(w);
  else
    rc = ksnap_storage_writer_commit(w, &err);
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0); /* unforked runs */
  ck_assert_int_eq(rc, KSNAP_ERR_IO);
  ck_assert_msg(strstr(err.msg, "File too large"), "%s", err.msg);
  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_storage_get(st, "big", &buf, &err),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_buf_cleanup(&buf);
  ksnap_storage_destroy(st);
}
END_TEST

START_TEST(plain_paths_and_bad_urls) {
  char *dir = ksnap_test_tmpdir("plain");
  char url[512];
  ksnap_storage_t *st;
  ksnap_buf_t buf;
  ksnap_error_t err;

  snprintf(url, sizeof(url), "%s/x/y", dir);
  ck_assert(!ksnap_storage_open(url, NULL, &st, &err));
  ck_assert(!ksnap_storage_put(st, "k", "v", 1, &err));
  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_get(st, "k", &buf, &err));
  ck_assert_str_eq((char *)buf.data, "v");
  ksnap_buf_cleanup(&buf);
  ksnap_storage_destroy(st);
  ck_assert_int_eq(ksnap_storage_open("ftp://x/y", NULL, &st, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg, "ftp://x/y: unsupported storage URL scheme (use "
                            "s3:// or file://)");
  ck_assert_int_eq(ksnap_storage_open("file://rel", NULL, &st, &err),
                   KSNAP_ERR_INVALID_ARG);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("storage_file");
  TCase *tc = tcase_create("file_only");
  char *base = ksnap_test_tmpdir("storage-file");
  int rc;

  setenv("TMPDIR", base, 1); /* every test directory goes under base */
  ksnap_test_storage_env = &file_env;
  suite_add_tcase(s, ksnap_test_storage_tcase());
  tcase_add_test(tc, crc32c_known_vectors);
  tcase_add_test(tc, trailer_encode_decode);
  tcase_add_test(tc, on_disk_corruption_is_caught);
  tcase_add_test(tc, writes_leave_no_temp_files);
  tcase_add_test(tc, plain_paths_and_bad_urls);
  tcase_add_test(tc, writer_thread_failure_is_reported);
  suite_add_tcase(s, tc);
  rc = ksnap_test_run(s);
  ksnap_test_rmtree(base);
  free(base);
  return rc;
}
