/* The coordinator state machine's test fixture, shared by test_coord_sm.c
 * and test_coord_owner.c (included once per test program: its state and
 * helpers are static). An injected clock; every action drained is kept in
 * acts[] and looked at with expect(), ASSERT_LOGGED() and ASSERT_NONE().
 *
 * Job: src (2 tasks, source:in) -> snk (1 task, sink:out): tasks src[0],
 * src[1], snk[0]; snk[0] is the only sink task. */
#ifndef KSNAP_TEST_COORD_FIXTURE_H
#define KSNAP_TEST_COORD_FIXTURE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_job.h"
#include "state_machine/coord_sm.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define NTASKS 3
static const char *const stage_of[NTASKS] = {"src", "src", "snk"};
static const int32_t index_of[NTASKS] = {0, 1, 0};

static ksnap_conf_t *conf;
static ksnap_job_t *job;
static ksnap_coord_sm_t *sm;
static ksnap_coord_sm_conf_t smc;

/* Every action drained so far (texts copied). */
#define MAX_ACTS 4096
static ksnap_coord_action_t acts[MAX_ACTS];
static size_t nacts, seen; /* seen: first action not yet looked at */
static ksnap_checkpoint_meta_t last_meta;
/* If > 0: ACK handles reuse an object of this checkpoint (incremental). */
static int64_t ack_ref;
static bool have_meta;

static inline void build_job(void) {
  conf = ksnap_conf_new();
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             COORD_TEST_JOB_PROPERTIES, NULL, NULL),
      KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, NULL, NULL), KSNAP_ERR_OK);
}

static inline void setup(void) {
  build_job();
  smc = (ksnap_coord_sm_conf_t){.interval_ms = 1000,
                                .timeout_ms = 10000,
                                .min_pause_ms = 0,
                                .max_concurrent = 1,
                                .tolerable_failed = 0,
                                .num_retained = 1,
                                .heartbeat_timeout_ms = 1000000, /* or 5 s */
                                .mode = KSNAP_CKPT_ALIGNED,
                                .max_id_seen = KSNAP_CHECKPOINT_NONE,
                                .restart = KSNAP_RESTART_AT_ONCE};
  sm = NULL;
  nacts = seen = 0;
  have_meta = false;
  ack_ref = 0;
}

static inline void teardown(void) {
  for (size_t i = 0; i < nacts; i++)
    ksnap_coord_action_cleanup(&acts[i]);
  ksnap_coord_sm_destroy(sm);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
}

/* Moves the sm's actions into acts[]; copies a WRITE_METADATA's meta
 * header (its tasks stay valid until the result is reported). */
static inline void drain(void) {
  ksnap_coord_action_t act;

  while (ksnap_coord_sm_next_action(sm, &act)) {
    ck_assert_uint_lt(nacts, MAX_ACTS);
    if (act.type == KSNAP_COORD_ACT_WRITE_METADATA) {
      last_meta = *act.meta;
      have_meta = true;
    }
    if (getenv("KSNAP_TEST_VERBOSE"))
      fprintf(stderr, "  %s id=%" PRId64 " g=%" PRId64 " %s\n",
              ksnap_coord_act_type_name(act.type), act.checkpoint_id,
              act.generation, act.text ? act.text : "");
    acts[nacts++] = act;
  }
}

/* Starts a coordinator with smc (after optional history). */
static inline void start(int64_t now) {
  ksnap_error_t error;
  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_start(sm, now), KSNAP_ERR_OK);
  drain();
}

static inline ksnap_task_id_t tid(int t) {
  return (ksnap_task_id_t){(char *)stage_of[t], index_of[t]};
}

static inline ksnap_err_t reg(int64_t now, int t, int64_t gen,
                              const char *worker) {
  ksnap_register_t r = {tid(t), (char *)worker, (char *)"h", 100 + t, gen,
                        false};
  ksnap_err_t err = ksnap_coord_sm_register(sm, now, &r);
  drain();
  return err;
}

static inline void reg_all(int64_t now, int64_t gen) {
  for (int t = 0; t < NTASKS; t++)
    ck_assert_int_eq(reg(now, t, gen, "w"), KSNAP_ERR_OK);
}

static inline ksnap_err_t hb(int64_t now, int t, int64_t gen) {
  ksnap_heartbeat_t h = {tid(t), gen, now, 0, 0, false};
  ksnap_err_t err = ksnap_coord_sm_heartbeat(sm, now, &h);
  drain();
  return err;
}

static inline void tick(int64_t now) {
  ck_assert_int_eq(ksnap_coord_sm_tick(sm, now), KSNAP_ERR_OK);
  drain();
}

/* An ACK with one 100-byte handle and some timings. */
static inline ksnap_err_t ack(int64_t now, int64_t id, int t, int64_t gen) {
  ksnap_ack_t a;
  char path[64];
  ksnap_err_t err;

  memset(&a, 0, sizeof(a));
  a.checkpoint_id = id;
  a.generation = gen;
  a.snapshot.task.stage = strdup(stage_of[t]);
  a.snapshot.task.index = index_of[t];
  a.snapshot.handles = calloc(1, sizeof(*a.snapshot.handles));
  a.snapshot.handle_cnt = 1;
  snprintf(path, sizeof(path), "s3://b/j/chk-%" PRId64 "/%s-%d",
           ack_ref > 0 ? ack_ref : id, stage_of[t], (int)index_of[t]);
  a.snapshot.handles[0].path = strdup(path);
  a.snapshot.handles[0].checksum = strdup("crc32c:0a0b0c0d");
  a.snapshot.handles[0].size = 100;
  a.snapshot.handles[0].key_group_end = 127;
  a.snapshot.timings = (ksnap_timings_t){10, 2000, 300, 40, 5};
  err = ksnap_coord_sm_ack(sm, now, &a);
  ksnap_task_snapshot_cleanup(&a.snapshot);
  drain();
  return err;
}

static inline void ack_all(int64_t now, int64_t id, int64_t gen) {
  for (int t = 0; t < NTASKS; t++)
    ck_assert_int_eq(ack(now, id, t, gen), KSNAP_ERR_OK);
}

static inline ksnap_err_t decline(int64_t now, int64_t id, int t,
                                  int64_t gen, const char *why) {
  ksnap_decline_t d = {id, tid(t), gen, (char *)why, false};
  ksnap_err_t err = ksnap_coord_sm_decline(sm, now, &d);
  drain();
  return err;
}

static inline ksnap_err_t meta_ok(int64_t now, int64_t id,
                                  const char *errmsg) {
  ksnap_err_t err = ksnap_coord_sm_metadata_written(sm, now, id, errmsg);
  drain();
  return err;
}

static inline ksnap_err_t commit_ok(int64_t now, int64_t id,
                                    const char *errmsg) {
  ksnap_err_t err = ksnap_coord_sm_complete_committed(sm, now, id, errmsg);
  drain();
  return err;
}

static inline void finish(int64_t now, int64_t id) {
  ck_assert_int_eq(meta_ok(now, id, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(commit_ok(now, id, NULL), KSNAP_ERR_OK);
}

static inline ksnap_err_t committed(int64_t now, int64_t id) {
  ksnap_committed_t c = {id, tid(2), ksnap_coord_sm_generation(sm)};
  ksnap_err_t err = ksnap_coord_sm_committed(sm, now, &c);
  drain();
  return err;
}

/* Looking at new actions: the next one of @p type after `seen`, or NULL.
 * next_act() advances `seen` past it. */
static inline ksnap_coord_action_t *find_act(ksnap_coord_act_type_t type,
                                             size_t from) {
  for (size_t i = from; i < nacts; i++)
    if (acts[i].type == type)
      return &acts[i];
  return NULL;
}

static inline size_t count_new(ksnap_coord_act_type_t type) {
  size_t n = 0;
  for (size_t i = seen; i < nacts; i++)
    n += acts[i].type == type;
  return n;
}

static inline bool logged(const char *text) {
  for (size_t i = seen; i < nacts; i++)
    if (acts[i].type == KSNAP_COORD_ACT_LOG && strstr(acts[i].text, text))
      return true;
  return false;
}

#define ASSERT_LOGGED(text)                                                \
  ck_assert_msg(logged(text), "no log line containing \"%s\"", (text))
#define ASSERT_NONE(type)                                                  \
  ck_assert_msg(count_new(type) == 0, "unexpected %s",                     \
                ksnap_coord_act_type_name(type))

static inline ksnap_coord_action_t *expect(ksnap_coord_act_type_t type,
                                          int64_t id) {
  ksnap_coord_action_t *a = find_act(type, seen);
  ck_assert_msg(a != NULL, "no %s action", ksnap_coord_act_type_name(type));
  ck_assert_int_eq(a->checkpoint_id, id);
  return a;
}

static inline void mark(void) { seen = nacts; }

/* Started, all registered in generation 0, RUNNING at t=0. */
static inline void running(void) {
  start(0);
  reg_all(0, 0);
  ck_assert_int_eq(ksnap_coord_sm_state(sm), KSNAP_COORD_RUNNING);
  mark();
}

#endif /* KSNAP_TEST_COORD_FIXTURE_H */
