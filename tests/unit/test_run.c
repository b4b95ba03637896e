/*
 * The embedding API (ksnap/run.h) on the embedded mock cluster, so with
 * no server: argument errors; the preflight's first problem in the
 * error; a job whose operator is registered by function pointer runs
 * whole in this process, is stopped from a signal handler and reports
 * its statistics; the coordinator and the tasks run as two runs of one
 * process. (ksnap run, worker and coordinator use the same API against
 * the real broker in the integration and crash suites.)
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/devio.h"
#include "kafka/embedded.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define NLINES 200

/* upper: each record's value upper-cased, keyed by the original value. */
static ksnap_err_t upper_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  char buf[256];
  size_t n = rec->value_len < sizeof(buf) ? rec->value_len : sizeof(buf);

  (void)inst;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)toupper(((const unsigned char *)rec->value)[i]);
  return ksnap_ctx_emit(ctx, rec->value, rec->value_len, buf, n, NULL, 0,
                        error);
}

static const ksnap_operator_t upper_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "upper",
    .process = upper_process,
};

typedef struct fixture_s {
  ksnap_embedded_t *emb;
  ksnap_conf_t *conf;
  char *dir;
} fixture_t;

static fixture_t fx;

/* A job "run-test" reading "in" (2 partitions) into "out" through the
 * registered operator, on a fresh embedded cluster, with @p extra. */
static void setup_job(const char *extra) {
  ksnap_error_t error;
  char text[2048];

  ck_assert_int_eq(ksnap_operator_register("upper", &upper_op, &error),
                   KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(fx.emb = ksnap_embedded_start(&error));
  ck_assert_int_eq(ksnap_embedded_create_topic(fx.emb, "in", 2, 1, &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_embedded_create_topic(fx.emb, "out", 2, 1, &error),
                   KSNAP_ERR_OK);
  fx.dir = ksnap_test_tmpdir("run");
  snprintf(text, sizeof(text),
           "job.name=run-test\n"
           "kafka.bootstrap.servers=%s\n"
           "state.checkpoints.dir=file://%s\n"
           "execution.checkpointing.interval=200ms\n"
           "execution.checkpointing.timeout=5s\n"
           "kafka.transaction.timeout.ms=60000\n"
           "stage.up.parallelism=2\n"
           "stage.up.input=source:in\n"
           "stage.up.output=sink:out\n"
           "%s",
           ksnap_embedded_bootstraps(fx.emb), fx.dir, extra);
  ck_assert_ptr_nonnull(fx.conf = ksnap_conf_new());
  ck_assert_int_eq(ksnap_conf_load_string(fx.conf, "job", text, NULL, NULL),
                   KSNAP_ERR_OK);
}

static void teardown_job(void) {
  ksnap_conf_destroy(fx.conf);
  ksnap_embedded_stop(fx.emb);
  if (fx.dir)
    ksnap_test_rmtree(fx.dir);
  free(fx.dir);
  memset(&fx, 0, sizeof(fx));
}

static void produce_lines(void) {
  char path[600];
  ksnap_error_t error;
  int64_t n = 0;
  FILE *f;

  snprintf(path, sizeof(path), "%s/input.txt", fx.dir);
  ck_assert_ptr_nonnull(f = fopen(path, "w"));
  for (int i = 0; i < NLINES; i++)
    fprintf(f, "line %d\n", i);
  fclose(f);
  ck_assert_int_eq(ksnap_devio_produce_file(fx.conf, "in", path, 30000, NULL,
                                            NULL, &n, &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(n, NLINES);
}

/* Waits (60 s at most) until @p run read every line and @p ckpts shows
 * two checkpoints completed after that. */
static void wait_processed(ksnap_run_t *tasks, ksnap_run_t *ckpts) {
  ksnap_run_stats_t st, cs;
  int64_t seen = -1;

  for (int i = 0; i < 600; i++) {
    ck_assert_int_eq(ksnap_run_wait(tasks, 100), 0);
    ksnap_run_stats(tasks, &st, sizeof(st));
    ksnap_run_stats(ckpts, &cs, sizeof(cs));
    if (st.records_in == NLINES && seen < 0)
      seen = cs.last_completed_id;
    if (seen >= 0 && cs.last_completed_id >= seen + 2)
      return;
  }
  ck_abort_msg("%lld of %d lines read, checkpoint %lld", (long long)st.records_in,
               NLINES, (long long)cs.last_completed_id);
}

START_TEST(refuses_bad_arguments) {
  ksnap_run_t *run = (ksnap_run_t *)1;
  ksnap_error_t error;

  setup_job("stage.up.operator=upper\n");
  ck_assert_int_eq(ksnap_run_start(fx.conf, 0, NULL, &run, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_ptr_null(run);
  ck_assert_str_eq(error.msg, "parts 0x0: expected KSNAP_RUN_COORDINATOR, "
                              "KSNAP_RUN_TASKS or both");
  ck_assert_int_eq(ksnap_run_start(fx.conf, 0x8, NULL, &run, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_RESUME_FAILED, NULL,
                                   &run, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg, "parts 0x4: expected KSNAP_RUN_COORDINATOR, "
                              "KSNAP_RUN_TASKS or both");
  ck_assert_int_eq(ksnap_run_start(fx.conf,
                                   KSNAP_RUN_TASKS | KSNAP_RUN_RESUME_FAILED,
                                   NULL, &run, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg,
                   "KSNAP_RUN_RESUME_FAILED needs KSNAP_RUN_COORDINATOR");
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_COORDINATOR, "up:0",
                                   &run, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg, "a task list (\"up:0\") needs KSNAP_RUN_TASKS");
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_TASKS, "up:7", &run,
                                   &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg, "task up:7: the stage has 2 tasks");
  teardown_job();
}
END_TEST

START_TEST(reports_the_first_preflight_problem) {
  ksnap_run_t *run;
  ksnap_error_t error;

  setup_job("stage.up.operator=nope\n"
            "stage.more.operator=nope2\n"
            "stage.more.input=stage:up\n"
            "stage.more.output=sink:out2\n");
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_ALL, NULL, &run,
                                   &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_ptr_null(run);
  ck_assert_str_eq(error.msg, "job:10: stage.up.operator: no built-in "
                              "operator \"nope\" is registered (and 1 more "
                              "problems, logged)");
  teardown_job();
}
END_TEST

static ksnap_run_t *volatile signal_run;

static void on_usr1(int sig) {
  (void)sig;
  ksnap_run_stop(signal_run);
}

START_TEST(runs_whole_and_stops_on_a_signal) {
  ksnap_run_t *run;
  ksnap_run_stats_t st;
  ksnap_error_t error;

  setup_job("stage.up.operator=upper\n");
  produce_lines();
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_ALL, NULL, &run,
                                   &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_run_result(run, &error), KSNAP_ERR_STATE);
  ck_assert_str_eq(error.msg, "the run has not ended");
  ck_assert_int_eq(ksnap_job_stage_cnt(ksnap_run_job(run)), 1);
  wait_processed(run, run);
  signal_run = run;
  signal(SIGUSR1, on_usr1);
  raise(SIGUSR1);
  ck_assert_int_eq(ksnap_run_wait(run, 30000), 1);
  ck_assert_int_eq(ksnap_run_result(run, &error), KSNAP_ERR_OK);
  ksnap_run_stats(run, &st, sizeof(st));
  ck_assert_int_eq(st.tasks, 2);
  ck_assert_int_eq(st.tasks_failed, 0);
  ck_assert_int_eq(st.records_in, NLINES);
  ck_assert_int_ge(st.records_out, NLINES);
  ck_assert_int_ge(st.checkpoints_completed, 2);
  ck_assert_int_eq(st.checkpoints_failed, 0);
  ck_assert_int_ge(st.last_completed_id, 2);
  ck_assert_int_eq(st.last_failed_id, -1);
  ck_assert_int_gt(st.last_completed_ms, 0);
  ksnap_run_destroy(run);
  teardown_job();
}
END_TEST

START_TEST(runs_coordinator_and_tasks_apart) {
  ksnap_run_t *coord, *tasks;
  ksnap_run_stats_t cs, ts;
  ksnap_error_t error;

  setup_job("stage.up.operator=upper\n");
  produce_lines();
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_COORDINATOR, NULL,
                                   &coord, &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_run_start(fx.conf, KSNAP_RUN_TASKS, "up:0,up:1",
                                   &tasks, &error),
                   KSNAP_ERR_OK);
  wait_processed(tasks, coord);
  ksnap_run_stats(coord, &cs, sizeof(cs));
  ksnap_run_stats(tasks, &ts, sizeof(ts));
  ck_assert_int_eq(cs.tasks, 0);
  ck_assert_int_eq(ts.tasks, 2);
  ck_assert_int_eq(ts.tasks_running, 2);
  ck_assert_int_eq(ts.checkpoints_completed, 0); /* no coordinator there */
  ck_assert_int_eq(ts.last_completed_id, -1);
  ksnap_run_stop(tasks);
  ksnap_run_stop(coord);
  ck_assert_int_eq(ksnap_run_wait(tasks, 30000), 1);
  ck_assert_int_eq(ksnap_run_wait(coord, 30000), 1);
  ck_assert_int_eq(ksnap_run_result(tasks, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_run_result(coord, &error), KSNAP_ERR_OK);
  ksnap_run_destroy(tasks);
  ksnap_run_destroy(coord);
  teardown_job();
}
END_TEST

int main(void) {
  Suite *s = suite_create("run");
  TCase *tc = tcase_create("run");

  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, refuses_bad_arguments);
  tcase_add_test(tc, reports_the_first_preflight_problem);
  tcase_add_test(tc, runs_whole_and_stops_on_a_signal);
  tcase_add_test(tc, runs_coordinator_and_tasks_apart);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
