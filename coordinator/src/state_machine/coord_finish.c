/*
 * The end of a bounded job (plugin/PROTOCOL.md section 5.9): a part of
 * the coordinator state machine (coord_sm.c's call order), private state
 * only.
 *
 * Per generation, each task's end of input: the oldest checkpoint it
 * acknowledged with input_ended (ack_v6), or only a HEARTBEAT saying so.
 * A task's finish runs once, before its snapshot of every later
 * checkpoint, so its ACKs of a generation say input_ended from one
 * checkpoint on; checkpoint N is final when every task's first such ACK
 * is at or below N: N's snapshots hold every task's finish, and its
 * sinks' transactions hold the whole output.
 *
 *   generation G (restore) --every task ended--> final trigger due (once)
 *   --a final checkpoint N completed--> final = N (the driver writes
 *   JOB_FINISHED once the sinks committed N) --restore--> G+1, reset
 *   (a draining job's final trigger is a savepoint, which the hub takes
 *   instead of a checkpoint: only a savepoint can be its final, and a
 *   failed one makes the trigger due again)
 */
#include <stdlib.h>

#include "coord_finish.h"
#include "ksnap/records.h"

struct coord_finish_s {
  size_t cnt;
  int64_t generation;
  int64_t *first_ack; /* per task: NONE, or its first ended ACK's id */
  bool *ended;        /* per task: said so (HEARTBEAT or ACK) */
  bool triggered;     /* the final trigger went out in this generation */
  int64_t final_id;   /* the final checkpoint that completed, or NONE */
};

coord_finish_t *ksnap__coord_finish_new(size_t task_cnt) {
  coord_finish_t *f = calloc(1, sizeof(*f));

  if (!f || !(f->first_ack = calloc(task_cnt + 1, sizeof(*f->first_ack))) ||
      !(f->ended = calloc(task_cnt + 1, sizeof(*f->ended)))) {
    ksnap__coord_finish_destroy(f);
    return NULL;
  }
  f->cnt = task_cnt;
  ksnap__coord_finish_reset(f, KSNAP_GENERATION_FIRST);
  return f;
}

void ksnap__coord_finish_destroy(coord_finish_t *f) {
  if (!f)
    return;
  free(f->first_ack);
  free(f->ended);
  free(f);
}

void ksnap__coord_finish_reset(coord_finish_t *f, int64_t generation) {
  f->generation = generation;
  for (size_t i = 0; i < f->cnt; i++) {
    f->first_ack[i] = KSNAP_CHECKPOINT_NONE;
    f->ended[i] = false;
  }
  f->triggered = false;
  f->final_id = KSNAP_CHECKPOINT_NONE;
}

void ksnap__coord_finish_ended(coord_finish_t *f, size_t ti,
                               int64_t generation, int64_t ack_id) {
  if (ti >= f->cnt || generation != f->generation)
    return; /* stale: a restore reset it */
  f->ended[ti] = true;
  if (ack_id != KSNAP_CHECKPOINT_NONE &&
      (f->first_ack[ti] == KSNAP_CHECKPOINT_NONE ||
       ack_id < f->first_ack[ti]))
    f->first_ack[ti] = ack_id;
}

bool ksnap__coord_finish_trigger_due(coord_finish_t *f) {
  if (f->triggered || !f->cnt || f->final_id != KSNAP_CHECKPOINT_NONE)
    return false;
  for (size_t i = 0; i < f->cnt; i++)
    if (!f->ended[i])
      return false;
  f->triggered = true;
  return true;
}

void ksnap__coord_finish_retrigger(coord_finish_t *f) {
  f->triggered = false;
}

bool ksnap__coord_finish_is_final(const coord_finish_t *f, int64_t id) {
  if (!f->cnt)
    return false;
  for (size_t i = 0; i < f->cnt; i++)
    if (f->first_ack[i] == KSNAP_CHECKPOINT_NONE || f->first_ack[i] > id)
      return false;
  return true;
}

void ksnap__coord_finish_set_final(coord_finish_t *f, int64_t id) {
  f->final_id = id;
}

int64_t ksnap__coord_finish_final(const coord_finish_t *f) {
  return f->final_id;
}
