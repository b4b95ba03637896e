/* The coordinator state machine at the end of a bounded job
 * (coord_finish.c, plugin/PROTOCOL.md section 5.9): the final trigger
 * once every task's input ended, the final checkpoint (every task ACKed
 * with input_ended), no trigger after it, FINISHED, and a restore that
 * starts the end again. */
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

int main(void) {
  Suite *s = suite_create("coord_finish");
  TCase *tc = tcase_create("coord_finish");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, every_task_ended_triggers_the_final_checkpoint_at_once);
  tcase_add_test(tc, a_checkpoint_before_one_finish_is_not_final);
  tcase_add_test(tc, a_restore_starts_the_end_again);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
