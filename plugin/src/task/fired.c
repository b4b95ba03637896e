/*
 * The firing log's entries and the epoch replay's plan (fired.h).
 * Value of an entry: time (8), flags (1: bit 0 no key, bit 1 event time,
 * bit 2 a watermark follows), key length (4), key, channel count (4),
 * then per channel its position (8), then the watermark (8) if flagged;
 * integers big-endian. Entries of earlier versions have flags 0 or 1.
 */
#include "fired.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ksnap/context.h"

#define F_NOKEY 1
#define F_EVENT 2
#define F_WM 4

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 3; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t)(v & 0xff);
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

void ksnap__fired_user_key(int64_t tag, int64_t seq, uint8_t out[16]) {
  ksnap__put_be64(out, tag);
  ksnap__put_be64(out + 8, seq);
}

void ksnap__fired_parse_key(const uint8_t uk[16], int64_t *tagp,
                            int64_t *seqp) {
  *tagp = ksnap__get_be64(uk);
  *seqp = ksnap__get_be64(uk + 8);
}

ksnap_err_t ksnap__fired_encode(const ksnap__fired_t *f, uint8_t **valp,
                                size_t *lenp, ksnap_error_t *error) {
  size_t len = 8 + 1 + 4 + f->klen + 4 + 8 * (size_t)f->npos + 8;
  uint8_t *v = malloc(len), *p = v;

  if (!v)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  ksnap__put_be64(p, f->time_ms);
  p[8] = (uint8_t)((f->nokey ? F_NOKEY : 0) | (f->event ? F_EVENT : 0) |
                   F_WM);
  put32(p + 9, (uint32_t)f->klen);
  p += 13;
  if (f->klen)
    memcpy(p, f->key, f->klen);
  p += f->klen;
  put32(p, (uint32_t)f->npos);
  p += 4;
  for (int32_t c = 0; c < f->npos; c++, p += 8)
    ksnap__put_be64(p, f->pos[c]);
  ksnap__put_be64(p, f->wm);
  *valp = v;
  *lenp = len;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__fired_decode(const uint8_t *uk, size_t uklen,
                                const uint8_t *val, size_t vlen,
                                ksnap__fired_t *f, ksnap_error_t *error) {
  size_t klen, npos, wmlen;

  memset(f, 0, sizeof(*f));
  if (uklen != 16 || vlen < 13)
    goto bad;
  klen = get32(val + 9);
  if (vlen < 13 + klen + 4)
    goto bad;
  npos = get32(val + 13 + klen);
  wmlen = val[8] & F_WM ? 8 : 0;
  if (val[8] & ~(F_NOKEY | F_EVENT | F_WM) ||
      vlen != 13 + klen + 4 + 8 * npos + wmlen)
    goto bad;
  f->tag = ksnap__get_be64(uk);
  f->seq = ksnap__get_be64(uk + 8);
  f->time_ms = ksnap__get_be64(val);
  f->nokey = (val[8] & F_NOKEY) != 0;
  f->event = (val[8] & F_EVENT) != 0;
  f->wm = wmlen ? ksnap__get_be64(val + vlen - 8) : KSNAP_WATERMARK_MIN;
  f->klen = klen;
  f->npos = (int32_t)npos;
  if (!(f->key = malloc(klen + 1)) ||
      !(f->pos = malloc(sizeof(*f->pos) * (npos + 1)))) {
    ksnap__fired_cleanup(f);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  if (klen)
    memcpy(f->key, val + 13, klen);
  for (size_t c = 0; c < npos; c++)
    f->pos[c] = ksnap__get_be64(val + 13 + klen + 4 + 8 * c);
  return KSNAP_ERR_OK;
bad:
  return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                         "state %s: an entry of %zu + %zu bytes is not a "
                         "timer firing", KSNAP__FIRED_STATE, uklen, vlen);
}

void ksnap__fired_cleanup(ksnap__fired_t *f) {
  free(f->key);
  free(f->pos);
  memset(f, 0, sizeof(*f));
}

ksnap_err_t ksnap__fired_list_put(ksnap__fired_list_t *l, ksnap__fired_t *f,
                                  ksnap_error_t *error) {
  ksnap__fired_list_remove(l, f->tag, f->seq);
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    void *v = realloc(l->v, cap * sizeof(*l->v));
    if (!v)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *f;
  memset(f, 0, sizeof(*f));
  return KSNAP_ERR_OK;
}

void ksnap__fired_list_remove(ksnap__fired_list_t *l, int64_t tag,
                              int64_t seq) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].tag == tag && l->v[i].seq == seq) {
      ksnap__fired_cleanup(&l->v[i]);
      memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
      l->n--;
      return;
    }
}

static int by_order(const void *a, const void *b) {
  const ksnap__fired_t *x = a, *y = b;

  if (x->tag != y->tag)
    return x->tag < y->tag ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ksnap__fired_list_sort(ksnap__fired_list_t *l) {
  if (l->n > 1)
    qsort(l->v, l->n, sizeof(*l->v), by_order);
}

void ksnap__fired_list_cleanup(ksnap__fired_list_t *l) {
  for (size_t i = 0; i < l->n; i++)
    ksnap__fired_cleanup(&l->v[i]);
  free(l->v);
  memset(l, 0, sizeof(*l));
}

/* ---- the plan ---- */

ksnap_record_t *ksnap__plan_copy_record(const ksnap_record_t *r) {
  size_t n = sizeof(*r) + r->header_cnt * sizeof(ksnap_header_t) +
             r->key_len + r->value_len + (r->topic ? strlen(r->topic) : 0) + 1;
  ksnap_record_t *c;
  ksnap_header_t *h;
  uint8_t *p;

  for (size_t i = 0; i < r->header_cnt; i++)
    n += strlen(r->headers[i].name) + 1 + r->headers[i].value_len;
  if (!(c = malloc(n)))
    return NULL;
  *c = *r;
  h = (ksnap_header_t *)(c + 1);
  p = (uint8_t *)(h + r->header_cnt);
  c->headers = r->header_cnt ? h : NULL;
  if (r->key) {
    memcpy(p, r->key, r->key_len);
    c->key = p;
    p += r->key_len;
  }
  if (r->value) {
    memcpy(p, r->value, r->value_len);
    c->value = p;
    p += r->value_len;
  }
  for (size_t i = 0; i < r->header_cnt; i++) {
    size_t nl = strlen(r->headers[i].name) + 1;
    memcpy(p, r->headers[i].name, nl);
    h[i].name = (const char *)p;
    p += nl;
    h[i].value = r->headers[i].value ? p : NULL;
    h[i].value_len = r->headers[i].value_len;
    if (r->headers[i].value_len)
      memcpy(p, r->headers[i].value, r->headers[i].value_len);
    p += r->headers[i].value_len;
  }
  if (r->topic) {
    strcpy((char *)p, r->topic);
    c->topic = (const char *)p;
  }
  return c;
}

ksnap_err_t ksnap__plan_init(ksnap__plan_t *p, const ksnap__fired_list_t *log,
                             int32_t nchan, const int64_t *start,
                             ksnap_error_t *error) {
  p->log = log;
  p->nchan = nchan;
  if (!(p->done = calloc((size_t)nchan + 1, sizeof(*p->done))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t c = 0; start && c < nchan; c++) /* < 0: a logical start */
    p->done[c] = start[c] > 0 ? start[c] : 0;
  for (size_t i = 0; i < log->n; i++)
    if (log->v[i].npos != nchan)
      return ksnap_error_set(
          error, KSNAP_ERR_CORRUPT,
          "timer firing %lld after cut %lld has %d input positions, the "
          "task has %d input channels", (long long)log->v[i].seq,
          (long long)log->v[i].tag, (int)log->v[i].npos, (int)nchan);
  return KSNAP_ERR_OK;
}

void ksnap__plan_cleanup(ksnap__plan_t *p) {
  for (size_t i = 0; p->drop && i < p->nheld; i++)
    p->drop(p->held[i].rec);
  free(p->held);
  free(p->done);
  p->held = NULL;
  p->done = NULL;
  p->nheld = 0;
}

int ksnap__plan_must_hold(const ksnap__plan_t *p, int32_t chan,
                          int64_t offset) {
  return p->next < p->log->n && chan >= 0 && chan < p->nchan &&
         offset >= p->log->v[p->next].pos[chan];
}

ksnap_err_t ksnap__plan_hold(ksnap__plan_t *p, int32_t chan, int64_t offset,
                             void *rec, ksnap_error_t *error) {
  if (p->nheld == p->capheld) {
    size_t cap = p->capheld ? p->capheld * 2 : 64;
    void *v = realloc(p->held, cap * sizeof(*p->held));
    if (!v)
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    p->held = v;
    p->capheld = cap;
  }
  p->held[p->nheld++] = (ksnap__plan_rec_t){chan, offset, rec};
  return KSNAP_ERR_OK;
}

static ksnap_err_t run_one(ksnap__plan_t *p, int32_t chan, int64_t offset,
                           void *rec, ksnap_error_t *error) {
  ksnap_err_t err = p->run(p->opaque, chan, rec, error);

  if (!err && chan >= 0 && chan < p->nchan && offset + 1 > p->done[chan])
    p->done[chan] = offset + 1;
  return err;
}

ksnap_err_t ksnap__plan_record(ksnap__plan_t *p, int32_t chan, int64_t offset,
                               void *rec, ksnap_error_t *error) {
  ksnap_err_t err = run_one(p, chan, offset, rec, error);

  return err ? err : ksnap__plan_advance(p, error);
}

/* 1 if every channel ran up to the next firing's position. */
static int ready(const ksnap__plan_t *p) {
  const ksnap__fired_t *f;

  if (p->next >= p->log->n)
    return 0;
  f = &p->log->v[p->next];
  for (int32_t c = 0; c < p->nchan; c++)
    if (p->done[c] < f->pos[c])
      return 0;
  return 1;
}

/* Runs the held records that no longer wait, in arrival order; a record
 * run can make the next firing ready, which fires before the next held
 * record is looked at. *@p moved: something ran. */
static ksnap_err_t run_held(ksnap__plan_t *p, int *moved,
                            ksnap_error_t *error) {
  size_t i = 0;
  ksnap_err_t err;

  while (i < p->nheld) {
    ksnap__plan_rec_t h = p->held[i];
    if (ready(p))
      return KSNAP_ERR_OK; /* the caller fires it first */
    if (ksnap__plan_must_hold(p, h.chan, h.offset)) {
      i++;
      continue;
    }
    memmove(&p->held[i], &p->held[i + 1],
            (p->nheld - i - 1) * sizeof(*p->held));
    p->nheld--;
    err = run_one(p, h.chan, h.offset, h.rec, error);
    if (p->drop)
      p->drop(h.rec);
    if (err)
      return err;
    *moved = 1;
    i = 0; /* a channel's earlier held records first */
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__plan_advance(ksnap__plan_t *p, ksnap_error_t *error) {
  ksnap_err_t err;
  int moved = 1;

  while (moved) {
    moved = 0;
    while (ready(p)) {
      if ((err = p->fire(p->opaque, &p->log->v[p->next], error)))
        return err;
      p->next++;
      p->fired++;
      moved = 1;
    }
    if ((err = run_held(p, &moved, error)))
      return err;
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__plan_finish(ksnap__plan_t *p, ksnap_error_t *error) {
  ksnap_err_t err = ksnap__plan_advance(p, error);
  const ksnap__fired_t *f;

  if (err || p->next >= p->log->n)
    return err;
  f = &p->log->v[p->next];
  for (int32_t c = 0; c < p->nchan; c++)
    if (p->done[c] < f->pos[c])
      return ksnap_error_set(
          error, KSNAP_ERR_STATE,
          "timer firing %lld (time %lld, after cut %lld) fired in the run "
          "after channel %d's offset %lld, but the replayed segment ends "
          "at %lld there: %zu of %zu firings not replayed",
          (long long)f->seq, (long long)f->time_ms, (long long)f->tag,
          (int)c, (long long)f->pos[c] - 1, (long long)p->done[c],
          p->log->n - p->next, p->log->n);
  return KSNAP_ERR_OK;
}
