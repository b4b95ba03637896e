/* The behavioural storage suite shared by file:// and s3:// (see .h). */
#include "storage_suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/storage_int.h"
#include "testutil.h"

const ksnap_test_storage_env_t *ksnap_test_storage_env;

ksnap_storage_t *ksnap_test_storage_open(const char *tag) {
  ksnap_storage_opts_t opts;
  ksnap_storage_t *st = NULL;
  ksnap_error_t err;
  char *url = ksnap_test_storage_env->new_url(tag);

  ksnap_storage_opts_init(&opts);
  opts.part_size = 5u * 1024 * 1024;
  ksnap_test_storage_env->opts(&opts);
  if (ksnap_storage_open(url, &opts, &st, &err))
    ck_abort_msg("open %s: %s", url, err.msg);
  free(url);
  return st;
}

typedef struct keylist_s {
  char **keys;
  size_t n, cap;
} keylist_t;

static int add_key(void *opaque, const char *key, uint64_t size) {
  keylist_t *kl = opaque;
  (void)size;
  if (kl->n == kl->cap) {
    kl->cap = kl->cap ? kl->cap * 2 : 64;
    kl->keys = realloc(kl->keys, kl->cap * sizeof(*kl->keys));
  }
  kl->keys[kl->n++] = strdup(key);
  return 0;
}

void ksnap_test_storage_close(ksnap_storage_t *st) {
  keylist_t kl = {0};
  ksnap_error_t err;

  if (ksnap_storage_list(st, "", add_key, &kl, &err))
    ck_abort_msg("cleanup list: %s", err.msg);
  for (size_t i = 0; i < kl.n; i++) {
    if (ksnap_storage_delete(st, kl.keys[i], &err))
      ck_abort_msg("cleanup delete: %s", err.msg);
    free(kl.keys[i]);
  }
  free(kl.keys);
  ksnap_storage_destroy(st);
}

uint8_t *ksnap_test_pattern(size_t len, unsigned seed) {
  uint8_t *p = malloc(len ? len : 1);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (uint8_t)x;
  }
  return p;
}

static void roundtrip(ksnap_storage_t *st, const char *key, size_t len) {
  uint8_t *data = ksnap_test_pattern(len, (unsigned)len);
  ksnap_storage_stat_t stat;
  ksnap_buf_t buf;
  ksnap_error_t err;

  ksnap_buf_init(&buf);
  ck_assert_msg(!ksnap_storage_put(st, key, data, len, &err), "put %s: %s",
                key, err.msg);
  ck_assert_msg(!ksnap_storage_get(st, key, &buf, &err), "get %s: %s", key,
                err.msg);
  ck_assert_uint_eq(buf.len, len);
  ck_assert(len == 0 || !memcmp(buf.data, data, len));
  ck_assert_msg(!ksnap_storage_head(st, key, &stat, &err), "head: %s",
                err.msg);
  ck_assert_uint_eq(stat.size, len);
  ksnap_buf_cleanup(&buf);
  free(data);
}

START_TEST(roundtrip_sizes) {
  ksnap_storage_t *st = ksnap_test_storage_open("sizes");
  roundtrip(st, "empty", 0);
  roundtrip(st, "one", 1);
  roundtrip(st, "four-k", 4096);
  roundtrip(st, "twenty-m", 20u << 20); /* multipart: 5 MiB parts */
  roundtrip(st, "one", 3);              /* overwrite */
  ksnap_test_storage_close(st);
}
END_TEST

typedef struct stream_acc_s {
  ksnap_buf_t buf;
  int calls;
} stream_acc_t;

static int acc(void *opaque, const uint8_t *data, size_t len) {
  stream_acc_t *a = opaque;
  a->calls++;
  return ksnap_buf_append(&a->buf, data, len) ? -1 : 0;
}

START_TEST(streaming_writer_and_reader) {
  ksnap_storage_t *st = ksnap_test_storage_open("stream");
  size_t len = (11u << 20) + 12345; /* 3 parts of 5 MiB */
  uint8_t *data = ksnap_test_pattern(len, 7);
  ksnap_storage_writer_t *w;
  stream_acc_t a = {0};
  ksnap_error_t err;
  ksnap_buf_t buf;

  ck_assert(!ksnap_storage_writer_open(st, "big", &w, &err));
  for (size_t off = 0; off < len; off += 100000)
    ck_assert_msg(!ksnap_storage_writer_write(
                      w, data + off, len - off < 100000 ? len - off : 100000,
                      &err), "write: %s", err.msg);
  ck_assert_msg(!ksnap_storage_writer_commit(w, &err), "commit: %s", err.msg);
  ksnap_buf_init(&a.buf);
  ck_assert_msg(!ksnap_storage_get_stream(st, "big", acc, &a, &err),
                "get_stream: %s", err.msg);
  ck_assert_uint_eq(a.buf.len, len);
  ck_assert(!memcmp(a.buf.data, data, len));

  /* small writer: one plain put; aborted writer: nothing stored */
  ck_assert(!ksnap_storage_writer_open(st, "small", &w, &err));
  ck_assert(!ksnap_storage_writer_write(w, "abc", 3, &err));
  ck_assert(!ksnap_storage_writer_commit(w, &err));
  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_get(st, "small", &buf, &err));
  ck_assert_str_eq((char *)buf.data, "abc");
  ck_assert(!ksnap_storage_writer_open(st, "aborted", &w, &err));
  ck_assert(!ksnap_storage_writer_write(w, data, 6u << 20, &err));
  ksnap_storage_writer_abort(w);
  ck_assert_int_eq(ksnap_storage_get(st, "aborted", &buf, &err),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_buf_cleanup(&buf);
  ksnap_buf_cleanup(&a.buf);
  free(data);
  ksnap_test_storage_close(st);
}
END_TEST

typedef struct names_s {
  char keys[64][128];
  uint64_t sizes[64];
  int n;
} names_t;

static int collect(void *opaque, const char *key, uint64_t size) {
  names_t *names = opaque;
  if (names->n < 64) {
    snprintf(names->keys[names->n], 128, "%s", key);
    names->sizes[names->n] = size;
  }
  names->n++;
  return 0;
}

START_TEST(special_keys) {
  static const char *keys[] = {
      "dir/with space", "dir/plus+sign",  "dir/eq=uals", "dir/amp&ersand",
      "dir/tilde~x",    "dir/uni-é-日本", "dir/pct%25", "dir/q?x#y",
      "dir/sub/deep/er"};
  ksnap_storage_t *st = ksnap_test_storage_open("keys");
  names_t names = {0};
  ksnap_error_t err;

  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    roundtrip(st, keys[i], i + 1);
  ck_assert(!ksnap_storage_list(st, "dir/", collect, &names, &err));
  ck_assert_int_eq(names.n, sizeof(keys) / sizeof(keys[0]));
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    int found = 0;
    /* s3rver 4.0.4 escapes '&' twice in listings (a server bug): the key
     * with '&' is checked by get above and by the count, not by name */
    if (strchr(keys[i], '&'))
      continue;
    for (int j = 0; j < names.n; j++)
      if (!strcmp(names.keys[j], keys[i])) {
        found = 1;
        ck_assert_uint_eq(names.sizes[j], i + 1);
      }
    ck_assert_msg(found, "key \"%s\" not listed", keys[i]);
  }
  ksnap_test_storage_close(st);
}
END_TEST

typedef struct count_s {
  int n, stop_at;
  int sorted;
  char last[128];
} count_t;

static int count_keys(void *opaque, const char *key, uint64_t size) {
  count_t *c = opaque;
  (void)size;
  if (c->n && strcmp(c->last, key) >= 0)
    c->sorted = 0;
  snprintf(c->last, sizeof(c->last), "%s", key);
  c->n++;
  return c->stop_at && c->n == c->stop_at;
}

START_TEST(list_paginates_past_1000) {
  enum { N = 1100 };
  ksnap_storage_t *st = ksnap_test_storage_open("list");
  ksnap_storage_item_t *items = calloc(N, sizeof(*items));
  char(*names)[32] = calloc(N, 32);
  count_t c = {.sorted = 1};
  ksnap_error_t err;

  for (int i = 0; i < N; i++) {
    snprintf(names[i], 32, "p/obj-%05d", i);
    items[i].key = names[i];
    items[i].data = names[i];
    items[i].len = strlen(names[i]);
  }
  ck_assert_msg(!ksnap_storage_put_many(st, items, N, &err), "put_many: %s",
                err.msg);
  ck_assert(!ksnap_storage_put(st, "q-other", "x", 1, &err));
  {
    const char *keys[N];
    ksnap_buf_t *outs = calloc(N, sizeof(*outs));
    for (int i = 0; i < N; i++) {
      keys[i] = names[N - 1 - i];
      ksnap_buf_init(&outs[i]);
    }
    ck_assert_msg(!ksnap_storage_get_many(st, keys, N, outs, &err),
                  "get_many: %s", err.msg);
    for (int i = 0; i < N; i++) {
      ck_assert_str_eq((char *)outs[i].data, keys[i]);
      ksnap_buf_cleanup(&outs[i]);
    }
    keys[7] = "p/missing";
    ck_assert_int_eq(ksnap_storage_get_many(st, keys, 10, outs, &err),
                     KSNAP_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, "p/missing"), "%s", err.msg);
    for (int i = 0; i < 10; i++)
      ksnap_buf_cleanup(&outs[i]);
    free(outs);
  }
  ck_assert(!ksnap_storage_list(st, "p/", count_keys, &c, &err));
  ck_assert_int_eq(c.n, N);
  ck_assert(c.sorted);
  ck_assert_str_eq(c.last, "p/obj-01099");
  memset(&c, 0, sizeof(c));
  c.sorted = 1;
  ck_assert(!ksnap_storage_list(st, "p/obj-010", count_keys, &c, &err));
  ck_assert_int_eq(c.n, 100);
  memset(&c, 0, sizeof(c));
  c.stop_at = 3;
  ck_assert(!ksnap_storage_list(st, "", count_keys, &c, &err));
  ck_assert_int_eq(c.n, 3);
  free(items);
  free(names);
  ksnap_test_storage_close(st);
}
END_TEST

START_TEST(delete_and_not_found) {
  ksnap_storage_t *st = ksnap_test_storage_open("del");
  ksnap_storage_stat_t stat;
  ksnap_buf_t buf;
  ksnap_error_t err;

  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_put(st, "a/b", "hello", 5, &err));
  ck_assert(!ksnap_storage_delete(st, "a/b", &err));
  ck_assert_int_eq(ksnap_storage_get(st, "a/b", &buf, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(strstr(err.msg, "a/b"), "message names the key: %s",
                err.msg);
  ck_assert_int_eq(ksnap_storage_head(st, "a/b", &stat, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert(!ksnap_storage_delete(st, "a/b", &err)); /* idempotent */
  ck_assert_int_eq(ksnap_storage_put(st, "/abs", "x", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_storage_put(st, "a/../b", "x", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_storage_put(st, "", "x", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_storage_put(st, "dir/", "x", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_storage_put(st, "a//b", "x", 1, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(strstr(err.msg, ": key"),
                   ": key \"a//b\" has an empty, \".\" or \"..\" segment");
  ksnap_buf_cleanup(&buf);
  ksnap_test_storage_close(st);
}
END_TEST

static int discard(void *opaque, const uint8_t *data, size_t len) {
  (void)opaque;
  (void)data;
  (void)len;
  return 0;
}

START_TEST(corruption_and_truncation_are_caught) {
  ksnap_storage_t *st = ksnap_test_storage_open("corrupt");
  ksnap_buf_t raw, buf;
  ksnap_error_t err;
  uint8_t *data = ksnap_test_pattern(100000, 3);

  ksnap_buf_init(&raw);
  ksnap_buf_init(&buf);
  ck_assert(!ksnap_storage_put(st, "obj", data, 100000, &err));
  ck_assert(!ksnap__storage_get_raw(st, "obj", &raw, &err));
  ck_assert_uint_eq(raw.len, 100000 + KSNAP_STORAGE_TRAILER_SIZE);

  raw.data[500] ^= 0x01; /* one flipped bit */
  ck_assert(!ksnap__storage_put_raw(st, "obj", raw.data, raw.len, &err));
  ck_assert_int_eq(ksnap_storage_get(st, "obj", &buf, &err),
                   KSNAP_ERR_CHECKSUM);
  ck_assert_uint_eq(buf.len, 0); /* never data */
  ck_assert_msg(strstr(err.msg, "/obj: checksum mismatch"), "%s", err.msg);
  ck_assert_int_eq(ksnap_storage_get_stream(st, "obj", discard, NULL, &err),
                   KSNAP_ERR_CHECKSUM);

  raw.data[500] ^= 0x01;
  ck_assert(!ksnap__storage_put_raw(st, "obj", raw.data, raw.len - 5, &err));
  ck_assert_int_eq(ksnap_storage_get(st, "obj", &buf, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert_msg(strstr(err.msg, "/obj: object truncated"), "%s", err.msg);
  ck_assert_int_eq(ksnap_storage_get_stream(st, "obj", discard, NULL, &err),
                   KSNAP_ERR_TRUNCATED);

  ck_assert(!ksnap__storage_put_raw(st, "tiny", "abc", 3, &err));
  ck_assert_int_eq(ksnap_storage_get(st, "tiny", &buf, &err),
                   KSNAP_ERR_TRUNCATED);
  ck_assert(!ksnap__storage_put_raw(st, "nil", "", 0, &err));
  ck_assert_int_eq(ksnap_storage_get(st, "nil", &buf, &err),
                   KSNAP_ERR_TRUNCATED);
  ksnap_buf_cleanup(&raw);
  ksnap_buf_cleanup(&buf);
  free(data);
  ksnap_test_storage_close(st);
}
END_TEST

TCase *ksnap_test_storage_tcase(void) {
  TCase *tc = tcase_create(ksnap_test_storage_env->name);

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, roundtrip_sizes);
  tcase_add_test(tc, streaming_writer_and_reader);
  tcase_add_test(tc, special_keys);
  tcase_add_test(tc, list_paginates_past_1000);
  tcase_add_test(tc, delete_and_not_found);
  tcase_add_test(tc, corruption_and_truncation_are_caught);
  ksnap_test_storage_writer_cases(tc);
  return tc;
}
