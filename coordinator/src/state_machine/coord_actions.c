/* The action queue of the coordinator state machine (coord_actions.h):
 * acts[head .. cnt) are undrained; the array is reused from its start
 * once the driver drained everything. Also the display names of the
 * states and action types (coord_sm.h), which every file logs. */
#include "coord_actions.h"

#include "ksnap/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct coord_acts_s {
  ksnap_coord_action_t *acts;
  size_t head, cnt, cap;
  int64_t generation; /**< stamped on new actions */
  bool oom;           /**< sticky: an allocation failed */
};

coord_acts_t *ksnap__coord_acts_new(void) {
  return calloc(1, sizeof(coord_acts_t));
}

void ksnap__coord_acts_destroy(coord_acts_t *acts) {
  ksnap_coord_action_t act;

  if (!acts)
    return;
  while (ksnap__coord_acts_next(acts, &act))
    ksnap_coord_action_cleanup(&act);
  free(acts->acts);
  free(acts);
}

void ksnap__coord_acts_stamp(coord_acts_t *acts, int64_t generation) {
  acts->generation = generation;
}

void ksnap__coord_oom(coord_acts_t *acts) {
  acts->oom = true;
}

bool ksnap__coord_is_oom(const coord_acts_t *acts) {
  return acts->oom;
}

ksnap_coord_action_t *ksnap__coord_emit(coord_acts_t *acts,
                                        ksnap_coord_act_type_t type) {
  ksnap_coord_action_t *act;

  if (acts->cnt == acts->cap) {
    size_t cap = acts->cap ? acts->cap * 2 : 16;
    ksnap_coord_action_t *a = realloc(acts->acts, cap * sizeof(*a));
    if (!a) {
      acts->oom = true;
      return NULL;
    }
    acts->acts = a;
    acts->cap = cap;
  }
  act = &acts->acts[acts->cnt++];
  memset(act, 0, sizeof(*act));
  act->type = type;
  act->checkpoint_id = KSNAP_CHECKPOINT_NONE;
  act->generation = acts->generation;
  return act;
}

void ksnap__coord_log(coord_acts_t *acts, int level, const char *fmt, ...) {
  ksnap_coord_action_t *act;
  va_list ap;
  char *text;

  /* a debug line costs nothing unless log.debug has coord (as KSNAP_DBG) */
  if (level >= KSNAP_LOG_DEBUG && !ksnap_log_enabled(level, KSNAP_DBG_COORD))
    return;
  va_start(ap, fmt);
  if (vasprintf(&text, fmt, ap) < 0)
    text = NULL;
  va_end(ap);
  if (!text) {
    acts->oom = true;
    return;
  }
  act = ksnap__coord_emit(acts, KSNAP_COORD_ACT_LOG);
  if (!act) {
    free(text);
    return;
  }
  act->level = level;
  act->text = text;
}

char *ksnap__coord_strdup(coord_acts_t *acts, const char *s) {
  char *d = strdup(s);

  if (!d)
    acts->oom = true;
  return d;
}

bool ksnap__coord_acts_next(coord_acts_t *acts, ksnap_coord_action_t *act) {
  if (acts->head == acts->cnt)
    return false;
  *act = acts->acts[acts->head++];
  if (acts->head == acts->cnt)
    acts->head = acts->cnt = 0;
  return true;
}

void ksnap_coord_action_cleanup(ksnap_coord_action_t *act) {
  if (!act)
    return;
  free(act->text);
  act->text = NULL;
  for (size_t i = 0; i < act->owner_cnt; i++)
    free(act->owners[i].instance); /* task stages are borrowed */
  free(act->owners);
  act->owners = NULL;
  act->owner_cnt = 0;
  free(act->instance);
  free(act->refused);
  act->instance = act->refused = NULL;
}

/* -------------------------------------------------------- display names */

const char *ksnap_coord_state_name(ksnap_coord_state_t state) {
  static const char *const names[] = {"WAITING",  "RUNNING",
                                      "STOPPING", "RESTORE_PENDING",
                                      "FINISHED", "FAILED",
                                      "RESTARTING"};
  return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state]
                                                            : "?";
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
      "STOP_JOB",    "LOG",            "SEND_MEMBER"};
  return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type]
                                                           : "?";
}
