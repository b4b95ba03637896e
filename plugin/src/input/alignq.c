/* The aligner's action and record FIFOs (see alignq.h). */
#include "alignq.h"

#include <stdlib.h>
#include <string.h>

void ksnap_actq_init(ksnap_actq_t *q) { memset(q, 0, sizeof(*q)); }

void ksnap_actq_cleanup(ksnap_actq_t *q) {
  for (size_t i = q->head; i < q->n; i++)
    free(q->acts[i].pos);
  free(q->popped_pos);
  free(q->acts);
  ksnap_actq_init(q);
}

ksnap_action_t *ksnap_actq_emit(ksnap_actq_t *q, ksnap_action_kind_t kind) {
  ksnap_action_t *act;

  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 16;
    ksnap_action_t *acts = realloc(q->acts, cap * sizeof(*acts));
    if (!acts) {
      q->nomem = 1;
      act = &q->scratch;
      free(act->pos);
      memset(act, 0, sizeof(*act));
      return act;
    }
    q->acts = acts;
    q->cap = cap;
  }
  act = &q->acts[q->n++];
  memset(act, 0, sizeof(*act));
  act->kind = kind;
  return act;
}

int ksnap_actq_pop(ksnap_actq_t *q, ksnap_action_t *act) {
  free(q->popped_pos);
  q->popped_pos = NULL;
  if (q->head == q->n) {
    q->head = q->n = 0;
    return 0;
  }
  *act = q->acts[q->head++];
  q->popped_pos = act->pos;
  return 1;
}

void ksnap_recq_init(ksnap_recq_t *q) { memset(q, 0, sizeof(*q)); }

void ksnap_recq_cleanup(ksnap_recq_t *q, void (*free_rec)(void *, void *),
                        void *opaque) {
  for (size_t i = 0; i < q->n; i++)
    if (free_rec)
      free_rec(q->recs[i].rec, opaque);
  free(q->recs);
  ksnap_recq_init(q);
}

int ksnap_recq_push(ksnap_recq_t *q, const ksnap_in_t *in) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 16;
    ksnap_in_t *recs = realloc(q->recs, cap * sizeof(*recs));
    if (!recs) {
      q->nomem = 1;
      return -1;
    }
    q->recs = recs;
    q->cap = cap;
  }
  q->recs[q->n++] = *in;
  q->bytes += in->size;
  return 0;
}

ksnap_in_t *ksnap_recq_detach(ksnap_recq_t *q, size_t *np) {
  ksnap_in_t *recs = q->recs;

  *np = q->n;
  q->recs = NULL;
  q->n = q->cap = q->bytes = 0;
  return recs;
}
