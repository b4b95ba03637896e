/* The restart strategies (coordinator/src/state_machine/coord_restart.c)
 * and what the state machine does with their verdicts: the RESTARTING
 * state, failures that join a restore under way, failures that are not
 * retriable, the FAILED job of a replayed history and --resume-failed.
 * Fixture: coord_fixture.h (tasks src[0], src[1], snk[0]). */
#include "coord_fixture.h"
#include "state_machine/coord_restart.h"

/* ------------------------------------------------------ the strategies */

static coord_restart_t *strategy;
static coord_restart_verdict_t verdict;

static void new_strategy(ksnap_restart_conf_t c) {
  ck_assert_ptr_null(ksnap__coord_restart_check(&c));
  strategy = ksnap__coord_restart_new(&c);
  ck_assert_ptr_nonnull(strategy);
}

static void free_strategy(void) {
  ksnap__coord_restart_destroy(strategy);
  strategy = NULL;
}

/* A failure at @p now: @returns the delay, or -1 if it gives up. */
static int64_t failure_at(int64_t now) {
  ksnap__coord_restart_failure(strategy, now, &verdict);
  return verdict.restart ? verdict.delay_ms : -1;
}

static ksnap_restart_conf_t exponential(int64_t initial, double mult,
                                        int64_t max, double jitter) {
  return (ksnap_restart_conf_t){.type = KSNAP_RESTART_EXPONENTIAL_DELAY,
                                .initial_backoff_ms = initial,
                                .max_backoff_ms = max,
                                .backoff_multiplier = mult,
                                .jitter_factor = jitter,
                                .reset_threshold_ms = 3600000,
                                .attempts_before_reset = INT32_MAX,
                                .jitter_seed = 42};
}

START_TEST(fixed_delay_makes_its_attempts_then_gives_up) {
  ksnap_restart_conf_t c = KSNAP_RESTART_AT_ONCE;

  c.fixed_attempts = 3;
  c.fixed_delay_ms = 700;
  new_strategy(c);
  for (int i = 1; i <= 3; i++) {
    ck_assert_int_eq(failure_at(i * 100000), 700);
    ck_assert_int_eq(verdict.attempt, i);
  }
  ck_assert_int_eq(failure_at(10000000), -1); /* never reset */
  ck_assert_str_eq(verdict.why, "the restart strategy fixed-delay made its 3 "
                                "restores "
                                "(restart-strategy.fixed-delay.attempts=3)");
  free_strategy();
  c.fixed_attempts = 0; /* the first failure fails the job */
  new_strategy(c);
  ck_assert_int_eq(failure_at(0), -1);
  free_strategy();
}
END_TEST

START_TEST(failure_rate_counts_the_failures_within_the_interval) {
  ksnap_restart_conf_t c = {.type = KSNAP_RESTART_FAILURE_RATE,
                            .rate_max_failures = 2,
                            .rate_interval_ms = 10000,
                            .rate_delay_ms = 500};

  new_strategy(c);
  ck_assert_int_eq(failure_at(0), 500);
  ck_assert_int_eq(failure_at(1000), 500);
  ck_assert_int_eq(failure_at(10000), -1); /* 3 within 10 s (0 is in) */
  ck_assert_str_eq(verdict.why,
                   "the restart strategy failure-rate saw 3 failures within "
                   "10000 ms (restart-strategy.failure-rate."
                   "max-failures-per-interval=2)");
  free_strategy();
  new_strategy(c);
  ck_assert_int_eq(failure_at(0), 500);
  ck_assert_int_eq(failure_at(1000), 500);
  ck_assert_int_eq(failure_at(10001), 500); /* 0 left the interval */
  ck_assert_int_eq(failure_at(11002), 500); /* 1000 too */
  ck_assert_int_eq(failure_at(12000), -1);  /* 10001, 11002, 12000 */
  free_strategy();
}
END_TEST

START_TEST(exponential_delay_grows_to_its_maximum) {
  static const int64_t want[] = {100, 200, 400, 800, 1000, 1000};
  int64_t now = 0;

  new_strategy(exponential(100, 2.0, 1000, 0));
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    ck_assert_int_eq(failure_at(now), want[i]);
    now += want[i] + 50; /* fails again 50 ms after each restore */
  }
  free_strategy();
  new_strategy(exponential(1000, 1.5, 60000, 0)); /* Flink 2's defaults */
  ck_assert_int_eq(failure_at(0), 1000);
  ck_assert_int_eq(failure_at(2000), 1500);
  ck_assert_int_eq(failure_at(4000), 2250);
  free_strategy();
}
END_TEST

START_TEST(exponential_delay_resets_after_the_threshold) {
  ksnap_restart_conf_t c = exponential(100, 2.0, 10000, 0);

  c.reset_threshold_ms = 5000;
  new_strategy(c);
  ck_assert_int_eq(failure_at(0), 100);   /* due at 100 */
  ck_assert_int_eq(failure_at(200), 200); /* due at 400 */
  ck_assert_int_eq(failure_at(5399), 400); /* 4999 ms after: no reset */
  ck_assert_int_eq(failure_at(5799 + 5000), 100); /* 5000 after its due */
  ck_assert_int_eq(verdict.attempt, 1);
  free_strategy();
}
END_TEST

START_TEST(exponential_delay_gives_up_after_its_attempts) {
  ksnap_restart_conf_t c = exponential(100, 2.0, 10000, 0);

  c.attempts_before_reset = 2;
  c.reset_threshold_ms = 5000;
  new_strategy(c);
  ck_assert_int_eq(failure_at(0), 100);
  ck_assert_int_eq(failure_at(150), 200);
  ck_assert_int_eq(failure_at(400), -1);
  ck_assert_str_eq(verdict.why,
                   "the restart strategy exponential-delay made 2 restores "
                   "without a reset (restart-strategy.exponential-delay."
                   "attempts-before-reset-backoff=2)");
  free_strategy();
  new_strategy(c); /* a reset starts the count again */
  ck_assert_int_eq(failure_at(0), 100);
  ck_assert_int_eq(failure_at(150), 200);
  ck_assert_int_eq(failure_at(350 + 5000), 100);
  ck_assert_int_eq(failure_at(5500), 200);
  free_strategy();
}
END_TEST

/* Jitter: within +-jitter of the backoff, clamped to initial..max, and the
 * same for the same seed. */
START_TEST(exponential_jitter_is_bounded_and_seeded) {
  ksnap_restart_conf_t c = exponential(1000, 1.5, 60000, 0.1);
  int64_t first[64], lo = INT64_MAX, hi = 0;
  bool differ = false;

  for (int s = 0; s < 64; s++) {
    c.jitter_seed = (uint64_t)s * 7919;
    new_strategy(c);
    first[s] = failure_at(0);
    ck_assert_int_ge(first[s], 1000); /* never below initial-backoff */
    ck_assert_int_le(first[s], 1100);
    int64_t second = failure_at(5000);
    ck_assert_int_ge(second, 1350);
    ck_assert_int_le(second, 1650);
    lo = second < lo ? second : lo;
    hi = second > hi ? second : hi;
    differ |= s > 0 && first[s] != first[0];
    free_strategy();
  }
  ck_assert(differ);
  ck_assert_int_lt(lo, 1450); /* spread over the range, not stuck */
  ck_assert_int_gt(hi, 1550);
  c.jitter_seed = 7919;
  new_strategy(c);
  ck_assert_int_eq(failure_at(0), first[1]);
  free_strategy();
}
END_TEST

START_TEST(none_never_restores_and_bad_settings_are_refused) {
  ksnap_restart_conf_t c = {.type = KSNAP_RESTART_NONE};

  new_strategy(c);
  ck_assert_int_eq(failure_at(0), -1);
  ck_assert_str_eq(verdict.why,
                   "the restart strategy is none (restart-strategy.type)");
  free_strategy();
  c = exponential(0, 2.0, 1000, 0);
  ck_assert_str_eq(ksnap__coord_restart_check(&c),
                   "exponential-delay needs 1 <= initial-backoff <= "
                   "max-backoff");
  c = exponential(2000, 2.0, 1000, 0);
  ck_assert_ptr_nonnull(ksnap__coord_restart_check(&c));
  c = exponential(100, 0.5, 1000, 0);
  ck_assert_ptr_nonnull(ksnap__coord_restart_check(&c));
  c = exponential(100, 2.0, 1000, 1.5);
  ck_assert_ptr_nonnull(ksnap__coord_restart_check(&c));
  c = (ksnap_restart_conf_t){.type = KSNAP_RESTART_FIXED_DELAY,
                             .fixed_attempts = -1};
  ck_assert_ptr_nonnull(ksnap__coord_restart_check(&c));
  c = (ksnap_restart_conf_t){.type = KSNAP_RESTART_FAILURE_RATE};
  ck_assert_ptr_nonnull(ksnap__coord_restart_check(&c));
}
END_TEST

/* -------------------------------------------- the state machine's side */

static void fixed_delay(int64_t attempts, int64_t delay_ms) {
  smc.restart = KSNAP_RESTART_AT_ONCE;
  smc.restart.fixed_attempts = attempts;
  smc.restart.fixed_delay_ms = delay_ms;
}

static ksnap_err_t task_failure(int64_t now, int t, int64_t gen,
                                const char *why, bool retriable) {
  ksnap_task_failure_t f = {tid(t), (char *)"w", gen, (char *)why, retriable};
  ksnap_err_t err = ksnap_coord_sm_failure(sm, now, &f);
  drain();
  return err;
}

static ksnap_err_t claim(int64_t now, int t, const char *worker) {
  ksnap_register_t r = {tid(t), (char *)worker, (char *)"h", 7, 0, true};
  ksnap_err_t err = ksnap_coord_sm_register(sm, now, &r);
  drain();
  return err;
}

START_TEST(a_failure_waits_in_restarting_for_the_delay) {
  fixed_delay(5, 1000);
  running();
  tick(1000); /* checkpoint 1 is pending */
  mark();
  ck_assert_int_eq(task_failure(1500, 0, 0, "boom", true), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RESTARTING);
  ASSERT_LOGGED("Job failure: restoring in 1000 ms (restart 1 of "
                "restart-strategy fixed-delay): task src[0] failed: boom");
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_ABORT, 1)->text,
                   "the job is restarting after a failure");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  mark();
  tick(2000); /* a checkpoint would be due: none while restarting */
  tick(2499);
  ASSERT_NONE(KSNAP_COORD_ACT_TRIGGER);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(ksnap_coord_sm_request_checkpoint(sm, 2499),
                   KSNAP_ERR_STATE);
  drain();
  tick(2500);
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                          KSNAP_CHECKPOINT_NONE)->generation, 1);
  ASSERT_LOGGED("Restoring the job in generation 1 from no checkpoint "
                "(empty state): task src[0] failed: boom");
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
}
END_TEST

/* The restore under way takes every failure that comes meanwhile: one
 * generation, and the strategy counts one restore. */
START_TEST(failures_while_restarting_join_the_restore) {
  ksnap_decline_t d = {1, tid(2), 0, (char *)"sink fenced", true};

  fixed_delay(2, 1000);
  smc.heartbeat_timeout_ms = 5000;
  running();
  hb(500, 0, 0);
  hb(500, 1, 0);
  tick(1000);
  mark();
  /* a worker process with two tasks replaced: two claims, 40 ms apart */
  ck_assert_int_eq(claim(1100, 0, "w2"), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RESTARTING);
  ck_assert_int_eq(claim(1140, 1, "w2"), KSNAP_ERR_OK);
  ASSERT_LOGGED("Failure joins the restore under way: task src[1]: instance "
                "w2 replaces w");
  ck_assert_int_eq(task_failure(1150, 2, 0, "again", true), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_decline(sm, 1160, &d), KSNAP_ERR_STATE);
  drain(); /* checkpoint 1 was aborted already: refused, no new failure */
  tick(2099);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  tick(2100);
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
  {
    ksnap_coord_action_t *r = expect(KSNAP_COORD_ACT_SEND_RESTORE,
                                     KSNAP_CHECKPOINT_NONE);
    ck_assert_int_eq(r->generation, 1);
    ck_assert_str_eq(r->owners[0].instance, "w2");
    ck_assert_str_eq(r->owners[1].instance, "w2");
  }
  mark();
  /* what the old generation still says is ignored */
  ck_assert_int_eq(task_failure(2200, 2, 0, "late", true), KSNAP_ERR_OK);
  ck_assert_int_eq(reg(2200, 2, 0, "w"), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  ASSERT_LOGGED("Failure report of task snk[0] from generation 0 ignored");
  /* the next failure is the strategy's second restore */
  ck_assert_int_eq(task_failure(2300, 2, 1, "third", true), KSNAP_ERR_OK);
  ASSERT_LOGGED("(restart 2 of restart-strategy fixed-delay)");
}
END_TEST

/* The delay over, a COMPLETE in flight still holds the restore back
 * (invariant 9): the restore names the checkpoint it completed. */
START_TEST(the_restore_waits_for_a_complete_in_flight) {
  fixed_delay(5, 1000);
  running();
  tick(1000);
  ack_all(1100, 1, 0);
  ck_assert_int_eq(meta_ok(1200, 1, NULL), KSNAP_ERR_OK); /* COMPLETING */
  mark();
  ck_assert_int_eq(task_failure(1300, 0, 0, "boom", true), KSNAP_ERR_OK);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ABORT); /* the COMPLETE in flight stays */
  tick(2300);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RESTORE_PENDING);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(commit_ok(2400, 1, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE, 1)->generation, 1);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
}
END_TEST

START_TEST(a_failure_that_is_not_retriable_fails_the_job_at_once) {
  running(); /* KSNAP_RESTART_AT_ONCE would restore a retriable one */
  tick(1000);
  mark();
  ck_assert_int_eq(task_failure(1100, 2, 0, "snk[0]: kafka.transaction."
                                "timeout.ms too low", false),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_FAIL_JOB,
                          KSNAP_CHECKPOINT_NONE)->text,
                   "task snk[0] failed: snk[0]: kafka.transaction.timeout.ms "
                   "too low (not retriable: every restore would fail the "
                   "same way)");
  ck_assert_str_eq(ksnap_coord_sm_failure_cause(sm),
                   find_act(KSNAP_COORD_ACT_FAIL_JOB, seen)->text);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  mark();
  ck_assert_int_eq(task_failure(1200, 1, 0, "more", false),
                   KSNAP_ERR_STATE); /* FAIL_JOB once */
  ASSERT_NONE(KSNAP_COORD_ACT_FAIL_JOB);
}
END_TEST

START_TEST(the_strategy_gives_up_and_the_job_fails) {
  fixed_delay(1, 0);
  running();
  mark();
  ck_assert_int_eq(task_failure(1000, 0, 0, "one", true), KSNAP_ERR_OK);
  ASSERT_LOGGED("Job failure: restoring in 0 ms (restart 1 of "
                "restart-strategy fixed-delay)");
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
  reg_all(1100, 1);
  mark();
  ck_assert_int_eq(task_failure(1200, 0, 1, "two", true), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_FAIL_JOB,
                          KSNAP_CHECKPOINT_NONE)->text,
                   "the restart strategy fixed-delay made its 1 restores "
                   "(restart-strategy.fixed-delay.attempts=1); the last "
                   "failure: task src[0] failed: two");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
}
END_TEST

/* Flink fails over when the tolerance is exceeded: a restore. */
START_TEST(too_many_failed_checkpoints_restore_through_the_strategy) {
  fixed_delay(3, 0);
  running(); /* tolerable-failed-checkpoints = 0 */
  tick(1000);
  mark();
  decline(1100, 1, 0, 0, "disk full");
  ASSERT_LOGGED("Job failure: restoring in 0 ms (restart 1 of "
                "restart-strategy fixed-delay): Exceeded checkpoint "
                "tolerable failure threshold: 1 consecutive checkpoint "
                "failures");
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
  ASSERT_NONE(KSNAP_COORD_ACT_FAIL_JOB);
  ck_assert_int_eq(ksnap_coord_sm_failure_cnt(sm), 0); /* starts again */
}
END_TEST

/* A task silent before it registered in G wrote nothing in G: its owner
 * is vacant, the job is not restored again (the second task of a dead
 * worker process after the first one's restore), and a new instance takes
 * it by an ASSIGN. */
START_TEST(a_silent_task_that_had_not_registered_is_only_vacated) {
  smc.heartbeat_timeout_ms = 5000;
  running();
  mark();
  ck_assert_int_eq(task_failure(1000, 0, 0, "boom", true), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 1);
  reg(1100, 0, 1, "w");
  reg(1100, 1, 1, "w");
  hb(2000, 0, 1);
  hb(2000, 1, 1);
  mark();
  tick(5001); /* snk[0], last heard at 0, never registered in 1 */
  ASSERT_LOGGED("Task snk[0] sent no heartbeat for 5001 ms "
                "(heartbeat.timeout=5000 ms): presumed dead, its owner "
                "vacant; it had not registered in generation 1, so the job "
                "waits for a new instance");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  ck_assert_int_eq(claim(6000, 2, "w9"), KSNAP_ERR_OK);
  ck_assert_str_eq(find_act(KSNAP_COORD_ACT_SEND_ASSIGN, seen)->instance,
                   "w9");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  mark();
  tick(7001); /* registered tasks that fall silent do restore */
  ck_assert_int_eq(count_new(KSNAP_COORD_ACT_SEND_RESTORE), 1);
}
END_TEST

/* While a restore waits, a new instance's claim of a task whose dead owner
 * wrote in G gets no ASSIGN (that would open G again from G's base, beside
 * what the dead one wrote, and take G's old checkpoints again): the
 * RESTORE names it. */
START_TEST(a_claim_while_restarting_waits_for_the_restore) {
  fixed_delay(5, 1000);
  smc.heartbeat_timeout_ms = 2000;
  running();
  hb(1000, 0, 0);
  hb(1000, 1, 0);
  mark();
  tick(2000); /* snk[0], registered in 0, silent since 0 */
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RESTARTING);
  ck_assert_int_eq(claim(2100, 2, "w9"), KSNAP_ERR_OK);
  ASSERT_LOGGED("Task snk[0] assigned to instance w9 (worker pid 7) for the "
                "restore under way: the RESTORE names it");
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_ASSIGN);
  tick(3000);
  ck_assert_str_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                          KSNAP_CHECKPOINT_NONE)->owners[2].instance, "w9");
}
END_TEST

/* ------------------------------------------------ FAILED in the history */

static void replay_rec(ksnap_control_record_t *rec) {
  ck_assert_int_eq(ksnap_coord_sm_replay(sm, rec), KSNAP_ERR_OK);
}

static void replay_failed_history(bool restored_after) {
  ksnap_control_record_t r = {.type = KSNAP_CONTROL_RESTORE};
  ksnap_error_t error;

  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  r.u.restore = (ksnap_restore_t){1, KSNAP_CHECKPOINT_NONE, NULL, NULL, 0};
  replay_rec(&r);
  r.type = KSNAP_CONTROL_JOB_FAILED;
  r.u.job_failed = (ksnap_job_failed_t){1, 5, (char *)"poison record"};
  replay_rec(&r);
  if (restored_after) {
    r.type = KSNAP_CONTROL_RESTORE;
    r.u.restore = (ksnap_restore_t){2, KSNAP_CHECKPOINT_NONE, NULL, NULL, 0};
    replay_rec(&r);
  }
}

START_TEST(a_history_that_ends_failed_is_not_resumed) {
  replay_failed_history(false);
  ck_assert_str_eq(ksnap_coord_sm_replayed_failure(sm), "poison record");
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 100), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_FAILED);
  ck_assert_str_eq(ksnap_coord_sm_failure_cause(sm), "poison record");
  ASSERT_LOGGED("The job failed in generation 1 before this coordinator "
                "started, and stays FAILED: poison record");
  ck_assert_uint_eq(nacts - seen, 1); /* that line only: nothing written */
  mark();
  ck_assert_int_eq(ksnap_coord_sm_resume_failed(sm), KSNAP_ERR_STATE);
  ck_assert_int_eq(ksnap_coord_sm_request_restore(sm, 200, "x"),
                   KSNAP_ERR_STATE);
  ck_assert_int_eq(reg(200, 0, 1, "w"), KSNAP_ERR_STATE);
  tick(100000);
  ASSERT_NONE(KSNAP_COORD_ACT_SEND_RESTORE);
  ASSERT_NONE(KSNAP_COORD_ACT_FAIL_JOB);
}
END_TEST

START_TEST(resume_failed_restores_in_a_new_generation) {
  replay_failed_history(false);
  ck_assert_int_eq(ksnap_coord_sm_resume_failed(sm), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 100), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  ck_assert_ptr_null(ksnap_coord_sm_failure_cause(sm));
  ck_assert_int_eq(ksnap_coord_sm_request_restore(sm, 100, "resumed"),
                   KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(expect(KSNAP_COORD_ACT_SEND_RESTORE,
                          KSNAP_CHECKPOINT_NONE)->generation, 2);
}
END_TEST

START_TEST(a_restore_after_the_failure_resumed_the_job) {
  replay_failed_history(true);
  ck_assert_ptr_null(ksnap_coord_sm_replayed_failure(sm));
  ck_assert_int_eq(ksnap_coord_sm_start(sm, 100), KSNAP_ERR_OK);
  drain();
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_WAITING);
  ck_assert_int_eq(ksnap_coord_sm_generation(sm), 2);
}
END_TEST

/* "Received acknowledge for checkpoint N from task T", at debug level
 * with log.debug=coord only (Flink's wording). */
START_TEST(acks_are_logged_at_debug_level) {
  running();
  tick(1000);
  mark();
  ck_assert_int_eq(ack(1100, 1, 0, 0), KSNAP_ERR_OK);
  ck_assert(!logged("Received acknowledge"));
  ksnap_log_set_level(KSNAP_LOG_DEBUG);
  ksnap_log_set_debug(KSNAP_DBG_COORD);
  ck_assert_int_eq(ack(1200, 1, 1, 0), KSNAP_ERR_OK);
  ksnap_log_set_level(KSNAP_LOG_INFO);
  ksnap_log_set_debug(0);
  ASSERT_LOGGED("Received acknowledge for checkpoint 1 from task src[1]");
  ck_assert_int_eq(find_act(KSNAP_COORD_ACT_LOG, seen)->level,
                   KSNAP_LOG_DEBUG);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_restart");
  TCase *ts = tcase_create("strategies");
  TCase *tc = tcase_create("state_machine");

  tcase_add_test(ts, fixed_delay_makes_its_attempts_then_gives_up);
  tcase_add_test(ts, failure_rate_counts_the_failures_within_the_interval);
  tcase_add_test(ts, exponential_delay_grows_to_its_maximum);
  tcase_add_test(ts, exponential_delay_resets_after_the_threshold);
  tcase_add_test(ts, exponential_delay_gives_up_after_its_attempts);
  tcase_add_test(ts, exponential_jitter_is_bounded_and_seeded);
  tcase_add_test(ts, none_never_restores_and_bad_settings_are_refused);
  suite_add_tcase(s, ts);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, a_failure_waits_in_restarting_for_the_delay);
  tcase_add_test(tc, failures_while_restarting_join_the_restore);
  tcase_add_test(tc, the_restore_waits_for_a_complete_in_flight);
  tcase_add_test(tc, a_failure_that_is_not_retriable_fails_the_job_at_once);
  tcase_add_test(tc, the_strategy_gives_up_and_the_job_fails);
  tcase_add_test(tc, too_many_failed_checkpoints_restore_through_the_strategy);
  tcase_add_test(tc, a_silent_task_that_had_not_registered_is_only_vacated);
  tcase_add_test(tc, a_claim_while_restarting_waits_for_the_restore);
  tcase_add_test(tc, a_history_that_ends_failed_is_not_resumed);
  tcase_add_test(tc, resume_failed_restores_in_a_new_generation);
  tcase_add_test(tc, a_restore_after_the_failure_resumed_the_job);
  tcase_add_test(tc, acks_are_logged_at_debug_level);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
