/* Checkpoint statistics of a savepoint whose task waited without memory
 * at the alignment buffer limit (coordinator/src/stats/coord_stats.h,
 * KSNAP_STATS_REREAD): aligned, not counted as unaligned, the bytes it
 * dropped and read again in the JSON, the table, the detail and
 * /metrics. */
#include <string.h>

#include "stats/coord_stats.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define T0 INT64_C(1764409207123)

static const char *const tasks[] = {"split[0]", "count[0]"};
static ksnap_coord_stats_t *st;
static ksnap_buf_t buf;

static void setup(void) {
  static const ksnap_timings_t t = {80, 20000, 4200, 9000, 0};
  /* the ACK of a task that waited: bytes_buffered = what it dropped */
  static const ksnap_timings_t tw = {80, 20000, 4200, 9000, 3 << 20};
  static const ksnap_record_errors_t e = {0, 0};
  static const ksnap_align_stats_t waited = {KSNAP_STATS_REREAD, 700};

  st = ksnap_coord_stats_new(10);
  ck_assert_ptr_nonnull(st);
  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 1, T0, true, tasks, 2), 0);
  ck_assert_int_eq(
      ksnap_coord_stats_acked(st, 1, "split[0]", T0 + 40, &t, 1000, &e), 0);
  ck_assert_int_eq(
      ksnap_coord_stats_acked(st, 1, "count[0]", T0 + 60, &tw, 5000, &e), 0);
  ck_assert_int_eq(ksnap_coord_stats_aligned(st, 1, "count[0]", &waited), 0);
  ck_assert_int_eq(ksnap_coord_stats_completed(st, 1, T0 + 75), 0);
}

static void teardown(void) {
  ksnap_buf_cleanup(&buf);
  ksnap_coord_stats_destroy(st);
}

START_TEST(a_wait_is_aligned_and_counts_its_reread_bytes) {
  const ksnap_ckpt_stats_t *ent = ksnap_coord_stats_get(st, 1);

  ck_assert_ptr_nonnull(ent);
  ck_assert_uint_eq(ent->unaligned_cnt, 0);
  ck_assert_int_eq(ent->unaligned_reason, 0);
  ck_assert_uint_eq(ent->reread_cnt, 1);
  ck_assert_int_eq(ent->bytes_reread, 3 << 20);
  ck_assert_int_eq(ent->bytes_buffered, 0);
  ck_assert_int_eq(ent->paused_us, 700);
}
END_TEST

START_TEST(json_names_the_wait_and_its_reason) {
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), 0);
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "\"num_unaligned_tasks\": 0, "
                               "\"num_reread_tasks\": 1, "
                               "\"bytes_reread\": 3145728, "
                               "\"unaligned_reason\": null"));
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "\"paused_us\": 700, \"unaligned_reason\": "
                               "null, \"reread\": {\"reason\": \"alignment "
                               "buffer limit\", \"bytes\": 3145728}}"));
}
END_TEST

START_TEST(table_and_detail_show_the_wait) {
  ck_assert_int_eq(ksnap_coord_stats_table(st, &buf), 0);
  ck_assert_ptr_nonnull(strstr((char *)buf.data, "1 reread 3.0 MiB"));
  ksnap_buf_reset(&buf);
  ck_assert_int_eq(ksnap_coord_stats_detail(st, 1, &buf), 0);
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "- (waited: reread 3.0 MiB, buffer limit)"));
}
END_TEST

START_TEST(metrics_carry_the_reason_and_the_bytes) {
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf), 0);
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "ksnap_task_checkpoint_reread_bytes{job=\"wc\","
                               "task=\"count[0]\",stage=\"count\",subtask="
                               "\"0\"} 3145728\n"));
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "ksnap_task_checkpoint_unaligned_reason{job="
                               "\"wc\",task=\"count[0]\",stage=\"count\","
                               "subtask=\"0\"} 5\n"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_stats_reread");
  TCase *tc = tcase_create("reread");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, a_wait_is_aligned_and_counts_its_reread_bytes);
  tcase_add_test(tc, json_names_the_wait_and_its_reason);
  tcase_add_test(tc, table_and_detail_show_the_wait);
  tcase_add_test(tc, metrics_carry_the_reason_and_the_bytes);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
