/*
 * state.c: keyed state (value, list, map) and operator state of one task,
 * on top of the copy-on-write state map (one map per keyed state).
 *
 * Threading: a ksnap_state_t is owned by its processing thread (see
 * ksnap/state.h); snapshots are in state_checkpoint.c.
 *
 * Map-state entries are stored under the composite key
 *   uint32 LE len(record key) | record key | user key
 * with the record key's key group, so they travel with the record key.
 * List state is stored as one value: (uint32 LE len | bytes)*.
 *
 * Every write first saves what it replaces when a record scope is open
 * (UNDO_KEYED / UNDO_OP below, state_scope.c); without one that costs a
 * test of st->undo_on.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state_internal.h"

void ksnap_state_conf_init(ksnap_state_conf_t *conf) {
  memset(conf, 0, sizeof(*conf));
  conf->max_parallelism = KSNAP_STATE_MAX_PARALLELISM_DEFAULT;
  conf->parallelism = 1;
  conf->max_chain = KSNAP_STATE_MAX_CHAIN_DEFAULT;
}

uint32_t ksnap_state_murmur3_32(const void *key, size_t len, uint32_t seed) {
  const uint8_t *p = key;
  uint32_t h = seed, k;
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  size_t i;

  for (i = 0; i + 4 <= len; i += 4) {
    k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
        (uint32_t)p[i + 3] << 24;
    k *= c1;
    k = (k << 15) | (k >> 17);
    k *= c2;
    h ^= k;
    h = (h << 13) | (h >> 19);
    h = h * 5 + 0xe6546b64;
  }
  k = 0;
  switch (len & 3) {
  case 3:
    k ^= (uint32_t)p[i + 2] << 16; /* fall through */
  case 2:
    k ^= (uint32_t)p[i + 1] << 8; /* fall through */
  case 1:
    k ^= p[i];
    k *= c1;
    k = (k << 15) | (k >> 17);
    k *= c2;
    h ^= k;
  }
  h ^= (uint32_t)len;
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

int ksnap_state_key_group(const void *key, size_t len, int max_parallelism) {
  return (int)(ksnap_state_murmur3_32(key, len, 0) %
               (uint32_t)max_parallelism);
}

void ksnap_state_key_group_range(int max_parallelism, int parallelism,
                                 int index, int *startp, int *endp) {
  long m = max_parallelism, p = parallelism, i = index;

  *startp = (int)((i * m + p - 1) / p);
  *endp = (int)(((i + 1) * m - 1) / p + 1);
}

int ksnap_state_task_of_key_group(int max_parallelism, int parallelism,
                                  int kg) {
  return (int)((long)kg * parallelism / max_parallelism);
}

ksnap_err_t ksnap_state_new(const ksnap_state_conf_t *conf,
                            ksnap_state_t **statep, ksnap_error_t *error) {
  ksnap_state_t *st;

  *statep = NULL;
  if (conf->max_parallelism < 1 || conf->max_parallelism > 32768 ||
      conf->parallelism < 1 || conf->parallelism > conf->max_parallelism ||
      conf->task_index < 0 || conf->task_index >= conf->parallelism ||
      conf->max_chain < 1)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "invalid state configuration: max parallelism "
                           "%d, parallelism %d, task %d, max chain %d",
                           conf->max_parallelism, conf->parallelism,
                           conf->task_index, conf->max_chain);
  if (!(st = calloc(1, sizeof(*st))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  st->conf = *conf;
  ksnap_state_key_group_range(conf->max_parallelism, conf->parallelism,
                              conf->task_index, &st->kg_start, &st->kg_end);
  st->kg = -1;
  ksnap_buf_init(&st->tmp);
  atomic_init(&st->force_full, 0);
  *statep = st;
  return KSNAP_ERR_OK;
}

void ksnap_state_destroy(ksnap_state_t *st) {
  if (!st)
    return;
  for (size_t i = 0; i < st->nstates; i++) {
    ksnap__kstate_t *ks = &st->states[i];
    free(ks->name);
    ksnap__state_map_destroy(ks->map);
    for (size_t j = 0; j < ks->nblobs; j++)
      free(ks->blobs[j].data);
    free(ks->blobs);
  }
  free(st->states);
  for (size_t i = 0; i < st->nchain; i++)
    free(st->chain[i]);
  free(st->chain);
  free(st->key);
  ksnap_buf_cleanup(&st->tmp);
  ksnap__state_undo_free(st->undo);
  free(st);
}

int ksnap__state_find(const ksnap_state_t *st, const char *name) {
  for (size_t i = 0; i < st->nstates; i++)
    if (!strcmp(st->states[i].name, name))
      return (int)i;
  return -1;
}

static int valid_name(const char *name) {
  size_t n = strlen(name);

  if (n == 0 || n > 255)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (isspace((unsigned char)name[i]) || iscntrl((unsigned char)name[i]))
      return 0;
  return 1;
}

static const char *kind_name(ksnap_state_kind_t kind) {
  static const char *const names[] = {"value", "list", "map",
                                      "operator split list",
                                      "operator union list"};
  return (unsigned)kind < 5 ? names[kind] : "unknown";
}

ksnap_err_t ksnap_state_register(ksnap_state_t *st, const char *name,
                                 ksnap_state_kind_t kind, int64_t ttl_ms,
                                 int *idp, ksnap_error_t *error) {
  int id = ksnap__state_find(st, name);
  ksnap__kstate_t *ks;

  if (!valid_name(name) || kind < KSNAP_STATE_VALUE ||
      kind > KSNAP_STATE_OP_UNION || ttl_ms < 0 ||
      (ttl_ms && kind >= KSNAP_STATE_OP_SPLIT))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "invalid state name, kind or TTL for \"%s\"",
                           name);
  if (id >= 0) {
    ks = &st->states[id];
    if (ks->restored && ks->kind != kind)
      return ksnap_error_set(
          error, KSNAP_ERR_INCOMPATIBLE,
          "state \"%s\" was restored as %s state but is registered as %s "
          "state: a state's kind cannot change across a restore (give the "
          "new state another name; the old one is then carried along "
          "unused)", name, kind_name(ks->kind), kind_name(kind));
    if (ks->kind != kind || ks->ttl_ms != ttl_ms)
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "state \"%s\" exists with another kind or TTL",
                             name);
    *idp = id;
    return KSNAP_ERR_OK;
  }
  ks = realloc(st->states, (st->nstates + 1) * sizeof(*ks));
  if (!ks)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  st->states = ks;
  ks += st->nstates;
  memset(ks, 0, sizeof(*ks));
  ks->kind = kind;
  ks->ttl_ms = ttl_ms;
  ks->name = strdup(name);
  if (kind < KSNAP_STATE_OP_SPLIT)
    ks->map = ksnap__state_map_new(ttl_ms, st->conf.incremental,
                                   st->conf.clock, st->conf.clock_opaque,
                                   st->kg_start, st->kg_end);
  if (!ks->name || (kind < KSNAP_STATE_OP_SPLIT && !ks->map)) {
    free(ks->name);
    ksnap__state_map_destroy(ks->map);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  *idp = (int)st->nstates++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_state_set_key(ksnap_state_t *st, const void *key,
                                size_t klen, ksnap_error_t *error) {
  int kg = ksnap_state_key_group(key, klen, st->conf.max_parallelism);

  if (kg < st->kg_start || kg >= st->kg_end)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "key group %d is not owned by task %d of %d", kg,
                           st->conf.task_index, st->conf.parallelism);
  if (klen > st->kcap) {
    uint8_t *k = realloc(st->key, klen);
    if (!k)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    st->key = k;
    st->kcap = klen;
  }
  if (klen)
    memcpy(st->key, key, klen);
  st->klen = klen;
  st->kg = kg;
  return KSNAP_ERR_OK;
}

/* A record scope is open: save the current key's entry (map key @p k) of
 * state @p id before it changes, or fail the write with NOMEM. */
#define UNDO_KEYED(st, id, k, klen)                                        \
  ((st)->undo_on &&                                                        \
   ksnap__state_undo_keyed((st), (id), (uint16_t)(st)->kg, (k), (klen)))
#define UNDO_OP(st, id) ((st)->undo_on && ksnap__state_undo_op((st), (id)))

/* @returns the keyed state @p id of @p kind, or NULL. */
static ksnap__kstate_t *keyed(ksnap_state_t *st, int id, int kind) {
  if (id < 0 || (size_t)id >= st->nstates || st->kg < 0)
    return NULL;
  if (st->states[id].kind != (ksnap_state_kind_t)kind)
    return NULL;
  return &st->states[id];
}

static ksnap_err_t bad_access(ksnap_error_t *error, int id) {
  return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                         "state %d: wrong kind, unknown id or no current key",
                         id);
}

ksnap_err_t ksnap_state_value_get(ksnap_state_t *st, int id,
                                  const void **valuep, size_t *vlenp) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_VALUE);

  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  return ksnap__state_map_get(ks->map, (uint16_t)st->kg, st->key, st->klen,
                              (const uint8_t **)valuep, vlenp);
}

ksnap_err_t ksnap_state_value_put(ksnap_state_t *st, int id,
                                  const void *value, size_t vlen,
                                  ksnap_error_t *error) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_VALUE);

  if (!ks)
    return bad_access(error, id);
  if (UNDO_KEYED(st, id, st->key, st->klen) ||
      ksnap__state_map_put(ks->map, (uint16_t)st->kg, st->key, st->klen,
                           value, vlen))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_state_clear(ksnap_state_t *st, int id) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_VALUE);

  if (!ks)
    ks = keyed(st, id, KSNAP_STATE_LIST);
  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  if (UNDO_KEYED(st, id, st->key, st->klen))
    return KSNAP_ERR_NOMEM;
  return ksnap__state_map_remove(ks->map, (uint16_t)st->kg, st->key,
                                 st->klen);
}

ksnap_err_t ksnap_state_list_add(ksnap_state_t *st, int id, const void *value,
                                 size_t vlen, ksnap_error_t *error) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_LIST);
  const uint8_t *old;
  size_t oldlen = 0;
  uint8_t len4[4];

  if (!ks)
    return bad_access(error, id);
  if (vlen > UINT32_MAX)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "element too big");
  if (UNDO_KEYED(st, id, st->key, st->klen))
    goto nomem;
  ksnap_buf_reset(&st->tmp);
  if (ksnap__state_map_get(ks->map, (uint16_t)st->kg, st->key, st->klen,
                           &old, &oldlen) == KSNAP_ERR_OK &&
      ksnap_buf_append(&st->tmp, old, oldlen))
    goto nomem;
  for (int i = 0; i < 4; i++)
    len4[i] = (uint8_t)(vlen >> (8 * i));
  if (ksnap_buf_append(&st->tmp, len4, 4) ||
      ksnap_buf_append(&st->tmp, value, vlen) ||
      ksnap__state_map_put(ks->map, (uint16_t)st->kg, st->key, st->klen,
                           st->tmp.data, st->tmp.len))
    goto nomem;
  return KSNAP_ERR_OK;
nomem:
  return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
}

ksnap_err_t ksnap_state_list_get(ksnap_state_t *st, int id,
                                 ksnap_state_list_iter_t *iter) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_LIST);
  const uint8_t *v;
  size_t len;
  ksnap_err_t err;

  iter->p = iter->end = NULL;
  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  if ((err = ksnap__state_map_get(ks->map, (uint16_t)st->kg, st->key,
                                  st->klen, &v, &len)))
    return err;
  iter->p = v;
  iter->end = v + len;
  return KSNAP_ERR_OK;
}

int ksnap_state_list_next(ksnap_state_list_iter_t *iter, const void **valuep,
                          size_t *vlenp) {
  uint32_t len;

  if (!iter->p || iter->end - iter->p < 4)
    return 0;
  len = (uint32_t)iter->p[0] | (uint32_t)iter->p[1] << 8 |
        (uint32_t)iter->p[2] << 16 | (uint32_t)iter->p[3] << 24;
  if ((size_t)(iter->end - iter->p - 4) < len)
    return 0;
  *valuep = iter->p + 4;
  *vlenp = len;
  iter->p += 4 + len;
  return 1;
}

ksnap_err_t ksnap__state_map_key(ksnap_buf_t *out, const void *key,
                                 size_t klen, const void *ukey,
                                 size_t uklen) {
  uint8_t len4[4];

  for (int i = 0; i < 4; i++)
    len4[i] = (uint8_t)(klen >> (8 * i));
  ksnap_buf_reset(out);
  if (ksnap_buf_append(out, len4, 4) || ksnap_buf_append(out, key, klen) ||
      ksnap_buf_append(out, ukey, uklen))
    return KSNAP_ERR_NOMEM;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_state_map_put(ksnap_state_t *st, int id, const void *ukey,
                                size_t uklen, const void *value, size_t vlen,
                                ksnap_error_t *error) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_MAP);

  if (!ks)
    return bad_access(error, id);
  if (ksnap__state_map_key(&st->tmp, st->key, st->klen, ukey, uklen) ||
      UNDO_KEYED(st, id, st->tmp.data, st->tmp.len) ||
      ksnap__state_map_put(ks->map, (uint16_t)st->kg, st->tmp.data,
                           st->tmp.len, value, vlen))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_state_map_get(ksnap_state_t *st, int id, const void *ukey,
                                size_t uklen, const void **valuep,
                                size_t *vlenp) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_MAP);

  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  if (ksnap__state_map_key(&st->tmp, st->key, st->klen, ukey, uklen))
    return KSNAP_ERR_NOMEM;
  return ksnap__state_map_get(ks->map, (uint16_t)st->kg, st->tmp.data,
                              st->tmp.len,
                              (const uint8_t **)valuep, vlenp);
}

ksnap_err_t ksnap_state_map_remove(ksnap_state_t *st, int id,
                                   const void *ukey, size_t uklen) {
  ksnap__kstate_t *ks = keyed(st, id, KSNAP_STATE_MAP);

  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  if (ksnap__state_map_key(&st->tmp, st->key, st->klen, ukey, uklen) ||
      UNDO_KEYED(st, id, st->tmp.data, st->tmp.len))
    return KSNAP_ERR_NOMEM;
  return ksnap__state_map_remove(ks->map, (uint16_t)st->kg, st->tmp.data,
                                 st->tmp.len);
}

/* ---- operator state ---------------------------------------------- */

static ksnap__kstate_t *opstate(ksnap_state_t *st, int id) {
  if (id < 0 || (size_t)id >= st->nstates ||
      st->states[id].kind < KSNAP_STATE_OP_SPLIT)
    return NULL;
  return &st->states[id];
}

ksnap_err_t ksnap_state_op_add(ksnap_state_t *st, int id, const void *blob,
                               size_t len, ksnap_error_t *error) {
  ksnap__kstate_t *ks = opstate(st, id);
  uint8_t *copy;

  if (!ks)
    return bad_access(error, id);
  if (UNDO_OP(st, id))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (ks->nblobs == ks->cap) {
    size_t cap = ks->cap ? ks->cap * 2 : 8;
    ksnap__blob_t *b = realloc(ks->blobs, cap * sizeof(*b));
    if (!b)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    ks->blobs = b;
    ks->cap = cap;
  }
  if (!(copy = malloc(len ? len : 1)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (len)
    memcpy(copy, blob, len);
  ks->blobs[ks->nblobs].data = copy;
  ks->blobs[ks->nblobs++].len = len;
  return KSNAP_ERR_OK;
}

size_t ksnap_state_op_count(ksnap_state_t *st, int id) {
  ksnap__kstate_t *ks = opstate(st, id);
  return ks ? ks->nblobs : 0;
}

ksnap_err_t ksnap_state_op_get(ksnap_state_t *st, int id, size_t i,
                               const void **blobp, size_t *lenp) {
  ksnap__kstate_t *ks = opstate(st, id);

  if (!ks)
    return KSNAP_ERR_INVALID_ARG;
  if (i >= ks->nblobs)
    return KSNAP_ERR_NOT_FOUND;
  *blobp = ks->blobs[i].data;
  *lenp = ks->blobs[i].len;
  return KSNAP_ERR_OK;
}

void ksnap_state_op_clear(ksnap_state_t *st, int id) {
  ksnap__kstate_t *ks = opstate(st, id);

  if (!ks || UNDO_OP(st, id)) /* no memory for its undo: left unchanged */
    return;
  for (size_t j = 0; j < ks->nblobs; j++)
    free(ks->blobs[j].data);
  ks->nblobs = 0;
}
