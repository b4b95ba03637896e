/* Randomized run of the coordinator state machine (coord_sm.h): random
 * interleavings of ticks, registrations, heartbeats, ACKs (current and old
 * generations), declines, metadata and COMPLETE results (some failing),
 * sink commits, manual triggers, savepoints, task failures and restores.
 * A model of what the driver has seen checks the invariants listed at the
 * top of coord_sm.c after every action:
 *  - TRIGGER ids strictly increase; a TRIGGER goes out only when every
 *    task registered in the current generation;
 *  - at most max-concurrent-checkpoints non-savepoint checkpoints pending;
 *  - WRITE_METADATA only when every task ACKed in the current generation,
 *    at most one finalization at a time;
 *  - SEND_COMPLETE only after its metadata was reported written, never for
 *    an older generation;
 *  - the generation only grows, by one per RESTORE; RESTORE names the
 *    latest committed completion and no COMPLETE is in flight then; no
 *    checkpoint stays pending across it;
 *  - RETIRE never names a savepoint, the latest completed checkpoint, one
 *    at or above the repair floor, or one of the newest num-retained;
 *  - the consecutive counted failures are the model's; one more than
 *    tolerable-failed-checkpoints is a failure of the job and the count
 *    starts again;
 *  - a failure of the job is a restore after the restart strategy's delay
 *    (random: at once, fixed-delay, exponential-delay, none), never before
 *    it unless the operator asked; no TRIGGER and nothing pending but a
 *    COMPLETE in flight while RESTARTING; FAIL_JOB only when the strategy
 *    gave up, after exactly its attempts (fixed-delay, none);
 *  - a coordinator killed at any step (a COMPLETE in flight committed or
 *    not) and rebuilt from the control records so far keeps G and the
 *    latest completed checkpoint and never reuses an id.
 * KSNAP_COORD_RANDOM_RUNS (default 300) and _STEPS (default 400) scale it;
 * the seed of a failing run is printed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_job.h"
#include "state_machine/coord_sm.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define NTASKS 3
#define MAXID 4096
static const char *const stage_of[NTASKS] = {"src", "src", "snk"};
static const int32_t index_of[NTASKS] = {0, 1, 0};

/* The driver's model. */
typedef struct model_s {
  int64_t g;
  bool registered[NTASKS];
  int64_t last_trigger;
  bool pending[MAXID], savepoint[MAXID], acked[MAXID][NTASKS];
  int64_t ck_gen[MAXID];
  bool meta_ok[MAXID], completed[MAXID];
  int64_t writing, completing; /* outstanding results, or -1 */
  int64_t latest;              /* latest committed completion, or -1 */
  bool over;                   /* FAIL_JOB or STOP_JOB seen */
  int64_t sink_committed;      /* highest COMMITTED accepted, or -1 */
  bool hb_registers;           /* after a coordinator restart */
  ksnap_control_record_t hist[2 * MAXID]; /* the control topic */
  size_t hist_cnt;
  int restarts;
  bool job_failed;
  int failures;        /* consecutive counted failures (invariant 11) */
  int64_t now;         /* the time of the step's event */
  bool restarting;     /* a "Job failure: restoring in D ms" with D > 0 */
  int64_t restart_due; /* ... then the restore is due at now + D */
  bool asked_restore;  /* the operator asked for a restore since the last */
  int64_t decided;     /* restores the strategy decided (this coordinator) */
  int64_t last_success; /* or -1 */
  unsigned seed;
  int step;
} model_t;

static ksnap_conf_t *conf;
static ksnap_job_t *job_global;
static ksnap_coord_sm_t *sm;
static ksnap_coord_sm_conf_t smc;
static model_t m;

#define CHECK(cond, ...)                                                   \
  ck_assert_msg((cond), "seed %u step %d: %s", m.seed, m.step,            \
                (snprintf(msgbuf, sizeof(msgbuf), __VA_ARGS__), msgbuf))
static char msgbuf[256];

static ksnap_task_id_t tid(int t) {
  return (ksnap_task_id_t){(char *)stage_of[t], index_of[t]};
}

static void hist_add(ksnap_control_type_t type, int64_t id, int64_t gen,
                     bool savepoint) {
  ksnap_control_record_t *r = &m.hist[m.hist_cnt++];
  memset(r, 0, sizeof(*r));
  r->type = type;
  if (type == KSNAP_CONTROL_TRIGGER)
    r->u.trigger = (ksnap_trigger_t){id, 0, {KSNAP_CKPT_ALIGNED, savepoint, false},
                                     gen};
  else if (type == KSNAP_CONTROL_COMPLETE)
    r->u.complete = (ksnap_complete_t){id, gen, (char *)"m"};
  else if (type == KSNAP_CONTROL_ABORT)
    r->u.abort = (ksnap_abort_t){id, gen, (char *)"r"};
  else
    r->u.restore = (ksnap_restore_t){gen, id, NULL, NULL, 0};
}

/* Invariant 10 as the model sees it: the repair floor and num-retained. */
static void check_retire(int64_t id) {
  int64_t floor = m.sink_committed, newer = 0;

  CHECK(m.sink_committed > 0, "RETIRE %" PRId64 " before any commit", id);
  for (int64_t i = 1; i <= m.sink_committed && i < MAXID; i++)
    if (m.completed[i])
      floor = i;
  CHECK(id < floor, "RETIRE %" PRId64 " at or above the floor %" PRId64, id,
        floor);
  for (int64_t i = id + 1; i <= m.last_trigger; i++)
    newer += m.completed[i] && !m.savepoint[i];
  CHECK(newer >= smc.num_retained, "RETIRE %" PRId64 " with %" PRId64
        " newer", id, newer);
}

static int pending_checkpoints(void) {
  int n = 0;
  for (int64_t i = 1; i <= m.last_trigger && i < MAXID; i++)
    n += m.pending[i] && !m.savepoint[i];
  return n;
}

static void check_action(const ksnap_coord_action_t *a) {
  int64_t id = a->checkpoint_id;

  CHECK(id < MAXID, "id %" PRId64 " out of the model's range", id);
  if (getenv("KSNAP_TEST_VERBOSE"))
    fprintf(stderr, "  step %d t=%" PRId64 " %s id=%" PRId64 " g=%" PRId64
            " %s\n", m.step, m.now, ksnap_coord_act_type_name(a->type), id,
            a->generation, a->text ? a->text : "");
  switch (a->type) {
  case KSNAP_COORD_ACT_TRIGGER:
    CHECK(id > m.last_trigger, "TRIGGER %" PRId64 " after %" PRId64, id,
          m.last_trigger);
    CHECK(!m.restarting, "TRIGGER %" PRId64 " while restarting", id);
    for (int t = 0; t < NTASKS; t++)
      CHECK(m.registered[t], "TRIGGER %" PRId64 " before task %d registered",
            id, t);
    CHECK(a->generation == m.g, "TRIGGER in generation %" PRId64,
          a->generation);
    m.last_trigger = id;
    m.pending[id] = true;
    m.savepoint[id] = a->options.is_savepoint;
    m.ck_gen[id] = a->generation;
    hist_add(KSNAP_CONTROL_TRIGGER, id, a->generation, a->options.is_savepoint);
    CHECK(pending_checkpoints() <= smc.max_concurrent,
          "%d checkpoints pending", pending_checkpoints());
    break;
  case KSNAP_COORD_ACT_WRITE_METADATA:
    CHECK(m.pending[id], "WRITE_METADATA %" PRId64 " not pending", id);
    for (int t = 0; t < NTASKS; t++)
      CHECK(m.acked[id][t], "WRITE_METADATA %" PRId64 " without task %d", id,
            t);
    CHECK(m.writing < 0 && m.completing < 0,
          "two finalizations at once (%" PRId64 ")", id);
    CHECK(a->meta && a->meta->generation == m.g &&
              a->meta->task_cnt == NTASKS,
          "metadata of %" PRId64, id);
    m.writing = id;
    break;
  case KSNAP_COORD_ACT_SEND_COMPLETE:
    CHECK(m.meta_ok[id], "COMPLETE %" PRId64 " before its metadata", id);
    CHECK(a->generation == m.g && m.ck_gen[id] == m.g,
          "COMPLETE %" PRId64 " of generation %" PRId64 " in %" PRId64, id,
          a->generation, m.g);
    m.completing = id;
    break;
  case KSNAP_COORD_ACT_SEND_ABORT:
    CHECK(m.pending[id], "ABORT %" PRId64 " not pending", id);
    m.pending[id] = false;
    if (!m.savepoint[id] && id > m.last_success &&
        (!strncmp(a->text, "declined by task ", 17) ||
         !strcmp(a->text, "expired before completing") ||
         !strncmp(a->text, "writing its metadata failed: ", 29) ||
         !strncmp(a->text, "its COMPLETE record was not committed: ", 39)) &&
        ++m.failures > smc.tolerable_failed)
      m.failures = 0; /* a failure of the job; the count starts again */
    hist_add(KSNAP_CONTROL_ABORT, id, a->generation, false);
    if (m.writing == id)
      m.writing = -1;
    CHECK(m.completing != id, "ABORT %" PRId64 " while completing", id);
    break;
  case KSNAP_COORD_ACT_SEND_ASSIGN:
    CHECK(a->generation == m.g, "ASSIGN in generation %" PRId64 " (G %"
          PRId64 ")", a->generation, m.g);
    break;
  case KSNAP_COORD_ACT_SEND_RESTORE:
    CHECK(a->owner_cnt == NTASKS, "RESTORE with %zu owners", a->owner_cnt);
    CHECK(a->generation == m.g + 1, "RESTORE to %" PRId64 " from %" PRId64,
          a->generation, m.g);
    CHECK(id == (m.latest < 0 ? KSNAP_CHECKPOINT_NONE : m.latest),
          "RESTORE from %" PRId64 ", latest %" PRId64, id, m.latest);
    CHECK(m.completing < 0, "RESTORE while COMPLETE %" PRId64 " in flight",
          m.completing);
    for (int64_t i = 1; i <= m.last_trigger; i++)
      CHECK(!m.pending[i], "%" PRId64 " pending across a restore", i);
    CHECK(!m.restarting || m.now >= m.restart_due || m.asked_restore,
          "RESTORE at %" PRId64 ", due at %" PRId64, m.now, m.restart_due);
    m.restarting = m.asked_restore = false;
    m.g = a->generation;
    m.writing = -1;
    m.hb_registers = false;
    hist_add(KSNAP_CONTROL_RESTORE, id, a->generation, false);
    memset(m.registered, 0, sizeof(m.registered));
    break;
  case KSNAP_COORD_ACT_RETIRE:
    CHECK(m.completed[id] && !m.savepoint[id] && id < m.latest,
          "RETIRE %" PRId64 " (latest %" PRId64 ")", id, m.latest);
    check_retire(id);
    break;
  case KSNAP_COORD_ACT_FAIL_JOB:
    CHECK(!strncmp(a->text, "the restart strategy ", 21), "FAIL_JOB: %s",
          a->text);
    if (smc.restart.type == KSNAP_RESTART_FIXED_DELAY)
      CHECK(m.decided == smc.restart.fixed_attempts, "FAIL_JOB after %"
            PRId64 " restores (attempts %" PRId64 ")", m.decided,
            smc.restart.fixed_attempts);
    CHECK(smc.restart.type != KSNAP_RESTART_NONE || m.decided == 0,
          "restores with strategy none");
    m.over = m.job_failed = true;
    break;
  case KSNAP_COORD_ACT_STOP_JOB:
    m.over = true;
    break;
  case KSNAP_COORD_ACT_SEND_MEMBER:
    CHECK(0, "SEND_MEMBER without members");
    break;
  case KSNAP_COORD_ACT_LOG:
    CHECK(a->text && *a->text, "empty log line");
    if (!strncmp(a->text, "Job failure: restoring in ", 26)) {
      int64_t d = strtoll(a->text + 26, NULL, 10);
      m.decided++;
      m.restarting = d > 0;
      m.restart_due = m.now + d;
    }
    break;
  }
}

static void drain(void) {
  ksnap_coord_action_t a;
  while (ksnap_coord_sm_next_action(sm, &a)) {
    check_action(&a);
    ksnap_coord_action_cleanup(&a);
  }
  CHECK(ksnap_coord_sm_generation(sm) == m.g, "generation %" PRId64
        " vs %" PRId64, ksnap_coord_sm_generation(sm), m.g);
  CHECK(ksnap_coord_sm_failure_cnt(sm) == m.failures ||
            ksnap_coord_sm_state(sm) == KSNAP_COORD_FAILED,
        "%d counted failures, the model %d (tolerable %d)",
        ksnap_coord_sm_failure_cnt(sm), m.failures, smc.tolerable_failed);
  /* the delay over, a COMPLETE in flight still holds the restore back */
  CHECK(m.restarting ? ksnap_coord_sm_state(sm) == KSNAP_COORD_RESTARTING ||
                           ksnap_coord_sm_state(sm) ==
                               KSNAP_COORD_RESTORE_PENDING
                     : ksnap_coord_sm_state(sm) != KSNAP_COORD_RESTARTING,
        "state %s, restarting %d",
        ksnap_coord_state_name(ksnap_coord_sm_state(sm)), m.restarting);
  for (int64_t i = 1; m.restarting && i <= m.last_trigger; i++)
    CHECK(!m.pending[i] || i == m.completing,
          "%" PRId64 " pending while restarting", i);
}

/* A random pending id, or -1. */
static int64_t any_pending(void) {
  int64_t cand[64];
  int n = 0;
  for (int64_t i = 1; i <= m.last_trigger && n < 64; i++)
    if (m.pending[i])
      cand[n++] = i;
  return n ? cand[rand() % n] : -1;
}

static void do_ack(int64_t now) {
  int64_t id = any_pending();
  int t = rand() % NTASKS;
  int64_t gen = (rand() % 10 == 0 && m.g > 0) ? m.g - 1 : m.g;
  ksnap_ack_t a;

  if (id < 0)
    return;
  memset(&a, 0, sizeof(a));
  a.checkpoint_id = id;
  a.generation = gen;
  a.snapshot.task.stage = strdup(stage_of[t]);
  a.snapshot.task.index = index_of[t];
  a.snapshot.timings.sync_us = rand() % 100;
  if (ksnap_coord_sm_ack(sm, now, &a) == KSNAP_ERR_OK && gen == m.g)
    m.acked[id][t] = true;
  ksnap_task_snapshot_cleanup(&a.snapshot);
}

/* kill -9 of the coordinator: a new one rebuilds itself from the control
 * topic. A COMPLETE in flight was committed or not. */
static void restart(int64_t now) {
  ksnap_error_t error;

  if (m.completing > 0) {
    if (rand() % 2) {
      m.completed[m.completing] = true;
      m.pending[m.completing] = false;
      if (m.completing > m.latest)
        m.latest = m.completing;
      hist_add(KSNAP_CONTROL_COMPLETE, m.completing, m.g, false);
      if (m.completing > m.last_success)
        m.last_success = m.completing;
    }
    m.completing = -1;
  }
  m.writing = -1;
  ksnap_coord_sm_destroy(sm);
  ck_assert_int_eq(ksnap_coord_sm_new(job_global, &smc, &sm, &error),
                   KSNAP_ERR_OK);
  for (size_t i = 0; i < m.hist_cnt; i++)
    ck_assert_int_eq(ksnap_coord_sm_replay(sm, &m.hist[i]), KSNAP_ERR_OK);
  memset(m.registered, 0, sizeof(m.registered));
  m.hb_registers = true;
  m.sink_committed = -1; /* the new coordinator has not heard of any */
  m.restarts++;
  m.failures = 0; /* the count is not durable (nor is Flink's) */
  m.decided = 0;  /* nor is the restart strategy's */
  m.restarting = false;
  ck_assert_int_eq(ksnap_coord_sm_start(sm, now), KSNAP_ERR_OK);
  CHECK(ksnap_coord_sm_generation(sm) == m.g, "generation after restart");
  CHECK(ksnap_coord_sm_latest_completed(sm) ==
            (m.latest < 0 ? KSNAP_CHECKPOINT_NONE : m.latest),
        "latest after restart");
}

static void one_step(int64_t *now) {
  int r = rand() % 1000;
  int t = rand() % NTASKS;

  if (r == 997)
    m.asked_restore = true; /* until the RESTORE (it may be deferred) */
  m.now = *now;
  if (r < 200) {
    m.now = *now += rand() % 500;
    ksnap_coord_sm_tick(sm, *now);
  } else if (r < 300) {
    int64_t gen = (rand() % 5 == 0 && m.g > 0) ? m.g - 1 : m.g;
    static int incarnation[NTASKS];
    char instance[32];
    if (rand() % 200 == 0)
      incarnation[t]++; /* the task's worker restarted: a new instance */
    snprintf(instance, sizeof(instance), "w%d", incarnation[t]);
    ksnap_register_t reg = {tid(t), instance, (char *)"h", 1, gen, false};
    ksnap_err_t err = ksnap_coord_sm_register(sm, *now, &reg);
    drain(); /* a restore it caused resets the registrations first */
    if (err == KSNAP_ERR_OK && gen == m.g &&
        ksnap_coord_sm_state(sm) != KSNAP_COORD_RESTORE_PENDING)
      m.registered[t] = true;
  } else if (r < 450) {
    for (int i = 0; i < NTASKS; i++) {
      ksnap_heartbeat_t hb = {tid(i), m.g, *now, 0, 0, false};
      if (rand() % 8 &&
          ksnap_coord_sm_heartbeat(sm, *now, &hb) == KSNAP_ERR_OK &&
          m.hb_registers)
        m.registered[i] = true; /* a restarted coordinator's rule */
    }
  } else if (r < 750) {
    do_ack(*now);
  } else if (r < 760) {
    int64_t id = any_pending();
    ksnap_decline_t d = {id, tid(t), m.g, (char *)"random", false};
    if (id > 0)
      ksnap_coord_sm_decline(sm, *now, &d);
  } else if (r < 840) {
    if (m.writing > 0) {
      int64_t id = m.writing;
      bool ok = rand() % 10 != 0;
      m.meta_ok[id] = ok;
      m.writing = -1;
      ksnap_coord_sm_metadata_written(sm, *now, id, ok ? NULL : "io");
    }
  } else if (r < 920) {
    if (m.completing > 0) {
      int64_t id = m.completing;
      bool ok = rand() % 10 != 0;
      m.completing = -1;
      if (ok) {
        m.completed[id] = true;
        m.pending[id] = false;
        if (id > m.latest)
          m.latest = id;
        hist_add(KSNAP_CONTROL_COMPLETE, id, m.g, false);
        if (id > m.last_success) {
          m.last_success = id;
          m.failures = 0;
        }
      }
      ksnap_coord_sm_complete_committed(sm, *now, id, ok ? NULL : "aborted");
    }
  } else if (r < 960) {
    if (m.latest > 0) {
      ksnap_committed_t c = {1 + rand() % m.latest, tid(2), m.g};
      if (ksnap_coord_sm_committed(sm, *now, &c) == KSNAP_ERR_OK &&
          c.checkpoint_id > m.sink_committed)
        m.sink_committed = c.checkpoint_id;
    }
  } else if (r < 985) {
    ksnap_coord_sm_request_checkpoint(sm, *now);
  } else if (r < 995) {
    ksnap_coord_sm_request_savepoint(sm, *now, rand() % 5 == 0, NULL);
  } else if (r < 997) {
    ksnap_task_id_t id = tid(t);
    ksnap_coord_sm_task_failed(sm, *now, &id, m.g, "random");
  } else if (r < 998) {
    ksnap_coord_sm_request_restore(sm, *now, "random");
  } else {
    restart(*now);
  }
  drain();
}

/* At once (as before restart strategies), fixed-delay, exponential-delay
 * or none, with small delays. */
static ksnap_restart_conf_t random_strategy(void) {
  int r = rand() % 20;
  ksnap_restart_conf_t c = KSNAP_RESTART_AT_ONCE;

  c.jitter_seed = (uint64_t)rand();
  if (r < 6)
    return c;
  if (r < 13) {
    c.fixed_attempts = rand() % 4;
    c.fixed_delay_ms = rand() % 1500;
  } else if (r < 18) {
    c.type = KSNAP_RESTART_EXPONENTIAL_DELAY;
    c.initial_backoff_ms = 100 + rand() % 500;
    c.max_backoff_ms = 2000;
    c.backoff_multiplier = 1.5;
    c.jitter_factor = 0.1;
    c.reset_threshold_ms = 5000;
    c.attempts_before_reset = 1 + rand() % 5;
  } else {
    c.type = KSNAP_RESTART_NONE;
  }
  return c;
}

static void run(unsigned seed, int steps) {
  ksnap_error_t error;
  int64_t now = 0;

  memset(&m, 0, sizeof(m));
  m.seed = seed;
  m.writing = m.completing = m.latest = m.sink_committed = -1;
  m.last_success = -1;
  srand(seed);
  smc = (ksnap_coord_sm_conf_t){.interval_ms = 200 + rand() % 1000,
                                .timeout_ms = 1000 + rand() % 5000,
                                .min_pause_ms = rand() % 2 ? 0 : rand() % 800,
                                .max_concurrent = 1 + rand() % 3,
                                .tolerable_failed = rand() % 6,
                                .num_retained = 1 + rand() % 3,
                                .heartbeat_timeout_ms = 2000 + rand() % 4000,
                                .mode = KSNAP_CKPT_ALIGNED,
                                .max_id_seen = KSNAP_CHECKPOINT_NONE};
  smc.restart = random_strategy();
  ck_assert_int_eq(ksnap_coord_sm_new(job_global, &smc, &sm, &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, now), KSNAP_ERR_OK);
  drain();
  for (m.step = 0; m.step < steps && !m.over; m.step++) {
    one_step(&now);
    CHECK(m.last_trigger == 0 || ksnap_coord_sm_max_id(sm) >= m.last_trigger,
          "max id");
    if (m.last_trigger >= MAXID - 8 || m.hist_cnt >= 2 * MAXID - 16)
      break;
  }
  ksnap_coord_sm_destroy(sm);
  sm = NULL;
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

START_TEST(random_interleavings_keep_invariants) {
  int runs = env_int("KSNAP_COORD_RANDOM_RUNS", 300);
  int steps = env_int("KSNAP_COORD_RANDOM_STEPS", 400);
  int64_t completed = 0, restores = 0, triggers = 0, restarts = 0;
  int64_t failed = 0;

  conf = ksnap_conf_new();
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             COORD_TEST_JOB_PROPERTIES, NULL, NULL),
      KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job_global, NULL, NULL),
                   KSNAP_ERR_OK);
  for (int i = env_int("KSNAP_COORD_RANDOM_FIRST", 0); i < runs; i++) {
    run((unsigned)i + 1, steps);
    triggers += m.last_trigger;
    restores += m.g;
    restarts += m.restarts;
    failed += m.job_failed;
    for (int64_t id = 1; id <= m.last_trigger; id++)
      completed += m.completed[id];
  }
  /* the runs must exercise the paths, not idle */
  fprintf(stderr, "%d runs: %" PRId64 " triggers, %" PRId64
          " completions, %" PRId64 " restores, %" PRId64
          " coordinator restarts, %" PRId64 " failed jobs\n",
          runs, triggers, completed, restores, restarts, failed);
  ck_assert_int_gt(completed, runs);
  ck_assert_int_gt(restores, runs / 4);
  ck_assert_int_gt(restarts, runs / 4);
  ck_assert_int_gt(failed, 0);
  ksnap_job_destroy(job_global);
  ksnap_conf_destroy(conf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_random");
  TCase *tc = tcase_create("coord_random");

  tcase_set_timeout(tc, 100);
  tcase_add_test(tc, random_interleavings_keep_invariants);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
