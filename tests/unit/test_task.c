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
  tcase_add_test(tc, test_tasks_errors);
  tcase_add_test(tc, test_tasks_all_and_some);
  tcase_add_test(tc, test_unknown_operator);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
