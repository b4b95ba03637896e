/* A savepoint's wait without memory (plugin/src/input/align_wait.c, T14 in
 * aligner.c): over the buffer limit a savepoint's alignment drops the
 * blocked channels' records, takes its aligned snapshot when every barrier
 * arrived, then reads each partition again from its first dropped offset;
 * the acceptance rule skips what was handled and processes the dropped
 * records once. Traces as in tests/common/aligntest.h. */
#include <stdio.h>
#include <string.h>

#include "aligntest.h"
#include "input/aligner.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

/* Barrier @p id of a savepoint (must_align) on channel @p c at @p off. */
static void sp_bar(int32_t c, int64_t off, int64_t id) {
  ksnap_in_t in = {c, off, 1, KSNAP_REC_BARRIER, id, 0, 10, NULL, 1};
  ck_assert_int_eq(ksnap_aligner_push(al, &in, 0, &err), 0);
}

/* An aligner over @p nparts partitions holding at most @p max bytes. */
static void start_limited(int nparts, size_t max) {
  start(KSNAP_ALIGN_ALIGNED, nparts);
  conf.max_buffered_bytes = max;
  restart();
}

/* One partition, limit 25 bytes (records are 10): savepoint 1's barrier
 * on channel 0 at 0; 0@1, 0@2 buffered; 1@3 processed; 0@4 overflows. */
static void wait_started(void) {
  start_limited(1, 25);
  sp_bar(0, 0, 1);
  DATA(0, 1);
  DATA(0, 2);
  DATA(1, 3);
  EXPECT("C 0@0 | B 0@1 | B 0@2 | P 1@3");
  DATA(0, 4);
  EXPECT("B 0@4 | D 0@1 | D 0@2 | D 0@4");
  ck_assert_uint_eq(ksnap_aligner_buffered_bytes(al), 0);
}

START_TEST(savepoint_over_the_limit_drops_then_reads_again) {
  ksnap_action_t act;

  wait_started();
  DATA(0, 5); /* a blocked channel's record: dropped, not held */
  DATA(1, 6); /* the open channel goes on */
  EXPECT("D 0@5 | P 1@6");
  ck_assert_uint_eq(ksnap_aligner_buffered_bytes(al), 0);
  sp_bar(1, 7, 1); /* the last barrier: aligned snapshot, then the seek */
  ck_assert_int_eq(ksnap_aligner_pop(al, &act), 1);
  ck_assert_int_eq(act.kind, KSNAP_ACT_CONSUMED);
  ck_assert_int_eq(ksnap_aligner_pop(al, &act), 1);
  ck_assert_int_eq(act.kind, KSNAP_ACT_SNAPSHOT);
  ck_assert_int_eq(act.unaligned, 0);
  ck_assert_int_eq(act.unaligned_reason, KSNAP_UNALIGNED_REREAD);
  ck_assert_uint_eq(act.bytes_dropped, 40);
  ck_assert_int_eq(act.records_dropped, 4);
  ck_assert_uint_le(act.bytes_buffered, 30);
  ck_assert_int_eq(act.pos[0].off, 1);
  ck_assert_int_eq(act.pos[1].off, 8);
  EXPECT("SEEK 0@1");
  /* the re-read: channel 0's dropped records once, channel 1's skipped */
  DATA(0, 1);
  DATA(0, 2);
  DATA(1, 3);
  DATA(0, 4);
  DATA(0, 5);
  DATA(1, 6);
  BAR(1, 7, 1);
  DATA(1, 8);
  EXPECT("P 0@1 | P 0@2 | S 1@3:SKIP_BEFORE_OFF | P 0@4 | P 0@5 | "
         "S 1@6:SKIP_BEFORE_OFF | S 1@7:SKIP_BEFORE_OFF | P 1@8");
}
END_TEST

START_TEST(records_fetched_before_the_seek_are_dropped) {
  wait_started();
  sp_bar(1, 5, 1);
  EXPECT("C 1@5 | SNAP 1r 0:1:1 1:6:1 | SEEK 0@1");
  DATA(1, 6); /* fetched before the seek took effect */
  DATA(0, 7);
  EXPECT("D 1@6 | D 0@7");
  DATA(0, 1); /* the seek's first record: the re-read begins */
  DATA(0, 2);
  DATA(1, 3);
  DATA(0, 4);
  BAR(1, 5, 1);
  DATA(1, 6);
  EXPECT("P 0@1 | P 0@2 | S 1@3:SKIP_BEFORE_OFF | P 0@4 | "
         "S 1@5:SKIP_BEFORE_OFF | P 1@6");
}
END_TEST

START_TEST(dropped_control_records_are_read_again_not_refused) {
  wait_started();
  BAR(0, 5, 2); /* channel 0's next barrier and its end: dropped */
  END(0, 6);
  sp_bar(1, 7, 1);
  EXPECT("D 0@5 | D 0@6 | C 1@7 | SNAP 1r 0:1:1 1:8:1 | SEEK 0@1");
  DATA(0, 1);
  DATA(0, 2);
  DATA(1, 3);
  DATA(0, 4);
  BAR(0, 5, 2); /* starts checkpoint 2, as if never seen: blocks */
  END(0, 6);
  EXPECT("P 0@1 | P 0@2 | S 1@3:SKIP_BEFORE_OFF | P 0@4 | C 0@5 | B 0@6");
  ck_assert_int_eq(ksnap_aligner_current(al), 2);
}
END_TEST

START_TEST(abort_during_the_wait_reads_again_from_the_read_positions) {
  wait_started();
  DATA(1, 5);
  ck_assert_int_eq(ksnap_aligner_abort(al, 1, "timeout", 0, &err), 0);
  EXPECT("P 1@5 | ABORT 1 (timeout) | SEEK 0@1");
  DATA(0, 1);
  DATA(0, 2);
  DATA(1, 3);
  DATA(0, 4);
  DATA(1, 5);
  DATA(1, 6);
  EXPECT("P 0@1 | P 0@2 | S 1@3:SKIP_BEFORE_OFF | P 0@4 | "
         "S 1@5:SKIP_BEFORE_OFF | P 1@6");
}
END_TEST

/* Two partitions: x[0] fully blocked (paused, nothing dropped there once
 * paused), x[1] still open on channel 3; only x[1] is read again. */
START_TEST(only_partitions_that_dropped_are_read_again) {
  start_limited(2, 15);
  sp_bar(0, 0, 1);
  sp_bar(1, 1, 1);
  sp_bar(2, 0, 1);
  EXPECT("C 0@0 | C 1@1 | PAUSE 0 | C 2@0");
  DATA(2, 1);
  DATA(2, 2);
  EXPECT("B 2@1 | B 2@2 | D 2@1 | D 2@2");
  DATA(3, 3);
  BAR(3, 4, 1);
  EXPECT("P 3@3 | C 3@4 | SNAP 1r 0:1:1 1:2:1 2:1:1 3:5:1 | SEEK 1@1 | "
         "RESUME 0");
  DATA(2, 1);
  DATA(2, 2);
  DATA(3, 3);
  EXPECT("P 2@1 | P 2@2 | S 3@3:SKIP_BEFORE_OFF");
}
END_TEST

START_TEST(a_plain_checkpoint_over_the_limit_still_switches) {
  start_limited(1, 15);
  BAR(0, 0, 1);
  DATA(0, 1);
  DATA(0, 2);
  EXPECT("C 0@0 | B 0@1 | B 0@2 | SNAP 1u 0:1:1 1:3:0 | P 0@1 | P 0@2");
}
END_TEST

int main(void) {
  Suite *s = suite_create("align_wait");
  TCase *tc = tcase_create("rules");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, savepoint_over_the_limit_drops_then_reads_again);
  tcase_add_test(tc, records_fetched_before_the_seek_are_dropped);
  tcase_add_test(tc, dropped_control_records_are_read_again_not_refused);
  tcase_add_test(tc, abort_during_the_wait_reads_again_from_the_read_positions);
  tcase_add_test(tc, only_partitions_that_dropped_are_read_again);
  tcase_add_test(tc, a_plain_checkpoint_over_the_limit_still_switches);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
