/* The unresolved checkpoints of a replayed history (coord_unresolved.h). */
#include "coord_unresolved.h"

#include <inttypes.h>
#include <stdlib.h>

#include "ksnap/log.h"

typedef struct entry_s {
  int64_t id;
  int64_t generation;
  bool is_savepoint;
} entry_t;

struct coord_unresolved_s {
  entry_t *e; /**< in no order */
  size_t cnt, cap;
};

coord_unresolved_t *ksnap__coord_unresolved_new(void) {
  return calloc(1, sizeof(coord_unresolved_t));
}

void ksnap__coord_unresolved_destroy(coord_unresolved_t *u) {
  if (!u)
    return;
  free(u->e);
  free(u);
}

ksnap_err_t ksnap__coord_unresolved_add(coord_unresolved_t *u, int64_t id,
                                        int64_t generation,
                                        bool is_savepoint) {
  if (u->cnt == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 16;
    entry_t *e = realloc(u->e, cap * sizeof(*e));
    if (!e)
      return KSNAP_ERR_NOMEM;
    u->e = e;
    u->cap = cap;
  }
  u->e[u->cnt++] = (entry_t){id, generation, is_savepoint};
  return KSNAP_ERR_OK;
}

bool ksnap__coord_unresolved_take(coord_unresolved_t *u, int64_t id,
                                  bool *is_savepoint) {
  for (size_t i = 0; i < u->cnt; i++) {
    if (u->e[i].id != id)
      continue;
    *is_savepoint = u->e[i].is_savepoint;
    u->e[i] = u->e[--u->cnt];
    return true;
  }
  return false;
}

void ksnap__coord_unresolved_clear(coord_unresolved_t *u) {
  u->cnt = 0;
}

void ksnap__coord_unresolved_abort(coord_unresolved_t *u, coord_acts_t *acts,
                                   int64_t generation) {
  for (size_t i = 0; i < u->cnt; i++) {
    ksnap_coord_action_t *act;
    if (u->e[i].generation != generation)
      continue;
    ksnap__coord_log(acts, KSNAP_LOG_WARNING,
                     "Aborting checkpoint %" PRId64
                     " left pending by the previous coordinator",
                     u->e[i].id);
    if ((act = ksnap__coord_emit(acts, KSNAP_COORD_ACT_SEND_ABORT))) {
      act->checkpoint_id = u->e[i].id;
      act->generation = u->e[i].generation;
      act->text = ksnap__coord_strdup(acts, "coordinator restarted");
    }
  }
  u->cnt = 0;
}
