/* Members in the coordinator state machine (coordinator/src/
 * state_machine/coord_balance.c, coord_members.c): workers started with
 * --join get the tasks; a lost member's tasks move in the one RESTORE its
 * loss causes; missing slots make the job wait; a member that joins gets
 * tasks at the next completed checkpoint; a removed member never comes
 * back; a restarted coordinator keeps the members.
 *
 * Job (coord_fixture.h): src[0], src[1], snk[0]. */
#include "coord_fixture.h"

static ksnap_err_t member(int64_t now, const char *id, int32_t slots) {
  ksnap_member_hb_t m = {(char *)id, (char *)"host-a", 7, slots, now};
  ksnap_err_t err = ksnap_coord_sm_member(sm, now, &m);
  drain();
  return err;
}

/* The statistics' member view, checked against the figures given, and
 * the same figures in the JSON document and in /metrics. */
static void view_is(size_t cnt, int64_t vacant, int64_t missing,
                    int64_t removed) {
  ksnap_coord_stats_t *stats = ksnap_coord_sm_stats(sm);
  const ksnap_members_view_t *mv = ksnap_coord_stats_members_view(stats);
  ksnap_buf_t json, prom;
  char want[160];

  ck_assert(mv->known);
  ck_assert_uint_eq(mv->cnt, cnt);
  ck_assert_int_eq(mv->tasks_vacant, vacant);
  ck_assert_int_eq(mv->slots_missing, missing);
  ck_assert_int_eq(mv->removed, removed);
  ksnap_buf_init(&json);
  ksnap_buf_init(&prom);
  ck_assert_int_eq(ksnap_coord_stats_json(stats, &json), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_prometheus(stats, "j", &prom),
                   KSNAP_ERR_OK);
  snprintf(want, sizeof(want), "\"members\": {\"count\": %zu, ", cnt);
  ck_assert_ptr_nonnull(strstr((const char *)json.data, want));
  snprintf(want, sizeof(want), "\"tasks_vacant\": %" PRId64
           ", \"slots_missing\": %" PRId64 ", \"removed\": %" PRId64,
           vacant, missing, removed);
  ck_assert_msg(strstr((const char *)json.data, want), "no %s in %s", want,
                (const char *)json.data);
  snprintf(want, sizeof(want), "\nksnap_slots_missing{job=\"j\"} %" PRId64
           "\n", missing);
  ck_assert_msg(strstr((const char *)prom.data, want), "no %s", want);
  ksnap_buf_cleanup(&json);
  ksnap_buf_cleanup(&prom);
}

/* Member @p id's tasks in the statistics. */
static int32_t tasks_of(const char *id) {
  const ksnap_members_view_t *mv =
      ksnap_coord_stats_members_view(ksnap_coord_sm_stats(sm));

  for (size_t i = 0; i < mv->cnt; i++)
    if (!strcmp(mv->members[i].id, id))
      return mv->members[i].tasks;
  ck_abort_msg("no member %s in the statistics", id);
  return -1;
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

/* owner[t] from the ASSIGN actions since mark(). */
static void assigned(const char **owner) {
  for (int t = 0; t < NTASKS; t++)
    owner[t] = NULL;
  for (size_t i = seen; i < nacts; i++)
    if (acts[i].type == KSNAP_COORD_ACT_SEND_ASSIGN)
      for (int t = 0; t < NTASKS; t++)
        if (!strcmp(acts[i].task.stage, stage_of[t]) &&
            acts[i].task.index == index_of[t]) {
          ck_assert_msg(owner[t] == NULL, "task %d assigned twice", t);
          owner[t] = acts[i].instance;
        }
}

/* Members A and B (2 slots each) joined at 0 and 100; the tasks are
 * assigned at 1200 and registered by their owners: RUNNING in G=0. */
static void two_members_running(const char **owner) {
  smc.heartbeat_timeout_ms = 5000;
  start(0);
  mark();
  ck_assert_int_eq(member(0, "A", 2), KSNAP_ERR_OK);
  ck_assert_int_eq(member(100, "B", 2), KSNAP_ERR_OK);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_MEMBER), 2);
  tick(1000); /* a member joined less than a second ago: no assignment */
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ASSIGN);
  mark();
  tick(1200);
  assigned(owner);
  for (int t = 0; t < NTASKS; t++) {
    ck_assert_msg(owner[t] != NULL, "task %d not assigned", t);
    ck_assert(!strcmp(owner[t], "A") || !strcmp(owner[t], "B"));
  }
  ck_assert(strcmp(owner[0], owner[1])); /* src's tasks spread */
  for (int t = 0; t < NTASKS; t++)
    ck_assert_int_eq(reg(1300, t, 0, owner[t]), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  mark();
}

START_TEST(joined_members_get_every_task_by_assign) {
  const char *owner[NTASKS];
  ksnap_buf_t json;

  /* no member yet: the statistics have no member view */
  start(0);
  ksnap_buf_init(&json);
  ck_assert_int_eq(ksnap_coord_stats_json(ksnap_coord_sm_stats(sm), &json),
                   KSNAP_ERR_OK);
  ck_assert_ptr_null(strstr((const char *)json.data, "\"members\""));
  ksnap_buf_cleanup(&json);
  ksnap_coord_sm_destroy(sm);
  sm = NULL;
  two_members_running(owner);
  tick(1400);
  view_is(2, 0, 0, 0);
  ck_assert_int_eq(tasks_of("A") + tasks_of("B"), NTASKS);
}
END_TEST

START_TEST(a_lost_members_tasks_move_in_one_restore) {
  const char *owner[NTASKS], *lost;
  ksnap_coord_action_t *rest, *gone;
  int64_t now;

  two_members_running(owner);
  lost = owner[0];
  /* the other member and its tasks heartbeat on; the lost one is silent */
  for (now = 2000; now <= 7000; now += 500) {
    member(now, strcmp(lost, "A") ? "A" : "B", 2);
    for (int t = 0; t < NTASKS; t++)
      if (strcmp(owner[t], lost))
        hb(now, t, 0);
    tick(now);
  }
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  ck_assert_int_eq(rest->generation, 1);
  for (int t = 0; t < NTASKS; t++) /* two slots: one task stays vacant */
    ck_assert(strcmp(owner_in(rest, t), lost));
  gone = find_act(KSNAP_COORD_ACT_SEND_MEMBER, seen);
  ck_assert_ptr_nonnull(gone);
  ck_assert_str_eq(gone->instance, lost);
  ck_assert(!gone->present);
  /* the removed member never joins again */
  mark();
  ck_assert_int_eq(member(7500, lost, 2), KSNAP_ERR_STATE);
  ASSERT_LOGGED("it was removed from the job");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_MEMBER);
  tick(7600);
  view_is(1, 1, 1, 1); /* 3 tasks, 2 slots left */
}
END_TEST

START_TEST(a_lost_member_with_room_left_moves_every_task) {
  ksnap_coord_action_t *rest;
  const char *owner[NTASKS];

  smc.heartbeat_timeout_ms = 5000;
  start(0);
  member(0, "A", 3);
  member(0, "B", 3);
  mark();
  tick(1500);
  assigned(owner);
  for (int t = 0; t < NTASKS; t++)
    reg(1600, t, 0, owner[t]);
  mark();
  for (int64_t now = 2000; now <= 7000; now += 500) {
    member(now, "A", 3);
    for (int t = 0; t < NTASKS; t++)
      if (!strcmp(owner[t], "A"))
        hb(now, t, 0);
    tick(now);
  }
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  for (int t = 0; t < NTASKS; t++)
    ck_assert_str_eq(owner_in(rest, t), "A");
}
END_TEST

START_TEST(not_enough_slots_waits_and_says_how_many) {
  const char *owner[NTASKS];
  int n = 0;

  start(0);
  member(0, "A", 2);
  mark();
  tick(1500);
  assigned(owner);
  for (int t = 0; t < NTASKS; t++)
    n += owner[t] != NULL;
  ck_assert_int_eq(n, 2);
  ASSERT_LOGGED("Not enough slots: the job has 3 tasks, its 1 member has "
                "2 slots; 1 task waits for 1 more slot");
  for (int t = 0; t < NTASKS; t++)
    if (owner[t])
      reg(1600, t, 0, owner[t]);
  tick(2000);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  view_is(1, 1, 1, 0);
  ck_assert_int_eq(tasks_of("A"), 2);
  /* a second member brings the slot: the last task goes to it */
  member(2100, "B", 2);
  mark();
  tick(3200);
  assigned(owner);
  for (int t = 0, k = 0; t < NTASKS; t++)
    if (owner[t]) {
      ck_assert_str_eq(owner[t], "B");
      ck_assert_int_eq(reg(3300, t, 0, "B"), KSNAP_ERR_OK);
      ck_assert_int_eq(++k, 1);
    }
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  tick(3400);
  view_is(2, 0, 0, 0);
  ck_assert_int_eq(tasks_of("B"), 1);
}
END_TEST

START_TEST(a_member_that_joins_gets_tasks_at_the_next_checkpoint) {
  const char *owner[NTASKS];
  ksnap_coord_action_t *rest;
  int on_b = 0;

  start(0);
  member(0, "A", 3);
  tick(1500);
  for (int t = 0; t < NTASKS; t++)
    ck_assert_int_eq(reg(1600, t, 0, "A"), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  member(1700, "B", 3);
  mark();
  tick(2600);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE); /* not before a checkpoint */
  expect(KSNAP_COORD_ACT_TRIGGER, 1);
  ack_all(2700, 1, 0);
  finish(2800, 1);
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, 1);
  ck_assert_int_eq(rest->generation, 1);
  for (int t = 0; t < NTASKS; t++)
    on_b += !strcmp(owner_in(rest, t), "B");
  ck_assert_int_eq(on_b, 1);
  ASSERT_LOGGED("rebalance: a member joined");
  (void)owner;
}
END_TEST

START_TEST(a_restarted_coordinator_keeps_the_members) {
  ksnap_control_record_t rec;
  ksnap_task_owner_t owners[NTASKS];
  ksnap_coord_action_t *rest;
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_MEMBER;
  rec.u.member = (ksnap_member_t){0, (char *)"A", (char *)"h", 3, true,
                                  (char *)""};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  rec.u.member.worker_id = (char *)"B";
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  rec.u.member.present = false; /* B left */
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  for (int t = 0; t < NTASKS; t++)
    owners[t] = (ksnap_task_owner_t){tid(t), (char *)(t ? "A" : "B")};
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_CONTROL_RESTORE;
  rec.u.restore = (ksnap_restore_t){1, KSNAP_CHECKPOINT_NONE, NULL, owners,
                                    NTASKS};
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, &rec), KSNAP_ERR_OK);
  ksnap_coord_sm_start(sm, 0);
  drain();
  ck_assert_uint_eq(ksnap_coord_sm_members(sm, 0, NULL, NULL, NULL), 1);
  mark();
  ksnap_coord_sm_request_restore(sm, 100, "coordinator restarted");
  drain();
  rest = expect(KSNAP_COORD_ACT_SEND_RESTORE, KSNAP_CHECKPOINT_NONE);
  for (int t = 0; t < NTASKS; t++) /* B's task went to A */
    ck_assert_str_eq(owner_in(rest, t), "A");
  mark();
  ck_assert_int_eq(member(200, "B", 3), KSNAP_ERR_STATE);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_members");
  TCase *tc = tcase_create("coord_members");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, joined_members_get_every_task_by_assign);
  tcase_add_test(tc, a_lost_members_tasks_move_in_one_restore);
  tcase_add_test(tc, a_lost_member_with_room_left_moves_every_task);
  tcase_add_test(tc, not_enough_slots_waits_and_says_how_many);
  tcase_add_test(tc, a_member_that_joins_gets_tasks_at_the_next_checkpoint);
  tcase_add_test(tc, a_restarted_coordinator_keeps_the_members);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
