/* The checkpoint coordinator's state machine (coordinator/src/state_machine/coord_sm.h), with
 * an injected clock: one test case per behaviour (recovery and retention:
 * test_coord_recovery.c; task ownership: test_coord_owner.c; a randomized
 * run checking the invariants: test_coord_random.c).
 *
 * Job: src (2 tasks, source:in) -> snk (1 task, sink:out): tasks src[0],
 * src[1], snk[0]; snk[0] is the only sink task. */
#include "coord_fixture.h"

/* ------------------------------------------------------------ triggering */

START_TEST(periodic_trigger_every_interval) {
  running();
  tick(999);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  tick(1000);
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_TRIGGER, 1)->options.mode,
                   KSNAP_CKPT_ALIGNED);
  ASSERT_LOGGED("Triggering checkpoint 1 (type=CHECKPOINT)");
  mark();
  ack_all(1200, 1, 0);
  finish(1300, 1);
  tick(1999);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  tick(2000);
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
}
END_TEST

START_TEST(min_pause_measured_from_last_completion) {
  smc.min_pause_ms = 800;
  running();
  tick(1000);
  ack_all(1400, 1, 0);
  finish(1500, 1);
  mark();
  tick(2000); /* the interval is due, the pause is not over (1500+800) */
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ASSERT_LOGGED("Skipping checkpoint trigger: min-pause of 800 ms since the "
                "last completion not elapsed");
  tick(2299);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  tick(2300);
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
}
END_TEST

START_TEST(max_concurrent_defers_the_trigger) {
  running();
  tick(1000);
  mark();
  tick(2000);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ASSERT_LOGGED("Deferring checkpoint trigger: 1 checkpoints pending "
                "(max-concurrent-checkpoints=1)");
  mark();
  tick(2500);
  ck_assert(!logged("Deferring")); /* said once per deferred trigger */
  ack_all(2600, 1, 0);
  finish(2600, 1);
  tick(2601); /* the deferred trigger fires at once */
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
}
END_TEST

START_TEST(max_concurrent_two_allows_two_pending) {
  smc.max_concurrent = 2;
  running();
  tick(1000);
  tick(2000);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_TRIGGER), 2);
  ck_assert_int_eq(ksnap_coord_sm_pending_cnt(sm), 2);
  mark();
  tick(3000);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ASSERT_LOGGED("Deferring checkpoint trigger: 2 checkpoints pending "
                "(max-concurrent-checkpoints=2)");
}
END_TEST

START_TEST(timeout_expires_checkpoint) {
  smc.timeout_ms = 3000;
  smc.tolerable_failed = 5;
  running();
  tick(1000);
  mark();
  tick(3999);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ABORT);
  tick(4000);
  ASSERT_LOGGED("Checkpoint 1 expired before completing.");
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "expired before completing");
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), -1);
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 1);
  /* a late ACK is refused, logged, harmless */
  mark();
  ck_assert_int_eq(ack(4100, 1, 0, 0), KSNAP_ERR_STATE);
  ASSERT_LOGGED("late message for a checkpoint no longer pending");
}
END_TEST

START_TEST(decline_aborts_checkpoint) {
  smc.tolerable_failed = 5;
  running();
  tick(1000);
  mark();
  ck_assert_int_eq(ack(1100, 1, 0, 0), KSNAP_ERR_OK);
  ck_assert_int_eq(decline(1200, 1, 1, 0, "disk full"), KSNAP_ERR_OK);
  ASSERT_LOGGED("Decline checkpoint 1 by task src[1]: disk full");
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "declined by task src[1]: disk full");
  ASSERT_NONE(KSNAP_COORD_ACT_WRITE_METADATA);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), -1);
}
END_TEST

START_TEST(decline_of_a_failed_task_restores_uncounted) {
  ksnap_decline_t d = {1, tid(2), 0, (char *)"sink fenced", true};

  running(); /* tolerable-failed-checkpoints = 0 */
  tick(1000);
  mark();
  ck_assert_int_eq(ksnap_coord_sm_decline(sm, 1100, &d), KSNAP_ERR_OK);
  drain();
  expect(KSNAP_COORD_ACT_SEND_ABORT, 1);
  ASSERT_LOGGED("task snk[0] failed: sink fenced");
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                          KSNAP_CHECKPOINT_NONE)->generation, 1);
  ASSERT_NONE(KSNAP_COORD_ACT_FAIL_JOB);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
}
END_TEST

/* Over the tolerance the job fails over (as Flink's failGlobal); with
 * restart-strategy none that fails it. */
START_TEST(tolerable_failures_exceeded_fails_job) {
  smc.tolerable_failed = 1;
  smc.restart.type = KSNAP_RESTART_NONE;
  running();
  tick(1000);
  decline(1100, 1, 0, 0, "a");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  tick(2000);
  ack_all(2100, 2, 0);
  finish(2200, 2); /* success resets the count */
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 0);
  tick(3000);
  decline(3100, 3, 0, 0, "b");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  mark();
  tick(4000);
  decline(4100, 4, 2, 0, "c");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  ck_assert_str_eq(
      expect(KSNAP_COORD_ACT_FAIL_JOB, KSNAP_CHECKPOINT_NONE)->text,
      "the restart strategy is none (restart-strategy.type); the last "
      "failure: Exceeded checkpoint tolerable failure threshold: 2 "
      "consecutive checkpoint failures "
      "(execution.checkpointing.tolerable-failed-checkpoints=1); the last: "
      "checkpoint 4 declined by task snk[0]: c");
  mark();
  tick(10000); /* FAILED is terminal: nothing more */
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ck_assert_int_eq(reg(10000, 0, 0, "w"), KSNAP_ERR_STATE);
}
END_TEST

START_TEST(job_failure_aborts_pending_checkpoints) {
  smc.max_concurrent = 2;
  smc.restart.type = KSNAP_RESTART_NONE;
  running();
  tick(1000);
  tick(2000);
  mark();
  decline(2100, 1, 0, 0, "x");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  expect(KSNAP_COORD_ACT_SEND_ABORT, 1);
  ck_assert_str_eq(find_act(KSNAP_COORD_ACT_SEND_ABORT,
                            find_act(KSNAP_COORD_ACT_SEND_ABORT, seen) -
                                acts + 1)
                       ->text,
                   "job failed");
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_FAIL_JOB), 1);
  ck_assert_int_eq(ksnap_coord_sm_pending_cnt(sm), 0);
}
END_TEST

/* ------------------------------------------------------------ completion */

START_TEST(completion_needs_all_acks_then_metadata_then_commit) {
  ksnap_buf_t buf;
  ksnap_error_t error;

  running();
  tick(1000);
  mark();
  ck_assert_int_eq(ack(1100, 1, 0, 0), KSNAP_ERR_OK);
  ck_assert_int_eq(ack(1100, 1, 2, 0), KSNAP_ERR_OK);
  ck_assert_int_eq(ack(1100, 1, 2, 0), KSNAP_ERR_STATE); /* duplicate */
  ASSERT_NONE(KSNAP_COORD_ACT_WRITE_METADATA);
  ck_assert_int_eq(ack(1150, 1, 1, 0), KSNAP_ERR_OK);
  expect(KSNAP_COORD_ACT_WRITE_METADATA, 1);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_COMPLETE);
  ck_assert(have_meta);
  ck_assert_str_eq(last_meta.job, "j");
  ck_assert_int_eq(last_meta.checkpoint_id, 1);
  ck_assert_int_eq(last_meta.generation, 0);
  ck_assert_int_eq(last_meta.parent_id, KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(last_meta.task_cnt, NTASKS);
  ck_assert_str_eq(last_meta.tasks[1].task.stage, "src");
  ck_assert_int_eq(last_meta.tasks[1].task.index, 1);
  ck_assert_str_eq(last_meta.tasks[2].handles[0].path, "s3://b/j/chk-1/snk-0");
  /* the codec accepts what the coordinator hands to the driver */
  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_codec_meta_encode(&last_meta, &buf, &error),
                   KSNAP_ERR_OK);
  ksnap_buf_cleanup(&buf);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1),
                   KSNAP_CKPT_WRITING_METADATA);
  ck_assert_int_eq(meta_ok(1200, 1, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_COMPLETE, 1)->generation, 0);
  /* not completed until the COMPLETE record is committed: the decision */
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(commit_ok(1250, 1, NULL), KSNAP_ERR_OK);
  ASSERT_LOGGED("Completed checkpoint 1 (300 bytes in 250 ms)");
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), 1);
  tick(2000);
  ack_all(2100, 2, 0);
  ck_assert_int_eq(last_meta.parent_id, 1);
}
END_TEST

START_TEST(metadata_or_commit_failure_aborts) {
  smc.tolerable_failed = 5;
  running();
  tick(1000);
  ack_all(1100, 1, 0);
  mark();
  ck_assert_int_eq(meta_ok(1200, 1, "PUT chk-1/_metadata: HTTP 500"),
                   KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_COMPLETE);
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "writing its metadata failed: PUT chk-1/_metadata: HTTP "
                   "500");
  tick(2000);
  ack_all(2100, 2, 0);
  ck_assert_int_eq(meta_ok(2200, 2, NULL), KSNAP_ERR_OK);
  mark();
  ck_assert_int_eq(commit_ok(2300, 2, "transaction aborted"), KSNAP_ERR_OK);
  expect(KSNAP_COORD_ACT_SEND_ABORT, 2);
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 2);
}
END_TEST

START_TEST(newer_completion_subsumes_older_pending) {
  smc.max_concurrent = 2;
  running();
  tick(1000);
  tick(2000);
  ack(2100, 1, 0, 0); /* 1 stays incomplete */
  ack_all(2200, 2, 0);
  mark();
  finish(2300, 2);
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "subsumed by checkpoint 2");
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 0); /* not a failure */
  ck_assert_int_eq(ksnap_coord_sm_pending_cnt(sm), 0);
}
END_TEST

START_TEST(finalization_is_one_at_a_time_in_id_order) {
  smc.max_concurrent = 2;
  running();
  tick(1000);
  tick(2000);
  mark();
  ack_all(2100, 2, 0);
  ack_all(2100, 1, 0);
  /* 2 was fully acked first and is being finalized; 1 waits */
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_WRITE_METADATA), 1);
  expect(KSNAP_COORD_ACT_WRITE_METADATA, 2);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), KSNAP_CKPT_ACKED);
  finish(2200, 2);
  /* ... and is subsumed by 2's completion */
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "subsumed by checkpoint 2");
}
END_TEST

/* --------------------------------------------------------------- restore */

START_TEST(old_generation_acks_ignored) {
  running();
  tick(1000);
  ack_all(1100, 1, 0);
  finish(1200, 1);
  ck_assert_int_eq(ksnap_coord_sm_request_restore(sm, 1500, "operator"),
                   KSNAP_ERR_OK);
  reg_all(1600, 1);
  mark();
  tick(2600);
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
  mark();
  ck_assert_int_eq(ack(2700, 2, 0, 0), KSNAP_ERR_OK); /* stale: ignored */
  ASSERT_LOGGED("ACK of checkpoint 2 by task src[0] from old generation 0 "
                "ignored (current 1)");
  ack(2700, 2, 1, 1);
  ack(2700, 2, 2, 1);
  ASSERT_NONE(KSNAP_COORD_ACT_WRITE_METADATA); /* src[0] missing at G=1 */
  ack(2800, 2, 0, 1);
  expect(KSNAP_COORD_ACT_WRITE_METADATA, 2);
  ck_assert_int_eq(last_meta.generation, 1);
}
END_TEST

START_TEST(missed_heartbeat_restores_with_generation_bump) {
  smc.heartbeat_timeout_ms = 5000;
  running();
  tick(1000); /* checkpoint 1 pending */
  hb(4000, 0, 0);
  hb(4000, 2, 0);
  mark();
  tick(4999);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  tick(5000); /* src[1] last seen at 0 */
  ASSERT_LOGGED("task src[1] sent no heartbeat for 5000 ms "
                "(heartbeat.timeout=5000 ms)");
  {
    ksnap_coord_action_t *abort = expect(KSNAP_COORD_ACT_SEND_ABORT, 1);
    ksnap_coord_action_t *rest =
        expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
    ck_assert(abort < rest); /* aborts go out first */
    ck_assert_int_eq(abort->generation, 0);
    ck_assert_int_eq(rest->generation, 1);
  }
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
  ck_assert_int_eq(ksnap_coord_sm_pending_cnt(sm), 0);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  /* the silent task is not restored again and again; the others are
   * alive (heartbeats of the old generation while they restore) */
  mark();
  hb(9000, 0, 0);
  hb(9000, 2, 0);
  tick(11000);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ASSERT_LOGGED("Waiting for 3 of 3 tasks to register in generation 1: "
                "src[0], src[1], snk[0]");
}
END_TEST

START_TEST(fatal_report_restores_from_latest_completed) {
  ksnap_task_id_t t = tid(1);

  running();
  tick(1000);
  ack_all(1100, 1, 0);
  finish(1200, 1);
  tick(2000);
  mark();
  ck_assert_int_eq(ksnap_coord_sm_task_failed(sm, 2100, &t, 0, "segfault"),
                   KSNAP_ERR_OK);
  drain();
  expect(KSNAP_COORD_ACT_SEND_ABORT, 2);
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE, 1)->generation, 1);
  ASSERT_LOGGED("Restoring the job in generation 1 from checkpoint 1: task "
                "src[1] failed: segfault");
  /* a report from the dead generation changes nothing */
  mark();
  ck_assert_int_eq(ksnap_coord_sm_task_failed(sm, 2200, &t, 0, "again"),
                   KSNAP_ERR_OK);
  drain();
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
}
END_TEST

START_TEST(no_trigger_until_all_tasks_reregistered) {
  running();
  ksnap_coord_sm_request_restore(sm, 500, "operator");
  drain();
  mark();
  ck_assert_int_eq(reg(600, 0, 1, "w"), KSNAP_ERR_OK);
  ck_assert_int_eq(reg(600, 1, 0, "w"), KSNAP_ERR_OK); /* old: ignored */
  ck_assert_int_eq(reg(600, 2, 1, "w"), KSNAP_ERR_OK);
  tick(5000);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ck_assert_int_eq(ksnap_coord_sm_request_checkpoint(sm, 5000),
                   KSNAP_ERR_STATE);
  ck_assert_int_eq(reg(5100, 1, 2, "w"), KSNAP_ERR_STATE); /* future G */
  ck_assert_int_eq(reg(5100, 1, 1, "w"), KSNAP_ERR_OK);
  ASSERT_LOGGED("All 3 tasks registered in generation 1: checkpointing "
                "starts");
  tick(6099);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  tick(6100);
  expect(KSNAP_COORD_ACT_TRIGGER, 1);
}
END_TEST

START_TEST(restore_waits_for_complete_in_flight) {
  ksnap_task_id_t t = tid(0);

  running();
  tick(1000);
  ack_all(1100, 1, 0);
  meta_ok(1200, 1, NULL);
  mark();
  ck_assert_int_eq(ksnap_coord_sm_task_failed(sm, 1300, &t, 0, "oom"),
                   KSNAP_ERR_OK);
  drain();
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RESTORE_PENDING);
  ck_assert_int_eq(commit_ok(1400, 1, NULL), KSNAP_ERR_OK);
  /* RESTORE names the checkpoint whose COMPLETE just committed */
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE, 1)->generation, 1);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
}
END_TEST

START_TEST(restore_aborts_metadata_in_flight) {
  running();
  tick(1000);
  ack_all(1100, 1, 0);
  mark();
  ksnap_coord_sm_request_restore(sm, 1150, "operator");
  drain();
  expect(KSNAP_COORD_ACT_SEND_ABORT, 1);
  expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  mark();
  /* the late write result is refused: no COMPLETE of an old generation */
  ck_assert_int_eq(meta_ok(1200, 1, NULL), KSNAP_ERR_STATE);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_COMPLETE);
}
END_TEST

/* --------------------------------------------------- manual, savepoints */

START_TEST(manual_trigger_honours_max_concurrent_not_min_pause) {
  smc.min_pause_ms = 5000;
  running();
  ck_assert_int_eq(ksnap_coord_sm_request_checkpoint(sm, 100), KSNAP_ERR_OK);
  drain();
  expect(KSNAP_COORD_ACT_TRIGGER, 1);
  mark();
  ck_assert_int_eq(ksnap_coord_sm_request_checkpoint(sm, 200), KSNAP_ERR_OK);
  drain();
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ASSERT_LOGGED("Deferring checkpoint trigger");
  ack_all(300, 1, 0);
  finish(300, 1);
  tick(301); /* within min-pause, but a manual request is not periodic */
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
}
END_TEST

START_TEST(savepoint_while_checkpoint_pending) {
  int64_t sp = 0;

  smc.mode = KSNAP_CKPT_UNALIGNED;
  running();
  tick(1000); /* checkpoint 1 pending: the maximum */
  mark();
  ck_assert_int_eq(ksnap_coord_sm_request_savepoint(sm, 1100, false, &sp),
                   KSNAP_ERR_OK);
  drain();
  {
    ksnap_coord_action_t *a = expect(KSNAP_COORD_ACT_TRIGGER, 2);
    ck_assert(a->options.is_savepoint);
    ck_assert_int_eq(a->options.mode, KSNAP_CKPT_ALIGNED); /* always */
  }
  ASSERT_LOGGED("Triggering checkpoint 2 (type=SAVEPOINT)");
  ack_all(1200, 2, 0);
  finish(1300, 2);
  ASSERT_LOGGED("Completed savepoint 2 (300 bytes in 200 ms)");
  /* a completed savepoint subsumes older pending checkpoints too */
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "subsumed by checkpoint 2");
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), 2);
}
END_TEST

START_TEST(savepoint_is_never_subsumed) {
  int64_t sp = 0;

  smc.max_concurrent = 2;
  running();
  ksnap_coord_sm_request_savepoint(sm, 100, false, &sp);
  drain();
  mark();
  tick(1000);
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ack_all(1100, 2, 0);
  finish(1200, 2);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), KSNAP_CKPT_TRIGGERED);
  ack_all(1300, 1, 0);
  finish(1400, 1);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), KSNAP_CKPT_COMPLETED);
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), 2);
}
END_TEST

START_TEST(stop_with_savepoint) {
  int64_t sp = 0;

  smc.tolerable_failed = 3;
  running();
  ck_assert_int_eq(ksnap_coord_sm_request_savepoint(sm, 100, true, &sp),
                   KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_STOPPING);
  tick(5000);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_TRIGGER), 1); /* no periodic */
  /* the savepoint fails: the job keeps running */
  decline(5100, sp, 0, 0, "busy");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 0); /* not counted */
  mark();
  ksnap_coord_sm_request_savepoint(sm, 5200, true, &sp);
  drain();
  ack_all(5300, sp, 0);
  finish(5400, sp);
  expect(KSNAP_COORD_ACT_STOP_JOB, sp);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FINISHED);
  /* FINISHED still hears the sink commit the savepoint: the driver
   * writes JOB_STOPPED once it did */
  ck_assert(!ksnap_coord_sm_all_committed(sm, sp));
  {
    ksnap_committed_t c = {sp, tid(2), 0};
    ck_assert_int_eq(ksnap_coord_sm_committed(sm, 5500, &c), KSNAP_ERR_OK);
  }
  ck_assert(ksnap_coord_sm_all_committed(sm, sp));
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FINISHED);
}
END_TEST

/* ---------------------------------------------------- illegal transitions */

START_TEST(illegal_events_are_refused_and_logged) {
  ksnap_task_id_t ghost = {(char *)"nope", 0};
  ksnap_heartbeat_t h = {ghost, 0, 0, 0, 0, false};
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_tick(sm, 0), KSNAP_ERR_STATE); /* start */
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 0), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 0), KSNAP_ERR_STATE);
  drain();
  reg_all(0, 0);
  tick(1000);
  mark();
  ck_assert_int_eq(ack(1100, 99, 0, 0), KSNAP_ERR_STATE);
  ASSERT_LOGGED("ACK of checkpoint 99 by task src[0] (generation 0) "
                "refused: unknown checkpoint");
  ck_assert_int_eq(meta_ok(1100, 1, NULL), KSNAP_ERR_STATE);
  ASSERT_LOGGED("Metadata result for checkpoint 1 refused: it is not "
                "writing metadata (TRIGGERED)");
  ck_assert_int_eq(commit_ok(1100, 1, NULL), KSNAP_ERR_STATE);
  ck_assert_int_eq(commit_ok(1100, 7, NULL), KSNAP_ERR_STATE);
  ck_assert_int_eq(meta_ok(1100, 7, NULL), KSNAP_ERR_STATE);
  ck_assert_int_eq(decline(1100, 7, 0, 0, "x"), KSNAP_ERR_STATE);
  ck_assert_int_eq(ksnap_coord_sm_heartbeat(sm, 1100, &h),
                   KSNAP_ERR_NOT_FOUND);
  drain();
  ASSERT_LOGGED("HEARTBEAT from unknown task nope[0] ignored");
  {
    ksnap_ack_t a;
    memset(&a, 0, sizeof(a)); /* no stage at all */
    a.checkpoint_id = 1;
    ck_assert_int_eq(ksnap_coord_sm_ack(sm, 1100, &a), KSNAP_ERR_NOT_FOUND);
    drain();
    ASSERT_LOGGED("ACK from unknown task (null)[0] ignored");
  }
  ck_assert_int_eq(ack(1100, 1, 0, 5), KSNAP_ERR_STATE); /* future G */
  ck_assert_int_eq(hb(1100, 0, 5), KSNAP_ERR_STATE);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_COMPLETE);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ABORT);
  ck_assert_int_eq(ksnap_coord_sm_ckpt_state(sm, 1), KSNAP_CKPT_TRIGGERED);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
}
END_TEST

START_TEST(settings_are_checked) {
  ksnap_error_t error;

  smc.max_concurrent = 0;
  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg, "coordinator: max-concurrent-checkpoints must "
                              "be at least 1");
  ck_assert_ptr_null(sm);
}
END_TEST

START_TEST(settings_from_configuration) {
  ksnap_coord_sm_conf_t c;

  ck_assert_int_eq(ksnap_conf_load_string(
                       conf, "more.properties",
                       "execution.checkpointing.interval=2s\n"
                       "execution.checkpointing.min-pause=500ms\n"
                       "execution.checkpointing.max-concurrent-checkpoints=3\n"
                       "execution.checkpointing.tolerable-failed-checkpoints="
                       "4\n"
                       "execution.checkpointing.unaligned.enabled=true\n"
                       "state.checkpoints.num-retained=5\n",
                       NULL, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_conf_load(conf, &c), KSNAP_ERR_OK);
  ck_assert_int_eq(c.interval_ms, 2000);
  ck_assert_int_eq(c.timeout_ms, 600000);
  ck_assert_int_eq(c.min_pause_ms, 500);
  ck_assert_int_eq(c.max_concurrent, 3);
  ck_assert_int_eq(c.tolerable_failed, 4);
  ck_assert_int_eq(c.num_retained, 5);
  ck_assert_int_eq(c.heartbeat_timeout_ms, 10000);
  ck_assert_int_eq(c.mode, KSNAP_CKPT_UNALIGNED);
  ck_assert_int_eq(c.max_id_seen, KSNAP_CHECKPOINT_NONE);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_sm");
  TCase *tc = tcase_create("coord_sm");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, periodic_trigger_every_interval);
  tcase_add_test(tc, min_pause_measured_from_last_completion);
  tcase_add_test(tc, max_concurrent_defers_the_trigger);
  tcase_add_test(tc, max_concurrent_two_allows_two_pending);
  tcase_add_test(tc, timeout_expires_checkpoint);
  tcase_add_test(tc, decline_aborts_checkpoint);
  tcase_add_test(tc, decline_of_a_failed_task_restores_uncounted);
  tcase_add_test(tc, tolerable_failures_exceeded_fails_job);
  tcase_add_test(tc, job_failure_aborts_pending_checkpoints);
  tcase_add_test(tc, completion_needs_all_acks_then_metadata_then_commit);
  tcase_add_test(tc, metadata_or_commit_failure_aborts);
  tcase_add_test(tc, newer_completion_subsumes_older_pending);
  tcase_add_test(tc, finalization_is_one_at_a_time_in_id_order);
  tcase_add_test(tc, old_generation_acks_ignored);
  tcase_add_test(tc, missed_heartbeat_restores_with_generation_bump);
  tcase_add_test(tc, fatal_report_restores_from_latest_completed);
  tcase_add_test(tc, no_trigger_until_all_tasks_reregistered);
  tcase_add_test(tc, restore_waits_for_complete_in_flight);
  tcase_add_test(tc, restore_aborts_metadata_in_flight);
  tcase_add_test(tc, manual_trigger_honours_max_concurrent_not_min_pause);
  tcase_add_test(tc, savepoint_while_checkpoint_pending);
  tcase_add_test(tc, savepoint_is_never_subsumed);
  tcase_add_test(tc, stop_with_savepoint);
  tcase_add_test(tc, illegal_events_are_refused_and_logged);
  tcase_add_test(tc, settings_are_checked);
  tcase_add_test(tc, settings_from_configuration);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
