/* The acceptance rule of plugin/PROTOCOL.md section 6.2 (plugin/src/input/accept.c) and the
 * input gate (plugin/src/input/channel.c): one test per rule. */
#include <stdlib.h>

#include "input/accept.h"
#include "input/channel.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define D KSNAP_REC_DATA
#define B KSNAP_REC_BARRIER
#define C KSNAP_REC_CANCEL
#define E KSNAP_REC_END

static ksnap_gate_t *gate;
static ksnap_accept_t acc;

/* x[0] and x[1], each written by up[0] and up[1]: channels 0..3. */
static void setup(void) {
  ksnap_error_t err;

  gate = ksnap_gate_new();
  ck_assert_ptr_nonnull(gate);
  ck_assert_int_eq(ksnap_gate_add_partition(gate, "x", 0, "up", 2, NULL, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_gate_add_partition(gate, "x", 1, "up", 2, NULL, &err),
                   KSNAP_ERR_OK);
}

static void teardown(void) { ksnap_gate_destroy(gate); }

static ksnap_accept_verdict_t check(int32_t c, int64_t off, int64_t gen,
                                    ksnap_rec_kind_t kind, int64_t id) {
  return ksnap_accept_check(&acc, ksnap_gate_chan(gate, c), off, gen, kind,
                            id);
}

/* Restore in generation 5 from checkpoint 3 of generation 2. */
static void restore_g5_from_n3_g2(int passed0, int passed1) {
  ksnap_chan_pos_t pos[4] = {
      {0, 10, passed0, 0}, {1, 7, passed1, 0}, {2, 4, 1, 0}, {3, 9, 1, 0}};
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 5, 3, 2, pos, 4, &err),
                   KSNAP_ERR_OK);
}

START_TEST(gate_channels_come_from_the_job_graph) {
  ksnap_error_t err;
  int32_t chan = -1;
  char name[64];

  ck_assert_int_eq(ksnap_gate_nchans(gate), 4);
  ck_assert_int_eq(ksnap_gate_find(gate, "x", 1, 1, &chan, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(chan, 3);
  ck_assert_str_eq(ksnap_gate_chan_name(gate, chan, name, sizeof(name)),
                   "x[1] writer up[1]");
  ck_assert_int_eq(ksnap_gate_find(gate, "x", 1, 2, &chan, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(err.msg, "unknown channel x[1] writer 2");
  ck_assert_int_eq(ksnap_gate_find(gate, "y", 0, 0, &chan, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_gate_add_partition(gate, "x", 1, "up", 2, NULL, &err),
                   KSNAP_ERR_EXISTS);
  ck_assert_int_eq(ksnap_gate_add_partition(gate, "y", 0, "up", 0, NULL, &err),
                   KSNAP_ERR_INVALID_ARG);
}
END_TEST

START_TEST(fresh_start_accepts_only_the_current_generation) {
  ksnap_accept_init(&acc, gate, 4);
  ck_assert_int_eq(check(0, 0, 4, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(check(0, 1, 4, B, 1), KSNAP_ACCEPT_BARRIER_ALIGN);
  ck_assert_int_eq(check(0, 2, 3, D, 0), KSNAP_ACCEPT_SKIP_OLD_GEN);
  ck_assert_int_eq(check(0, 3, 3, B, 1), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  ck_assert_int_eq(check(0, 4, 5, D, 0), KSNAP_ACCEPT_SKIP_NEWER_GEN);
  ck_assert_int_eq(ksnap_gate_part(gate, 0)->pos, 0);
}
END_TEST

START_TEST(restore_starts_each_partition_at_the_smallest_off) {
  restore_g5_from_n3_g2(0, 1);
  ck_assert_int_eq(ksnap_gate_part(gate, 0)->pos, 7);
  ck_assert_int_eq(ksnap_gate_part(gate, 1)->pos, 4);
}
END_TEST

START_TEST(record_below_off_is_skipped_whatever_its_generation) {
  restore_g5_from_n3_g2(0, 1);
  ck_assert_int_eq(check(0, 9, 2, D, 0), KSNAP_ACCEPT_SKIP_BEFORE_OFF);
  ck_assert_int_eq(check(0, 9, 5, D, 0), KSNAP_ACCEPT_SKIP_BEFORE_OFF);
  ck_assert_int_eq(check(0, 10, 5, D, 0), KSNAP_ACCEPT_PROCESS);
}
END_TEST

START_TEST(current_generation_is_processed_and_aligned) {
  restore_g5_from_n3_g2(1, 1);
  ck_assert_int_eq(check(0, 10, 5, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(check(0, 11, 5, B, 4), KSNAP_ACCEPT_BARRIER_ALIGN);
  ck_assert_int_eq(check(0, 12, 5, C, 5), KSNAP_ACCEPT_BARRIER_ALIGN);
  ck_assert_int_eq(check(0, 13, 5, E, 0), KSNAP_ACCEPT_BARRIER_ALIGN);
  /* ids never go back: a generation-G barrier <= N is not aligned */
  ck_assert_int_eq(check(1, 14, 5, B, 3), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
}
END_TEST

START_TEST(base_generation_not_passed_until_its_barrier_n) {
  restore_g5_from_n3_g2(0, 1);
  ck_assert_int_eq(check(0, 10, 2, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(check(0, 11, 2, B, 2), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  ck_assert_int_eq(check(0, 12, 2, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(ksnap_gate_chan(gate, 0)->passed, 0);
  ck_assert_int_eq(check(0, 13, 2, B, 3), KSNAP_ACCEPT_BARRIER_MARK_PASSED);
  ck_assert_int_eq(ksnap_gate_chan(gate, 0)->passed, 1);
  ck_assert_int_eq(check(0, 14, 2, D, 0), KSNAP_ACCEPT_SKIP_PASSED);
  ck_assert_int_eq(check(0, 15, 2, B, 4), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  /* the other writer on the same partition is independent */
  ck_assert_int_eq(check(1, 16, 2, D, 0), KSNAP_ACCEPT_SKIP_PASSED);
}
END_TEST

START_TEST(base_generation_passed_is_skipped) {
  restore_g5_from_n3_g2(1, 1);
  ck_assert_int_eq(check(0, 10, 2, D, 0), KSNAP_ACCEPT_SKIP_PASSED);
  ck_assert_int_eq(check(2, 10, 2, D, 0), KSNAP_ACCEPT_SKIP_PASSED);
}
END_TEST

START_TEST(generations_strictly_between_are_skipped) {
  restore_g5_from_n3_g2(0, 0);
  for (int g = 3; g <= 4; g++) {
    ck_assert_int_eq(check(0, 10 + 4 * g, g, D, 0),
                     KSNAP_ACCEPT_SKIP_OLD_GEN);
    ck_assert_int_eq(check(0, 11 + 4 * g, g, B, 4),
                     KSNAP_ACCEPT_SKIP_OLD_BARRIER);
    /* barrier N of another generation does not mark passed */
    ck_assert_int_eq(check(0, 12 + 4 * g, g, B, 3),
                     KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  }
  ck_assert_int_eq(ksnap_gate_chan(gate, 0)->passed, 0);
}
END_TEST

START_TEST(zombies_of_older_generations_are_skipped) {
  restore_g5_from_n3_g2(0, 0);
  ck_assert_int_eq(check(0, 20, 1, D, 0), KSNAP_ACCEPT_SKIP_OLD_GEN);
  ck_assert_int_eq(check(0, 21, 0, D, 0), KSNAP_ACCEPT_SKIP_OLD_GEN);
  ck_assert_int_eq(check(0, 22, 1, B, 3), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  ck_assert_int_eq(check(0, 23, 2, C, 4), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
  ck_assert_int_eq(check(0, 24, 2, E, 0), KSNAP_ACCEPT_SKIP_OLD_BARRIER);
}
END_TEST

START_TEST(replay_with_base_in_the_same_generation) {
  ksnap_chan_pos_t pos[4] = {
      {0, 0, 0, 0}, {1, 0, 1, 0}, {2, 0, 1, 0}, {3, 0, 1, 0}};
  ksnap_error_t err;

  /* a repair replay treats the replayed checkpoint's generation as G */
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 2, 3, 2, pos, 4, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(check(0, 0, 2, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(check(0, 1, 2, B, 3), KSNAP_ACCEPT_BARRIER_MARK_PASSED);
  ck_assert_int_eq(check(0, 2, 2, D, 0), KSNAP_ACCEPT_PROCESS);
  ck_assert_int_eq(check(0, 3, 2, B, 4), KSNAP_ACCEPT_BARRIER_ALIGN);
}
END_TEST

START_TEST(restore_refuses_bad_metadata) {
  ksnap_chan_pos_t pos[4] = {
      {0, 1, 1, 0}, {1, 1, 1, 0}, {2, 1, 1, 0}, {3, 1, 1, 0}};
  ksnap_error_t err;

  ksnap_accept_init(&acc, gate, 1);
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 5, 3, 2, pos, 3, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(err.msg,
                   "checkpoint 3 has no position for channel x[1] writer up[1]");
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 2, 3, 5, pos, 4, &err),
                   KSNAP_ERR_STATE);
  pos[2].chan = 9;
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 5, 3, 2, pos, 4, &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(err.msg,
                   "checkpoint 3 has a position for unknown channel 9");
  /* nothing changed */
  ck_assert_int_eq(acc.gen, 1);
  ck_assert_int_eq(ksnap_gate_chan(gate, 0)->off, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("accept");
  TCase *tc = tcase_create("rule");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, gate_channels_come_from_the_job_graph);
  tcase_add_test(tc, fresh_start_accepts_only_the_current_generation);
  tcase_add_test(tc, restore_starts_each_partition_at_the_smallest_off);
  tcase_add_test(tc, record_below_off_is_skipped_whatever_its_generation);
  tcase_add_test(tc, current_generation_is_processed_and_aligned);
  tcase_add_test(tc, base_generation_not_passed_until_its_barrier_n);
  tcase_add_test(tc, base_generation_passed_is_skipped);
  tcase_add_test(tc, generations_strictly_between_are_skipped);
  tcase_add_test(tc, zombies_of_older_generations_are_skipped);
  tcase_add_test(tc, replay_with_base_in_the_same_generation);
  tcase_add_test(tc, restore_refuses_bad_metadata);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
