/*
 * bench_storage: ksnap storage vs raw libcurl on the same S3 server, in one
 * run, as ratios (ksnap throughput / raw throughput).
 *
 *   . tests/.run/s3.env && build/tests/bench_storage [ROUNDS]
 *
 * Raw libcurl uses the same SigV4 settings (CURLOPT_AWS_SIGV4, UNSIGNED-
 * PAYLOAD, Content-Type, no Expect wait, one connection pool): small PUTs
 * and GETs with curl multi (8 in flight, as ksnap's default max_parallel;
 * ksnap_storage_put_many / get_many), small GETs also sequentially on one
 * reused handle (ksnap_storage_get per object), large objects as one PUT /
 * one GET. ksnap adds its CRC32C
 * trailer and verification, and sends 64 MiB as a multipart upload with
 * the default 16 MiB parts in parallel. Throughputs are medians of ROUNDS
 * (default 5); the ratio is the median of the per-round ratios.
 * KSNAP_BENCH_PART_SIZE / KSNAP_BENCH_PARALLEL override ksnap's part size
 * and max_parallel (to see what multipart itself costs on a server).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ksnap/storage.h"
#include "testutil.h"
#include "base/util.h"

#define NSMALL 1000
#define SMALL 4096
#define LARGE (64u << 20)
#define PAR 8

static const char *endpoint, *bucket, *akey, *skey, *region;
static char sigv4[64], prefix[64];
static struct curl_slist *put_hdrs, *get_hdrs;

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  return ksnap_buf_append(ud, p, s * n) ? 0 : s * n;
}

static void raw_setup(CURL *c, const char *key, ksnap_buf_t *out) {
  char url[512];
  snprintf(url, sizeof(url), "%s/%s/%s", endpoint, bucket, key);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
  curl_easy_setopt(c, CURLOPT_USERNAME, akey);
  curl_easy_setopt(c, CURLOPT_PASSWORD, skey);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
}

static void raw_put_opts(CURL *c, const void *data, size_t len) {
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, put_hdrs);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
}

static void check(CURL *c, CURLcode cc, const char *what) {
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (cc != CURLE_OK || status / 100 != 2) {
    fprintf(stderr, "raw %s failed: %s, HTTP %ld\n", what,
            curl_easy_strerror(cc), status);
    exit(1);
  }
}

/* 1000 small PUTs (data) or GETs (data NULL), PAR in flight. */
/* Raw handles live for the whole run, like ksnap's (warm connections). */
static CURLM *raw_multi;
static CURL *raw_easy;

static double raw_small_multi(const uint8_t *data) {
  CURLM *m = raw_multi;
  static CURL *pool[PAR];
  ksnap_buf_t out[PAR];
  int next = 0, active = 0, npool = PAR;
  int64_t t0 = ksnap__now_us();

  for (int i = 0; i < PAR; i++) {
    if (!pool[i])
      pool[i] = curl_easy_init();
    ksnap_buf_init(&out[i]);
  }
  while (next < NSMALL || active) {
    int running;
    CURLMsg *msg;
    while (next < NSMALL && npool) {
      CURL *c = pool[--npool];
      char key[128];
      snprintf(key, sizeof(key), "%s/raw/s-%05d", prefix, next++);
      curl_easy_reset(c);
      ksnap_buf_reset(&out[npool]);
      raw_setup(c, key, &out[npool]);
      if (data)
        raw_put_opts(c, data, SMALL);
      else
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, get_hdrs);
      curl_easy_setopt(c, CURLOPT_PRIVATE, (char *)NULL + npool);
      curl_multi_add_handle(m, c);
      active++;
    }
    curl_multi_perform(m, &running);
    while ((msg = curl_multi_info_read(m, &running))) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      check(msg->easy_handle, msg->data.result, data ? "small PUT"
                                                     : "small GET");
      curl_multi_remove_handle(m, msg->easy_handle);
      pool[npool++] = msg->easy_handle;
      active--;
    }
    if (active)
      curl_multi_poll(m, NULL, 0, 100, NULL);
  }
  for (int i = 0; i < PAR; i++)
    ksnap_buf_cleanup(&out[i]);
  return (ksnap__now_us() - t0) / 1e6;
}

static double raw_get_small(void) {
  CURL *c = raw_easy;
  ksnap_buf_t out;
  int64_t t0 = ksnap__now_us();

  ksnap_buf_init(&out);
  for (int i = 0; i < NSMALL; i++) {
    char key[128];
    snprintf(key, sizeof(key), "%s/raw/s-%05d", prefix, i);
    curl_easy_reset(c);
    ksnap_buf_reset(&out);
    raw_setup(c, key, &out);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, get_hdrs);
    check(c, curl_easy_perform(c), "small GET");
  }
  ksnap_buf_cleanup(&out);
  return (ksnap__now_us() - t0) / 1e6;
}

static double raw_large(const uint8_t *data, int put) {
  CURL *c = raw_easy;
  ksnap_buf_t out;
  char key[128];
  int64_t t0 = ksnap__now_us();

  ksnap_buf_init(&out);
  snprintf(key, sizeof(key), "%s/raw/large", prefix);
  curl_easy_reset(c);
  raw_setup(c, key, &out);
  if (put) {
    raw_put_opts(c, data, LARGE);
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, get_hdrs);
    ksnap_buf_reserve(&out, LARGE); /* as ksnap does from Content-Length */
  }
  check(c, curl_easy_perform(c), put ? "large PUT" : "large GET");
  if (!put && out.len != LARGE) {
    fprintf(stderr, "raw large GET: %zu bytes\n", out.len);
    exit(1);
  }
  ksnap_buf_cleanup(&out);
  return (ksnap__now_us() - t0) / 1e6;
}

/* Raw multipart: initiate, parts in parallel (multi), complete; the same
 * server work as ksnap's multipart upload. */
static size_t etag_hdr(char *line, size_t s, size_t n, void *ud) {
  if (!strncasecmp(line, "etag:", 5)) {
    char *e = ud;
    snprintf(e, 64, "%.*s", (int)strcspn(line + 6, "\r\n"), line + 6);
  }
  return s * n;
}

static double raw_multipart_put(const uint8_t *data, size_t part) {
  int nparts = (int)((LARGE + part - 1) / part);
  char key[128], q[512], etags[64][64], *id, *end;
  CURL *c = curl_easy_init(), *e[64];
  CURLM *m = curl_multi_init();
  ksnap_buf_t out, xml;
  int running;
  int64_t t0 = ksnap__now_us();

  ksnap_buf_init(&out);
  ksnap_buf_init(&xml);
  snprintf(key, sizeof(key), "%s/raw/mp?uploads=", prefix);
  raw_setup(c, key, &out);
  raw_put_opts(c, "", 0);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
  check(c, curl_easy_perform(c), "initiate");
  id = strstr((char *)out.data, "<UploadId>") + 10;
  end = strstr(id, "</UploadId>");
  *end = '\0';
  for (int i = 0; i < nparts; i++) {
    size_t off = (size_t)i * part, len = LARGE - off < part ? LARGE - off
                                                          : part;
    e[i] = curl_easy_init();
    snprintf(q, sizeof(q), "%s/raw/mp?partNumber=%d&uploadId=%s", prefix,
             i + 1, id);
    raw_setup(e[i], q, &out);
    raw_put_opts(e[i], data + off, len);
    curl_easy_setopt(e[i], CURLOPT_HEADERFUNCTION, etag_hdr);
    curl_easy_setopt(e[i], CURLOPT_HEADERDATA, (void *)etags[i]);
    curl_multi_add_handle(m, e[i]);
  }
  do {
    curl_multi_perform(m, &running);
    if (running)
      curl_multi_poll(m, NULL, 0, 100, NULL);
  } while (running);
  ksnap_buf_appendf(&xml, "<CompleteMultipartUpload>");
  for (int i = 0; i < nparts; i++) {
    check(e[i], CURLE_OK, "part");
    curl_multi_remove_handle(m, e[i]);
    curl_easy_cleanup(e[i]);
    ksnap_buf_appendf(&xml, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>"
                            "</Part>", i + 1, etags[i]);
  }
  ksnap_buf_appendf(&xml, "</CompleteMultipartUpload>");
  snprintf(q, sizeof(q), "%s/raw/mp?uploadId=%s", prefix, id);
  curl_easy_reset(c);
  raw_setup(c, q, &out);
  raw_put_opts(c, xml.data, xml.len);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
  check(c, curl_easy_perform(c), "complete");
  curl_easy_cleanup(c);
  curl_multi_cleanup(m);
  ksnap_buf_cleanup(&out);
  ksnap_buf_cleanup(&xml);
  return (ksnap__now_us() - t0) / 1e6;
}

static void die(const char *what, ksnap_error_t *err) {
  fprintf(stderr, "ksnap %s failed: %s\n", what, err->msg);
  exit(1);
}

static double ksnap_put_small(ksnap_storage_t *st, const uint8_t *data) {
  static char keys[NSMALL][32];
  ksnap_storage_item_t items[NSMALL];
  ksnap_error_t err;
  int64_t t0 = ksnap__now_us();

  for (int i = 0; i < NSMALL; i++) {
    snprintf(keys[i], sizeof(keys[i]), "s-%05d", i);
    items[i].key = keys[i];
    items[i].data = data;
    items[i].len = SMALL;
  }
  if (ksnap_storage_put_many(st, items, NSMALL, &err))
    die("put_many", &err);
  return (ksnap__now_us() - t0) / 1e6;
}

static double ksnap_get_small(ksnap_storage_t *st) {
  ksnap_buf_t out;
  ksnap_error_t err;
  int64_t t0 = ksnap__now_us();

  ksnap_buf_init(&out);
  for (int i = 0; i < NSMALL; i++) {
    char key[32];
    snprintf(key, sizeof(key), "s-%05d", i);
    ksnap_buf_reset(&out);
    if (ksnap_storage_get(st, key, &out, &err))
      die("get", &err);
  }
  ksnap_buf_cleanup(&out);
  return (ksnap__now_us() - t0) / 1e6;
}

static double ksnap_get_small_many(ksnap_storage_t *st) {
  static char keys[NSMALL][32];
  const char *kp[NSMALL];
  ksnap_buf_t *outs = calloc(NSMALL, sizeof(*outs));
  ksnap_error_t err;
  int64_t t0 = ksnap__now_us();

  for (int i = 0; i < NSMALL; i++) {
    snprintf(keys[i], sizeof(keys[i]), "s-%05d", i);
    kp[i] = keys[i];
  }
  if (ksnap_storage_get_many(st, kp, NSMALL, outs, &err))
    die("get_many", &err);
  t0 = ksnap__now_us() - t0;
  for (int i = 0; i < NSMALL; i++)
    ksnap_buf_cleanup(&outs[i]);
  free(outs);
  return t0 / 1e6;
}

static double ksnap_large(ksnap_storage_t *st, const uint8_t *data, int put) {
  ksnap_buf_t out;
  ksnap_error_t err;
  int64_t t0 = ksnap__now_us();

  ksnap_buf_init(&out);
  if (put ? ksnap_storage_put(st, "large", data, LARGE, &err)
          : ksnap_storage_get(st, "large", &out, &err))
    die(put ? "large put" : "large get", &err);
  if (!put && out.len != LARGE) {
    fprintf(stderr, "ksnap large get: %zu bytes\n", out.len);
    exit(1);
  }
  ksnap_buf_cleanup(&out);
  return (ksnap__now_us() - t0) / 1e6;
}

static int delete_cb(void *opaque, const char *key, uint64_t size) {
  ksnap_error_t err;
  (void)size;
  if (ksnap_storage_delete(opaque, key, &err))
    fprintf(stderr, "cleanup: %s\n", err.msg);
  return 0;
}

/* Deletes everything the run wrote under s3://BUCKET/bench-PID/. */
static void cleanup(void) {
  ksnap_storage_opts_t opts;
  ksnap_storage_t *st;
  ksnap_error_t err;
  char url[256];

  ksnap_storage_opts_init(&opts);
  opts.endpoint = endpoint;
  opts.region = region;
  opts.access_key = akey;
  opts.secret_key = skey;
  snprintf(url, sizeof(url), "s3://%s/%s", bucket, prefix);
  if (ksnap_storage_open(url, &opts, &st, &err))
    die("open", &err);
  if (ksnap_storage_list(st, "", delete_cb, st, &err))
    fprintf(stderr, "cleanup: %s\n", err.msg);
  ksnap_storage_destroy(st);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  return v[n / 2];
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  double t[6][2][16];
  size_t part;
  ksnap_storage_opts_t opts;
  ksnap_storage_t *st;
  ksnap_error_t err;
  char url[256];
  uint8_t *small = malloc(SMALL), *large = malloc(LARGE);
  static const char *names[6] = {"1000 x 4 KiB PUT (8 in flight)",
                                 "1000 x 4 KiB GET (8 in flight)",
                                 "1000 x 4 KiB GET (sequential)",
                                 "1 x 64 MiB PUT", "1 x 64 MiB GET",
                                 "1 x 64 MiB PUT, both multipart"};

  if (rounds < 1 || rounds > 16)
    rounds = 5;
  endpoint = ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT");
  bucket = ksnap_test_require_env("KSNAP_TEST_S3_BUCKET");
  akey = ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY");
  skey = ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY");
  region = ksnap_test_require_env("KSNAP_TEST_S3_REGION");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  raw_multi = curl_multi_init();
  raw_easy = curl_easy_init();
  snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", region);
  snprintf(prefix, sizeof(prefix), "bench-%d", (int)getpid());
  put_hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  put_hdrs = curl_slist_append(put_hdrs,
                               "Content-Type: application/octet-stream");
  get_hdrs = curl_slist_append(NULL, "x-amz-content-sha256: "
                                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e"
                                     "4649b934ca495991b7852b855");
  for (size_t i = 0; i < LARGE; i++)
    large[i] = (uint8_t)(i * 2654435761u >> 13);
  memcpy(small, large, SMALL);

  ksnap_storage_opts_init(&opts);
  opts.endpoint = endpoint;
  opts.region = region;
  opts.access_key = akey;
  opts.secret_key = skey;
  if (getenv("KSNAP_BENCH_PART_SIZE")) /* e.g. 67108880: one PUT */
    opts.part_size = strtoull(getenv("KSNAP_BENCH_PART_SIZE"), NULL, 10);
  if (getenv("KSNAP_BENCH_PARALLEL"))
    opts.max_parallel = atoi(getenv("KSNAP_BENCH_PARALLEL"));
  part = opts.part_size ? opts.part_size : KSNAP_STORAGE_DEFAULT_PART_SIZE;
  snprintf(url, sizeof(url), "s3://%s/%s/ksnap", bucket, prefix);
  if (ksnap_storage_open(url, &opts, &st, &err))
    die("open", &err);

  for (int r = 0; r < rounds; r++) {
    /* interleaved; who goes first alternates per round (cache, server
     * background work) */
    for (int k = 0; k < 2; k++) {
      int ks = (r + k) % 2;
      if (ks) {
        t[0][1][r] = ksnap_put_small(st, small);
        t[1][1][r] = ksnap_get_small_many(st);
        t[2][1][r] = ksnap_get_small(st);
        t[3][1][r] = ksnap_large(st, large, 1);
        t[4][1][r] = ksnap_large(st, large, 0);
      } else {
        t[0][0][r] = raw_small_multi(small);
        t[1][0][r] = raw_small_multi(NULL);
        t[2][0][r] = raw_get_small();
        t[3][0][r] = raw_large(large, 1);
        t[4][0][r] = raw_large(large, 0);
        t[5][0][r] = raw_multipart_put(large, part);
      }
    }
    t[5][1][r] = t[3][1][r];
  }
  printf("ksnap storage vs raw libcurl on %s, median of %d rounds\n",
         endpoint, rounds);
  printf("%-32s %14s %14s %7s\n", "case", "raw libcurl", "ksnap", "ratio");
  for (int c = 0; c < 6; c++) {
    double ratios[16], raw, ks;
    double mib = c < 3 ? NSMALL * (double)SMALL / (1 << 20)
                       : (double)LARGE / (1 << 20);
    /* ratio: median of the per-round paired ratios (robust to load
     * drifting between rounds on a shared machine) */
    for (int r = 0; r < rounds; r++)
      ratios[r] = t[c][0][r] / t[c][1][r];
    raw = median(t[c][0], rounds);
    ks = median(t[c][1], rounds);
    printf("%-32s %9.1f MiB/s %8.1f MiB/s %6.2fx\n", names[c], mib / raw,
           mib / ks, median(ratios, rounds));
  }
  if (part >= LARGE + KSNAP_STORAGE_TRAILER_SIZE)
    printf("(part size %zu: ksnap sent 64 MiB as one PUT; the last row's raw\n"
           " side is a one-part multipart upload)\n", part);
  else
    printf("(ksnap sends 64 MiB as a multipart upload in %zu MiB parts; the\n"
           " last row compares it with raw libcurl doing the same multipart\n"
           " upload, parts in parallel)\n", part >> 20);
  ksnap_storage_destroy(st);
  cleanup();
  curl_slist_free_all(put_hdrs);
  curl_slist_free_all(get_hdrs);
  free(small);
  free(large);
  return 0;
}
