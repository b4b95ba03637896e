/* Watermarks of a task's inputs and the task's own (plugin/src/input/
 * watermark.c): the minimum over the inputs, idle inputs, and a task
 * watermark that never goes back, also after a restore. */
#include <stdlib.h>

#include "input/watermark.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define MIN KSNAP_WATERMARK_MIN

static ksnap_wm_t w;

static void setup3(void) {
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_wm_init(&w, 3, 1000, &err), KSNAP_ERR_OK);
}

static void teardown(void) { ksnap_wm_cleanup(&w); }

START_TEST(task_watermark_is_the_minimum_over_the_inputs) {
  ck_assert(w.task == MIN);
  ksnap_wm_input(&w, 0, 50, 0);
  ksnap_wm_input(&w, 1, 70, 0);
  ck_assert_int_eq(ksnap_wm_advance(&w), 0); /* input 2 holds it back */
  ck_assert(w.task == MIN);
  ksnap_wm_input(&w, 2, 60, 0);
  ck_assert_int_eq(ksnap_wm_advance(&w), 1);
  ck_assert_int_eq(w.task, 50);
  ksnap_wm_input(&w, 0, 90, 0);
  ck_assert_int_eq(ksnap_wm_advance(&w), 1);
  ck_assert_int_eq(w.task, 60);
}
END_TEST

START_TEST(an_input_watermark_never_goes_back) {
  ksnap_wm_input(&w, 0, 50, 0);
  ksnap_wm_input(&w, 0, 40, 0);
  ck_assert_int_eq(ksnap_wm_of(&w, 0), 50);
  ck_assert(ksnap_wm_of(&w, 7) == MIN);
}
END_TEST

START_TEST(idle_partitions_do_not_hold_the_task_back) {
  ksnap_wm_input(&w, 0, 50, 0);
  ksnap_wm_input(&w, 1, 70, 0);
  ksnap_wm_seen(&w, 0, 1400);
  ksnap_wm_seen(&w, 1, 1400);
  ksnap_wm_idle_check(&w, 1499, 500); /* input 2 seen at 1000 */
  ck_assert_int_eq(ksnap_wm_is_idle(&w, 2), 0);
  ksnap_wm_idle_check(&w, 1500, 500);
  ck_assert_int_eq(ksnap_wm_is_idle(&w, 2), 1);
  ck_assert_int_eq(ksnap_wm_is_idle(&w, 0), 0);
  ck_assert_int_eq(ksnap_wm_advance(&w), 1);
  ck_assert_int_eq(w.task, 50);
  /* it comes back behind the task: the task does not go back */
  ksnap_wm_seen(&w, 2, 1600);
  ksnap_wm_input(&w, 2, 10, 0);
  ksnap_wm_advance(&w);
  ck_assert_int_eq(w.task, 50);
  ksnap_wm_input(&w, 0, 100, 0);
  ksnap_wm_advance(&w);
  ck_assert_int_eq(w.task, 50); /* held by input 2 at 10, not above 50 */
  ksnap_wm_input(&w, 2, 80, 0);
  ksnap_wm_advance(&w);
  ck_assert_int_eq(w.task, 70);
}
END_TEST

START_TEST(every_input_idle_makes_the_task_idle) {
  ksnap_wm_input(&w, 0, 50, 1);
  ksnap_wm_input(&w, 1, 70, 1);
  ksnap_wm_input(&w, 2, 60, 0);
  ck_assert_int_eq(ksnap_wm_advance(&w), 1);
  ck_assert_int_eq(w.task, 60);
  ck_assert_int_eq(w.task_idle, 0);
  ksnap_wm_input(&w, 2, 60, 1);
  ck_assert_int_eq(ksnap_wm_advance(&w), 1); /* went idle */
  ck_assert_int_eq(w.task_idle, 1);
  ck_assert_int_eq(w.task, 60); /* stays */
  ck_assert_int_eq(ksnap_wm_advance(&w), 0);
}
END_TEST

START_TEST(no_inputs_is_idle) {
  ksnap_wm_t none;
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_wm_init(&none, 0, 0, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(none.task_idle, 1);
  ck_assert_int_eq(ksnap_wm_advance(&none), 0);
  ck_assert(none.task == MIN);
  ksnap_wm_cleanup(&none);
}
END_TEST

/* A snapshot of inputs a, b, c (task 1 of 2), restored into @p r. */
static void snapshot_restore(ksnap_wm_t *r, const char *const *names,
                             int32_t index, int32_t par, size_t *used) {
  static const char *const old[] = {"a", "b", "c"};
  uint8_t buf[5][KSNAP_WM_ENTRY_MAX];
  const void *e[5];
  size_t len[5], n = 0;

  for (int i = 0; i < 3; i++, n++) {
    len[n] = ksnap_wm_encode_input(old[i], ksnap_wm_of(&w, i),
                                   ksnap_wm_is_idle(&w, i), buf[n]);
    e[n] = buf[n];
  }
  len[n] = ksnap_wm_encode_task(&w, 1, 2, buf[n]);
  e[n] = buf[n];
  n++;
  buf[n][0] = 'x'; /* not an entry: skipped */
  len[n] = 1;
  e[n] = buf[n];
  n++;
  *used = ksnap_wm_restore(r, names, e, len, n, index, par);
}

START_TEST(a_restore_never_goes_back) {
  static const char *const names[] = {"a", "b", "c"};
  ksnap_wm_t r;
  ksnap_error_t err;
  size_t used;

  ksnap_wm_input(&w, 0, 50, 0);
  ksnap_wm_input(&w, 1, 90, 0);
  ksnap_wm_input(&w, 2, 20, 1); /* idle: the task is at 50 */
  ksnap_wm_advance(&w);
  ck_assert_int_eq(w.task, 50);

  ck_assert_int_eq(ksnap_wm_init(&r, 3, 0, &err), KSNAP_ERR_OK);
  snapshot_restore(&r, names, 1, 2, &used);
  ck_assert_uint_eq(used, 4);
  ck_assert_int_eq(ksnap_wm_of(&r, 0), 50);
  ck_assert_int_eq(ksnap_wm_of(&r, 1), 90);
  ck_assert_int_eq(ksnap_wm_of(&r, 2), 20);
  ck_assert_int_eq(ksnap_wm_is_idle(&r, 2), 1);
  ck_assert_int_eq(r.task, 50);
  /* input c active again, behind: the floor holds the task at 50 */
  ksnap_wm_seen(&r, 2, 10);
  ksnap_wm_advance(&r);
  ck_assert_int_eq(r.task, 50);
  ksnap_wm_cleanup(&r);
}
END_TEST

START_TEST(a_rescale_takes_the_lowest_task_and_names_its_inputs) {
  static const char *const names[] = {"c", "new"};
  ksnap_wm_t r;
  ksnap_error_t err;
  size_t used;

  ksnap_wm_input(&w, 0, 50, 0);
  ksnap_wm_input(&w, 1, 90, 0);
  ksnap_wm_input(&w, 2, 60, 0);
  ksnap_wm_advance(&w);
  ck_assert_int_eq(ksnap_wm_init(&r, 2, 0, &err), KSNAP_ERR_OK);
  snapshot_restore(&r, names, 0, 3, &used); /* another parallelism */
  ck_assert_uint_eq(used, 2);                /* c and the task entry */
  ck_assert_int_eq(ksnap_wm_of(&r, 0), 60);
  ck_assert(ksnap_wm_of(&r, 1) == MIN); /* a new channel */
  ck_assert_int_eq(r.task, 50);         /* the old task's, as the floor */
  ksnap_wm_cleanup(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("watermark");
  TCase *tc = tcase_create("watermark");

  tcase_add_checked_fixture(tc, setup3, teardown);
  tcase_add_test(tc, task_watermark_is_the_minimum_over_the_inputs);
  tcase_add_test(tc, an_input_watermark_never_goes_back);
  tcase_add_test(tc, idle_partitions_do_not_hold_the_task_back);
  tcase_add_test(tc, every_input_idle_makes_the_task_idle);
  tcase_add_test(tc, no_inputs_is_idle);
  tcase_add_test(tc, a_restore_never_goes_back);
  tcase_add_test(tc, a_rescale_takes_the_lowest_task_and_names_its_inputs);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
