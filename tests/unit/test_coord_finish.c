/* The coordinator state machine at the end of a bounded job
 * (coord_finish.c, plugin/PROTOCOL.md section 5.9): the final trigger
 * once every task's input ended, the final checkpoint (every task ACKed
 * with input_ended), no trigger after it, FINISHED, and a restore that
 * starts the end again; and a drain (section 5.11): every TRIGGER says
 * drain, the final checkpoint is a savepoint, taken again if it fails,
 * and a coordinator restarted on a drained history drains on. */
#include "coord_fixture.h"

/* An ACK of task @p t for checkpoint @p id, with @p ended. */
static ksnap_err_t ack_e(int64_t now, int64_t id, int t, int64_t gen,
                         bool ended) {
  ksnap_ack_t a;
  ksnap_err_t err;

  memset(&a, 0, sizeof(a));
  a.checkpoint_id = id;
  a.generation = gen;
  a.snapshot.task.stage = strdup(stage_of[t]); /* taken on OK */
  a.snapshot.task.index = index_of[t];
  a.input_ended = ended;
  err = ksnap_coord_sm_ack(sm, now, &a);
  ksnap_task_snapshot_cleanup(&a.snapshot);
  drain();
  return err;
}

static void ack_all_e(int64_t now, int64_t id, int64_t gen, bool ended) {
  for (int t = 0; t < NTASKS; t++)
    ck_assert_int_eq(ack_e(now, id, t, gen, ended), KSNAP_ERR_OK);
}

static void hb_ended(int64_t now, int t, int64_t gen) {
  ksnap_heartbeat_t h = {tid(t), gen, now, 0, 0, true};

  ck_assert_int_eq(ksnap_coord_sm_heartbeat(sm, now, &h), KSNAP_ERR_OK);
  drain();
}

START_TEST(every_task_ended_triggers_the_final_checkpoint_at_once) {
  running();
  tick(1000);
  expect(KSNAP_COORD_ACT_TRIGGER, 1);
  ack_all_e(1100, 1, 0, false);
  finish(1200, 1);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), KSNAP_CHECKPOINT_NONE);
  mark();
  hb_ended(1300, 0, 0);
  hb_ended(1300, 1, 0);
  tick(1301);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER); /* snk[0] has not ended */
  hb_ended(1400, 2, 0);
  tick(1401); /* not at 2000, the next interval */
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ASSERT_LOGGED("Every task's input ended");
  ack_all_e(1500, 2, 0, true);
  finish(1600, 2);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), 2);
  ASSERT_LOGGED("Final checkpoint 2 completed");
  mark();
  tick(5000); /* nothing more to take */
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ck_assert(!ksnap_coord_sm_all_committed(sm, 2));
  ck_assert_int_eq(committed(5100, 2), KSNAP_ERR_OK);
  ck_assert(ksnap_coord_sm_all_committed(sm, 2));
  ck_assert_int_eq(ksnap_coord_sm_job_finished(sm), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FINISHED);
  ASSERT_LOGGED("Job finished with final checkpoint 2");
  ck_assert_int_eq(
      ksnap_coord_stats_summary(ksnap_coord_sm_stats(sm))->finished_id, 2);
}
END_TEST

/* A checkpoint one task took before its finish is not final. */
START_TEST(a_checkpoint_before_one_finish_is_not_final) {
  running();
  tick(1000);
  ck_assert_int_eq(ack_e(1100, 1, 0, 0, true), KSNAP_ERR_OK);
  ck_assert_int_eq(ack_e(1100, 1, 1, 0, true), KSNAP_ERR_OK);
  ck_assert_int_eq(ack_e(1100, 1, 2, 0, false), KSNAP_ERR_OK);
  finish(1200, 1);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(ksnap_coord_sm_job_finished(sm), KSNAP_ERR_STATE);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  mark();
  tick(2000); /* periodic as before */
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ack_all_e(2100, 2, 0, true);
  finish(2200, 2);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), 2);
}
END_TEST

/* A restore after the final COMPLETE (a sink task died before it
 * committed) starts the end again in G+1: ends told in G no longer
 * count, and the next final checkpoint is taken in G+1. */
START_TEST(a_restore_starts_the_end_again) {
  running();
  tick(1000);
  ack_all_e(1100, 1, 0, true);
  finish(1200, 1);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), 1);
  ck_assert_int_eq(ksnap_coord_sm_request_restore(sm, 1300, "test"),
                   KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), KSNAP_CHECKPOINT_NONE);
  reg_all(1400, 1);
  mark();
  for (int t = 0; t < NTASKS; t++)
    hb_ended(1500, t, 0); /* the old generation's */
  tick(1501);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  for (int t = 0; t < NTASKS; t++)
    hb_ended(1600, t, 1);
  tick(1601);
  expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ack_all_e(1700, 2, 1, true);
  finish(1800, 2);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), 2);
}
END_TEST

static void hb_all_ended(int64_t now, int64_t gen) {
  for (int t = 0; t < NTASKS; t++)
    hb_ended(now, t, gen);
}

START_TEST(a_drain_ends_with_a_final_savepoint) {
  ksnap_coord_action_t *a;

  running();
  ck_assert_int_eq(ksnap_coord_sm_request_drain(sm, 500), KSNAP_ERR_OK);
  drain();
  ck_assert(ksnap_coord_sm_draining(sm));
  a = expect(KSNAP_COORD_ACT_TRIGGER, 1); /* at once, not at 1000 */
  ck_assert(a->options.drain && !a->options.is_savepoint);
  ack_all_e(600, 1, 0, false);
  finish(700, 1);
  mark();
  tick(1700); /* the periodic ones say drain too */
  a = expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ck_assert(a->options.drain && !a->options.is_savepoint);
  mark();
  hb_all_ended(1800, 0);
  tick(1801);
  a = expect(KSNAP_COORD_ACT_TRIGGER, 3);
  ck_assert(a->options.drain && a->options.is_savepoint);
  ASSERT_LOGGED("the final savepoint 3 is triggered now");
  ack_all_e(1800, 2, 0, true); /* final, but a drain's is a savepoint */
  finish(1900, 2);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), KSNAP_CHECKPOINT_NONE);
  ack_all_e(2000, 3, 0, true);
  finish(2100, 3);
  ck_assert_int_eq(ksnap_coord_sm_final_checkpoint(sm), 3);
  ASSERT_LOGGED("Final savepoint 3 completed");
  ck_assert_int_eq(committed(2200, 3), KSNAP_ERR_OK);
  ck_assert(ksnap_coord_sm_all_committed(sm, 3));
  ck_assert_int_eq(ksnap_coord_sm_job_finished(sm), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FINISHED);
  ASSERT_LOGGED("Job stopped with final savepoint 3 after the drain");
}
END_TEST

START_TEST(a_failed_drain_savepoint_is_taken_again) {
  ksnap_coord_action_t *a;

  running();
  ck_assert_int_eq(ksnap_coord_sm_request_drain(sm, 500), KSNAP_ERR_OK);
  drain();
  ack_all_e(600, 1, 0, false);
  finish(700, 1);
  mark();
  hb_all_ended(800, 0);
  tick(801);
  a = expect(KSNAP_COORD_ACT_TRIGGER, 2);
  ck_assert(a->options.is_savepoint);
  ck_assert_int_eq(decline(900, 2, 0, 0, "disk full"), KSNAP_ERR_OK);
  ASSERT_LOGGED("Savepoint 2 failed while draining");
  mark();
  tick(901);
  a = expect(KSNAP_COORD_ACT_TRIGGER, 3);
  ck_assert(a->options.is_savepoint && a->options.drain);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
}
END_TEST

/* A replayed TRIGGER of @p id (with @p drain) and its COMPLETE. */
static void replay_done(int64_t id, bool drain) {
  ksnap_control_record_t rec;

  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_TRIGGER;
  rec.u.trigger = (ksnap_trigger_t){id, 0, {KSNAP_CKPT_ALIGNED, false, drain},
                                    0};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  rec.type = KSNAP_CONTROL_COMPLETE;
  rec.u.complete = (ksnap_complete_t){id, 0, (char *)"m"};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
}

/* Only the latest completed checkpoint decides: its sources' snapshots
 * hold the ends or not. */
START_TEST(a_restarted_coordinator_drains_on_from_a_drain_checkpoint) {
  ksnap_error_t error;

  for (int latest_drained = 0; latest_drained < 2; latest_drained++) {
    ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error),
                     KSNAP_ERR_OK);
    replay_done(1, true);
    replay_done(2, latest_drained);
    ck_assert_int_eq(ksnap_coord_sm_start(sm, 1000), KSNAP_ERR_OK);
    drain();
    ck_assert_int_eq(ksnap_coord_sm_draining(sm), latest_drained);
    ksnap_coord_sm_destroy(sm);
    sm = NULL;
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_finish");
  TCase *tc = tcase_create("coord_finish");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, every_task_ended_triggers_the_final_checkpoint_at_once);
  tcase_add_test(tc, a_checkpoint_before_one_finish_is_not_final);
  tcase_add_test(tc, a_restore_starts_the_end_again);
  tcase_add_test(tc, a_drain_ends_with_a_final_savepoint);
  tcase_add_test(tc, a_failed_drain_savepoint_is_taken_again);
  tcase_add_test(tc, a_restarted_coordinator_drains_on_from_a_drain_checkpoint);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
