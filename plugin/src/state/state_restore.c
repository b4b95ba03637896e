/*
 * state_restore.c: restore a task's state from the snapshot files of a
 * checkpoint written at any parallelism, and the offline decoder used by
 * `ksnap inspect`. Processing thread only (restore writes the state).
 *
 * Rescale. Keyed state: each old task's chain is applied in order, only
 * for the key groups this task owns (the index lets the reader skip the
 * others without decoding them). Old tasks own disjoint key groups, so
 * the order between chains does not matter. Operator state: from the last
 * file of each chain (operator lists are always written whole); SPLIT
 * lists are concatenated in old-task order and task i of P takes
 * positions [i*T/P, (i+1)*T/P), except at an unchanged parallelism (one
 * chain per task), where task i gets old task i's list back, as it was;
 * UNION lists are given whole to every task.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state_internal.h"
#include "state_snapshot.h"

typedef struct apply_s {
  ksnap_state_t *st;
  int *ids; /* file state index -> state id */
  ksnap_buf_t key;
  ksnap_err_t err;
  /* operator pass */
  size_t *seen; /* per state id: SPLIT elements seen so far */
  size_t *total;
  int op_pass;
  size_t chain;    /* operator pass: the chain being read */
  long own_chain;  /* unchanged parallelism: this task's chain, else -1 */
  ksnap_error_t *error;
  ksnap_state_entry_cb_t observe; /* every keyed entry applied */
  void *observe_opaque;
} apply_t;

static int apply_keyed(void *opaque, const ksnap_state_entry_t *e) {
  apply_t *a = opaque;
  ksnap__kstate_t *ks = &a->st->states[a->ids[e->state_index]];
  const uint8_t *key = e->key;
  size_t klen = e->klen;
  ksnap_err_t err;

  if (e->has_user_key) {
    if (ksnap__state_map_key(&a->key, e->key, e->klen, e->user_key,
                             e->uklen)) {
      a->err = KSNAP_ERR_NOMEM;
      return 1;
    }
    key = a->key.data;
    klen = a->key.len;
  }
  if (e->tombstone)
    err = ksnap__state_map_remove(ks->map, (uint16_t)e->key_group, key, klen);
  else
    err = ksnap__state_map_put_ts(ks->map, (uint16_t)e->key_group, key, klen,
                                  e->value, e->vlen, e->ts);
  if (err && err != KSNAP_ERR_NOT_FOUND) {
    a->err = err;
    return 1;
  }
  if (a->observe && a->observe(a->observe_opaque, e)) {
    a->err = KSNAP_ERR_INTERRUPTED;
    return 1;
  }
  return 0;
}

static int apply_op(void *opaque, const ksnap_state_entry_t *e) {
  apply_t *a = opaque;
  int id = a->ids[e->state_index];
  ksnap__kstate_t *ks = &a->st->states[id];
  ksnap_state_conf_t *c = &a->st->conf;

  if (ks->kind == KSNAP_STATE_OP_SPLIT) {
    size_t pos = a->seen[id]++, t = a->total[id];
    if (!a->op_pass)
      return 0; /* counting pass */
    if (a->own_chain >= 0 ? a->chain != (size_t)a->own_chain
        : pos < t * (size_t)c->task_index / (size_t)c->parallelism ||
              pos >= t * ((size_t)c->task_index + 1) / (size_t)c->parallelism)
      return 0;
  } else if (!a->op_pass) {
    return 0;
  }
  if ((a->err = ksnap_state_op_add(a->st, id, e->value, e->vlen, a->error)))
    return 1;
  return 0;
}

/* Registers the file's states; fills a->ids. */
static ksnap_err_t map_states(apply_t *a, const ksnap__snap_reader_t *r,
                              ksnap_error_t *error) {
  free(a->ids);
  a->ids = calloc(r->hdr.nstates ? r->hdr.nstates : 1, sizeof(int));
  if (!a->ids)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < r->hdr.nstates; i++) {
    const ksnap__snap_desc_t *d = &r->hdr.states[i];
    ksnap_err_t err = ksnap_state_register(a->st, d->name, d->kind,
                                           d->ttl_ms, &a->ids[i], error);
    if (err)
      return ksnap_error_prefix(error, "restoring state \"%s\"", d->name);
    a->st->states[a->ids[i]].restored = 1;
  }
  return KSNAP_ERR_OK;
}

/* The file's key groups are not the job's: no restart fixes that. Names
 * the file's states (the user's first: "ksnap." ones are the runtime's). */
static ksnap_err_t max_par_changed(const ksnap__snap_reader_t *r, int now,
                                   ksnap_error_t *error) {
  const char *name = r->hdr.nstates ? r->hdr.states[0].name : "(none)";

  for (size_t i = 0; i < r->hdr.nstates; i++)
    if (strncmp(r->hdr.states[i].name, "ksnap.", 6)) {
      name = r->hdr.states[i].name;
      break;
    }
  return ksnap_error_set(
      error, KSNAP_ERR_INCOMPATIBLE,
      "state \"%s\" (%zu state%s in the file): the checkpoint's keyed state "
      "is split into %d key groups, pipeline.max-parallelism is %d: it is "
      "fixed for the job's life (set it back to %d)", name, r->hdr.nstates,
      r->hdr.nstates == 1 ? "" : "s", r->hdr.max_parallelism, now,
      r->hdr.max_parallelism);
}

/* A file being read: whole in memory, or through ranged reads into a
 * window of about buffer_size bytes (at least one key group). */
typedef struct src_s {
  ksnap__snap_reader_t r;
  const ksnap_state_file_t *f;
  uint8_t *hdrbuf;
  uint8_t *win;
  size_t wincap, buffer_size;
} src_t;

static ksnap_err_t src_open_bytes(src_t *s, const ksnap_state_file_t *f,
                                  ksnap_error_t *error) {
  size_t want = 4096;
  ksnap_err_t err;

  s->f = f;
  s->hdrbuf = NULL;
  s->win = NULL;
  s->wincap = 0;
  if (f->data)
    return ksnap__snap_reader_open(&s->r, f->data, f->len, 0, error);
  if (!f->read)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "snapshot file has neither bytes nor a reader");
  for (;;) {
    uint8_t *b;
    if (want > f->size)
      want = (size_t)f->size;
    if (!(b = realloc(s->hdrbuf, want ? want : 1)))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    s->hdrbuf = b;
    if ((err = f->read(f->read_opaque, 0, want, b, error)))
      goto fail;
    err = ksnap__snap_reader_open(&s->r, b, want, 1, error);
    if (err != KSNAP_ERR_TRUNCATED || want == f->size)
      break;
    want *= 4; /* the header is longer: read more of it */
  }
  if (!err && s->r.offsets[s->r.nslots] != f->size) {
    uint64_t want_size = s->r.offsets[s->r.nslots];
    ksnap__snap_reader_cleanup(&s->r);
    err = ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                          "snapshot file is truncated: %" PRIu64
                          " bytes, index says %" PRIu64,
                          f->size, want_size);
  }
  if (!err)
    return KSNAP_ERR_OK;
fail:
  free(s->hdrbuf);
  s->hdrbuf = NULL;
  return err;
}

static void src_close(src_t *s) {
  ksnap__snap_reader_cleanup(&s->r);
  free(s->hdrbuf);
  free(s->win);
  s->hdrbuf = NULL;
  s->win = NULL;
  s->wincap = 0;
  s->f = NULL;
}

/* Fetches the file bytes [lo, hi) into the window and decodes key groups
 * [kg_lo, kg_hi) from them; the reader checks their slots' CRCs before
 * decoding anything, so nothing of a corrupt window is applied. */
static ksnap_err_t read_window(src_t *s, uint64_t lo, uint64_t hi, int kg_lo,
                               int kg_hi, ksnap_state_entry_cb_t cb,
                               void *opaque, ksnap_error_t *error) {
  size_t len = (size_t)(hi - lo);
  ksnap_err_t err;

  if (!len)
    return KSNAP_ERR_OK;
  if (len > s->wincap) {
    uint8_t *w = realloc(s->win, len);
    if (!w)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    s->win = w;
    s->wincap = len;
  }
  if ((err = s->f->read(s->f->read_opaque, lo, len, s->win, error)))
    return err;
  ksnap__snap_reader_set_window(&s->r, s->win, lo, len);
  return ksnap__snap_reader_read(&s->r, kg_lo, kg_hi, cb, opaque, error);
}

/* Decodes key groups [kg_lo, kg_hi) (-1: operator state), fetching only
 * their bytes when the file is read through its reader, in windows of
 * consecutive key groups of at most buffer_size bytes (or one key group,
 * if it alone is larger). */
static ksnap_err_t src_read(src_t *s, int kg_lo, int kg_hi,
                            ksnap_state_entry_cb_t cb, void *opaque,
                            ksnap_error_t *error) {
  const ksnap__snap_header_t *h = &s->r.hdr;
  uint64_t lo, hi, hi2;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (s->f->data)
    return ksnap__snap_reader_read(&s->r, kg_lo, kg_hi, cb, opaque, error);
  if (kg_lo < 0) {
    ksnap__snap_reader_range(&s->r, -1, -1, &lo, &hi);
    err = read_window(s, lo, hi, -1, -1, cb, opaque, error);
    free(s->win);
    s->win = NULL;
    s->wincap = 0;
    return err;
  }
  kg_lo = kg_lo < h->kg_start ? h->kg_start : kg_lo;
  kg_hi = kg_hi > h->kg_end ? h->kg_end : kg_hi;
  while (!err && kg_lo < kg_hi) {
    int end = kg_lo + 1;
    ksnap__snap_reader_range(&s->r, kg_lo, end, &lo, &hi);
    for (; end < kg_hi; end++, hi = hi2) {
      ksnap__snap_reader_range(&s->r, kg_lo, end + 1, &lo, &hi2);
      if (hi2 - lo > s->buffer_size)
        break;
    }
    err = read_window(s, lo, hi, kg_lo, end, cb, opaque, error);
    kg_lo = end;
  }
  free(s->win); /* one window alive at a time, whatever the files */
  s->win = NULL;
  s->wincap = 0;
  return err;
}

static ksnap_err_t open_checked(src_t *s, apply_t *a,
                                const ksnap_state_chain_t *ch, size_t j,
                                ksnap_error_t *error) {
  ksnap__snap_reader_t *r = &s->r;
  ksnap_err_t err = src_open_bytes(s, &ch->files[j], error);

  if (err)
    return err;
  s->buffer_size = a->st->conf.buffer_size ? a->st->conf.buffer_size
                                           : KSNAP__SNAP_BUFFER_DEFAULT;
  if (r->hdr.max_parallelism != a->st->conf.max_parallelism)
    err = max_par_changed(r, a->st->conf.max_parallelism, error);
  else if (r->hdr.nmanifest != j + 1 || (j == 0) == r->hdr.incremental)
    err = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                          "broken incremental chain: file %zu of %zu "
                          "lists %zu files",
                          j + 1, ch->nfiles, r->hdr.nmanifest);
  else
    err = map_states(a, r, error);
  if (err)
    src_close(s);
  return err;
}

/* Applies the operator state of the last file of every chain (kept
 * open in @p last: each file's header is fetched once per restore). */
static ksnap_err_t restore_ops(apply_t *a, src_t *last, size_t nchains,
                               ksnap_error_t *error) {
  size_t n = a->st->nstates + 1;
  ksnap_err_t err;

  a->seen = calloc(n, sizeof(size_t));
  a->total = calloc(n, sizeof(size_t));
  if (!a->seen || !a->total)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  a->own_chain = nchains == (size_t)a->st->conf.parallelism
                     ? (long)a->st->conf.task_index
                     : -1;
  for (a->op_pass = 0; a->op_pass < 2; a->op_pass++) {
    for (size_t i = 0; i < n; i++) {
      if (a->op_pass)
        a->total[i] = a->seen[i];
      a->seen[i] = 0;
    }
    for (size_t c = 0; c < nchains; c++) {
      if (!last[c].f)
        continue;
      a->chain = c;
      if ((err = map_states(a, &last[c].r, error)))
        return err;
      if ((err = src_read(&last[c], -1, -1, apply_op, a, error)))
        return a->err ? a->err : err;
    }
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_state_restore(ksnap_state_t *st,
                                const ksnap_state_chain_t *chains,
                                size_t nchains, ksnap_error_t *error) {
  return ksnap_state_restore_observed(st, chains, nchains, NULL, NULL, error);
}

ksnap_err_t ksnap_state_restore_observed(ksnap_state_t *st,
                                         const ksnap_state_chain_t *chains,
                                         size_t nchains,
                                         ksnap_state_entry_cb_t observe,
                                         void *opaque, ksnap_error_t *error) {
  apply_t a;
  src_t *last = calloc(nchains ? nchains : 1, sizeof(*last));
  ksnap_err_t err = KSNAP_ERR_OK;

  memset(&a, 0, sizeof(a));
  a.st = st;
  a.error = error;
  a.observe = observe;
  a.observe_opaque = opaque;
  ksnap_buf_init(&a.key);
  if (!last)
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t c = 0; c < nchains && !err; c++) {
    for (size_t j = 0; j < chains[c].nfiles && !err; j++) {
      int is_last = j + 1 == chains[c].nfiles;
      src_t tmp, *src = is_last ? &last[c] : &tmp;
      if ((err = open_checked(src, &a, &chains[c], j, error))) {
        src->f = NULL;
        break;
      }
      err = src_read(src, st->kg_start, st->kg_end, apply_keyed, &a, error);
      if (!is_last)
        src_close(src);
      if (err && a.err == KSNAP_ERR_INTERRUPTED)
        err = ksnap_error_set(error, a.err, "restore stopped by the "
                                            "observer");
      else if (err && a.err)
        err = ksnap_error_set(error, a.err, "cannot apply restored state");
    }
  }
  /* Every state of every file is registered now: operator state next. */
  if (!err)
    err = restore_ops(&a, last, nchains, error);
  for (size_t c = 0; last && c < nchains; c++)
    if (last[c].f)
      src_close(&last[c]);
  atomic_store(&st->force_full, 1);
  free(last);
  free(a.ids);
  free(a.seen);
  free(a.total);
  ksnap_buf_cleanup(&a.key);
  return err;
}

/* ---- offline decoding -------------------------------------------- */

ksnap_err_t ksnap_state_file_decode(const uint8_t *data, size_t len,
                                    ksnap_state_info_cb_t info_cb,
                                    ksnap_state_entry_cb_t cb, void *opaque,
                                    ksnap_error_t *error) {
  ksnap__snap_reader_t r;
  ksnap_err_t err = ksnap__snap_reader_open(&r, data, len, 0, error);

  if (err)
    return err;
  if (info_cb) {
    ksnap_state_file_info_t info;
    info.version = r.hdr.version;
    info.max_parallelism = r.hdr.max_parallelism;
    info.kg_start = r.hdr.kg_start;
    info.kg_end = r.hdr.kg_end;
    info.checkpoint_id = r.hdr.checkpoint_id;
    info.incremental = r.hdr.incremental;
    info.nmanifest = r.hdr.nmanifest;
    info.manifest = (const char *const *)r.hdr.manifest;
    info_cb(opaque, &info);
  }
  err = ksnap__snap_reader_read(&r, r.hdr.kg_start, r.hdr.kg_end, cb, opaque,
                                error);
  if (!err)
    err = ksnap__snap_reader_read(&r, -1, -1, cb, opaque, error);
  ksnap__snap_reader_cleanup(&r);
  return err;
}

ksnap_err_t ksnap_state_file_range(const uint8_t *data, size_t len,
                                   int kg_lo, int kg_hi, uint64_t *offp,
                                   uint64_t *endp, ksnap_error_t *error) {
  ksnap__snap_reader_t r;
  ksnap_err_t err = ksnap__snap_reader_open(&r, data, len, 1, error);

  if (err)
    return err;
  if (kg_lo < r.hdr.kg_start)
    kg_lo = r.hdr.kg_start;
  if (kg_lo > r.hdr.kg_end)
    kg_lo = r.hdr.kg_end;
  if (kg_hi > r.hdr.kg_end)
    kg_hi = r.hdr.kg_end;
  if (kg_hi < kg_lo)
    kg_hi = kg_lo;
  *offp = r.offsets[kg_lo - r.hdr.kg_start];
  *endp = r.offsets[kg_hi - r.hdr.kg_start];
  ksnap__snap_reader_cleanup(&r);
  return KSNAP_ERR_OK;
}
