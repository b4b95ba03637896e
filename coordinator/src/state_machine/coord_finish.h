/* The end of a bounded job (coord_finish.c): which tasks reported their
 * input ended (and their finish run) in the current generation, and
 * which checkpoint is the final one. Called by the hub only (coord_sm.c,
 * coord_events.c, coord_requests.c, coord_setup.c); calls nothing. Not
 * installed. */
#ifndef KSNAP_COORD_FINISH_H
#define KSNAP_COORD_FINISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct coord_finish_s coord_finish_t;

/** @returns the record of @p task_cnt tasks, or NULL (no memory). */
coord_finish_t *ksnap__coord_finish_new(size_t task_cnt);
void ksnap__coord_finish_destroy(coord_finish_t *f);

/** A restore (generation @p generation): no task ended, no final
 *  checkpoint, no final trigger yet. */
void ksnap__coord_finish_reset(coord_finish_t *f, int64_t generation);
/** Task @p ti said in @p generation that its input ended: a HEARTBEAT
 *  (@p ack_id KSNAP_CHECKPOINT_NONE) or its ACK of checkpoint @p ack_id. */
void ksnap__coord_finish_ended(coord_finish_t *f, size_t ti,
                               int64_t generation, int64_t ack_id);
/** @returns true once, when every task ended and no final trigger went
 *  out yet in this generation (the hub triggers one at once). */
bool ksnap__coord_finish_trigger_due(coord_finish_t *f);
/** A savepoint of a draining job failed (its final trigger, maybe): the
 *  next ksnap__coord_finish_trigger_due() may say so again. */
void ksnap__coord_finish_retrigger(coord_finish_t *f);
/** @returns true if checkpoint @p id of the current generation is a final
 *  one: every task acknowledged it, or an older one, with input_ended
 *  (a task's later ACKs in the generation have it too). */
bool ksnap__coord_finish_is_final(const coord_finish_t *f, int64_t id);
/** The final checkpoint @p id completed (KSNAP_CHECKPOINT_NONE: none). */
void ksnap__coord_finish_set_final(coord_finish_t *f, int64_t id);
int64_t ksnap__coord_finish_final(const coord_finish_t *f);

#endif /* KSNAP_COORD_FINISH_H */
