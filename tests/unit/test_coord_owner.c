/* Task ownership in the coordinator (coordinator/src/state_machine/coord_owner.c): one
 * instance per task, claims, ASSIGN, owner tables in RESTORE, and the
 * refusal of replaced instances (the zombie of killrun.py --case zombie).
 * Fixture: coord_fixture.h (tasks src[0], src[1], snk[0]). */
#include "coord_fixture.h"

#define SNK 2 /* the task these tests move between instances */

static ksnap_err_t claim(int64_t now, int t, int64_t gen,
                         const char *instance) {
  ksnap_register_t r = {tid(t), (char *)instance, (char *)"h", 200 + t, gen,
                        true};
  ksnap_err_t err = ksnap_coord_sm_register(sm, now, &r);
  drain();
  return err;
}

/* The owner a RESTORE action names for task t. */
static const char *owner_in(const ksnap_coord_action_t *a, int t) {
  for (size_t i = 0; i < a->owner_cnt; i++)
    if (!strcmp(a->owners[i].task.stage, stage_of[t]) &&
        a->owners[i].task.index == index_of[t])
      return a->owners[i].instance;
  ck_abort_msg("task %d missing from the owner table", t);
  return NULL;
}

/* The next ASSIGN action: its task must be t. */
static ksnap_coord_action_t *expect_assign(int t) {
  ksnap_coord_action_t *a = find_act(KSNAP_COORD_ACT_SEND_ASSIGN, seen);

  ck_assert_msg(a != NULL, "no SEND_ASSIGN action");
  ck_assert_str_eq(a->task.stage, stage_of[t]);
  ck_assert_int_eq(a->task.index, index_of[t]);
  return a;
}

/* Heartbeat timeout of snk[0] only (5 s), at t=5000: vacant in G=1. */
static void snk_presumed_dead(void) {
  smc.heartbeat_timeout_ms = 5000;
  running();
  hb(4000, 0, 0);
  hb(4000, 1, 0);
  mark();
  tick(5000);
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
  ck_assert_str_eq(owner_in(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                                   KSNAP_CHECKPOINT_NONE), SNK), "");
  mark();
}

START_TEST(first_registrations_take_vacant_tasks_and_are_recorded) {
  start(0);
  mark();
  ck_assert_int_eq(reg(0, SNK, 0, "w"), KSNAP_ERR_OK);
  {
    ksnap_coord_action_t *a = expect_assign(SNK);
    ck_assert_str_eq(a->instance, "w");
    ck_assert_str_eq(a->refused, "");
  }
  mark();
  ck_assert_int_eq(reg(10, SNK, 0, "w"), KSNAP_ERR_OK); /* again: nothing */
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ASSIGN);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
}
END_TEST

START_TEST(new_instance_replaces_the_owner_and_restores) {
  ksnap_coord_action_t *rest;

  running();
  ck_assert_int_eq(reg(200, SNK, 0, "w2"), KSNAP_ERR_OK);
  ASSERT_LOGGED("task snk[0]: instance w2 replaces w");
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(rest->generation, 1);
  ck_assert_uint_eq(rest->owner_cnt, NTASKS);
  ck_assert_str_eq(owner_in(rest, SNK), "w2");
  ck_assert_str_eq(owner_in(rest, 0), "w");
  mark();
  /* the replaced instance, resumed: refused, and no restore storm */
  ck_assert_int_eq(reg(300, SNK, 1, "w"), KSNAP_ERR_OK);
  ASSERT_LOGGED("REGISTER of task snk[0] by instance w refused: it was "
                "replaced (owner: w2)");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(claim(310, SNK, 1, "w"), KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  {
    ksnap_coord_action_t *a = expect_assign(SNK);
    ck_assert_str_eq(a->instance, "w2");
    ck_assert_str_eq(a->refused, "w");
  }
  /* the job runs again with w2 */
  reg(400, 0, 1, "w");
  reg(400, 1, 1, "w");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  reg(400, SNK, 1, "w2");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
}
END_TEST

START_TEST(claim_of_an_owned_task_restores_naming_the_claimant) {
  running();
  ck_assert_int_eq(claim(200, SNK, 0, "w2"), KSNAP_ERR_OK);
  ck_assert_str_eq(owner_in(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                                   KSNAP_CHECKPOINT_NONE), SNK), "w2");
  mark();
  /* a claim sent again (it saw an older RESTORE) changes nothing */
  ck_assert_int_eq(claim(250, SNK, 0, "w2"), KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ASSIGN);
}
END_TEST

START_TEST(vacant_task_goes_to_the_first_claim) {
  snk_presumed_dead();
  ck_assert_int_eq(claim(6000, SNK, 1, "w2"), KSNAP_ERR_OK);
  ASSERT_LOGGED("Task snk[0] assigned to instance w2");
  ck_assert_str_eq(expect_assign(SNK)->instance, "w2");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE); /* nobody runs it in G=1 */
  mark();
  /* the old owner (paused, not dead) resumes and claims: refused */
  ck_assert_int_eq(claim(7000, SNK, 1, "w"), KSNAP_ERR_OK);
  ck_assert_str_eq(expect_assign(SNK)->refused, "w");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
}
END_TEST

START_TEST(presumed_dead_owner_may_reclaim_until_replaced) {
  snk_presumed_dead();
  ck_assert_int_eq(claim(6000, SNK, 1, "w"), KSNAP_ERR_OK);
  ck_assert_str_eq(expect_assign(SNK)->instance, "w");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  reg(6100, 0, 1, "w");
  reg(6100, 1, 1, "w");
  reg(6100, SNK, 1, "w");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
}
END_TEST

START_TEST(restarted_coordinator_keeps_the_owners) {
  ksnap_control_record_t rec;
  ksnap_task_owner_t owners[NTASKS];
  ksnap_coord_action_t *rest;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  for (int t = 0; t < NTASKS; t++)
    owners[t] = (ksnap_task_owner_t){tid(t), (char *)"w"};
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_RESTORE;
  rec.u.restore = (ksnap_restore_t){1, KSNAP_CHECKPOINT_NONE, NULL, owners,
                                    NTASKS};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  owners[1].instance = (char *)""; /* src[1] missed its heartbeats */
  rec.u.restore.generation = 2;
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  rec.type = KSNAP_CONTROL_ASSIGN;
  rec.u.assign = (ksnap_assign_t){2, tid(SNK), (char *)"w2", (char *)""};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  ksnap_coord_sm_start(sm, 0);
  drain();
  mark();
  ksnap_coord_sm_request_restore(sm, 100, "coordinator restarted");
  drain();
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(rest->generation, 3);
  ck_assert_str_eq(owner_in(rest, SNK), "w2");
  ck_assert_str_eq(owner_in(rest, 0), "w");
  ck_assert_str_eq(owner_in(rest, 1), ""); /* still vacant */
  mark();
  ck_assert_int_eq(claim(200, SNK, 3, "w"), KSNAP_ERR_OK);
  ck_assert_str_eq(expect_assign(SNK)->refused, "w");
  mark();
  /* src[1]'s presumed-dead owner may still reclaim it */
  ck_assert_int_eq(claim(300, 1, 3, "w"), KSNAP_ERR_OK);
  {
    ksnap_coord_action_t *a = expect_assign(1);
    ck_assert_str_eq(a->instance, "w");
    ck_assert_str_eq(a->refused, "");
  }
}
END_TEST

/* A job stopped with a savepoint (or failed for good): its workers exited,
 * so a start from the savepoint finds every task vacant, and the new
 * workers' claims take them in the start's own generation: one RESTORE,
 * not a second one for new instances replacing the exited ones. */
START_TEST(stopped_job_starts_again_with_one_restore) {
  ksnap_control_record_t rec;
  ksnap_task_owner_t owners[NTASKS];
  ksnap_coord_action_t *rest;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  for (int t = 0; t < NTASKS; t++)
    owners[t] = (ksnap_task_owner_t){tid(t), (char *)"w"};
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_RESTORE;
  rec.u.restore = (ksnap_restore_t){1, KSNAP_CHECKPOINT_NONE, NULL, owners,
                                    NTASKS};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  rec.type = KSNAP_CONTROL_JOB_STOPPED;
  rec.u.job_stopped = (ksnap_job_stopped_t){1, 0, 5, (char *)"file:///sp"};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_restore_from(sm, 5, "file:///sp"),
                   KSNAP_ERR_OK);
  ksnap_coord_sm_start(sm, 0);
  drain();
  ksnap_coord_sm_request_restore(sm, 100, "start from a savepoint");
  drain();
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, 5);
  ck_assert_int_eq(rest->generation, 2);
  for (int t = 0; t < NTASKS; t++)
    ck_assert_str_eq(owner_in(rest, t), "");
  mark();
  for (int t = 0; t < NTASKS; t++) {
    ck_assert_int_eq(claim(200, t, 2, "w2"), KSNAP_ERR_OK);
    ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
    ck_assert_str_eq(expect_assign(t)->instance, "w2");
    mark();
  }
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 2);
  /* an instance of the stopped run that comes back is refused */
  ck_assert_int_eq(claim(300, SNK, 2, "w"), KSNAP_ERR_OK);
  ck_assert_str_eq(expect_assign(SNK)->refused, "w");
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_owner");
  TCase *tc = tcase_create("coord_owner");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, first_registrations_take_vacant_tasks_and_are_recorded);
  tcase_add_test(tc, new_instance_replaces_the_owner_and_restores);
  tcase_add_test(tc, claim_of_an_owned_task_restores_naming_the_claimant);
  tcase_add_test(tc, vacant_task_goes_to_the_first_claim);
  tcase_add_test(tc, presumed_dead_owner_may_reclaim_until_replaced);
  tcase_add_test(tc, restarted_coordinator_keeps_the_owners);
  tcase_add_test(tc, stopped_job_starts_again_with_one_restore);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
