/* The coordinator state machine's restore point from outside its history
 * (`--from-savepoint`: coordinator/src/state_machine/coord_origin.c and
 * ksnap_coord_sm_restore_from()). Fixture: coord_fixture.h (tasks src[0],
 * src[1], snk[0]). */
#include "coord_fixture.h"

static void replay(ksnap_control_type_t type, int64_t id, int64_t gen,
                   const char *url) {
  ksnap_control_record_t rec;

  memset(&rec, 0, sizeof(rec));
  rec.type = type;
  if (type == KSNAP_CONTROL_TRIGGER)
    rec.u.trigger = (ksnap_trigger_t){id, 0, {KSNAP_CKPT_ALIGNED, false, false}, gen};
  else if (type == KSNAP_CONTROL_COMPLETE)
    rec.u.complete = (ksnap_complete_t){id, gen, (char *)"m"};
  else
    rec.u.restore = (ksnap_restore_t){gen, id, (char *)url, NULL, 0};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
}

/* A history of completed checkpoints 1..@p n in generation 0. */
static void history(int n) {
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  for (int i = 1; i <= n; i++) {
    replay(KSNAP_CONTROL_TRIGGER, i, 0, NULL);
    replay(KSNAP_CONTROL_COMPLETE, i, 0, NULL);
  }
}

/* Requests the restore; @returns the SEND_RESTORE action. */
static ksnap_coord_action_t *restore_now(int64_t now) {
  mark();
  ck_assert_int_eq(ksnap_coord_sm_request_restore(sm, now, "test"),
                   KSNAP_ERR_OK);
  drain();
  return find_act(KSNAP_COORD_ACT_SEND_RESTORE, seen);
}

START_TEST(a_savepoint_older_than_the_history_is_the_restore_point) {
  ksnap_coord_action_t *a;
  const char *url = "file:///sp/savepoint-j-2-abc";

  history(5);
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 2, url), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  a = restore_now(10000);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->checkpoint_id, 2);
  ck_assert_str_eq(a->text, url);
  /* a failure before any checkpoint completed: from the savepoint again */
  a = restore_now(10100);
  ck_assert_int_eq(a->checkpoint_id, 2);
  ck_assert_str_eq(a->text, url);
  reg_all(10200, ksnap_coord_sm_generation(sm));
  mark();
  tick(11200);
  expect(KSNAP_COORD_ACT_TRIGGER, 6); /* above the history's 5 */
  ack_all(11300, 6, ksnap_coord_sm_generation(sm));
  ck_assert(have_meta);
  ck_assert_int_eq(last_meta.parent_id, 2); /* restored from it, not 5 */
  finish(11400, 6);
  /* the job's own checkpoint is the restore point now */
  a = restore_now(11500);
  ck_assert_int_eq(a->checkpoint_id, 6);
  ck_assert_ptr_null(a->text);
}
END_TEST

START_TEST(ids_continue_above_a_point_newer_than_the_history) {
  ksnap_coord_action_t *a;

  history(1);
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 40, "s3://b/sp"),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  a = restore_now(10000);
  ck_assert_int_eq(a->checkpoint_id, 40);
  reg_all(10100, ksnap_coord_sm_generation(sm));
  mark();
  tick(11100);
  expect(KSNAP_COORD_ACT_TRIGGER, 41);
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 3, "s3://b/x"),
                   KSNAP_ERR_STATE); /* started */
}
END_TEST

/* A restarted coordinator: the replayed RESTORE of the point (the driver
 * tells it is one) makes it the restore point again, until a COMPLETE. */
START_TEST(the_history_says_where_the_job_came_from) {
  ksnap_coord_action_t *a;
  int64_t id = 0;

  history(5);
  replay(KSNAP_CONTROL_RESTORE, 2, 1, "file:///sp");
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 2, "file:///sp"),
                   KSNAP_ERR_OK);
  ck_assert_str_eq(ksnap_coord_sm_origin(sm, &id), "file:///sp");
  ck_assert_int_eq(id, 2);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  a = restore_now(10000);
  ck_assert_int_eq(a->checkpoint_id, 2);
  ck_assert_str_eq(a->text, "file:///sp");
  ksnap_coord_sm_destroy(sm);
  for (size_t i = 0; i < nacts; i++)
    ksnap_coord_action_cleanup(&acts[i]);
  nacts = seen = 0;
  /* the job then completed 6 of its own: the point no longer matters */
  history(5);
  replay(KSNAP_CONTROL_RESTORE, 2, 1, "file:///sp");
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 2, "file:///sp"),
                   KSNAP_ERR_OK);
  replay(KSNAP_CONTROL_TRIGGER, 6, 1, NULL);
  replay(KSNAP_CONTROL_COMPLETE, 6, 1, NULL);
  ck_assert_ptr_null(ksnap_coord_sm_origin(sm, &id));
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  a = restore_now(10000);
  ck_assert_int_eq(a->checkpoint_id, 6);
  ck_assert_ptr_null(a->text);
}
END_TEST

START_TEST(a_refused_start_fails_the_job) {
  ksnap_coord_action_t *a;

  history(1);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 10000), KSNAP_ERR_OK);
  drain();
  mark();
  ck_assert_int_eq(ksnap_coord_sm_refuse_start(sm, 10000, "stage x"),
                   KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  ck_assert_ptr_nonnull(a = find_act(KSNAP_COORD_ACT_FAIL_JOB, seen));
  ck_assert_str_eq(a->text, "stage x");
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_origin");
  TCase *tc = tcase_create("coord_origin");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_savepoint_older_than_the_history_is_the_restore_point);
  tcase_add_test(tc, ids_continue_above_a_point_newer_than_the_history);
  tcase_add_test(tc, the_history_says_where_the_job_came_from);
  tcase_add_test(tc, a_refused_start_fails_the_job);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
