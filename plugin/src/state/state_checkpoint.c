/*
 * state_checkpoint.c: the two snapshot phases of a task's state and the
 * restore at any parallelism.
 *
 * THREADING
 *   snapshot_begin   processing thread (sync phase): one O(1) map view per
 *                    keyed state, a copy of the operator lists (small by
 *                    contract, as in Flink), the manifest. Nothing else.
 *   snapshot_write   any ONE thread (async phase): reads only the
 *                    snapshot's own copies and views; never the
 *                    ksnap_state_t (except for nothing), so the processing
 *                    thread keeps writing concurrently.
 *   snapshot_end     any thread: releases the views (frees superseded
 *                    versions) and, if not persisted, sets the state's
 *                    atomic force_full flag. The ksnap_state_t must outlive
 *                    its snapshots.
 *
 * ASYNC PHASE
 *   Key group by key group, state by state in registration order, the
 *   view's entries of that key group (the map keeps each key group's
 *   entries in buckets of their own: one pass over the view, no sort),
 *   tombstones before puts, so a restore that applies a file in order is
 *   correct for incremental files too. The file streams out through the
 *   caller's ksnap_state_out_t block by block (state_snapshot.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state_internal.h"
#include "state_snapshot.h"

typedef struct snap_state_s {
  ksnap_state_map_snap_t *view; /* keyed */
  ksnap__blob_t *blobs;         /* operator: deep copy */
  size_t nblobs;
} snap_state_t;

struct ksnap_state_snapshot_s {
  ksnap_state_t *state; /* only for force_full */
  size_t buffer_size;
  ksnap__snap_header_t hdr;
  snap_state_t *ss;
};

static char **dup_names(char *const *names, size_t n, const char *extra) {
  char **out = calloc(n + 1, sizeof(*out));

  if (!out)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(out[i] = strdup(names[i])))
      goto fail;
  if (!(out[n] = strdup(extra)))
    goto fail;
  return out;
fail:
  for (size_t i = 0; i <= n; i++)
    free(out[i]);
  free(out);
  return NULL;
}

static void free_names(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++)
    free(names[i]);
  free(names);
}

static void snap_free(ksnap_state_snapshot_t *snap) {
  for (size_t i = 0; snap->ss && i < snap->hdr.nstates; i++) {
    ksnap__state_map_snap_release(snap->ss[i].view);
    for (size_t j = 0; j < snap->ss[i].nblobs; j++)
      free(snap->ss[i].blobs[j].data);
    free(snap->ss[i].blobs);
  }
  free(snap->ss);
  ksnap__snap_header_cleanup(&snap->hdr);
  free(snap);
}

static int copy_blobs(snap_state_t *ss, const ksnap__kstate_t *ks) {
  ss->blobs = calloc(ks->nblobs ? ks->nblobs : 1, sizeof(*ss->blobs));
  if (!ss->blobs)
    return -1;
  for (size_t j = 0; j < ks->nblobs; j++, ss->nblobs++) {
    ss->blobs[j].len = ks->blobs[j].len;
    if (!(ss->blobs[j].data = malloc(ks->blobs[j].len + 1)))
      return -1;
    memcpy(ss->blobs[j].data, ks->blobs[j].data, ks->blobs[j].len);
  }
  return 0;
}

ksnap_err_t ksnap_state_snapshot_begin(ksnap_state_t *st,
                                       int64_t checkpoint_id,
                                       const char *name,
                                       ksnap_state_snapshot_t **snapp,
                                       ksnap_error_t *error) {
  ksnap_state_snapshot_t *snap = calloc(1, sizeof(*snap));
  int forced = atomic_exchange(&st->force_full, 0);
  int full = !st->conf.incremental || forced || !st->nchain ||
             st->nchain >= (size_t)st->conf.max_chain;
  char **chain;

  *snapp = NULL;
  if (!name || !*name || strchr(name, '\n')) {
    free(snap);
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "snapshot name must be a non-empty line");
  }
  if (!snap)
    goto nomem;
  snap->state = st;
  snap->buffer_size = st->conf.buffer_size;
  snap->hdr.version = KSNAP_STATE_FORMAT_VERSION;
  snap->hdr.max_parallelism = st->conf.max_parallelism;
  snap->hdr.kg_start = st->kg_start;
  snap->hdr.kg_end = st->kg_end;
  snap->hdr.checkpoint_id = checkpoint_id;
  snap->hdr.incremental = !full;
  chain = dup_names(st->chain, full ? 0 : st->nchain, name);
  snap->ss = calloc(st->nstates ? st->nstates : 1, sizeof(*snap->ss));
  snap->hdr.states = calloc(st->nstates ? st->nstates : 1,
                            sizeof(*snap->hdr.states));
  if (!chain || !snap->ss || !snap->hdr.states) {
    free_names(chain, full ? 1 : st->nchain + 1);
    goto nomem;
  }
  snap->hdr.manifest = chain;
  snap->hdr.nmanifest = full ? 1 : st->nchain + 1;
  for (size_t i = 0; i < st->nstates; i++) {
    ksnap__kstate_t *ks = &st->states[i];
    ksnap__snap_desc_t *d = &snap->hdr.states[snap->hdr.nstates++];
    d->kind = ks->kind;
    d->ttl_ms = ks->ttl_ms;
    if (!(d->name = strdup(ks->name)))
      goto nomem;
    if (ks->map) {
      snap->ss[i].view = ksnap__state_map_snapshot(
          ks->map, full ? 0 : ks->last_version);
      if (!snap->ss[i].view)
        goto nomem;
      ks->last_version = ksnap__state_map_snap_version(snap->ss[i].view);
    } else if (copy_blobs(&snap->ss[i], ks)) {
      goto nomem;
    }
  }
  /* Commit the chain only now that nothing can fail. */
  free_names(st->chain, st->nchain);
  st->chain = dup_names(chain, snap->hdr.nmanifest - 1,
                        chain[snap->hdr.nmanifest - 1]);
  st->nchain = st->chain ? snap->hdr.nmanifest : 0;
  if (!st->chain)
    atomic_store(&st->force_full, 1);
  *snapp = snap;
  return KSNAP_ERR_OK;
nomem:
  if (snap) {
    atomic_store(&st->force_full, 1); /* views taken moved the bases */
    snap_free(snap);
  }
  return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                         "out of memory taking a snapshot");
}

void ksnap_state_snapshot_next_full(ksnap_state_t *st) {
  atomic_store(&st->force_full, 1);
}

int ksnap_state_snapshot_is_incremental(const ksnap_state_snapshot_t *snap) {
  return snap->hdr.incremental;
}

size_t ksnap_state_snapshot_manifest(const ksnap_state_snapshot_t *snap,
                                     const char *const **namesp) {
  *namesp = (const char *const *)snap->hdr.manifest;
  return snap->hdr.nmanifest;
}

void ksnap_state_snapshot_end(ksnap_state_snapshot_t *snap, int persisted) {
  if (!snap)
    return;
  if (!persisted)
    atomic_store(&snap->state->force_full, 1);
  snap_free(snap);
}

/* ---- async phase: key group by key group, streamed ---------------- */

typedef struct emit_s {
  ksnap__snap_writer_t *w;
  const ksnap__snap_desc_t *desc;
  int state_index;
  ksnap_err_t err;
  ksnap_error_t *error;
} emit_t;

/* One view item as a file entry; a map state's composite key is split
 * back into record key and user key. */
static int emit_item(void *opaque, const ksnap_state_map_item_t *it) {
  emit_t *em = opaque;
  ksnap_state_entry_t e;

  memset(&e, 0, sizeof(e));
  e.state_index = em->state_index;
  e.key_group = it->kg;
  e.tombstone = it->tombstone;
  e.key = it->key;
  e.klen = it->klen;
  e.value = it->value;
  e.vlen = it->vlen;
  e.ts = it->ts;
  if (em->desc->kind == KSNAP_STATE_MAP) {
    uint32_t klen = it->klen < 4 ? 0 : ksnap__rd32(it->key);
    if (it->klen < 4 || klen > it->klen - 4) {
      em->err = ksnap_error_set(em->error, KSNAP_ERR_STATE,
                                "bad map-state key");
      return 1;
    }
    e.key = it->key + 4;
    e.klen = klen;
    e.has_user_key = 1;
    e.user_key = it->key + 4 + klen;
    e.uklen = it->klen - 4 - klen;
  }
  em->err = ksnap__snap_writer_add(em->w, &e, em->error);
  return em->err != KSNAP_ERR_OK;
}

static ksnap_err_t write_keyed(ksnap_state_snapshot_t *snap,
                               ksnap__snap_writer_t *w,
                               ksnap_error_t *error) {
  emit_t em = {w, NULL, 0, KSNAP_ERR_OK, error};
  size_t ns = snap->hdr.nstates;

  for (size_t i = 0; i < ns; i++)
    if (snap->ss[i].view && ksnap__state_map_snap_prepare(snap->ss[i].view))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int kg = snap->hdr.kg_start; kg < snap->hdr.kg_end; kg++) {
    for (size_t i = 0; i < ns; i++) {
      if (!snap->ss[i].view)
        continue;
      em.desc = &snap->hdr.states[i];
      em.state_index = (int)i;
      if (ksnap__state_map_snap_iterate_kg(snap->ss[i].view, kg, emit_item,
                                           &em))
        return em.err;
    }
  }
  return KSNAP_ERR_OK;
}

static ksnap_err_t write_operator(ksnap_state_snapshot_t *snap,
                                  ksnap__snap_writer_t *w,
                                  ksnap_error_t *error) {
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t k = 0; k < snap->hdr.nstates && !err; k++) {
    for (size_t j = 0; j < snap->ss[k].nblobs && !err; j++) {
      ksnap_state_entry_t e;
      memset(&e, 0, sizeof(e));
      e.state_index = (int)k;
      e.key_group = -1;
      e.key = (const uint8_t *)"";
      e.value = snap->ss[k].blobs[j].data;
      e.vlen = snap->ss[k].blobs[j].len;
      err = ksnap__snap_writer_add(w, &e, error);
    }
  }
  return err;
}

ksnap_err_t ksnap_state_snapshot_stream(ksnap_state_snapshot_t *snap,
                                        const ksnap_state_out_t *out,
                                        ksnap_error_t *error) {
  ksnap__snap_writer_t w;
  ksnap_err_t err = ksnap__snap_writer_begin(&w, out, snap->buffer_size,
                                             &snap->hdr, error);

  if (!err)
    err = write_keyed(snap, &w, error);
  if (!err)
    err = write_operator(snap, &w, error);
  if (!err)
    err = ksnap__snap_writer_finish(&w, error);
  ksnap__snap_writer_cleanup(&w);
  return err;
}

ksnap_err_t ksnap_state_snapshot_write(ksnap_state_snapshot_t *snap,
                                       ksnap_buf_t *out,
                                       ksnap_error_t *error) {
  ksnap_state_out_t o;

  ksnap__snap_out_buf(&o, out);
  return ksnap_state_snapshot_stream(snap, &o, error);
}
