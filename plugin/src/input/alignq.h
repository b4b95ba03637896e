/*
 * The two FIFOs of the aligner (aligner.c), embedded by value:
 *  - ksnap_actq_t: actions out to the caller (ksnap_aligner_pop);
 *  - ksnap_recq_t: records of blocked channels held during an alignment,
 *    with their byte count for the buffer limit.
 * Allocation failures are sticky (nomem), reported by the aligner as a
 * fatal KSNAP_ERR_NOMEM; an emit after one lands in a scratch action.
 *
 * Threading: owned by the aligner, i.e. the task's processing thread.
 */
#ifndef KSNAP_ALIGNQ_H
#define KSNAP_ALIGNQ_H

#include <stddef.h>

#include "aligner.h"

typedef struct ksnap_actq_s {
  ksnap_action_t *acts; /* acts[head..n) are pending */
  size_t head, n, cap;
  ksnap_chan_pos_t *popped_pos; /* positions of the last popped action */
  ksnap_action_t scratch;
  int nomem;
} ksnap_actq_t;

typedef struct ksnap_recq_s {
  ksnap_in_t *recs; /* arrival order */
  size_t n, cap;
  size_t bytes; /* sum of recs[].size */
  int nomem;
} ksnap_recq_t;

void ksnap_actq_init(ksnap_actq_t *q);

/** Frees pending actions' positions and the queue's memory. */
void ksnap_actq_cleanup(ksnap_actq_t *q);

/** Appends a zeroed action of @p kind; returns it for the caller to fill. */
ksnap_action_t *ksnap_actq_emit(ksnap_actq_t *q, ksnap_action_kind_t kind);

/** Pops the oldest action (see ksnap_aligner_pop). @returns 1 or 0. */
int ksnap_actq_pop(ksnap_actq_t *q, ksnap_action_t *act);

void ksnap_recq_init(ksnap_recq_t *q);

/** Frees the memory; hands each record still held to @p free_rec. */
void ksnap_recq_cleanup(ksnap_recq_t *q, void (*free_rec)(void *, void *),
                        void *opaque);

/** Appends a copy of @p in. @returns 0, or -1 when out of memory. */
int ksnap_recq_push(ksnap_recq_t *q, const ksnap_in_t *in);

/** Takes every record out (caller frees the array); leaves @p q empty. */
ksnap_in_t *ksnap_recq_detach(ksnap_recq_t *q, size_t *np);

#endif /* KSNAP_ALIGNQ_H */
