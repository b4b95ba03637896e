/* The coordinator state machine's life cycle (hub; see the call order at
 * the top of coord_sm.c): settings, creation and destruction, recovery
 * from the control topic's history (replay, then start), introspection.
 *
 * A restarted coordinator (non-empty history) aborts the checkpoints the
 * previous one left unresolved in generation G, presumes the tasks running
 * (a HEARTBEAT at G counts as registration) and watches their heartbeats
 * from its start. The consecutive-failure count starts at 0. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

/* ----------------------------------------------------- create, destroy */

/* restart-strategy.type's values, Flink's aliases after the names, in
 * the table's order (conf/conf_table.c). */
static ksnap_restart_type_t restart_type(const char *name) {
  static const char *const names[] = {"exponential-delay", "fixed-delay",
                                      "failure-rate",      "none",
                                      "exponentialdelay",  "fixeddelay",
                                      "failurerate",       "off",
                                      "disable"};
  static const ksnap_restart_type_t types[] = {
      KSNAP_RESTART_EXPONENTIAL_DELAY, KSNAP_RESTART_FIXED_DELAY,
      KSNAP_RESTART_FAILURE_RATE,      KSNAP_RESTART_NONE,
      KSNAP_RESTART_EXPONENTIAL_DELAY, KSNAP_RESTART_FIXED_DELAY,
      KSNAP_RESTART_FAILURE_RATE,      KSNAP_RESTART_NONE,
      KSNAP_RESTART_NONE};

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (!strcmp(name, names[i]))
      return types[i];
  return (ksnap_restart_type_t)-1; /* ksnap_coord_sm_new() refuses it */
}

static ksnap_err_t restart_conf_load(const ksnap_conf_t *conf,
                                     ksnap_restart_conf_t *r) {
  const char *type, *e = "restart-strategy.exponential-delay.";
  char k[6][96];
  ksnap_err_t err;

  snprintf(k[0], sizeof(k[0]), "%sinitial-backoff", e);
  snprintf(k[1], sizeof(k[1]), "%smax-backoff", e);
  snprintf(k[2], sizeof(k[2]), "%sbackoff-multiplier", e);
  snprintf(k[3], sizeof(k[3]), "%sjitter-factor", e);
  snprintf(k[4], sizeof(k[4]), "%sreset-backoff-threshold", e);
  snprintf(k[5], sizeof(k[5]), "%sattempts-before-reset-backoff", e);
  if ((err = ksnap_conf_get_str(conf, "restart-strategy.type", &type)) ||
      (err = ksnap_conf_get_duration_ms(conf, k[0], &r->initial_backoff_ms)) ||
      (err = ksnap_conf_get_duration_ms(conf, k[1], &r->max_backoff_ms)) ||
      (err = ksnap_conf_get_double(conf, k[2], &r->backoff_multiplier)) ||
      (err = ksnap_conf_get_double(conf, k[3], &r->jitter_factor)) ||
      (err = ksnap_conf_get_duration_ms(conf, k[4], &r->reset_threshold_ms)) ||
      (err = ksnap_conf_get_int(conf, k[5], &r->attempts_before_reset)) ||
      (err = ksnap_conf_get_int(conf, "restart-strategy.fixed-delay.attempts",
                                &r->fixed_attempts)) ||
      (err = ksnap_conf_get_duration_ms(
           conf, "restart-strategy.fixed-delay.delay", &r->fixed_delay_ms)) ||
      (err = ksnap_conf_get_int(
           conf, "restart-strategy.failure-rate.max-failures-per-interval",
           &r->rate_max_failures)) ||
      (err = ksnap_conf_get_duration_ms(
           conf, "restart-strategy.failure-rate.failure-rate-interval",
           &r->rate_interval_ms)) ||
      (err = ksnap_conf_get_duration_ms(
           conf, "restart-strategy.failure-rate.delay", &r->rate_delay_ms)))
    return err;
  r->type = restart_type(type);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_conf_load(const ksnap_conf_t *conf,
                                     ksnap_coord_sm_conf_t *c) {
  int64_t v[4];
  const char *mode;
  int unaligned = 0;
  ksnap_err_t err;

  memset(c, 0, sizeof(*c));
  if ((err = ksnap_conf_get_duration_ms(
           conf, "execution.checkpointing.interval", &c->interval_ms)) ||
      (err = ksnap_conf_get_duration_ms(
           conf, "execution.checkpointing.timeout", &c->timeout_ms)) ||
      (err = ksnap_conf_get_duration_ms(
           conf, "execution.checkpointing.min-pause", &c->min_pause_ms)) ||
      (err = ksnap_conf_get_duration_ms(conf, "heartbeat.timeout",
                                        &c->heartbeat_timeout_ms)) ||
      (err = ksnap_conf_get_int(
           conf, "execution.checkpointing.max-concurrent-checkpoints",
           &v[0])) ||
      (err = ksnap_conf_get_int(
           conf, "execution.checkpointing.tolerable-failed-checkpoints",
           &v[1])) ||
      (err = ksnap_conf_get_int(conf, "state.checkpoints.num-retained",
                                &v[2])) ||
      (err = ksnap_conf_get_str(conf, "execution.checkpointing.mode",
                                &mode)) ||
      (err = ksnap_conf_get_bool(
           conf, "execution.checkpointing.unaligned.enabled", &unaligned)))
    return err;
  c->max_concurrent = (int)v[0];
  c->tolerable_failed = (int)v[1];
  c->num_retained = (int)v[2];
  c->mode = !strcmp(mode, "AT_LEAST_ONCE") ? KSNAP_CKPT_AT_LEAST_ONCE
            : unaligned                    ? KSNAP_CKPT_UNALIGNED
                                           : KSNAP_CKPT_ALIGNED;
  c->max_id_seen = KSNAP_CHECKPOINT_NONE;
  return restart_conf_load(conf, &c->restart);
}

ksnap_err_t ksnap_coord_sm_new(const ksnap_job_t *job,
                               const ksnap_coord_sm_conf_t *smconf,
                               ksnap_coord_sm_t **smp, ksnap_error_t *error) {
  ksnap_coord_sm_t *sm;
  const char *bad = NULL;

  *smp = NULL;
  if (smconf->interval_ms <= 0)
    bad = "interval must be positive";
  else if (smconf->timeout_ms <= 0)
    bad = "timeout must be positive";
  else if (smconf->min_pause_ms < 0)
    bad = "min-pause must not be negative";
  else if (smconf->max_concurrent < 1)
    bad = "max-concurrent-checkpoints must be at least 1";
  else if (smconf->tolerable_failed < 0)
    bad = "tolerable-failed-checkpoints must not be negative";
  else if (smconf->num_retained < 1)
    bad = "num-retained must be at least 1";
  else if (smconf->heartbeat_timeout_ms <= 0)
    bad = "heartbeat.timeout must be positive";
  else if (smconf->max_id_seen < KSNAP_CHECKPOINT_NONE)
    bad = "max_id_seen must be NONE or an id";
  else
    bad = ksnap__coord_restart_check(&smconf->restart);
  if (bad)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "coordinator: %s",
                           bad);
  if (!(sm = calloc(1, sizeof(*sm))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "coordinator");
  sm->job = job;
  sm->conf = *smconf;
  sm->state = KSNAP_COORD_WAITING;
  sm->max_id = smconf->max_id_seen;
  if (!(sm->acts = ksnap__coord_acts_new()) ||
      !(sm->stats = ksnap_coord_stats_new(10)) ||
      !(sm->tasks = ksnap__coord_tasks_new(job, sm->acts,
                                           smconf->heartbeat_timeout_ms)) ||
      !(sm->ckpts = ksnap__coord_ckpts_new(
            sm->acts, sm->stats, job, ksnap__coord_tasks_names(sm->tasks),
            ksnap__coord_tasks_cnt(sm->tasks), smconf->timeout_ms)) ||
      !(sm->retain = ksnap__coord_retain_new(sm->acts,
                                             smconf->num_retained)) ||
      !(sm->sched = ksnap__coord_sched_new(sm->acts, smconf)) ||
      !(sm->failures = ksnap__coord_failures_new(smconf->tolerable_failed)) ||
      !(sm->restart = ksnap__coord_restart_new(&smconf->restart)) ||
      !(sm->unresolved = ksnap__coord_unresolved_new()) ||
      !(sm->origin = ksnap__coord_origin_new()) ||
      !(sm->members = ksnap__coord_members_new(
            sm->acts, smconf->heartbeat_timeout_ms)) ||
      !(sm->finish = ksnap__coord_finish_new(
            ksnap__coord_tasks_cnt(sm->tasks)))) {
    ksnap_coord_sm_destroy(sm);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "coordinator");
  }
  *smp = sm;
  return KSNAP_ERR_OK;
}

void ksnap_coord_sm_destroy(ksnap_coord_sm_t *sm) {
  if (!sm)
    return;
  ksnap__coord_acts_destroy(sm->acts); /* undrained actions first */
  ksnap__coord_ckpts_destroy(sm->ckpts);
  ksnap__coord_retain_destroy(sm->retain);
  ksnap__coord_unresolved_destroy(sm->unresolved);
  ksnap__coord_origin_destroy(sm->origin);
  ksnap__coord_members_destroy(sm->members);
  ksnap__coord_finish_destroy(sm->finish);
  ksnap__coord_tasks_destroy(sm->tasks);
  ksnap__coord_sched_destroy(sm->sched);
  ksnap__coord_failures_destroy(sm->failures);
  ksnap__coord_restart_destroy(sm->restart);
  free(sm->restore_reason);
  free(sm->failure_cause);
  free(sm->replayed_failure);
  free(sm->drain_ids);
  ksnap_coord_stats_destroy(sm->stats);
  free(sm);
}

/* ------------------------------------------------------------- recovery */

/* A replayed TRIGGER with drain: its id, for start(). */
static ksnap_err_t replay_drain(ksnap_coord_sm_t *sm, int64_t id) {
  int64_t *ids;

  if (!(ids = realloc(sm->drain_ids, (sm->drain_cnt + 1) * sizeof(*ids))))
    return KSNAP_ERR_NOMEM;
  sm->drain_ids = ids;
  ids[sm->drain_cnt++] = id;
  return KSNAP_ERR_OK;
}

/* Whether checkpoint @p id of the replayed history was triggered with
 * drain: then its sources' snapshots hold their ends, and the job drains
 * on after a restore from it. */
static bool replayed_drain(const ksnap_coord_sm_t *sm, int64_t id) {
  for (size_t i = 0; i < sm->drain_cnt; i++)
    if (sm->drain_ids[i] == id)
      return true;
  return false;
}

ksnap_err_t ksnap_coord_sm_replay(ksnap_coord_sm_t *sm,
                                  const ksnap_control_record_t *rec) {
  int64_t id = KSNAP_CHECKPOINT_NONE, gen = 0;
  bool savepoint = false;

  if (sm->started)
    return KSNAP_ERR_STATE;
  switch (rec->type) {
  case KSNAP_CONTROL_TRIGGER:
    id = rec->u.trigger.checkpoint_id;
    gen = rec->u.trigger.generation;
    if (ksnap__coord_unresolved_add(sm->unresolved, id, gen,
                                    rec->u.trigger.options.is_savepoint) ||
        (rec->u.trigger.options.drain && replay_drain(sm, id)))
      return KSNAP_ERR_NOMEM;
    break;
  case KSNAP_CONTROL_COMPLETE:
    id = rec->u.complete.checkpoint_id;
    gen = rec->u.complete.generation;
    /* its TRIGGER gone: assume a checkpoint */
    ksnap__coord_unresolved_take(sm->unresolved, id, &savepoint);
    if (ksnap__coord_retain_add(sm->retain, id, gen, savepoint, NULL, 0))
      return KSNAP_ERR_NOMEM;
    ksnap__coord_origin_clear(sm->origin); /* the job's own one now */
    break;
  case KSNAP_CONTROL_ABORT:
    id = rec->u.abort.checkpoint_id;
    gen = rec->u.abort.generation;
    ksnap__coord_unresolved_take(sm->unresolved, id, &savepoint);
    break;
  case KSNAP_CONTROL_RESTORE:
    gen = rec->u.restore.generation;
    ksnap__coord_unresolved_clear(sm->unresolved);
    ksnap__coord_tasks_owner_replay(sm->tasks, rec);
    free(sm->replayed_failure); /* a restore after it resumed the job */
    sm->replayed_failure = NULL;
    break;
  case KSNAP_CONTROL_JOB_FAILED:
    gen = rec->u.job_failed.generation;
    ksnap__coord_tasks_owner_replay(sm->tasks, rec);
    free(sm->replayed_failure);
    if (!(sm->replayed_failure = strdup(
              rec->u.job_failed.cause ? rec->u.job_failed.cause : "")))
      return KSNAP_ERR_NOMEM;
    break;
  case KSNAP_CONTROL_JOB_STOPPED: /* the driver keeps it (its start) */
    gen = rec->u.job_stopped.generation;
    ksnap__coord_tasks_owner_replay(sm->tasks, rec);
    break;
  case KSNAP_CONTROL_JOB_FINISHED: /* the driver keeps it (its start) */
    gen = rec->u.job_finished.generation;
    ksnap__coord_tasks_owner_replay(sm->tasks, rec);
    break;
  case KSNAP_CONTROL_ASSIGN:
    gen = rec->u.assign.generation;
    ksnap__coord_tasks_owner_replay(sm->tasks, rec);
    break;
  case KSNAP_CONTROL_MEMBER:
    gen = rec->u.member.generation;
    ksnap__coord_members_replay(sm->members, &rec->u.member);
    break;
  default:
    return KSNAP_ERR_INVALID_ARG;
  }
  if (id != KSNAP_CHECKPOINT_NONE &&
      (sm->max_id == KSNAP_CHECKPOINT_NONE || id > sm->max_id))
    sm->max_id = id;
  if (gen > sm->generation)
    ksnap__coord_set_generation(sm, gen);
  sm->recovered = true;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_restore_from(ksnap_coord_sm_t *sm, int64_t id,
                                        const char *url) {
  if (sm->started || id < 1 || !url || !*url)
    return sm->started ? KSNAP_ERR_STATE : KSNAP_ERR_INVALID_ARG;
  if (ksnap__coord_origin_set(sm->origin, id, url))
    return KSNAP_ERR_NOMEM;
  if (sm->max_id == KSNAP_CHECKPOINT_NONE || id > sm->max_id)
    sm->max_id = id; /* new ids above the point's and the history's */
  return KSNAP_ERR_OK;
}

const char *ksnap_coord_sm_origin(const ksnap_coord_sm_t *sm, int64_t *idp) {
  return ksnap__coord_origin_get(sm->origin, idp);
}

ksnap_err_t ksnap_coord_sm_replay_metadata(
    ksnap_coord_sm_t *sm, const ksnap_checkpoint_meta_t *meta) {
  ksnap_err_t err;

  if (ksnap__coord_is_oom(sm->acts))
    return KSNAP_ERR_NOMEM;
  if ((err = ksnap__coord_retain_metadata(sm->retain, meta)))
    return err;
  ksnap__coord_retire(sm);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_resume_failed(ksnap_coord_sm_t *sm) {
  if (sm->started)
    return KSNAP_ERR_STATE;
  sm->resume_failed = true;
  return KSNAP_ERR_OK;
}

/* The history ends FAILED and nobody asked to resume: the job stays
 * FAILED (the driver exits naming the cause and how to resume). */
static void stay_failed(ksnap_coord_sm_t *sm) {
  ksnap__coord_log(sm->acts, KSNAP_LOG_ERR,
                   "The job failed in generation %" PRId64
                   " before this coordinator started, and stays FAILED: %s",
                   sm->generation, sm->replayed_failure);
  sm->failure_cause = ksnap__coord_strdup(sm->acts, sm->replayed_failure);
  sm->state = KSNAP_COORD_FAILED; /* WAITING -> FAILED, nothing emitted */
}

ksnap_err_t ksnap_coord_sm_start(ksnap_coord_sm_t *sm, int64_t now_ms) {
  int64_t latest = ksnap__coord_retain_latest(sm->retain), origin_id;

  if (sm->started || ksnap__coord_is_oom(sm->acts))
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  sm->started = true;
  if (sm->replayed_failure && !sm->resume_failed) {
    stay_failed(sm);
    return ksnap__coord_leave(sm, KSNAP_ERR_OK);
  }
  ksnap__coord_finish_reset(sm->finish, sm->generation);
  if (latest != KSNAP_CHECKPOINT_NONE &&
      !ksnap__coord_origin_get(sm->origin, &origin_id) &&
      replayed_drain(sm, latest)) {
    sm->draining = true;
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "The job was draining (checkpoint %" PRId64 " was "
                     "triggered with drain): it drains on and stops with a "
                     "savepoint", latest);
  }
  ksnap__coord_tasks_start(sm->tasks, now_ms, sm->recovered);
  ksnap__coord_members_start(sm->members, now_ms);
  ksnap__coord_unresolved_abort(sm->unresolved, sm->acts, sm->generation);
  ksnap__coord_failures_start(sm->failures, latest);
  if (latest == KSNAP_CHECKPOINT_NONE)
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Coordinator started in generation %" PRId64
                     " with no completed checkpoint; next id %" PRId64,
                     sm->generation,
                     sm->max_id == KSNAP_CHECKPOINT_NONE ? 1 : sm->max_id + 1);
  else
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Coordinator started in generation %" PRId64
                     ", latest completed checkpoint %" PRId64
                     "; next id %" PRId64,
                     sm->generation, latest, sm->max_id + 1);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

/* -------------------------------------------------------- introspection */

bool ksnap_coord_sm_next_action(ksnap_coord_sm_t *sm,
                                ksnap_coord_action_t *act) {
  return ksnap__coord_acts_next(sm->acts, act);
}

ksnap_coord_state_t ksnap_coord_sm_state(const ksnap_coord_sm_t *sm) {
  return sm->state;
}
int64_t ksnap_coord_sm_generation(const ksnap_coord_sm_t *sm) {
  return sm->generation;
}
int64_t ksnap_coord_sm_latest_completed(const ksnap_coord_sm_t *sm) {
  return ksnap__coord_retain_latest(sm->retain);
}
int64_t ksnap_coord_sm_max_id(const ksnap_coord_sm_t *sm) {
  return sm->max_id;
}
int64_t ksnap_coord_sm_fully_committed(const ksnap_coord_sm_t *sm) {
  return ksnap__coord_tasks_fully_committed(sm->tasks);
}
bool ksnap_coord_sm_all_committed(const ksnap_coord_sm_t *sm, int64_t id) {
  bool sinks;
  int64_t cmin;

  if (!ksnap__coord_tasks_commit_floor(sm->tasks, &sinks, &cmin))
    return false;
  return !sinks || cmin >= id;
}
int ksnap_coord_sm_pending_cnt(const ksnap_coord_sm_t *sm) {
  return (int)ksnap__coord_ckpts_cnt(sm->ckpts);
}
int ksnap_coord_sm_ckpt_state(const ksnap_coord_sm_t *sm, int64_t id) {
  int state = ksnap__coord_ckpts_state(sm->ckpts, id);

  if (state >= 0)
    return state;
  return ksnap__coord_retain_has(sm->retain, id) ? KSNAP_CKPT_COMPLETED : -1;
}
const char *ksnap_coord_sm_failure_cause(const ksnap_coord_sm_t *sm) {
  return sm->failure_cause;
}
const char *ksnap_coord_sm_replayed_failure(const ksnap_coord_sm_t *sm) {
  return sm->replayed_failure;
}
int ksnap_coord_sm_failure_cnt(const ksnap_coord_sm_t *sm) {
  return ksnap__coord_failures_cnt(sm->failures);
}
ksnap_coord_stats_t *ksnap_coord_sm_stats(ksnap_coord_sm_t *sm) {
  return sm->stats;
}
