/* Internals shared by state.c (accessors), state_checkpoint.c (snapshot
 * and restore) and state_scope.c (record scopes). Not installed. */
#ifndef KSNAP_STATE_INTERNAL_H
#define KSNAP_STATE_INTERNAL_H

#include <stdatomic.h>

#include "ksnap/state.h"
#include "state_map.h"

typedef struct ksnap__blob_s {
  uint8_t *data;
  size_t len;
} ksnap__blob_t;

typedef struct ksnap__kstate_s {
  char *name;
  ksnap_state_kind_t kind;
  int64_t ttl_ms;
  int restored;             /* registered by a restore (state_restore.c) */
  ksnap_state_map_t *map;   /* keyed kinds */
  uint64_t last_version;    /* version of this map's last snapshot */
  ksnap__blob_t *blobs;     /* operator kinds */
  size_t nblobs, cap;
} ksnap__kstate_t;

/* The undo log of record scopes (state_scope.c). */
typedef struct ksnap__state_undo_s ksnap__state_undo_t;

struct ksnap_state_s {
  ksnap_state_conf_t conf;
  int kg_start, kg_end;
  ksnap__kstate_t *states;
  size_t nstates;
  uint8_t *key;
  size_t klen, kcap;
  int kg; /* of the current key; -1 before set_key */
  ksnap_buf_t tmp;
  char **chain; /* incremental: the files the last snapshot needed */
  size_t nchain;
  atomic_int force_full;
  int undo_on;               /* a record scope is open: writes log undo */
  ksnap__state_undo_t *undo; /* its log, kept between scopes; NULL: none */
};

/** @returns the index of state @p name or -1. */
int ksnap__state_find(const ksnap_state_t *state, const char *name);

/** Builds the map key of (record key, user key) of a map state. */
ksnap_err_t ksnap__state_map_key(ksnap_buf_t *out, const void *key,
                                 size_t klen, const void *ukey, size_t uklen);

/* state_scope.c, for state.c: save what a write of keyed state @p id at
 * map key @p key (group @p kg) or of operator state @p id is about to
 * replace. Called only while st->undo_on. @returns OK or NOMEM (the
 * write must then fail without changing anything). */
ksnap_err_t ksnap__state_undo_keyed(ksnap_state_t *st, int id, uint16_t kg,
                                    const void *key, size_t klen);
ksnap_err_t ksnap__state_undo_op(ksnap_state_t *st, int id);
void ksnap__state_undo_free(ksnap__state_undo_t *undo);

#endif /* KSNAP_STATE_INTERNAL_H */
