/* Where a restore point named by URL lives, and whether two URLs name one
 * point (plugin/src/storage/restore_point.c). */
#include <check.h>
#include <stdlib.h>

#include "storage/restore_point.h"
#include "testutil.h"

static void split_is(const char *url, const char *base, const char *key) {
  char *b = NULL, *k = NULL;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_restore_point_split(url, &b, &k, &error),
                   KSNAP_ERR_OK);
  ck_assert_str_eq(b, base);
  ck_assert_str_eq(k, key);
  free(b);
  free(k);
}

START_TEST(a_checkpoint_and_a_savepoint_split) {
  split_is("s3://bkt/ck/job/chk-12", "s3://bkt/ck", "job/chk-12/_metadata");
  split_is("file:///d/job/chk-3/_metadata/", "file:///d",
           "job/chk-3/_metadata");
  split_is("file:///sp/savepoint-j-2-ab/", "file:///sp/savepoint-j-2-ab",
           "_metadata");
  split_is("file:///sp/chk-x", "file:///sp/chk-x", "_metadata");
}
END_TEST

START_TEST(not_a_url_is_refused) {
  char *b = NULL, *k = NULL;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_restore_point_split("/tmp/sp", &b, &k, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_ptr_null(b);
  ck_assert_int_eq(ksnap_restore_point_same("/tmp/sp", "/tmp/sp"), 0);
}
END_TEST

START_TEST(the_same_point_with_or_without_metadata) {
  ck_assert(ksnap_restore_point_same("file:///d/j/chk-3",
                                     "file:///d/j/chk-3/_metadata"));
  ck_assert(ksnap_restore_point_same("s3://b/sp/x/", "s3://b/sp/x"));
  ck_assert(!ksnap_restore_point_same("file:///d/j/chk-3",
                                      "file:///d/j/chk-30"));
  ck_assert(!ksnap_restore_point_same("file:///d/j/chk-3",
                                      "file:///e/j/chk-3"));
}
END_TEST

START_TEST(own_is_the_jobs_checkpoint_of_that_id) {
  ck_assert(ksnap_restore_point_is_own("file:///ck/j/chk-4/_metadata",
                                       "file:///ck/", "j", 4));
  ck_assert(ksnap_restore_point_is_own("s3://b/ck/j/chk-4", "s3://b/ck",
                                       "j", 4));
  ck_assert(!ksnap_restore_point_is_own("file:///ck/j/chk-4", "file:///ck",
                                        "j", 5));
  ck_assert(!ksnap_restore_point_is_own("file:///ck/j/chk-40", "file:///ck",
                                        "j", 4));
  ck_assert(!ksnap_restore_point_is_own("file:///ck/k/chk-4", "file:///ck",
                                        "j", 4));
  ck_assert(!ksnap_restore_point_is_own("file:///sp/savepoint-j-4-a",
                                        "file:///ck", "j", 4));
  ck_assert(!ksnap_restore_point_is_own("file:///ck/j/chk-4", NULL, "j", 4));
  ck_assert(!ksnap_restore_point_is_own(NULL, "file:///ck", "j", 4));
}
END_TEST

int main(void) {
  Suite *s = suite_create("restore_point");
  TCase *tc = tcase_create("core");

  tcase_add_test(tc, a_checkpoint_and_a_savepoint_split);
  tcase_add_test(tc, not_a_url_is_refused);
  tcase_add_test(tc, the_same_point_with_or_without_metadata);
  tcase_add_test(tc, own_is_the_jobs_checkpoint_of_that_id);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
