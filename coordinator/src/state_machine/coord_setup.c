/* The coordinator state machine's settings, creation and destruction,
 * introspection and display names (the logic: coord_sm.c, coord_ckpt.c,
 * coord_tasks.c). */
#include <string.h>
#include <stdlib.h>

#include "coord_int.h"
#include "coord_sm.h"

/* ----------------------------------------------------- create, destroy */

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
  return KSNAP_ERR_OK;
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
  if (bad)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "coordinator: %s",
                           bad);
  if (!(sm = calloc(1, sizeof(*sm))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "coordinator");
  sm->job = job;
  sm->conf = *smconf;
  sm->state = KSNAP_COORD_WAITING;
  sm->max_id = smconf->max_id_seen;
  sm->latest_completed = KSNAP_CHECKPOINT_NONE;
  sm->last_success_id = KSNAP_CHECKPOINT_NONE;
  sm->last_completion_ms = -1;
  if (!(sm->stats = ksnap_coord_stats_new(10)) ||
      ksnap__coord_tasks_init(sm)) {
    ksnap_coord_sm_destroy(sm);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "coordinator");
  }
  *smp = sm;
  return KSNAP_ERR_OK;
}

void ksnap_coord_sm_destroy(ksnap_coord_sm_t *sm) {
  ksnap_coord_action_t act;

  if (!sm)
    return;
  while (ksnap_coord_sm_next_action(sm, &act))
    ksnap_coord_action_cleanup(&act);
  while (sm->pending_cnt > 0) {
    coord_ckpt_t *ck = sm->pending[--sm->pending_cnt];
    for (size_t i = 0; i < sm->task_cnt; i++)
      ksnap_task_snapshot_cleanup(&ck->snaps[i]);
    free(ck->snaps);
    free(ck->acked);
    free(ck);
  }
  free(sm->pending);
  for (size_t i = 0; i < sm->done_cnt; i++)
    free(sm->done[i].refs);
  free(sm->done);
  free(sm->unresolved);
  free(sm->tasks);
  free(sm->acts);
  free(sm->restore_reason);
  ksnap_coord_stats_destroy(sm->stats);
  free(sm);
}

/* -------------------------------------------------------- introspection */

ksnap_coord_state_t ksnap_coord_sm_state(const ksnap_coord_sm_t *sm) {
  return sm->state;
}
int64_t ksnap_coord_sm_generation(const ksnap_coord_sm_t *sm) {
  return sm->generation;
}
int64_t ksnap_coord_sm_latest_completed(const ksnap_coord_sm_t *sm) {
  return sm->latest_completed;
}
int64_t ksnap_coord_sm_max_id(const ksnap_coord_sm_t *sm) {
  return sm->max_id;
}
int ksnap_coord_sm_pending_cnt(const ksnap_coord_sm_t *sm) {
  return (int)sm->pending_cnt;
}
int ksnap_coord_sm_failure_cnt(const ksnap_coord_sm_t *sm) {
  return sm->failures;
}
ksnap_coord_stats_t *ksnap_coord_sm_stats(ksnap_coord_sm_t *sm) {
  return sm->stats;
}

const char *ksnap_coord_state_name(ksnap_coord_state_t state) {
  static const char *const names[] = {"WAITING",         "RUNNING",
                                      "STOPPING",        "RESTORE_PENDING",
                                      "FINISHED",        "FAILED"};
  return (unsigned)state < 6 ? names[state] : "?";
}

const char *ksnap_ckpt_state_name(ksnap_ckpt_state_t state) {
  static const char *const names[] = {"TRIGGERED",  "ACKED",
                                      "WRITING_METADATA", "COMPLETING",
                                      "COMPLETED",  "ABORTED"};
  return (unsigned)state < 6 ? names[state] : "?";
}

const char *ksnap_coord_act_type_name(ksnap_coord_act_type_t type) {
  static const char *const names[] = {
      "TRIGGER",     "WRITE_METADATA", "SEND_COMPLETE", "SEND_ABORT",
      "SEND_RESTORE", "SEND_ASSIGN",   "RETIRE",        "FAIL_JOB",
      "STOP_JOB",    "LOG"};
  return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type]
                                                           : "?";
}
