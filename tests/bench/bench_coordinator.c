/*
 * Coordinator round trip on the real broker: the coordinator
 * (ksnap_coord_run, in-process) and fake tasks (tests/common/faketask.h)
 * that ACK at once, checkpoints to a local directory. Reports, per
 * checkpoint, the time from the tasks reading TRIGGER(N) to their reading
 * COMPLETE(N): ack consumption, `_metadata` write on the storage thread,
 * the COMPLETE transaction's commit and its propagation to a consumer.
 *
 *   source tests/.run/env && build/tests/bench_coordinator [CHECKPOINTS]
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/coord_driver.h"
#include "faketask.h"
#include "ksnap/log.h"
#include "testnames.h"
#include "testutil.h"
#include "base/util.h"

static volatile sig_atomic_t stop;
static ksnap_conf_t *conf;

static void *coord_main(void *arg) {
  ksnap_error_t error;

  (void)arg;
  if (ksnap_coord_run(conf, &stop, &error))
    fprintf(stderr, "coordinator: %s\n", error.msg);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int want = 50;

/* A Check test (the fake tasks assert with Check), run without fork. */
START_TEST(round_trip) {
  const char *bootstrap = getenv("KSNAP_TEST_BOOTSTRAP");
  int n, k = 0;
  char *job = ksnap_test_unique_name("bench-coord");
  char *dir = ksnap_test_tmpdir("bench-coord");
  char text[2048];
  ksnap_fake_tasks_t *ft;
  ksnap_fake_event_t *ev;
  int64_t *lat, t0;
  pthread_t thread;

  ksnap_log_set_level(KSNAP_LOG_WARNING);
  snprintf(text, sizeof(text),
           "job.name=%s\nkafka.bootstrap.servers=%s\n"
           "state.checkpoints.dir=%s\n"
           "execution.checkpointing.interval=20ms\n"
           "heartbeat.interval=100ms\nheartbeat.timeout=10s\n"
           "stage.map.operator=identity\nstage.map.parallelism=4\n"
           "stage.map.input=source:in\nstage.map.output=sink:out\n",
           job, bootstrap, dir);
  conf = ksnap_conf_new();
  ck_assert_int_eq(ksnap_conf_load_string(conf, "bench", text, NULL, NULL),
                   0);
  ck_assert_int_eq(ksnap_conf_finalize(conf, NULL, NULL), 0);
  pthread_create(&thread, NULL, coord_main, NULL);
  ft = ksnap_fake_tasks_start(conf, "map", 4);
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, 1, 60000));
  t0 = ksnap__now_us();
  ck_assert(ksnap_fake_tasks_wait(ft, KSNAP_CONTROL_COMPLETE, 0, want + 1,
                                  600000));
  t0 = ksnap__now_us() - t0;
  stop = 1;
  pthread_join(thread, NULL);
  n = ksnap_fake_tasks_events(ft, &ev);
  lat = calloc((size_t)n + 1, sizeof(*lat));
  for (int i = 0; i < n; i++) {
    if (ev[i].type != KSNAP_CONTROL_COMPLETE)
      continue;
    for (int j = i - 1; j >= 0; j--)
      if (ev[j].type == KSNAP_CONTROL_TRIGGER &&
          ev[j].checkpoint_id == ev[i].checkpoint_id) {
        lat[k++] = ev[i].seen_us - ev[j].seen_us;
        break;
      }
  }
  qsort(lat, (size_t)k, sizeof(*lat), cmp);
  printf("coordinator round trip, 4 fake tasks, %d checkpoints: "
         "TRIGGER read -> COMPLETE read p50 %.1f ms, p90 %.1f ms, "
         "max %.1f ms; %.1f checkpoints/s at interval 20 ms\n",
         k, lat[k / 2] / 1000.0, lat[k * 9 / 10] / 1000.0,
         lat[k - 1] / 1000.0, want / (t0 / 1e6));
  free(lat);
  free(ev);
  ksnap_fake_tasks_stop(ft);
  ksnap_conf_destroy(conf);
  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
}
END_TEST

int main(int argc, char **argv) {
  Suite *s = suite_create("bench_coordinator");
  TCase *tc = tcase_create("bench");
  SRunner *sr;
  int failed;

  if (!getenv("KSNAP_TEST_BOOTSTRAP")) {
    fprintf(stderr, "KSNAP_TEST_BOOTSTRAP is not set (tests/.run/env)\n");
    return KSNAP_TEST_SKIP;
  }
  if (argc > 1)
    want = atoi(argv[1]);
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, round_trip);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
