/*
 * Record scopes (state_scope.h): an undo log of the writes made to a
 * task's state while a scope is open.
 *
 * Every write of state.c first calls ksnap__state_undo_keyed() or
 * ksnap__state_undo_op() when a scope is open (st->undo_on). The log
 * keeps, per write and in write order, what the write is about to
 * replace: for keyed state the entry's old value and write time (an
 * expired entry too: putting it back keeps it expired), or that the key
 * was absent; for operator state a copy of the whole list, once per
 * state and scope. A rollback replays the log newest first, so a key
 * written twice ends with the value it had before the first write. A
 * write whose undo record cannot be saved fails with NOMEM before it
 * changes anything, so the state is never changed without its undo.
 *
 * The log and its byte arena stay allocated from one scope to the next
 * (a scope per record must not cost a malloc per record); they are freed
 * with the state.
 */
#include "state_scope.h"

#include <stdlib.h>
#include <string.h>

#include "state_internal.h"

typedef enum { UNDO_KEYED, UNDO_OP } undo_kind_t;

typedef struct undo_rec_s {
  undo_kind_t kind;
  int id;               /* the state */
  uint16_t kg;          /* keyed: the key's group */
  int had;              /* keyed: the key existed */
  int64_t ts;           /* keyed: its last write time */
  size_t koff, klen;    /* keyed: the map key, in the arena */
  size_t voff, vlen;    /* keyed: the old value, in the arena */
  ksnap__blob_t *blobs; /* op: the old list (owned) */
  size_t nblobs;
} undo_rec_t;

struct ksnap__state_undo_s {
  undo_rec_t *recs;
  size_t n, cap;
  ksnap_buf_t arena; /* keys and old values; offsets stay valid */
};

static void drop_blobs(ksnap__blob_t *blobs, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(blobs[i].data);
  free(blobs);
}

/* Forgets the log's records (keeps the allocations). */
static void clear_log(ksnap__state_undo_t *u) {
  for (size_t i = 0; i < u->n; i++)
    if (u->recs[i].kind == UNDO_OP)
      drop_blobs(u->recs[i].blobs, u->recs[i].nblobs);
  u->n = 0;
  ksnap_buf_reset(&u->arena);
}

void ksnap__state_undo_free(ksnap__state_undo_t *u) {
  if (!u)
    return;
  clear_log(u);
  free(u->recs);
  ksnap_buf_cleanup(&u->arena);
  free(u);
}

ksnap_err_t ksnap__state_scope_begin(ksnap_state_t *st,
                                     ksnap_error_t *error) {
  if (st->undo_on)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "a state scope is already open");
  if (!st->undo) {
    if (!(st->undo = calloc(1, sizeof(*st->undo))))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    ksnap_buf_init(&st->undo->arena);
  }
  st->undo_on = 1;
  return KSNAP_ERR_OK;
}

int ksnap__state_scope_open(const ksnap_state_t *st) { return st->undo_on; }

void ksnap__state_scope_commit(ksnap_state_t *st) {
  if (!st->undo_on)
    return;
  clear_log(st->undo);
  st->undo_on = 0;
}

static undo_rec_t *new_rec(ksnap__state_undo_t *u) {
  if (u->n == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 16;
    undo_rec_t *r = realloc(u->recs, cap * sizeof(*r));
    if (!r)
      return NULL;
    u->recs = r;
    u->cap = cap;
  }
  memset(&u->recs[u->n], 0, sizeof(u->recs[0]));
  return &u->recs[u->n];
}

ksnap_err_t ksnap__state_undo_keyed(ksnap_state_t *st, int id, uint16_t kg,
                                    const void *key, size_t klen) {
  ksnap__state_undo_t *u = st->undo;
  undo_rec_t *r = new_rec(u);
  const uint8_t *old = NULL;
  size_t vlen = 0;
  int64_t ts = 0;
  int had;

  if (!r)
    return KSNAP_ERR_NOMEM;
  had = !ksnap__state_map_get_raw(st->states[id].map, kg, key, klen, &old,
                                  &vlen, &ts);
  r->kind = UNDO_KEYED;
  r->id = id;
  r->kg = kg;
  r->had = had;
  r->ts = ts;
  r->koff = u->arena.len;
  r->klen = klen;
  if (ksnap_buf_append(&u->arena, key, klen))
    return KSNAP_ERR_NOMEM;
  r->voff = u->arena.len;
  r->vlen = had ? vlen : 0;
  if (had && ksnap_buf_append(&u->arena, old, vlen))
    return KSNAP_ERR_NOMEM;
  u->n++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__state_undo_op(ksnap_state_t *st, int id) {
  ksnap__state_undo_t *u = st->undo;
  const ksnap__kstate_t *ks = &st->states[id];
  undo_rec_t *r;

  for (size_t i = 0; i < u->n; i++)
    if (u->recs[i].kind == UNDO_OP && u->recs[i].id == id)
      return KSNAP_ERR_OK; /* the list before the scope is saved */
  if (!(r = new_rec(u)))
    return KSNAP_ERR_NOMEM;
  r->kind = UNDO_OP;
  r->id = id;
  if (ks->nblobs && !(r->blobs = calloc(ks->nblobs, sizeof(*r->blobs))))
    return KSNAP_ERR_NOMEM;
  for (size_t i = 0; i < ks->nblobs; i++, r->nblobs++) {
    size_t len = ks->blobs[i].len;
    if (!(r->blobs[i].data = malloc(len ? len : 1))) {
      drop_blobs(r->blobs, r->nblobs);
      return KSNAP_ERR_NOMEM;
    }
    if (len)
      memcpy(r->blobs[i].data, ks->blobs[i].data, len);
    r->blobs[i].len = len;
  }
  u->n++;
  return KSNAP_ERR_OK;
}

/* Puts one record's old content back. */
static ksnap_err_t undo_one(ksnap_state_t *st, undo_rec_t *r) {
  ksnap__kstate_t *ks = &st->states[r->id];
  const uint8_t *base = st->undo->arena.data;
  ksnap_err_t err;

  if (r->kind == UNDO_OP) {
    drop_blobs(ks->blobs, ks->nblobs);
    ks->blobs = r->blobs;
    ks->nblobs = ks->cap = r->nblobs;
    r->blobs = NULL; /* moved */
    r->nblobs = 0;
    return KSNAP_ERR_OK;
  }
  if (r->had)
    return ksnap__state_map_put_ts(ks->map, r->kg, base + r->koff, r->klen,
                                   base + r->voff, r->vlen, r->ts);
  err = ksnap__state_map_remove(ks->map, r->kg, base + r->koff, r->klen);
  return err == KSNAP_ERR_NOT_FOUND ? KSNAP_ERR_OK : err;
}

ksnap_err_t ksnap__state_scope_rollback(ksnap_state_t *st,
                                        ksnap_error_t *error) {
  ksnap__state_undo_t *u = st->undo;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!st->undo_on)
    return KSNAP_ERR_OK;
  st->undo_on = 0; /* the undo writes themselves are not logged */
  for (size_t i = u->n; i-- > 0 && !err;)
    err = undo_one(st, &u->recs[i]);
  clear_log(u);
  if (err)
    return ksnap_error_set(error, err, "out of memory undoing the state "
                           "writes of a failed record");
  return KSNAP_ERR_OK;
}
