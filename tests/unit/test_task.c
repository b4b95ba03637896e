/*
 * Task runtime pieces that need no server: the exchange partition rule
 * of emit (the reading task owns the key's key group) and the worker's
 * task list (`ksnap worker --tasks`) errors. Clients are created but
 * never connect (bootstrap 127.0.0.1:1).
 */
#include <stdio.h>
#include <string.h>

#include "ksnap/conf.h"
#include "ksnap/operator.h"
#include "ksnap/state.h"
#include "pipeops.h"
#include "task/task_int.h"
#include "testutil.h"
#include "task/worker.h"

START_TEST(test_partition_owner) {
  /* every (partitions, readers) pair: the reader of the partition owns
   * the key group, and every partition of a reader is used */
  for (int32_t p = 1; p <= 5; p++)
    for (int32_t n = p; n <= 12; n++) {
      int used[12] = {0};
      for (int k = 0; k < 2000; k++) {
        char key[16];
        int len = snprintf(key, sizeof(key), "k%d", k);
        int32_t part = ksnap__exchange_partition(key, (size_t)len, n, p, 128,
                                                 0);
        int kg = ksnap_state_key_group(key, (size_t)len, 128);
        ck_assert_int_ge(part, 0);
        ck_assert_int_lt(part, n);
        ck_assert_int_eq(part % p,
                         ksnap_state_task_of_key_group(128, p, kg));
        used[part] = 1;
      }
      for (int32_t i = 0; i < n; i++)
        ck_assert_msg(used[i], "n=%d p=%d: partition %d unused", n, p, i);
    }
}
END_TEST

/* Two exchange inputs of one stage (a join), of different partition
 * counts: a key's record from either reaches the same reading task, the
 * one owning the key's key group, so both share the key's state. */
START_TEST(test_two_inputs_copartitioned) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_job_t *job = NULL;
  const ksnap_job_stage_t *j;
  const ksnap_job_topic_t *in[2];

  ck_assert_int_eq(ksnap_conf_load_string(conf, "job.properties",
      "job.name=cj\n"
      "stage.a.operator=x\nstage.a.parallelism=2\nstage.a.input=source:e\n"
      "stage.a.partitions=4\n"
      "stage.b.operator=x\nstage.b.input=source:r\nstage.b.partitions=7\n"
      "stage.j.operator=x\nstage.j.parallelism=3\n"
      "stage.j.input=stage:a,stage:b\nstage.j.output=sink:out\n",
      NULL, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, NULL, NULL), KSNAP_ERR_OK);
  j = ksnap_job_stage_find(job, "j");
  in[0] = ksnap_job_stage_input(j, 0);
  in[1] = ksnap_job_stage_input(j, 1);
  ck_assert_int_eq(ksnap_job_topic_partitions(in[0]), 4);
  ck_assert_int_eq(ksnap_job_topic_partitions(in[1]), 7);
  for (int k = 0; k < 3000; k++) {
    char key[16];
    int len = snprintf(key, sizeof(key), "c%d", k), task[2];
    int kg = ksnap_state_key_group(key, (size_t)len, 128);
    for (int i = 0; i < 2; i++)
      task[i] = ksnap_job_partition_task(
          ksnap__exchange_partition(
              key, (size_t)len, ksnap_job_topic_partitions(in[i]),
              ksnap_job_topic_reader_parallelism(in[i]), 128, k),
          ksnap_job_stage_parallelism(j));
    ck_assert_int_eq(task[0], task[1]);
    ck_assert_int_eq(task[0], ksnap_state_task_of_key_group(128, 3, kg));
  }
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(test_partition_no_key) {
  for (int64_t seq = 0; seq < 10; seq++)
    ck_assert_int_eq(ksnap__exchange_partition(NULL, 0, 4, 2, 128, seq),
                     seq % 4);
}
END_TEST

static ksnap_conf_t *conf_new(void) {
  const char *kv[][2] = {
      {"job.name", "unitjob"},
      {"kafka.bootstrap.servers", "127.0.0.1:1"},
      {"state.checkpoints.dir", "file:///tmp/ksnap-unit-task"},
      {"stage.a.operator", "t_split"},
      {"stage.a.parallelism", "2"},
      {"stage.a.input", "source:in"},
      {"stage.b.operator", "t_count"},
      {"stage.b.parallelism", "1"},
      {"stage.b.input", "stage:a"},
      {"stage.b.output", "sink:out"},
  };
  ksnap_conf_t *conf = ksnap_conf_new();
  char errstr[256];

  for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
    ck_assert_msg(!ksnap_conf_set(conf, kv[i][0], kv[i][1], errstr,
                                  sizeof(errstr)), "%s", errstr);
  ck_assert_int_eq(ksnap_conf_finalize(conf, NULL, NULL), KSNAP_ERR_OK);
  return conf;
}

static void expect_tasks_error(const char *tasks, const char *msg) {
  ksnap_conf_t *conf = conf_new();
  ksnap_worker_t *w = NULL;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_worker_new(conf, NULL, tasks, &w, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_ptr_null(w);
  ck_assert_str_eq(error.msg, msg);
  ksnap_conf_destroy(conf);
}

START_TEST(test_tasks_errors) {
  expect_tasks_error("a", "task \"a\": expected STAGE:INDEX");
  expect_tasks_error("zz:0", "task \"zz:0\": no such stage or bad index");
  expect_tasks_error("a:x", "task \"a:x\": no such stage or bad index");
  expect_tasks_error("a:2", "task a:2: the stage has 2 tasks");
}
END_TEST

START_TEST(test_tasks_all_and_some) {
  ksnap_conf_t *conf = conf_new();
  ksnap_worker_t *w;
  ksnap_error_t error;

  ck_assert_msg(!ksnap_worker_new(conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_int_eq(ksnap_worker_task_cnt(w), 3);
  ck_assert_str_eq(ksnap_task_id(ksnap_worker_task(w, 2)), "b[0]");
  ksnap_worker_destroy(w);
  ck_assert_msg(!ksnap_worker_new(conf, NULL, "a:1,b:0", &w, &error), "%s",
                error.msg);
  ck_assert_int_eq(ksnap_worker_task_cnt(w), 2);
  ck_assert_str_eq(ksnap_task_id(ksnap_worker_task(w, 0)), "a[1]");
  ksnap_worker_destroy(w);
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(test_unknown_operator) {
  ksnap_conf_t *conf = conf_new();
  ksnap_worker_t *w;
  ksnap_error_t error;
  char errstr[256];

  ck_assert(!ksnap_conf_set(conf, "stage.b.operator", "nosuch", errstr,
                            sizeof(errstr)));
  ck_assert_int_eq(ksnap_worker_new(conf, NULL, NULL, &w, &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(strstr(error.msg, "stage.b.operator: "), "%s", error.msg);
  ksnap_conf_destroy(conf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("task");
  TCase *tc = tcase_create("task");

  tcase_set_timeout(tc, 30); /* the 80,000 keys of partition_owner */
  pt_register_operators();
  tcase_add_test(tc, test_partition_owner);
  tcase_add_test(tc, test_partition_no_key);
  tcase_add_test(tc, test_two_inputs_copartitioned);
  tcase_add_test(tc, test_tasks_errors);
  tcase_add_test(tc, test_tasks_all_and_some);
  tcase_add_test(tc, test_unknown_operator);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
