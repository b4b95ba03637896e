/* The assignment of tasks to members (coordinator/src/state_machine/
 * coord_assign.c): shares by slots, stickiness, a stage's tasks spread,
 * only vacant tasks without moves, never a task on two members or on no
 * member while a slot is free. */
#include <check.h>
#include <stdlib.h>

#include "state_machine/coord_assign.h"
#include "testutil.h"

#define MAXT 32

/* Each task on one member at most, no member over its slots; @returns
 * the tasks per member in per[]. */
static void check_valid(const coord_assign_in_t *in, const int *out,
                        int *per) {
  for (size_t m = 0; m < in->nmembers; m++)
    per[m] = 0;
  for (size_t i = 0; i < in->ntasks; i++) {
    ck_assert_int_ge(out[i], -1);
    ck_assert_int_lt(out[i], (int)in->nmembers);
    if (out[i] >= 0)
      per[out[i]]++;
  }
  for (size_t m = 0; m < in->nmembers; m++)
    ck_assert_int_le(per[m], in->slots[m]);
}

/* The word count at split P=3, count P=4: stages 0 0 0 1 1 1 1. */
static const int wc_stage[7] = {0, 0, 0, 1, 1, 1, 1};

START_TEST(seven_tasks_on_three_members_are_three_two_two) {
  int cur[7] = {-1, -1, -1, -1, -1, -1, -1}, out[7], per[3];
  int32_t slots[3] = {4, 4, 4};
  coord_assign_in_t in = {7, wc_stage, cur, 3, slots};

  ck_assert_uint_eq(ksnap__coord_assign(&in, true, out), 0);
  check_valid(&in, out, per);
  ck_assert_int_eq(per[0], 3);
  ck_assert_int_eq(per[1], 2);
  ck_assert_int_eq(per[2], 2);
  /* a stage's tasks spread: no member has two of split's three */
  for (int m = 0; m < 3; m++) {
    int splits = 0;
    for (int i = 0; i < 3; i++)
      splits += out[i] == m;
    ck_assert_int_eq(splits, 1);
  }
}
END_TEST

START_TEST(a_lost_members_tasks_go_to_the_others_the_rest_stay) {
  /* of three members the second is gone: its tasks (1, 4) are vacant,
   * the other two are members 0 and 1 now */
  int out[7], per[2];
  int32_t slots[2] = {4, 4};
  int cur2[7] = {0, -1, 1, 0, -1, 1, 0};
  coord_assign_in_t in2 = {7, wc_stage, cur2, 2, slots};

  ck_assert_uint_eq(ksnap__coord_assign(&in2, true, out), 0);
  check_valid(&in2, out, per);
  ck_assert_int_eq(per[0] + per[1], 7);
  ck_assert_int_le(abs(per[0] - per[1]), 1);
  for (int i = 0; i < 7; i++) /* nothing running moves but for balance */
    if (cur2[i] == 1)
      ck_assert_int_eq(out[i], 1);
}
END_TEST

START_TEST(without_moves_only_vacant_tasks_are_placed) {
  int cur[7] = {0, 0, 0, 0, -1, -1, -1}, out[7], per[2];
  int32_t slots[2] = {4, 4};
  coord_assign_in_t in = {7, wc_stage, cur, 2, slots};

  ck_assert_uint_eq(ksnap__coord_assign(&in, false, out), 0);
  check_valid(&in, out, per);
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(out[i], 0);
  for (int i = 4; i < 7; i++)
    ck_assert_int_eq(out[i], 1);
  ck_assert(ksnap__coord_assign_unbalanced(&in)); /* 4 and 3 vs 4 and 0 */
}
END_TEST

START_TEST(a_member_that_joins_gets_its_share_with_moves) {
  int cur[7] = {0, 1, 0, 1, 0, 1, 0}, out[7], per[3];
  int32_t slots[3] = {4, 4, 4};
  coord_assign_in_t in = {7, wc_stage, cur, 3, slots};

  ck_assert(ksnap__coord_assign_unbalanced(&in));
  ck_assert_uint_eq(ksnap__coord_assign(&in, true, out), 0);
  check_valid(&in, out, per);
  ck_assert_int_eq(per[2], 2);
  {
    int moved = 0;
    for (int i = 0; i < 7; i++)
      moved += out[i] != cur[i];
    ck_assert_int_eq(moved, 2); /* only what the newcomer takes */
  }
  /* balanced already: nothing to do */
  ck_assert(!ksnap__coord_assign_unbalanced(
      &(coord_assign_in_t){7, wc_stage, out, 3, slots}));
}
END_TEST

START_TEST(not_enough_slots_leaves_tasks_vacant) {
  int cur[7] = {-1, -1, -1, -1, -1, -1, -1}, out[7], per[1];
  int32_t slots[1] = {4};
  coord_assign_in_t in = {7, wc_stage, cur, 1, slots};

  ck_assert_uint_eq(ksnap__coord_assign(&in, true, out), 3);
  check_valid(&in, out, per);
  ck_assert_int_eq(per[0], 4);
  ck_assert_uint_eq(ksnap__coord_assign(&in, false, out), 3);
}
END_TEST

START_TEST(shares_follow_the_slots) {
  int cur[6] = {-1, -1, -1, -1, -1, -1}, out[6], per[2];
  int stage[6] = {0, 0, 0, 0, 0, 0};
  int32_t slots[2] = {4, 2};
  coord_assign_in_t in = {6, stage, cur, 2, slots};

  ck_assert_uint_eq(ksnap__coord_assign(&in, true, out), 0);
  check_valid(&in, out, per);
  ck_assert_int_eq(per[0], 4);
  ck_assert_int_eq(per[1], 2);
}
END_TEST

/* Random problems: always valid; with moves, as many placed as slots
 * allow, and the loads differ by at most one when the slots are equal. */
START_TEST(random_problems_are_valid_and_balanced) {
  srand(7);
  for (int round = 0; round < 2000; round++) {
    int n = 1 + rand() % MAXT, nm = 1 + rand() % 6, cur[MAXT], stage[MAXT],
        out[MAXT], per[6];
    int32_t slots[6], s = 1 + rand() % 8;
    long total = 0, placed = 0;
    coord_assign_in_t in;
    for (int m = 0; m < nm; m++)
      total += slots[m] = s;
    for (int i = 0; i < n; i++) {
      stage[i] = rand() % 3;
      cur[i] = rand() % (nm + 1) - 1;
    }
    in = (coord_assign_in_t){(size_t)n, stage, cur, (size_t)nm, slots};
    ksnap__coord_assign(&in, true, out);
    check_valid(&in, out, per);
    for (int i = 0; i < n; i++)
      placed += out[i] >= 0;
    ck_assert_int_eq(placed, n < total ? n : total);
    for (int a = 0; a < nm; a++)
      for (int b = 0; b < nm; b++)
        ck_assert_int_le(per[a] - per[b], 1);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_assign");
  TCase *tc = tcase_create("coord_assign");

  tcase_add_test(tc, seven_tasks_on_three_members_are_three_two_two);
  tcase_add_test(tc, a_lost_members_tasks_go_to_the_others_the_rest_stay);
  tcase_add_test(tc, without_moves_only_vacant_tasks_are_placed);
  tcase_add_test(tc, a_member_that_joins_gets_its_share_with_moves);
  tcase_add_test(tc, not_enough_slots_leaves_tasks_vacant);
  tcase_add_test(tc, shares_follow_the_slots);
  tcase_add_test(tc, random_problems_are_valid_and_balanced);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
