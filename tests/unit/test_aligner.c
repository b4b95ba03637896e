/* Barrier alignment (plugin/src/input/aligner.c): one test per rule. Each test
 * feeds records and compares the drained actions with an expected trace
 * (tests/common/aligntest.h has the notation).
 * Channels: x[0] written by up[0], up[1] = channels 0, 1; x[1] = 2, 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aligntest.h"
#include "input/aligner.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

START_TEST(aligned_blocks_buffers_pauses_and_releases_in_order) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  DATA(0, 0);
  BAR(0, 1, 1);
  DATA(0, 2); /* after up[0]'s barrier: buffered */
  DATA(1, 3); /* up[1] is still before its barrier */
  EXPECT("P 0@0 | C 0@1 | B 0@2 | P 1@3");
  ck_assert_int_eq(ksnap_aligner_current(al), 1);
  ck_assert_uint_eq(ksnap_aligner_buffered_bytes(al), 10);
  DATA(0, 4);
  BAR(1, 5, 1); /* last channel: snapshot, then buffered records first */
  DATA(1, 6);
  EXPECT("B 0@4 | C 1@5 | SNAP 1 0:2:1 1:6:1 | P 0@2 | P 0@4 | P 1@6");
  ck_assert_int_eq(ksnap_aligner_current(al), 0);
}
END_TEST

START_TEST(aligned_pauses_a_partition_only_when_all_its_channels_block) {
  start(KSNAP_ALIGN_ALIGNED, 2);
  BAR(0, 0, 1);
  EXPECT("C 0@0");
  BAR(1, 1, 1); /* x[0] fully blocked: pause it, x[1] keeps flowing */
  EXPECT("C 1@1 | PAUSE 0");
  DATA(0, 2); /* already fetched before the pause took effect */
  DATA(2, 0);
  BAR(2, 1, 1);
  EXPECT("B 0@2 | P 2@0 | C 2@1");
  BAR(3, 2, 1);
  EXPECT("C 3@2 | SNAP 1 0:1:1 1:2:1 2:2:1 3:3:1 | P 0@2 | RESUME 0");
}
END_TEST

START_TEST(two_inputs_with_different_parallelism_all_align) {
  /* a join: x[0] from up (2 writers: channels 0, 1) and y[0] from side
   * (3 writers: channels 2, 3, 4); the set comes from the job graph */
  int32_t chan = -1;

  start(KSNAP_ALIGN_ALIGNED, 1);
  ck_assert_int_eq(ksnap_gate_add_partition(gate, "y", 0, "side", 3, NULL,
                                            &err), 0);
  ck_assert_int_eq(ksnap_gate_find(gate, "y", 0, 2, &chan, &err), 0);
  ck_assert_int_eq(chan, 4);
  BAR(0, 0, 1);
  BAR(1, 1, 1);
  BAR(2, 0, 1);
  BAR(3, 1, 1);
  EXPECT("C 0@0 | C 1@1 | PAUSE 0 | C 2@0 | C 3@1");
  BAR(4, 2, 1);
  EXPECT("C 4@2 | SNAP 1 0:1:1 1:2:1 2:1:1 3:2:1 4:3:1 | RESUME 0");
}
END_TEST

START_TEST(released_barrier_of_the_next_checkpoint_blocks_again) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  BAR(0, 2, 2); /* buffered: up[0] is blocked on 1 */
  DATA(0, 3);
  EXPECT("C 0@0 | B 0@1 | B 0@2 | B 0@3");
  BAR(1, 4, 1);
  EXPECT("C 1@4 | SNAP 1 0:1:1 1:5:1 | P 0@1 | C 0@2 | B 0@3");
  ck_assert_int_eq(ksnap_aligner_current(al), 2);
  BAR(1, 5, 2);
  EXPECT("C 1@5 | SNAP 2 0:3:1 1:6:1 | P 0@3");
}
END_TEST

START_TEST(buffer_full_switches_an_aligned_checkpoint_to_unaligned) {
  ksnap_action_t act;
  int found = 0;

  start(KSNAP_ALIGN_ALIGNED, 1);
  conf.max_buffered_bytes = 25;
  restart();
  BAR(0, 0, 1);
  DATA(0, 1);
  DATA(0, 2);
  DATA(1, 3); /* up[1] is open */
  EXPECT("C 0@0 | B 0@1 | B 0@2 | P 1@3");
  ck_assert_int_eq(push(0, 4, 1, KSNAP_REC_DATA, 0, 7), 0); /* 30 > 25 */
  while (ksnap_aligner_pop(al, &act))
    if (act.kind == KSNAP_ACT_SNAPSHOT) {
      found = 1;
      ck_assert_int_eq(act.unaligned, 1);
      ck_assert_int_eq(act.unaligned_reason, KSNAP_UNALIGNED_BUFFER_LIMIT);
      ck_assert_uint_eq(act.bytes_buffered, 30);
      ck_assert_int_eq(act.pos[0].off, 1); /* just after its barrier */
      ck_assert_int_eq(act.pos[1].off, 5); /* read position, not passed */
      ck_assert_int_eq(act.pos[1].passed, 0);
    }
  ck_assert_int_eq(found, 1);
  ck_assert_uint_eq(ksnap_aligner_buffered_bytes(al), 0);
  BAR(1, 5, 1); /* the late barrier is only consumed */
  DATA(0, 6);
  EXPECT("C 1@5 | P 0@6");
}
END_TEST

START_TEST(snapshot_reports_the_longest_partition_pause) {
  ksnap_action_t act;
  int found = 0;

  start(KSNAP_ALIGN_ALIGNED, 2);
  BAR_AT(0, 0, 1, 10);
  BAR_AT(1, 1, 1, 20); /* x[0] paused from 20 */
  BAR_AT(2, 0, 1, 30);
  EXPECT("C 0@0 | C 1@1 | PAUSE 0 | C 2@0");
  BAR_AT(3, 1, 1, 65); /* x[1] never paused: it completes */
  while (ksnap_aligner_pop(al, &act))
    if (act.kind == KSNAP_ACT_SNAPSHOT) {
      found = 1;
      ck_assert_int_eq(act.paused_ms, 45);
      ck_assert_int_eq(act.unaligned_reason, KSNAP_UNALIGNED_NO);
    }
  ck_assert_int_eq(found, 1);
}
END_TEST

START_TEST(buffer_full_switches_to_unaligned_when_allowed) {
  start(KSNAP_ALIGN_ALIGNED_TIMEOUT, 1);
  conf.max_buffered_bytes = 15;
  restart();
  DATA(1, 0);
  BAR(0, 1, 1);
  DATA(0, 2);
  DATA(0, 3);
  EXPECT("P 1@0 | C 0@1 | B 0@2 | B 0@3 | SNAP 1u 0:2:1 1:4:0 | "
         "P 0@2 | P 0@3");
}
END_TEST

START_TEST(unaligned_snapshots_at_the_first_barrier) {
  start(KSNAP_ALIGN_UNALIGNED, 2);
  DATA(1, 0);
  DATA(2, 0);
  DATA(2, 1);
  BAR(0, 1, 1);
  EXPECT("P 1@0 | P 2@0 | P 2@1 | C 0@1 | SNAP 1u 0:2:1 1:2:0 2:2:0 3:2:0");
  DATA(0, 2); /* nothing blocks */
  BAR(1, 3, 1); /* the others' barriers 1 are stale now */
  BAR(2, 2, 1);
  EXPECT("P 0@2 | C 1@3 | C 2@2");
  ck_assert_int_eq(ksnap_aligner_current(al), 0);
}
END_TEST

START_TEST(timeout_switches_an_alignment_to_unaligned) {
  start(KSNAP_ALIGN_ALIGNED_TIMEOUT, 2); /* timeout 100 ms from trigger 0 */
  BAR_AT(0, 0, 1, 10);
  DATA(0, 1);
  BAR_AT(1, 2, 1, 20);
  DATA(1, 3);
  DATA(2, 0);
  EXPECT("C 0@0 | B 0@1 | C 1@2 | PAUSE 0 | B 1@3 | P 2@0");
  ck_assert_int_eq(ksnap_aligner_tick(al, 99, &err), 0);
  EXPECT("");
  ck_assert_int_eq(ksnap_aligner_tick(al, 100, &err), 0);
  /* blocked channels: just after their barrier, passed; their buffered
   * records are not in the state. Open ones: next offset, not passed. */
  EXPECT("SNAP 1u 0:1:1 1:3:1 2:1:0 3:1:0 | P 0@1 | P 1@3 | RESUME 0");
  BAR(2, 1, 1); /* stale */
  EXPECT("C 2@1");
}
END_TEST

START_TEST(late_first_barrier_switches_at_once) {
  start(KSNAP_ALIGN_ALIGNED_TIMEOUT, 1);
  BAR_AT(0, 0, 1, 150);
  EXPECT("C 0@0 | SNAP 1u 0:1:1 1:1:0");
}
END_TEST

START_TEST(at_least_once_counts_barriers_and_never_blocks) {
  start(KSNAP_ALIGN_AT_LEAST_ONCE, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  DATA(1, 2);
  EXPECT("C 0@0 | P 0@1 | P 1@2");
  BAR(1, 3, 1);
  EXPECT("C 1@3 | SNAP 1 0:1:1 1:4:1");
}
END_TEST

/* A savepoint's barrier (must_align) aligns in the modes that would not:
 * blocked channels buffer, no snapshot at the first barrier, none before
 * the last, and the next checkpoint takes the configured mode again. */
static void savepoint_aligns(ksnap_align_mode_t mode, int64_t now) {
  ksnap_in_t in = {0, 0, 1, KSNAP_REC_BARRIER, 1, 0, 10, NULL, 1};

  start(mode, 1);
  ck_assert_int_eq(ksnap_aligner_push(al, &in, now, &err), 0);
  DATA(0, 1);
  ck_assert_int_eq(ksnap_aligner_tick(al, now, &err), 0);
  EXPECT("C 0@0 | B 0@1");
  in.chan = 1;
  in.offset = 2;
  ck_assert_int_eq(ksnap_aligner_push(al, &in, now, &err), 0);
  EXPECT("C 1@2 | SNAP 1 0:1:1 1:3:1 | P 0@1");
  BAR(0, 3, 2);
  DATA(0, 4);
  if (mode == KSNAP_ALIGN_UNALIGNED)
    EXPECT("C 0@3 | SNAP 2u 0:4:1 1:4:0 | P 0@4");
  else if (mode == KSNAP_ALIGN_AT_LEAST_ONCE)
    EXPECT("C 0@3 | P 0@4");
  else
    EXPECT("C 0@3 | B 0@4");
}

START_TEST(savepoint_is_aligned_in_unaligned_mode) {
  savepoint_aligns(KSNAP_ALIGN_UNALIGNED, 0);
}
END_TEST

START_TEST(savepoint_is_aligned_after_the_alignment_timeout) {
  savepoint_aligns(KSNAP_ALIGN_ALIGNED_TIMEOUT, 1000);
}
END_TEST

START_TEST(savepoint_is_aligned_in_at_least_once_mode) {
  savepoint_aligns(KSNAP_ALIGN_AT_LEAST_ONCE, 0);
}
END_TEST

START_TEST(newer_barrier_subsumes_the_alignment) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  BAR(1, 2, 2); /* up[1] skipped 1 (it was aborted upstream) */
  EXPECT("C 0@0 | B 0@1 | C 1@2 | ABORT 1 (subsumed by checkpoint 2) | "
         "P 0@1");
  ck_assert_int_eq(ksnap_aligner_current(al), 2);
  BAR(0, 3, 2);
  EXPECT("C 0@3 | SNAP 2 0:4:1 1:3:1");
}
END_TEST

START_TEST(cancel_marker_aborts_and_is_forwarded_once) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  CANCEL(1, 2, 1);
  EXPECT("C 0@0 | B 0@1 | C 1@2 | "
         "ABORT 1 (cancellation marker from channel x[0] writer up[1]) | "
         "FWD 1 | P 0@1");
  CANCEL(0, 3, 2); /* a newer one, while idle */
  EXPECT("C 0@3 | "
         "ABORT 2 (cancellation marker from channel x[0] writer up[0]) | "
         "FWD 2");
  CANCEL(1, 4, 2); /* the same checkpoint from another channel */
  BAR(1, 5, 3);
  EXPECT("C 1@4 | C 1@5");
}
END_TEST

/* A writer that declined checkpoint 1 after its barrier 1 went out sends
 * the marker on the channel it blocked: the alignment ends at once (not
 * buffered behind the barrier), the buffered records come first, the
 * marker is forwarded; a second marker of 1 there is refused. */
START_TEST(cancel_after_the_barrier_of_its_channel_ends_the_alignment) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  CANCEL(0, 2, 1);
  EXPECT("C 0@0 | B 0@1 | C 0@2 | "
         "ABORT 1 (cancellation marker from channel x[0] writer up[0]) | "
         "FWD 1 | P 0@1");
  ck_assert_int_eq(ksnap_aligner_current(al), 0);
  ck_assert_int_eq(push(0, 3, 1, KSNAP_REC_CANCEL, 1, 0), KSNAP_ERR_STATE);
  BAR(1, 3, 1); /* the other writer's barrier 1 comes late: stale */
  DATA(1, 4);
  EXPECT("C 1@3 | P 1@4");
}
END_TEST

/* The marker of a checkpoint this task already aligned (its barrier N
 * went downstream) changes nothing and is not forwarded; a marker of a
 * checkpoint below the channel's last barrier is refused. */
START_TEST(cancel_after_a_completed_alignment_is_ignored) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  BAR(1, 1, 1);
  EXPECT("C 0@0 | C 1@1 | SNAP 1 0:1:1 1:2:1");
  CANCEL(0, 2, 1);
  EXPECT("C 0@2");
  BAR(1, 3, 2);
  ck_assert_int_eq(push(1, 4, 1, KSNAP_REC_CANCEL, 1, 0), KSNAP_ERR_STATE);
  CANCEL(1, 4, 2);
  EXPECT("C 1@3 | C 1@4 | "
         "ABORT 2 (cancellation marker from channel x[0] writer up[1]) | "
         "FWD 2");
}
END_TEST

START_TEST(cancel_of_a_newer_checkpoint_subsumes_the_alignment) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  CANCEL(1, 1, 2);
  BAR(1, 2, 3);
  EXPECT("C 0@0 | C 1@1 | ABORT 1 (subsumed by cancelled checkpoint 2) | "
         "ABORT 2 (cancellation marker from channel x[0] writer up[1]) | "
         "FWD 2 | C 1@2");
  ck_assert_int_eq(ksnap_aligner_current(al), 3);
}
END_TEST

START_TEST(finished_input_counts_as_aligned) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(1, 1);
  END(1, 2);
  EXPECT("C 0@0 | P 1@1 | C 1@2 | SNAP 1 0:1:1 1:3:1f");
  BAR(0, 3, 2); /* alone now: aligned at once */
  EXPECT("C 0@3 | SNAP 2 0:4:1 1:3:1f");
  ck_assert_int_eq(push(1, 4, 1, KSNAP_REC_DATA, 0, 0), KSNAP_ERR_STATE);
  ck_assert_str_eq(err.msg, "record at offset 4 on channel x[0] writer up[1]: "
                            "after the end of input");
}
END_TEST

START_TEST(every_input_ended_snapshots_on_the_trigger) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  DATA(0, 0);
  END(0, 1);
  ck_assert_int_eq(ksnap_aligner_ended(al), 0);
  ck_assert_int_eq(ksnap_aligner_trigger(al, 1, 0, 0, &err), 0);
  EXPECT("P 0@0 | C 0@1"); /* up[1] is open: its barrier decides */
  DATA(1, 2);
  END(1, 3); /* the TRIGGER came first: the last end takes the snapshot */
  EXPECT("P 1@2 | C 1@3 | SNAP 1 0:2:1f 1:4:1f");
  ck_assert_int_eq(ksnap_aligner_ended(al), 1);
  ck_assert_int_eq(ksnap_aligner_trigger(al, 1, 0, 0, &err), 0);
  EXPECT(""); /* taken once */
  ck_assert_int_eq(ksnap_aligner_abort(al, 2, "aborted", 0, &err), 0);
  ck_assert_int_eq(ksnap_aligner_trigger(al, 2, 0, 0, &err), 0);
  EXPECT(""); /* aborted before it reached the task */
  ck_assert_int_eq(ksnap_aligner_trigger(al, 3, 0, 0, &err), 0);
  EXPECT("SNAP 3 0:2:1f 1:4:1f"); /* and every later one at once */
}
END_TEST

START_TEST(every_pending_trigger_gets_its_snapshot_at_the_end) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  ck_assert_int_eq(ksnap_aligner_trigger(al, 1, 0, 0, &err), 0); /* savepoint */
  ck_assert_int_eq(ksnap_aligner_trigger(al, 2, 0, 0, &err), 0);
  ck_assert_int_eq(ksnap_aligner_trigger(al, 3, 0, 0, &err), 0);
  ck_assert_int_eq(ksnap_aligner_abort(al, 2, "aborted", 0, &err), 0);
  END(0, 0);
  END(1, 1);
  EXPECT("C 0@0 | C 1@1 | SNAP 1 0:1:1f 1:2:1f | SNAP 3 0:1:1f 1:2:1f");
}
END_TEST

START_TEST(zombie_after_the_end_is_skipped) {
  ksnap_chan_pos_t pos[2] = {{0, 0, 1, 0}, {1, 0, 1, 0}};

  make_gate(1);
  memset(&conf, 0, sizeof(conf));
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 2, 1, 1, pos, 2, &err),
                   0);
  al = ksnap_aligner_new(gate, &acc, &conf);
  ck_assert_int_eq(push(0, 0, 2, KSNAP_REC_END, 0, 0), 0);
  /* generation 1's writer delivered late (its restored self ended) */
  ck_assert_int_eq(push(0, 1, 1, KSNAP_REC_DATA, 0, 0), 0);
  ck_assert_int_eq(push(0, 2, 1, KSNAP_REC_END, 0, 0), 0);
  EXPECT("C 0@0 | S 0@1:SKIP_PASSED | S 0@2:SKIP_OLD_BARRIER");
  ck_assert_int_eq(push(0, 3, 2, KSNAP_REC_DATA, 0, 0), KSNAP_ERR_STATE);
  ck_assert_str_eq(err.msg, "record at offset 3 on channel x[0] writer up[0]: "
                            "after the end of input");
}
END_TEST

START_TEST(coordinator_abort_releases_and_ignores_late_barriers) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  ck_assert_int_eq(ksnap_aligner_abort(al, 1, "checkpoint timeout", 5, &err),
                   0);
  EXPECT("C 0@0 | B 0@1 | ABORT 1 (checkpoint timeout) | P 0@1");
  ck_assert_int_eq(ksnap_aligner_abort(al, 3, "declined", 5, &err), 0);
  BAR(1, 2, 1);
  BAR(1, 3, 3); /* aborted before its barriers came */
  DATA(1, 4);
  EXPECT("C 1@2 | C 1@3 | P 1@4");
}
END_TEST

START_TEST(illegal_input_is_refused_and_changes_nothing) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 5, 2);
  EXPECT("C 0@5");
  ck_assert_int_eq(push(7, 6, 1, KSNAP_REC_DATA, 0, 0), KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(err.msg, "record at offset 6 on channel ?: unknown channel");
  ck_assert_int_eq(push(1, 4, 1, KSNAP_REC_DATA, 0, 0), KSNAP_ERR_STATE);
  ck_assert_str_eq(err.msg, "record at offset 4 on channel x[0] writer up[1]: "
                            "offset below the partition's next offset 6");
  BAR(1, 6, 1); /* stale for the task, legal for this channel */
  ck_assert_int_eq(push(1, 7, 1, KSNAP_REC_BARRIER, 1, 0), KSNAP_ERR_STATE);
  ck_assert_str_eq(err.msg, "record at offset 7 on channel x[0] writer up[1]: "
                            "checkpoint id 1 not above the channel's "
                            "previous 1");
  EXPECT("C 1@6");
  ck_assert_int_eq(ksnap_aligner_current(al), 2);
  BAR(1, 7, 2);
  EXPECT("C 1@7 | SNAP 2 0:6:1 1:8:1");
}
END_TEST

START_TEST(acceptance_rule_runs_before_alignment) {
  ksnap_chan_pos_t pos[2] = {{0, 4, 0, 0}, {1, 2, 1, 0}};

  make_gate(1);
  memset(&conf, 0, sizeof(conf));
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 3, 1, 1, pos, 2, &err),
                   0);
  al = ksnap_aligner_new(gate, &acc, &conf);
  ck_assert_int_eq(push(1, 2, 1, KSNAP_REC_DATA, 0, 0), 0); /* passed */
  ck_assert_int_eq(push(0, 3, 1, KSNAP_REC_DATA, 0, 0), 0); /* < off */
  ck_assert_int_eq(push(0, 4, 1, KSNAP_REC_DATA, 0, 0), 0); /* replayed */
  ck_assert_int_eq(push(0, 5, 2, KSNAP_REC_DATA, 0, 0), 0); /* between */
  ck_assert_int_eq(push(0, 6, 1, KSNAP_REC_BARRIER, 1, 0), 0);
  ck_assert_int_eq(push(0, 7, 1, KSNAP_REC_DATA, 0, 0), 0);
  ck_assert_int_eq(push(0, 8, 3, KSNAP_REC_DATA, 0, 0), 0);
  EXPECT("S 1@2:SKIP_PASSED | S 0@3:SKIP_BEFORE_OFF | P 0@4 | "
         "S 0@5:SKIP_OLD_GEN | C 0@6 | S 0@7:SKIP_PASSED | P 0@8");
}
END_TEST

START_TEST(unaligned_waits_for_restore_catch_up) {
  /* Restored from 1 (gen 1) in gen 2: x[1]'s up[1] has not passed its
   * barrier 1. An unaligned snapshot 2 now would lose its gen-1 records
   * from offset 3 on, so checkpoint 2 stays aligned until it passes. */
  ksnap_chan_pos_t pos[4] = {
      {0, 5, 1, 0}, {1, 5, 1, 0}, {2, 3, 1, 0}, {3, 3, 0, 0}};

  make_gate(2);
  memset(&conf, 0, sizeof(conf));
  conf.mode = KSNAP_ALIGN_UNALIGNED;
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 2, 1, 1, pos, 4, &err),
                   0);
  al = ksnap_aligner_new(gate, &acc, &conf);
  ck_assert_int_eq(push(0, 5, 2, KSNAP_REC_BARRIER, 2, 0), 0);
  ck_assert_int_eq(push(0, 6, 2, KSNAP_REC_DATA, 0, 0), 0);
  EXPECT("C 0@5 | B 0@6");
  ck_assert_int_eq(push(3, 3, 1, KSNAP_REC_DATA, 0, 0), 0);
  ck_assert_int_eq(push(3, 4, 1, KSNAP_REC_BARRIER, 1, 0), 0);
  EXPECT("P 3@3 | C 3@4 | SNAP 2u 0:6:1 1:7:0 2:5:0 3:5:0 | P 0@6");
}
END_TEST

/* Restored from 1 (gen 1) in gen 2; x[1]'s up[1] still replays gen 1. */
static void restore_with_catch_up(ksnap_align_mode_t mode, size_t max) {
  ksnap_chan_pos_t pos[4] = {
      {0, 5, 1, 0}, {1, 5, 1, 0}, {2, 3, 1, 0}, {3, 3, 0, 0}};

  make_gate(2);
  memset(&conf, 0, sizeof(conf));
  conf.mode = mode;
  conf.timeout_ms = 100;
  conf.max_buffered_bytes = max;
  ck_assert_int_eq(ksnap_accept_restore(&acc, gate, 2, 1, 1, pos, 4, &err),
                   0);
  al = ksnap_aligner_new(gate, &acc, &conf);
}

START_TEST(timeout_switch_waits_for_restore_catch_up) {
  restore_with_catch_up(KSNAP_ALIGN_ALIGNED_TIMEOUT, 0);
  ck_assert_int_eq(push(0, 5, 2, KSNAP_REC_BARRIER, 2, 10), 0);
  ck_assert_int_eq(ksnap_aligner_tick(al, 200, &err), 0); /* due, but... */
  EXPECT("C 0@5");
  ck_assert_int_eq(push(3, 3, 1, KSNAP_REC_DATA, 0, 201), 0);
  ck_assert_int_eq(push(3, 4, 1, KSNAP_REC_BARRIER, 1, 202), 0);
  EXPECT("P 3@3 | C 3@4 | SNAP 2u 0:6:1 1:6:0 2:5:0 3:5:0");
}
END_TEST

START_TEST(buffer_full_during_catch_up_declines) {
  restore_with_catch_up(KSNAP_ALIGN_UNALIGNED, 15);
  ck_assert_int_eq(push(0, 5, 2, KSNAP_REC_BARRIER, 2, 0), 0);
  ck_assert_int_eq(push(0, 6, 2, KSNAP_REC_DATA, 0, 0), 0);
  ck_assert_int_eq(push(0, 7, 2, KSNAP_REC_DATA, 0, 0), 0);
  EXPECT("C 0@5 | B 0@6 | B 0@7 | "
         "ABORT 2 (alignment buffer full: 20 bytes > max 15) | "
         "P 0@6 | P 0@7");
}
END_TEST

static void start_early(void) {
  start(KSNAP_ALIGN_UNALIGNED, 2);
  conf.snapshot_on_trigger = 1;
  restart();
}

START_TEST(trigger_first_snapshots_at_the_read_positions) {
  ksnap_action_t act;
  int found = 0;

  start_early();
  DATA(0, 0);
  DATA(2, 0);
  EXPECT("P 0@0 | P 2@0");
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 1, 0, 0, 5, &err), 0);
  while (ksnap_aligner_pop(al, &act))
    if (act.kind == KSNAP_ACT_SNAPSHOT) {
      found = 1;
      ck_assert_int_eq(act.id, 1);
      ck_assert_int_eq(act.unaligned_reason, KSNAP_UNALIGNED_TRIGGER);
      for (int32_t c = 0; c < 4; c++) { /* every channel open, not passed */
        ck_assert_int_eq(act.pos[c].off, 1);
        ck_assert_int_eq(act.pos[c].passed, 0);
      }
    }
  ck_assert_int_eq(found, 1);
  BAR(0, 1, 1); /* its barriers are stale now: consumed, nothing blocks */
  DATA(0, 2);
  EXPECT("C 0@1 | P 0@2");
}
END_TEST

START_TEST(trigger_snapshot_is_off_in_aligned_mode_and_for_savepoints) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  conf.snapshot_on_trigger = 1;
  restart();
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 1, 0, 0, 0, &err), 0);
  EXPECT("");
  teardown();
  start_early();
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 1, 0, 1, 0, &err), 0);
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 2, 0, 0, 0, &err), 0);
  EXPECT(""); /* the savepoint first, by its barriers; 2 waits for it */
  teardown();
  start(KSNAP_ALIGN_UNALIGNED, 1); /* the option off */
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 1, 0, 0, 0, &err), 0);
  EXPECT("");
}
END_TEST

START_TEST(trigger_waits_for_restore_catch_up) {
  /* x[1]'s up[1] still replays gen 1 up to barrier 1: a snapshot now
   * would lose those records; the TRIGGER waits, then fires */
  restore_with_catch_up(KSNAP_ALIGN_UNALIGNED, 0);
  conf.snapshot_on_trigger = 1;
  restart();
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 2, 0, 0, 0, &err), 0);
  EXPECT("");
  ck_assert_int_eq(push(3, 3, 1, KSNAP_REC_DATA, 0, 1), 0);
  ck_assert_int_eq(push(3, 4, 1, KSNAP_REC_BARRIER, 1, 2), 0);
  EXPECT("P 3@3 | C 3@4 | SNAP 2u 0:5:0 1:5:0 2:5:0 3:5:0");
}
END_TEST

START_TEST(barrier_before_catch_up_takes_the_checkpoint_first) {
  restore_with_catch_up(KSNAP_ALIGN_UNALIGNED, 0);
  conf.snapshot_on_trigger = 1;
  restart();
  ck_assert_int_eq(ksnap_aligner_trigger_opt(al, 2, 0, 0, 0, &err), 0);
  ck_assert_int_eq(push(0, 5, 2, KSNAP_REC_BARRIER, 2, 1), 0);
  EXPECT("C 0@5"); /* aligned until catch-up, as without the option */
  ck_assert_int_eq(push(3, 3, 1, KSNAP_REC_BARRIER, 1, 2), 0);
  EXPECT("C 3@3 | SNAP 2u 0:6:1 1:6:0 2:4:0 3:4:0"); /* once, by the barrier */
  ck_assert_int_eq(ksnap_aligner_tick(al, 3, &err), 0);
  EXPECT("");
}
END_TEST

START_TEST(every_record_comes_back_once_buffered_ones_at_destroy) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR(0, 0, 1);
  DATA(0, 1);
  DATA(0, 2);
  EXPECT("C 0@0 | B 0@1 | B 0@2");
  ksnap_aligner_destroy(al);
  al = NULL;
  ck_assert_int_eq(nfreed, 2);
}
END_TEST

START_TEST(snapshot_reports_alignment_timings) {
  ksnap_action_t act;
  int found = 0;

  start(KSNAP_ALIGN_ALIGNED, 1);
  BAR_AT(0, 0, 1, 30); /* triggered at 0 (push() sends trigger ts 0) */
  DATA(0, 1);
  DATA(0, 2);
  BAR_AT(1, 3, 1, 45);
  while (ksnap_aligner_pop(al, &act))
    if (act.kind == KSNAP_ACT_SNAPSHOT) {
      found = 1;
      ck_assert_int_eq(act.start_delay_ms, 30);
      ck_assert_int_eq(act.align_ms, 15);
      ck_assert_uint_eq(act.bytes_buffered, 20);
      ck_assert_int_eq(act.unaligned, 0);
    }
  ck_assert_int_eq(found, 1);
}
END_TEST

static char logbuf[2048];
static void capture(void *opaque, int level, const char *fac,
                    const char *msg) {
  size_t len = strlen(logbuf);
  (void)opaque;
  (void)level;
  snprintf(logbuf + len, sizeof(logbuf) - len, "%s|%s\n", fac, msg);
}

START_TEST(logs_use_the_seeds_words) {
  start(KSNAP_ALIGN_ALIGNED, 1);
  logbuf[0] = '\0';
  ksnap_log_set_callback(capture, NULL);
  ksnap_log_set_debug(KSNAP_DBG_BARRIER);
  ksnap_log_set_level(KSNAP_LOG_DEBUG);
  BAR_AT(0, 0, 1, 1000);
  BAR_AT(1, 1, 1, 1007);
  ck_assert_int_eq(ksnap_aligner_abort(al, 2, "S3 upload failed", 0, &err),
                   0);
  BAR_AT(0, 2, 3, 2000);
  ck_assert_int_eq(ksnap_aligner_abort(al, 3, "S3 upload failed", 0, &err),
                   0);
  ksnap_log_set_callback(NULL, NULL);
  ck_assert_str_eq(logbuf,
      "ALIGN|Received barrier for checkpoint 1 from channel x[0] writer up[0]\n"
      "ALIGN|Received barrier for checkpoint 1 from channel x[0] writer up[1]\n"
      "ALIGN|Checkpoint 1 aligned in 7 ms\n"
      "ALIGN|Received barrier for checkpoint 3 from channel x[0] writer up[0]\n"
      "ALIGN|Declining checkpoint 3: S3 upload failed\n");
}
END_TEST

int main(void) {
  Suite *s = suite_create("aligner");
  TCase *tc = tcase_create("rules");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, aligned_blocks_buffers_pauses_and_releases_in_order);
  tcase_add_test(tc, savepoint_is_aligned_in_unaligned_mode);
  tcase_add_test(tc, savepoint_is_aligned_after_the_alignment_timeout);
  tcase_add_test(tc, savepoint_is_aligned_in_at_least_once_mode);
  tcase_add_test(tc, aligned_pauses_a_partition_only_when_all_its_channels_block);
  tcase_add_test(tc, two_inputs_with_different_parallelism_all_align);
  tcase_add_test(tc, released_barrier_of_the_next_checkpoint_blocks_again);
  tcase_add_test(tc, buffer_full_switches_an_aligned_checkpoint_to_unaligned);
  tcase_add_test(tc, snapshot_reports_the_longest_partition_pause);
  tcase_add_test(tc, buffer_full_switches_to_unaligned_when_allowed);
  tcase_add_test(tc, unaligned_snapshots_at_the_first_barrier);
  tcase_add_test(tc, timeout_switches_an_alignment_to_unaligned);
  tcase_add_test(tc, late_first_barrier_switches_at_once);
  tcase_add_test(tc, at_least_once_counts_barriers_and_never_blocks);
  tcase_add_test(tc, newer_barrier_subsumes_the_alignment);
  tcase_add_test(tc, cancel_marker_aborts_and_is_forwarded_once);
  tcase_add_test(tc, cancel_after_the_barrier_of_its_channel_ends_the_alignment);
  tcase_add_test(tc, cancel_after_a_completed_alignment_is_ignored);
  tcase_add_test(tc, cancel_of_a_newer_checkpoint_subsumes_the_alignment);
  tcase_add_test(tc, finished_input_counts_as_aligned);
  tcase_add_test(tc, every_input_ended_snapshots_on_the_trigger);
  tcase_add_test(tc, every_pending_trigger_gets_its_snapshot_at_the_end);
  tcase_add_test(tc, zombie_after_the_end_is_skipped);
  tcase_add_test(tc, coordinator_abort_releases_and_ignores_late_barriers);
  tcase_add_test(tc, illegal_input_is_refused_and_changes_nothing);
  tcase_add_test(tc, acceptance_rule_runs_before_alignment);
  tcase_add_test(tc, unaligned_waits_for_restore_catch_up);
  tcase_add_test(tc, trigger_first_snapshots_at_the_read_positions);
  tcase_add_test(tc, trigger_snapshot_is_off_in_aligned_mode_and_for_savepoints);
  tcase_add_test(tc, trigger_waits_for_restore_catch_up);
  tcase_add_test(tc, barrier_before_catch_up_takes_the_checkpoint_first);
  tcase_add_test(tc, timeout_switch_waits_for_restore_catch_up);
  tcase_add_test(tc, buffer_full_during_catch_up_declines);
  tcase_add_test(tc, every_record_comes_back_once_buffered_ones_at_destroy);
  tcase_add_test(tc, snapshot_reports_alignment_timings);
  tcase_add_test(tc, logs_use_the_seeds_words);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
