/*
 * The coordinator's dashboard page (GET / on the REST port) in a real
 * headless browser: Debian's chromium, which runs the page's script,
 * polls /checkpoints and builds the DOM that --dump-dom prints.
 *
 *  - escapes_what_it_shows: the REST server alone (no broker), serving
 *    statistics whose failure message and task name are markup: the page
 *    shows them as text, and none of it becomes an element; its members
 *    table (a member whose id is markup, a slot missing) too.
 *  - shows_a_running_jobs_checkpoints: the word count runs with `ksnap
 *    run` (coordinator and tasks in one process) on the test broker with
 *    rest.port set; once several checkpoints completed, the page's chart
 *    and history table name the same completed checkpoints, the newest
 *    one /checkpoints reported among them, and its per-task table lists
 *    the job's four tasks. A screenshot and the DOM are kept as the
 *    test's artifacts: <build>/artifacts/dashboard.png and
 *    dashboard-dom.html.
 *
 * Without chromium (the chromium package; KSNAP_TEST_CHROMIUM names
 * another binary) the suite reports skipped (77).
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clitest.h"
#include "driver/coord_rest.h"
#include "kafka_testutil.h"
#include "ksnap/buf.h"
#include "testutil.h"

#define WAIT_S 90
#define MIN_COMPLETED 3
#define ARTIFACT_DIR KSNAP_BINARY_DIR "/artifacts"
#define SCREENSHOT ARTIFACT_DIR "/dashboard.png"
#define DOM_DUMP ARTIFACT_DIR "/dashboard-dom.html"

static char chromium[512];

/* Check's messages are short: a failed check about a page or a document
 * prints the document to stderr, and says so. */
#define DOC_ASSERT(cond, doc, ...)                                          \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "--- the document checked:\n%s\n---\n", (doc));       \
      ck_abort_msg(__VA_ARGS__);                                            \
    }                                                                       \
  } while (0)

/* chromium's path: $KSNAP_TEST_CHROMIUM, or chromium / chromium-browser
 * on $PATH. @returns 0 if there is none. */
static int find_chromium(void) {
  static const char *const names[] = {"chromium", "chromium-browser"};
  const char *env = getenv("KSNAP_TEST_CHROMIUM"), *path = getenv("PATH");

  if (env && *env) {
    snprintf(chromium, sizeof(chromium), "%s", env);
    return access(chromium, X_OK) == 0;
  }
  for (size_t n = 0; n < 2; n++) {
    for (const char *p = path ? path : "/usr/bin"; *p;) {
      const char *end = strchr(p, ':');
      int len = end ? (int)(end - p) : (int)strlen(p);
      snprintf(chromium, sizeof(chromium), "%.*s/%s", len, p, names[n]);
      if (len && access(chromium, X_OK) == 0)
        return 1;
      p += len + (end ? 1 : 0);
    }
  }
  return 0;
}

/* Runs headless chromium with @p what ("--dump-dom" or
 * "--screenshot=FILE") on @p url, after 5 s of the page's (virtual) time
 * so that its fetches and timers ran. @returns its stdout (malloc'd). Its
 * stderr (a harmless dbus complaint among others) goes to @p log. */
static char *run_chromium(const char *what, const char *url,
                          const char *profile, const char *log) {
  char cmd[2048], chunk[4096];
  ksnap_buf_t out;
  size_t n;
  FILE *p;
  int status;

  snprintf(cmd, sizeof(cmd),
           "timeout 120 '%s' --headless --no-sandbox --disable-gpu "
           "--no-first-run --user-data-dir='%s' --window-size=1000,800 "
           "--virtual-time-budget=5000 %s '%s' 2>>'%s'",
           chromium, profile, what, url, log);
  ck_assert_ptr_nonnull(p = popen(cmd, "r"));
  ksnap_buf_init(&out);
  while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
    ksnap_buf_append(&out, chunk, n);
  status = pclose(p);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "chromium failed (status %d, stderr in %s): %s", status, log,
                cmd);
  ksnap_buf_append(&out, "", 1);
  return (char *)out.data; /* the buffer's own allocation */
}

static size_t collect(char *ptr, size_t size, size_t n, void *opaque) {
  ksnap_buf_append(opaque, ptr, size * n);
  return size * n;
}

/* GET http://127.0.0.1:PORT/PATH into @p body: @returns the status (0
 * when nothing answered). */
static long http_get(int port, const char *path, ksnap_buf_t *body) {
  CURL *h = curl_easy_init();
  char url[256];
  long status = 0;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  ksnap_buf_reset(body);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  if (curl_easy_perform(h) == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(h);
  ksnap_buf_append(body, "", 1);
  return status;
}

/* The ids N of every "<prefix>N\"" in @p doc, in order: @returns how many
 * (at most @p max). */
static int ids_after(const char *doc, const char *prefix, long *ids,
                     int max) {
  int n = 0;

  for (const char *p = doc; n < max && (p = strstr(p, prefix));) {
    p += strlen(prefix);
    ids[n++] = strtol(p, NULL, 10);
  }
  return n;
}

static int has_id(const long *ids, int n, long id) {
  for (int i = 0; i < n; i++)
    if (ids[i] == id)
      return 1;
  return 0;
}

/* --------------------------------------------------------- escaping */

/* Statistics as the coordinator renders them, with markup where a task
 * name and a failure message go. */
static const char *const hostile_json =
    "{\"counts\": {\"triggered\": 2, \"in_progress\": 0, \"completed\": 1, "
    "\"failed\": 1, \"restored\": 0}, \"summary\": {}, \"latest\": "
    "{\"completed\": 8, \"failed\": 7, \"restored\": null, "
    "\"records_failed\": 0, \"records_dead_lettered\": 0}, \"tasks\": "
    "[{\"task\": \"<b>bold</b>[0]\", \"generation\": 1, "
    "\"heartbeat_timestamp_ms\": 1764409207123, \"records_in\": 42, "
    "\"records_out\": 41}], \"members\": {\"count\": 1, \"slots\": 2, "
    "\"tasks_vacant\": 1, \"slots_missing\": 1, \"removed\": 0, "
    "\"list\": [{\"id\": \"<i>m1</i>\", \"host\": \"h1\", \"slots\": 2, "
    "\"tasks\": 2}]}, \"history\": [{\"id\": 8, \"status\": "
    "\"COMPLETED\", \"is_savepoint\": false, \"trigger_timestamp_ms\": "
    "1764409207123, \"end_timestamp_ms\": 1764409207198, "
    "\"end_to_end_duration_ms\": 75, \"state_size\": 5001000, "
    "\"bytes_buffered\": 2048, \"records_failed\": 0, "
    "\"records_dead_lettered\": 0, \"num_acknowledged_tasks\": 1, "
    "\"num_tasks\": 1, \"failure_message\": null, \"tasks\": [{\"task\": "
    "\"<b>bold</b>[0]\", \"acknowledged\": true, \"ack_timestamp_ms\": "
    "1764409207163, \"end_to_end_duration_ms\": 40, \"sync_duration_us\": "
    "120, \"async_duration_us\": 35000, \"alignment_duration_us\": 0, "
    "\"start_delay_us\": 1500, \"state_size\": 5001000, "
    "\"bytes_buffered\": 2048, \"records_failed\": 0, "
    "\"records_dead_lettered\": 0}]}, {\"id\": 7, \"status\": \"FAILED\", "
    "\"is_savepoint\": false, \"trigger_timestamp_ms\": 1764409197123, "
    "\"end_timestamp_ms\": 1764409199123, \"end_to_end_duration_ms\": "
    "2000, \"state_size\": 0, \"bytes_buffered\": 0, \"records_failed\": "
    "0, \"records_dead_lettered\": 0, \"num_acknowledged_tasks\": 0, "
    "\"num_tasks\": 1, \"failure_message\": \"declined: <img src=x "
    "onerror=\\\"document.title='pwned'\\\"><script>document.title="
    "'pwned'</script>\", \"tasks\": [{\"task\": \"<b>bold</b>[0]\", "
    "\"acknowledged\": false}]}]}\n";

START_TEST(escapes_what_it_shows) {
  char *dir = ksnap_test_tmpdir("dashboard-esc");
  char url[128], log[600], profile[600], *dom;
  ksnap_error_t error;
  ksnap__rest_t *rest = ksnap__rest_start("127.0.0.1", 0, &error);

  ck_assert_msg(rest != NULL, "%s", error.msg);
  ksnap__rest_publish(rest, hostile_json, "");
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ksnap__rest_port(rest));
  snprintf(log, sizeof(log), "%s/chromium.log", dir);
  snprintf(profile, sizeof(profile), "%s/profile", dir);
  dom = run_chromium("--dump-dom", url, profile, log);
  /* it rendered: the table rows and the chart's bar */
  DOC_ASSERT(strstr(dom, "<tr class=\"COMPLETED\" data-id=\"8\"") &&
                 strstr(dom, "<tr class=\"FAILED\" data-id=\"7\"") &&
                 strstr(dom, "class=\"bar\" data-id=\"8\"") &&
                 strstr(dom, "data-member=\"&lt;i&gt;m1&lt;/i&gt;\" "
                             "data-tasks=\"2\"") &&
                 strstr(dom, "data-slots-missing=\"1\""),
             dom, "the page did not render the statistics (DOM on stderr)");
  /* the markup is text: serialized escaped, never an element */
  DOC_ASSERT(strstr(dom, "declined: &lt;img src=x onerror=\"document."
                         "title='pwned'\"&gt;&lt;script&gt;") &&
                 strstr(dom, "&lt;b&gt;bold&lt;/b&gt;[0]") &&
                 strstr(dom, "<td class=\"text\">&lt;i&gt;m1&lt;/i&gt;</td>"),
             dom, "the markup is not shown as text (DOM on stderr)");
  DOC_ASSERT(!strstr(dom, "<img") && !strstr(dom, "<b>") &&
                 !strstr(dom, "<i>m1") &&
                 !strstr(dom, "pwned</title>"),
             dom, "markup from the statistics became elements (DOM on "
             "stderr)");
  ck_assert_ptr_nonnull(strstr(dom, "<title>ksnap checkpoints</title>"));
  free(dom);
  ksnap__rest_stop(rest);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------ a real job */

static void produce_lines(const char *bs, const char *topic, int n) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);

  for (int i = 0; i < n; i++) {
    char line[64];
    int len = snprintf(line, sizeof(line), "dash board line %d", i % 7);
    ck_assert(!rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(line, (size_t)len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END));
  }
  ck_assert(!rd_kafka_flush(rk, KSNAP_TEST_KAFKA_TIMEOUT_MS));
  rd_kafka_destroy(rk);
}

/* Waits until /checkpoints reports MIN_COMPLETED completed checkpoints:
 * @returns the newest completed id it reported then (or -1). */
static long wait_completed(int port, pid_t pid, const char *log) {
  time_t deadline = time(NULL) + WAIT_S;
  ksnap_buf_t body;
  static const char counts[] = "\"completed\": ";
  static const char last[] = "\"latest\": {\"completed\": ";
  long latest = -1;
  int status;

  ksnap_buf_init(&body);
  while (time(NULL) < deadline) {
    const char *p;
    ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0,
                  "ksnap run exited early (log %s)", log);
    if (http_get(port, "/checkpoints", &body) == 200 &&
        (p = strstr((char *)body.data, counts)) && /* counts come first */
        atol(p + sizeof(counts) - 1) >= MIN_COMPLETED &&
        (p = strstr((char *)body.data, last)) &&
        strncmp(p + sizeof(last) - 1, "null", 4)) {
      latest = atol(p + sizeof(last) - 1);
      break;
    }
    usleep(500 * 1000);
  }
  ksnap_buf_cleanup(&body);
  return latest;
}

/* /metrics has the per-task series of the word count's four tasks. */
static void check_metrics(int port, const char *job) {
  static const char *const tasks[] = {"split[0]", "split[1]", "count[0]",
                                      "count[1]"};
  ksnap_buf_t body;
  char want[256], counter[256];

  ksnap_buf_init(&body);
  ck_assert_int_eq(http_get(port, "/metrics", &body), 200);
  for (size_t i = 0; i < 4; i++) {
    /* "split[0]": stage "split", subtask "0" */
    snprintf(want, sizeof(want),
             "ksnap_task_checkpoint_duration_ms{job=\"%s\",task=\"%s\","
             "stage=\"%.5s\",subtask=\"%c\"}",
             job, tasks[i], tasks[i], tasks[i][6]);
    DOC_ASSERT(strstr((char *)body.data, want), (char *)body.data,
               "no %s in /metrics (on stderr)", want);
  }
  ck_assert_ptr_nonnull(
      strstr((char *)body.data, "# TYPE ksnap_task_records_in_total counter"));
  /* the source lag of the two source tasks (once the coordinator has read
   * the end offsets: every 2 s), none for the counters */
  snprintf(want, sizeof(want), "ksnap_task_source_lag_records{job=\"%s\","
           "task=\"split[1]\"", job);
  for (int t = 0; t < WAIT_S * 4 && !strstr((char *)body.data, want); t++) {
    usleep(250 * 1000);
    ck_assert_int_eq(http_get(port, "/metrics", &body), 200);
  }
  snprintf(want, sizeof(want), "ksnap_task_source_lag_records{job=\"%s\","
           "task=\"split[0]\"", job);
  snprintf(counter, sizeof(counter), "ksnap_task_source_lag_records{job="
           "\"%s\",task=\"count[", job);
  DOC_ASSERT(strstr((char *)body.data, want) &&
                 !strstr((char *)body.data, counter),
             (char *)body.data, "no source lag of each split task, or one of "
             "a count task, in /metrics (on stderr)");
  ksnap_buf_cleanup(&body);
}

static int count_of(const char *s, const char *what) {
  int n = 0;

  for (; (s = strstr(s, what)); s += strlen(what))
    n++;
  return n;
}

/* The page's DOM: chart bars and COMPLETED rows name the same ids, at
 * least MIN_COMPLETED, @p latest among them; the per-task table lists
 * the four tasks. */
static void check_dom(const char *dom, long latest) {
  long bars[64], rows[64];
  int nbars = ids_after(dom, "class=\"bar\" data-id=\"", bars, 64);
  int nrows = ids_after(dom, "<tr class=\"COMPLETED\" data-id=\"", rows, 64);

  DOC_ASSERT(nbars >= MIN_COMPLETED && nrows >= MIN_COMPLETED, dom,
             "%d chart bars, %d completed rows (DOM on stderr)", nbars,
             nrows);
  DOC_ASSERT(has_id(bars, nbars, latest) && has_id(rows, nrows, latest), dom,
             "checkpoint %ld (completed before the page loaded) is not in "
             "its chart and table (DOM on stderr)", latest);
  ck_assert_int_eq(nbars, nrows);
  for (int i = 0; i < nbars; i++)
    ck_assert_msg(has_id(rows, nrows, bars[i]),
                  "chart bar %ld has no table row", bars[i]);
  DOC_ASSERT(strstr(dom, "data-task=\"split[0]\"") &&
                 strstr(dom, "data-task=\"split[1]\"") &&
                 strstr(dom, "data-task=\"count[0]\"") &&
                 strstr(dom, "data-task=\"count[1]\"") &&
                 strstr(dom, "Updated "),
             dom, "the per-task table lacks a task (DOM on stderr)");
  /* the source lag: a column, a figure on the two source tasks' rows */
  DOC_ASSERT(strstr(dom, "<th>Source lag</th>") &&
                 count_of(dom, "data-source-lag=\"") == 2,
             dom, "the per-task table lacks the source tasks' lag (DOM on "
             "stderr)");
}

static void save(const char *path, const char *text) {
  FILE *f = fopen(path, "w");

  ck_assert_msg(f != NULL, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static void check_screenshot(void) {
  unsigned char magic[8] = {0};
  struct stat st;
  FILE *f = fopen(SCREENSHOT, "rb");

  ck_assert_msg(f != NULL, "no screenshot at %s", SCREENSHOT);
  ck_assert_int_eq(fread(magic, 1, 8, f), 8);
  fclose(f);
  ck_assert(!memcmp(magic, "\x89PNG\r\n\x1a\n", 8));
  ck_assert_int_eq(stat(SCREENSHOT, &st), 0);
  ck_assert_int_gt(st.st_size, 10000); /* not a blank page */
}

START_TEST(shows_a_running_jobs_checkpoints) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *dir = ksnap_test_tmpdir("dashboard");
  char *job = ksnap_test_unique_name("dash");
  char *src = ksnap_test_unique_name("dash-lines");
  char *sink = ksnap_test_unique_name("dash-counts");
  char path[512], log[512], clog[600], profile[600], ckpt[600], rest[64],
      props[4096], args[2048], url[128], shot[600], *out, *err, *dom;
  int port = ksnap_test_free_port(), status;
  long latest;
  pid_t pid;

  snprintf(path, sizeof(path), "%s/job.properties", dir);
  snprintf(log, sizeof(log), "%s/run.log", dir);
  snprintf(clog, sizeof(clog), "%s/chromium.log", dir);
  snprintf(profile, sizeof(profile), "%s/profile", dir);
  snprintf(ckpt, sizeof(ckpt), "file://%s/checkpoints", dir);
  snprintf(rest, sizeof(rest), "rest.port=%d\n", port);
  ksnap_test_wordcount_props(props, sizeof(props), src, sink, 0, rest);
  ksnap_test_job_file(path, job, ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2", path, src,
           sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
  produce_lines(bs, src, 200);

  pid = ksnap_test_run_background(path, log, "200s");
  latest = wait_completed(port, pid, log);
  ck_assert_msg(latest >= 0, "no %d completed checkpoints within %d s (log "
                "%s)", MIN_COMPLETED, WAIT_S, log);
  check_metrics(port, job);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
  ck_assert(mkdir(ARTIFACT_DIR, 0755) == 0 || access(ARTIFACT_DIR, W_OK) == 0);
  dom = run_chromium("--dump-dom", url, profile, clog);
  save(DOM_DUMP, dom);
  check_dom(dom, latest);
  free(dom);
  unlink(SCREENSHOT);
  snprintf(shot, sizeof(shot), "--screenshot='%s'", SCREENSHOT);
  free(run_chromium(shot, url, profile, clog));
  check_screenshot();
  printf("dashboard screenshot: %s\n", SCREENSHOT);

  kill(pid, SIGTERM);
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "ksnap run did not stop cleanly (log %s)", log);
  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
  free(src);
  free(sink);
}
END_TEST

int main(void) {
  Suite *s = suite_create("dashboard");
  TCase *tc = tcase_create("dashboard");

  if (!find_chromium()) {
    fprintf(stderr, "test_dashboard: skipped: no chromium (install the "
                    "chromium package, or set KSNAP_TEST_CHROMIUM)\n");
    return KSNAP_TEST_SKIP;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, escapes_what_it_shows);
  tcase_add_test(tc, shows_a_running_jobs_checkpoints);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
