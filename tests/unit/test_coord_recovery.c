/* The coordinator state machine's recovery from the control topic (ids,
 * watched tasks, the durable counter) and retention of completed
 * checkpoints (coordinator/src/state_machine/coord_setup.c, coord_retain.c).
 * Fixture: coord_fixture.h (tasks src[0], src[1], snk[0]). */
#include "coord_fixture.h"

/* -------------------------------------------------- coordinator recovery */

static void replay(ksnap_control_type_t type, int64_t id, int64_t gen,
                   bool savepoint) {
  ksnap_control_record_t rec;

  memset(&rec, 0, sizeof(rec));
  rec.type = type;
  switch (type) {
  case KSNAP_CONTROL_TRIGGER:
    rec.u.trigger = (ksnap_trigger_t){id, 0, {KSNAP_CKPT_ALIGNED, savepoint, false},
                                      gen};
    break;
  case KSNAP_CONTROL_COMPLETE:
    rec.u.complete = (ksnap_complete_t){id, gen, (char *)"m"};
    break;
  case KSNAP_CONTROL_ABORT:
    rec.u.abort = (ksnap_abort_t){id, gen, (char *)"r"};
    break;
  case KSNAP_CONTROL_RESTORE:
    rec.u.restore = (ksnap_restore_t){gen, id, NULL, NULL, 0};
    break;
  case KSNAP_CONTROL_ASSIGN:
  case KSNAP_CONTROL_MEMBER:
    ck_abort_msg("replay() takes no ASSIGN or MEMBER");
    break;
  case KSNAP_CONTROL_JOB_FAILED:
    rec.u.job_failed = (ksnap_job_failed_t){gen, 0, (char *)"poisoned"};
    break;
  case KSNAP_CONTROL_JOB_STOPPED:
    rec.u.job_stopped = (ksnap_job_stopped_t){gen, 0, id, (char *)"u"};
    break;
  case KSNAP_CONTROL_JOB_FINISHED:
    rec.u.job_finished = (ksnap_job_finished_t){gen, 0, id};
    break;
  }
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
}

START_TEST(restart_from_control_history_never_reuses_ids) {
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  replay(KSNAP_CONTROL_TRIGGER, 1, 0, false);
  replay(KSNAP_CONTROL_COMPLETE, 1, 0, false);
  replay(KSNAP_CONTROL_TRIGGER, 2, 0, false);
  replay(KSNAP_CONTROL_ABORT, 2, 0, false);
  replay(KSNAP_CONTROL_TRIGGER, 3, 0, true);
  replay(KSNAP_CONTROL_COMPLETE, 3, 0, false);
  replay(KSNAP_CONTROL_TRIGGER, 4, 0, false);
  replay(KSNAP_CONTROL_RESTORE, 3, 1, false);
  replay(KSNAP_CONTROL_TRIGGER, 5, 1, false);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
  ck_assert_int_eq(ksnap_coord_sm_latest_completed(sm), 3);
  ck_assert_int_eq(ksnap_coord_sm_max_id(sm), 5);
  /* 5 was left pending by the dead coordinator; 4 died with generation 0 */
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 5)->text,
                   "coordinator restarted");
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_ABORT), 1);
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, NULL), KSNAP_ERR_STATE);
  mark();
  /* running tasks are not restarted: their heartbeats at G re-register */
  for (int t = 0; t < NTASKS; t++)
    hb(10100, t, 1);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  tick(11100);
  expect(KSNAP_COORD_ACT_TRIGGER, 6);
  ck_assert_int_eq(find_act(KSNAP_COORD_ACT_TRIGGER, seen)->generation, 1);
}
END_TEST

START_TEST(restart_watches_tasks_that_never_return) {
  ksnap_error_t error;

  smc.heartbeat_timeout_ms = 5000;
  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  replay(KSNAP_CONTROL_TRIGGER, 1, 0, false);
  replay(KSNAP_CONTROL_COMPLETE, 1, 0, false);
  ksnap_coord_sm_start(sm, 0);
  drain();
  hb(1000, 0, 0);
  hb(1000, 1, 0);
  mark();
  tick(5000); /* snk[0] never heard of since the restart */
  expect(KSNAP_COORD_ACT_SEND_RESTORE, 1);
}
END_TEST

START_TEST(durable_counter_floor) {
  smc.max_id_seen = 41;
  running();
  tick(1000);
  expect(KSNAP_COORD_ACT_TRIGGER, 42);
}
END_TEST

/* ------------------------------------------------------------- retention */

START_TEST(retention_keeps_uncommitted_and_savepoints) {
  int64_t sp = 0;

  smc.max_concurrent = 3;
  running();
  for (int64_t id = 1; id <= 2; id++) {
    tick(id * 1000);
    ack_all(id * 1000 + 100, id, 0);
    finish(id * 1000 + 200, id);
  }
  ASSERT_NONE(KSNAP_COORD_ACT_RETIRE); /* the sink committed nothing */
  ck_assert_int_eq(committed(2300, 1), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_fully_committed(sm), 1);
  ASSERT_NONE(KSNAP_COORD_ACT_RETIRE); /* a repair may start from 1 */
  ck_assert_int_eq(committed(2400, 2), KSNAP_ERR_OK);
  expect(KSNAP_COORD_ACT_RETIRE, 1);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_RETIRE), 1);
  mark();
  ck_assert_int_eq(ksnap_coord_sm_request_savepoint(sm, 2500, false, &sp),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(sp, 3);
  ack_all(2600, 3, 0);
  finish(2700, 3);
  tick(3000);
  ack_all(3100, 4, 0);
  finish(3200, 4);
  ck_assert_int_eq(committed(3300, 4), KSNAP_ERR_OK);
  expect(KSNAP_COORD_ACT_RETIRE, 2);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_RETIRE), 1); /* never 3 */
  /* COMMITTED from a task that is not a sink is refused */
  {
    ksnap_committed_t c = {4, tid(0), 0};
    ck_assert_int_eq(ksnap_coord_sm_committed(sm, 3400, &c), KSNAP_ERR_STATE);
  }
}
END_TEST

static void complete_one(int64_t now, int64_t id) {
  tick(now);
  ack_all(now + 100, id, ksnap_coord_sm_generation(sm));
  finish(now + 200, id);
}

START_TEST(retention_keeps_what_incremental_checkpoints_reuse) {
  running();
  complete_one(1000, 1);
  ack_ref = 1; /* checkpoint 2 reuses chk-1's objects */
  complete_one(2000, 2);
  ack_ref = 0;
  ck_assert_int_eq(committed(2300, 2), KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_RETIRE);
  complete_one(3000, 3);
  ck_assert_int_eq(committed(3300, 3), KSNAP_ERR_OK);
  /* 2 goes, and with it the last user of 1 */
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_RETIRE), 2);
  ck_assert(expect(KSNAP_COORD_ACT_RETIRE, 2) <
            find_act(KSNAP_COORD_ACT_RETIRE,
                     expect(KSNAP_COORD_ACT_RETIRE, 2) - acts + 1));
  ck_assert_int_eq(find_act(KSNAP_COORD_ACT_RETIRE,
                            expect(KSNAP_COORD_ACT_RETIRE, 2) - acts + 1)
                       ->checkpoint_id,
                   1);
}
END_TEST

START_TEST(retention_after_restart_waits_for_metadata) {
  ksnap_checkpoint_meta_t meta;
  ksnap_task_snapshot_t task;
  ksnap_state_handle_t handle = {(char *)"s3://b/j/chk-3/a", 1,
                                 (char *)"crc32c:00000000", 0, 127};
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  for (int64_t id = 1; id <= 3; id++) {
    replay(KSNAP_CONTROL_TRIGGER, id, 0, false);
    replay(KSNAP_CONTROL_COMPLETE, id, 0, false);
  }
  ksnap_coord_sm_start(sm, 0);
  for (int t = 0; t < NTASKS; t++)
    hb(100, t, 0);
  mark();
  ck_assert_int_eq(committed(200, 3), KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_RETIRE); /* 3 might reuse 1 or 2 */
  memset(&meta, 0, sizeof(meta));
  memset(&task, 0, sizeof(task));
  task.handles = &handle;
  task.handle_cnt = 1;
  meta.checkpoint_id = 3;
  meta.tasks = &task;
  meta.task_cnt = 1;
  ck_assert_int_eq(ksnap_coord_sm_replay_metadata(sm, &meta), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_RETIRE), 2);
  meta.checkpoint_id = 1; /* retired now */
  ck_assert_int_eq(ksnap_coord_sm_replay_metadata(sm, &meta),
                   KSNAP_ERR_NOT_FOUND);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_recovery");
  TCase *tc = tcase_create("coord_recovery");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, restart_from_control_history_never_reuses_ids);
  tcase_add_test(tc, restart_watches_tasks_that_never_return);
  tcase_add_test(tc, durable_counter_floor);
  tcase_add_test(tc, retention_keeps_uncommitted_and_savepoints);
  tcase_add_test(tc, retention_keeps_what_incremental_checkpoints_reuse);
  tcase_add_test(tc, retention_after_restart_waits_for_metadata);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
