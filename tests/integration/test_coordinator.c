/*
 * The coordinator driver (ksnap_coord_run, `ksnap coordinator`) against
 * the real broker, with fake tasks (tests/common/faketask.h) that speak
 * only the record contract, checkpoints in a local directory.
 */
#include <check.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clitest.h"
#include "driver/coord_driver.h"
#include "control/coord_io.h"
#include "driver/coord_store.h"
#include "faketask.h"
#include "kafka_testutil.h"
#include "ksnap/buf.h"
#include "ksnap/log.h"
#include "testnames.h"
#include "testutil.h"

#define WAIT_MS 30000
#define OPS "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/tests/operators"

typedef struct env_s {
  char *job;
  char *dir;
  char props[600]; /* the job file, for the CLI */
  ksnap_conf_t *conf;
  int rest_port;
} env_t;

typedef struct coord_s {
  const ksnap_conf_t *conf;
  pthread_t thread;
  volatile sig_atomic_t stop;
  ksnap_err_t err;
  ksnap_error_t error;
  volatile int finished;
} coord_t;

static void conf_error(void *opaque, const char *msg) {
  (void)opaque;
  ck_abort_msg("job conf: %s", msg);
}

#define ENV_REST 1   /* serve the REST endpoint */
#define ENV_S3 2     /* checkpoints in the S3 server */
#define ENV_STRICT 4 /* tolerable-failed-checkpoints=0 */

/* A fresh job (unique name) with ENV_* @p flags. */
static void env_init(env_t *e, int flags) {
  char text[4096], body[1024], ckpt[600];
  FILE *fp;

  memset(e, 0, sizeof(*e));
  e->job = ksnap_test_unique_name("coord");
  e->dir = ksnap_test_tmpdir("coord");
  e->rest_port = flags & ENV_REST ? ksnap_test_free_port() : 0;
  if (flags & ENV_S3)
    snprintf(ckpt, sizeof(ckpt), "s3://%s/%s-ckpt",
             ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), e->job);
  else
    snprintf(ckpt, sizeof(ckpt), "%s", e->dir);
  snprintf(body, sizeof(body),
           "state.checkpoints.num-retained=2\n"
           "execution.checkpointing.interval=300ms\n"
           "execution.checkpointing.timeout=10s\n"
           "execution.checkpointing.tolerable-failed-checkpoints=%d\n"
           "%s"
           "heartbeat.interval=100ms\n"
           "heartbeat.timeout=5s\n"
           "rest.port=%d\n"
           /* the test library: `ksnap coordinator` loads it as a worker
            * would before it starts (the fake tasks never do) */
           "stage.map.operator=libksnap_test_identity.so:identity\n"
           "stage.map.parallelism=2\n"
           "stage.map.input=source:in\n"
           "stage.map.output=sink:out\n",
           flags & ENV_STRICT ? 0 : 5,
           /* strict: a failed checkpoint fails the job, not restores it */
           flags & ENV_STRICT ? "restart-strategy.type=none\n" : "",
           e->rest_port);
  ksnap_test_job_text(text, sizeof(text), e->job, ckpt, body);
  e->conf = ksnap_conf_new();
  ck_assert_int_eq(ksnap_conf_load_string(e->conf, "job", text, conf_error,
                                          NULL), 0);
  ck_assert_int_eq(ksnap_conf_finalize(e->conf, conf_error, NULL), 0);
  snprintf(e->props, sizeof(e->props), "%s/job.properties", e->dir);
  ck_assert_ptr_nonnull(fp = fopen(e->props, "w"));
  fputs(text, fp);
  fclose(fp);
}

static void env_cleanup(env_t *e) {
  ksnap_conf_destroy(e->conf);
  ksnap_test_rmtree(e->dir);
  free(e->dir);
  free(e->job);
}

static void *coord_main(void *arg) {
  coord_t *c = arg;

  c->err = ksnap_coord_run(c->conf, &c->stop, &c->error);
  c->finished = 1;
  return NULL;
}

static coord_t *coord_start(const ksnap_conf_t *conf) {
  coord_t *c = calloc(1, sizeof(*c));

  c->conf = conf;
  ck_assert_int_eq(pthread_create(&c->thread, NULL, coord_main, c), 0);
  return c;
}

/* Stops (unless it finished) and joins; @returns its result. */
static ksnap_err_t coord_join(coord_t *c, ksnap_error_t *error) {
  ksnap_err_t err;

  c->stop = 1;
  pthread_join(c->thread, NULL);
  err = c->err;
  if (error)
    *error = c->error;
  free(c);
  return err;
}

static int coord_wait_finished(coord_t *c, int timeout_ms) {
  for (int i = 0; i < timeout_ms / 20 && !c->finished; i++)
    usleep(20 * 1000);
  return c->finished;
}

/* Highest TRIGGER id and the TRIGGERs' generations, checked increasing. */
static int64_t check_triggers(ksnap_fake_event_t *ev, int n) {
  int64_t last = 0;

  for (int i = 0; i < n; i++) {
    if (ev[i].type != KSNAP_CONTROL_TRIGGER)
      continue;
    ck_assert_msg(ev[i].checkpoint_id > last, "trigger id %" PRId64
                  " after %" PRId64, ev[i].checkpoint_id, last);
    last = ev[i].checkpoint_id;
  }
  return last;
}

START_TEST(five_checkpoints_complete_metadata_first) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  ksnap_error_t error;
  env_t e;
  coord_t *c;
  int n, completes = 0;
  int64_t last = 0;

  env_init(&e, 0);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 5, WAIT_MS));
  n = ksnap_fake_tasks_events(ft, &ev);
  check_triggers(ev, n);
  for (int i = 0; i < n && completes < 5; i++) {
    if (ev[i].type != KSNAP_CONTROL_COMPLETE)
      continue;
    ck_assert_msg(ev[i].meta_existed, "chk-%" PRId64 "/_metadata missing "
                  "when its COMPLETE was read", ev[i].checkpoint_id);
    ck_assert_int_gt(ev[i].checkpoint_id, last);
    ck_assert_ptr_nonnull(strstr(ev[i].path, "/_metadata"));
    last = ev[i].checkpoint_id;
    completes++;
  }
  free(ev);
  ck_assert_int_eq(coord_join(c, &error), KSNAP_ERR_OK);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

START_TEST(decline_aborts_and_later_checkpoints_complete) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  env_t e;
  coord_t *c;
  int n, aborted = 0;

  env_init(&e, 0);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ksnap_fake_tasks_decline(ft, 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_ABORT, 0, 1, WAIT_MS));
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 3, WAIT_MS));
  n = ksnap_fake_tasks_events(ft, &ev);
  for (int i = 0; i < n; i++) {
    if (ev[i].type == KSNAP_CONTROL_ABORT) {
      ck_assert_int_eq(ev[i].checkpoint_id, 2);
      aborted++;
    }
    if (ev[i].type == KSNAP_CONTROL_COMPLETE)
      ck_assert_int_ne(ev[i].checkpoint_id, 2);
  }
  ck_assert_int_eq(aborted, 1);
  free(ev);
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

START_TEST(silent_task_triggers_restore_next_generation) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  env_t e;
  coord_t *c;
  int n;

  env_init(&e, 0);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 1, WAIT_MS));
  ksnap_fake_tasks_silence(ft, 1);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_RESTORE, 1, 1, WAIT_MS));
  /* the tasks re-registered at generation 1: checkpoints go on */
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 1, 1, WAIT_MS));
  n = ksnap_fake_tasks_events(ft, &ev);
  for (int i = 0; i < n; i++)
    if (ev[i].type == KSNAP_CONTROL_RESTORE)
      ck_assert_int_ge(ev[i].checkpoint_id, 1); /* the latest completed */
  free(ev);
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

START_TEST(second_coordinator_fences_the_first_and_continues_ids) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  ksnap_error_t error;
  env_t e;
  coord_t *a, *b;
  int n;
  int64_t a_max;

  env_init(&e, 0);
  a = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 2, WAIT_MS));
  n = ksnap_fake_tasks_events(ft, &ev);
  a_max = check_triggers(ev, n);
  free(ev);
  b = coord_start(e.conf);
  ck_assert_msg(coord_wait_finished(a, WAIT_MS), "the fenced coordinator "
                "did not stop");
  ck_assert_int_eq(coord_join(a, &error), KSNAP_ERR_FENCED);
  ck_assert_ptr_nonnull(strstr(error.msg, "fenced"));
  /* b restores the job in the next generation (global failover), with
     ids above every id a used */
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_RESTORE, 1, 1, WAIT_MS));
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 1, 2, WAIT_MS));
  n = ksnap_fake_tasks_events(ft, &ev);
  ck_assert_int_gt(check_triggers(ev, n), a_max);
  free(ev);
  ck_assert_int_eq(coord_join(b, NULL), KSNAP_ERR_OK);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

START_TEST(restart_continues_and_refuses_a_corrupt_or_partial_checkpoint) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  ksnap_error_t error;
  env_t e;
  coord_t *c;
  char path[1024];
  int n;
  int64_t before, latest = 0;
  FILE *fp;

  env_init(&e, 0);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 3, WAIT_MS));
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  n = ksnap_fake_tasks_events(ft, &ev);
  before = check_triggers(ev, n);
  for (int i = 0; i < n; i++)
    if (ev[i].type == KSNAP_CONTROL_COMPLETE)
      latest = ev[i].checkpoint_id;
  free(ev);
  /* restart: the job is restored from the latest completed checkpoint in
     the next generation (global failover), and ids continue */
  c = coord_start(e.conf);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_RESTORE, 1, 1, WAIT_MS));
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 1, 3, WAIT_MS));
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  n = ksnap_fake_tasks_events(ft, &ev);
  ck_assert_int_gt(check_triggers(ev, n), before);
  for (int i = 0; i < n; i++) {
    if (ev[i].type == KSNAP_CONTROL_RESTORE)
      ck_assert_int_eq(ev[i].checkpoint_id, latest);
    if (ev[i].type == KSNAP_CONTROL_COMPLETE)
      latest = ev[i].checkpoint_id;
  }
  free(ev);
  ksnap_fake_tasks_stop(ft);
  /* flip a byte of the latest _metadata: the next start refuses */
  snprintf(path, sizeof(path), "%s/%s/chk-%" PRId64 "/_metadata", e.dir,
           e.job, latest);
  ck_assert_ptr_nonnull(fp = fopen(path, "r+b"));
  fseek(fp, 5, SEEK_SET);
  int ch = fgetc(fp);
  fseek(fp, 5, SEEK_SET);
  fputc(ch ^ 0xff, fp);
  fclose(fp);
  ksnap_error_clear(&error);
  c = coord_start(e.conf);
  ck_assert(coord_wait_finished(c, WAIT_MS));
  ck_assert_int_eq(coord_join(c, &error), KSNAP_ERR_CHECKSUM);
  ck_assert_msg(strstr(error.msg, "_metadata") != NULL, "%s", error.msg);
  /* repaired, but a state object it names is gone: refused too */
  ck_assert_ptr_nonnull(fp = fopen(path, "r+b"));
  fseek(fp, 5, SEEK_SET);
  fputc(ch, fp);
  fclose(fp);
  snprintf(path, sizeof(path), "%s/%s/chk-%" PRId64 "/map-1", e.dir, e.job,
           latest);
  ck_assert_int_eq(unlink(path), 0);
  c = coord_start(e.conf);
  ck_assert(coord_wait_finished(c, WAIT_MS));
  ck_assert_int_eq(coord_join(c, &error), KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(strstr(error.msg, "map-1") != NULL, "%s", error.msg);
  env_cleanup(&e);
}
END_TEST

static size_t collect(char *ptr, size_t size, size_t n, void *opaque) {
  ksnap_buf_append(opaque, ptr, size * n);
  return size * n;
}

static long http_get(int port, const char *path, ksnap_buf_t *out) {
  CURL *h = curl_easy_init();
  char url[256];
  long status = 0;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  ksnap_buf_reset(out);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(h);
  return status;
}

START_TEST(rest_cli_list_and_savepoint_stop) {
  ksnap_fake_tasks_t *ft;
  ksnap_fake_event_t *ev;
  ksnap_buf_t body;
  env_t e;
  coord_t *c;
  char args[800], *out = NULL, *err = NULL;
  int n, savepoints = 0;

  env_init(&e, ENV_REST);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 2, WAIT_MS));
  usleep(700 * 1000); /* one publication of the statistics */
  ksnap_buf_init(&body);
  ck_assert_int_eq(http_get(e.rest_port, "/checkpoints", &body), 200);
  ck_assert_ptr_nonnull(strstr((char *)body.data, "\"completed\": "));
  ck_assert_ptr_nonnull(strstr((char *)body.data, "\"history\": [{"));
  ck_assert_int_eq(http_get(e.rest_port, "/metrics", &body), 200);
  ck_assert_ptr_nonnull(strstr((char *)body.data,
                               "ksnap_checkpoints_completed_total{job=\""));
  ck_assert_ptr_nonnull(strstr((char *)body.data,
                               ",task=\"map[1]\",stage=\"map\",subtask=\"1\"}"));
  ck_assert_ptr_nonnull(
      strstr((char *)body.data, "# TYPE ksnap_task_checkpoint_duration_ms "));
  ck_assert_int_eq(http_get(e.rest_port, "/", &body), 200);
  ck_assert_ptr_nonnull(strstr((char *)body.data, "<!DOCTYPE html>"));
  ck_assert_int_eq(http_get(e.rest_port, "/nope", &body), 404);
  ksnap_buf_cleanup(&body);

  snprintf(args, sizeof(args), "checkpoints list %s --task", e.props);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_msg(strstr(out, "COMPLETED") != NULL, "%s%s", out, err);
  ck_assert_msg(strstr(out, "START DELAY  DEAD LETTERS UNALIGNED          TYPE\n") &&
                    strstr(out, "\nTASK             END TO END SYNC") &&
                    strstr(out, "\nmap[1]  "),
                "no per-task figures:\n%s", out);
  free(out);
  free(err);

  snprintf(args, sizeof(args), "checkpoint trigger %s", e.props);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_msg(strstr(out, "Completed checkpoint") != NULL, "%s%s", out,
                err);
  free(out);
  free(err);

  snprintf(args, sizeof(args), "savepoint %s --stop", e.props);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_msg(strstr(out, "Completed savepoint") != NULL, "%s%s", out, err);
  free(out);
  free(err);
  ck_assert_msg(coord_wait_finished(c, WAIT_MS), "no stop after savepoint");
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  n = ksnap_fake_tasks_events(ft, &ev);
  for (int i = 0; i < n; i++)
    savepoints += ev[i].type == KSNAP_CONTROL_TRIGGER && ev[i].is_savepoint;
  ck_assert_int_eq(savepoints, 1);
  free(ev);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

/* The source lag in /metrics and /checkpoints: the fake map tasks ACK
 * positions in a 2-partition topic the test fills, so the lag is exact:
 * the records produced beyond the positions the latest completed
 * checkpoint carries. */
static void produce(const char *bs, const char *topic, int part, int n) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);

  for (int i = 0; i < n; i++)
    ck_assert(!rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
        RD_KAFKA_V_VALUE("x", (size_t)1),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END));
  ck_assert(!rd_kafka_flush(rk, 10000));
  rd_kafka_destroy(rk);
}

/* Waits until GET @p path has every one of @p want (NULL-ended):
 * @returns 1, or 0 with the last body printed. */
static int wait_body(int port, const char *path, const char *const *want) {
  ksnap_buf_t body;
  int ok = 0;

  ksnap_buf_init(&body);
  for (int t = 0; t < WAIT_MS / 250 && !ok; t++) {
    if (t)
      usleep(250 * 1000);
    ok = http_get(port, path, &body) == 200;
    for (int i = 0; ok && want[i]; i++)
      ok = strstr((char *)body.data, want[i]) != NULL;
  }
  if (!ok)
    fprintf(stderr, "GET %s lacks what the test waits for:\n%s\n", path,
            (char *)body.data);
  ksnap_buf_cleanup(&body);
  return ok;
}

START_TEST(rest_source_lag_of_the_latest_checkpoint) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *src = ksnap_test_unique_name("coord-lag-src");
  char lag0[512], lag1[512], part0[512], part1[512], none[512];
  ksnap_fake_tasks_t *ft;
  env_t e;
  coord_t *c;

  env_init(&e, ENV_REST);
  ksnap_test_create_topic(bs, src, 2);
  produce(bs, src, 0, 5);
  produce(bs, src, 1, 3);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ksnap_fake_tasks_position(ft, 0, src, 0);
  ksnap_fake_tasks_position(ft, 1, src, 0);
  /* the REST endpoint is up */
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 1, WAIT_MS));
#define LAG(buf, task, sub, n)                                            \
  snprintf(buf, sizeof(buf),                                              \
           "\nksnap_task_source_lag_records{job=\"%s\",task=\"" task      \
           "\",stage=\"map\",subtask=\"" sub "\"} " n "\n", e.job)
#define PART(buf, p, n)                                                   \
  snprintf(buf, sizeof(buf),                                              \
           "\nksnap_source_partition_lag_records{job=\"%s\",topic=\"%s\","  \
           "partition=\"" p "\"} " n "\n", e.job, src)
  /* nothing read yet: every record is lag */
  LAG(lag0, "map[0]", "0", "5");
  LAG(lag1, "map[1]", "1", "3");
  PART(part0, "0", "5");
  PART(part1, "1", "3");
  ck_assert(wait_body(e.rest_port, "/metrics",
                      (const char *const[]){lag0, lag1, part0, part1,
                                            "# HELP ksnap_task_source_lag_"
                                            "records Source records after "
                                            "the latest completed "
                                            "checkpoint's position",
                                            NULL}));
  /* everything read and checkpointed: 0 */
  ksnap_fake_tasks_position(ft, 0, src, 5);
  ksnap_fake_tasks_position(ft, 1, src, 3);
  LAG(lag0, "map[0]", "0", "0");
  LAG(lag1, "map[1]", "1", "0");
  PART(part0, "0", "0");
  ck_assert(wait_body(e.rest_port, "/metrics",
                      (const char *const[]){lag0, lag1, part0, NULL}));
  /* more input while the sources stand still: its records are the lag */
  produce(bs, src, 0, 4);
  LAG(lag0, "map[0]", "0", "4");
  PART(part0, "0", "4");
  ck_assert(wait_body(e.rest_port, "/metrics",
                      (const char *const[]){lag0, lag1, part0, NULL}));
  snprintf(none, sizeof(none), "\"task\": \"map[0]\", \"generation\": ");
  ck_assert(wait_body(e.rest_port, "/checkpoints",
                      (const char *const[]){none,
                                            "\"source_lag_records\": 4}",
                                            "\"source_lag_records\": 0}",
                                            NULL}));
#undef LAG
#undef PART
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
  free(src);
}
END_TEST

typedef struct keys_s {
  char chk[16][64];
  int n;
} keys_t;

static int count_chk(void *opaque, const char *key, uint64_t size) {
  keys_t *k = opaque;
  const char *p = strstr(key, "/chk-");
  size_t len;

  (void)size;
  if (!p)
    return 0;
  len = strcspn(p + 1, "/");
  for (int i = 0; i < k->n; i++)
    if (!strncmp(k->chk[i], p + 1, len) && !k->chk[i][len])
      return 0;
  if (k->n < 16 && len < 64)
    snprintf(k->chk[k->n++], 64, "%.*s", (int)len, p + 1);
  return 0;
}

START_TEST(s3_checkpoints_complete_and_old_ones_retire) {
  ksnap_fake_event_t *ev;
  ksnap_fake_tasks_t *ft;
  ksnap_storage_t *st;
  ksnap_error_t error;
  keys_t keys;
  env_t e;
  coord_t *c;
  int n;

  env_init(&e, ENV_S3);
  c = coord_start(e.conf);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 5, WAIT_MS));
  ck_assert_int_eq(coord_join(c, NULL), KSNAP_ERR_OK);
  n = ksnap_fake_tasks_events(ft, &ev);
  for (int i = 0; i < n; i++)
    ck_assert(ev[i].type != KSNAP_CONTROL_COMPLETE || ev[i].meta_existed);
  free(ev);
  ksnap_fake_tasks_stop(ft);
  /* num-retained=2: older checkpoints were deleted (one more may be
   * in flight when the coordinator stopped) */
  ck_assert_int_eq(ksnap__coord_storage_open(e.conf, &st, &error), 0);
  memset(&keys, 0, sizeof(keys));
  ck_assert_int_eq(ksnap_storage_list(st, e.job, count_chk, &keys, &error),
                   0);
  ck_assert_msg(keys.n >= 2 && keys.n <= 3, "%d checkpoints kept", keys.n);
  ksnap_storage_destroy(st);
  env_cleanup(&e);
}
END_TEST

START_TEST(coordinator_cli_exits_1_when_the_job_fails) {
  ksnap_fake_tasks_t *ft;
  env_t e;
  char args[800], *out = NULL, *err = NULL;

  env_init(&e, ENV_STRICT);
  ft = ksnap_fake_tasks_start(e.conf, "map", 2);
  ksnap_fake_tasks_decline(ft, 1);
  snprintf(args, sizeof(args), "coordinator %s", e.props);
  ck_assert_int_eq(ksnap_test_cli(OPS, args, &out, &err), 1);
  ck_assert_msg(strstr(err, "failed") && strstr(err, "fake decline"), "%s",
                err);
  free(out);
  free(err);
  ksnap_fake_tasks_stop(ft);
  env_cleanup(&e);
}
END_TEST

START_TEST(cli_help_and_usage) {
  static const char *const cmds[] = {"coordinator", "checkpoint", "savepoint",
                                     "checkpoints"};
  char args[100], *out = NULL, *err = NULL;

  for (size_t i = 0; i < 4; i++) {
    snprintf(args, sizeof(args), "%s --help", cmds[i]);
    ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "Usage: ksnap "));
    free(out);
    free(err);
    ck_assert_int_eq(ksnap_test_cli("", cmds[i], &out, &err), 2);
    free(out);
    free(err);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("coordinator");
  TCase *tc = tcase_create("driver");

  ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  ksnap_log_set_level(KSNAP_LOG_NOTICE);
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, cli_help_and_usage);
  tcase_add_test(tc, five_checkpoints_complete_metadata_first);
  tcase_add_test(tc, decline_aborts_and_later_checkpoints_complete);
  tcase_add_test(tc, silent_task_triggers_restore_next_generation);
  tcase_add_test(tc, second_coordinator_fences_the_first_and_continues_ids);
  tcase_add_test(tc,
                 restart_continues_and_refuses_a_corrupt_or_partial_checkpoint);
  tcase_add_test(tc, rest_cli_list_and_savepoint_stop);
  tcase_add_test(tc, rest_source_lag_of_the_latest_checkpoint);
  tcase_add_test(tc, s3_checkpoints_complete_and_old_ones_retire);
  tcase_add_test(tc, coordinator_cli_exits_1_when_the_job_fails);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
