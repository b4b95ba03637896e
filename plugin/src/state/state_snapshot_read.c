/*
 * state_snapshot_read.c: validating reader of snapshot files (layout in
 * state_snapshot.c). Every length is checked against the bytes at hand;
 * errors name the offset. Threading: none.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_snapshot.h"

typedef struct cur_s {
  const uint8_t *p, *end, *base;
  uint64_t base_off; /* file offset of base */
  ksnap_err_t err; /* first error, sticky */
  const char *what;
} cur_t;

static int fail(cur_t *c, ksnap_err_t err, const char *what) {
  if (!c->err) {
    c->err = err;
    c->what = what;
  }
  return -1;
}

static int64_t get_long(cur_t *c, const char *what) {
  uint64_t z = 0;

  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b;
    if (c->p >= c->end) {
      fail(c, KSNAP_ERR_TRUNCATED, what);
      return 0;
    }
    b = *c->p++;
    z |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  }
  fail(c, KSNAP_ERR_CORRUPT, what);
  return 0;
}

static const uint8_t *get_bytes(cur_t *c, size_t *lenp, const char *what) {
  int64_t len = get_long(c, what);
  const uint8_t *p = c->p;

  if (c->err)
    return NULL;
  if (len < 0) {
    fail(c, KSNAP_ERR_CORRUPT, what);
    return NULL;
  }
  if ((uint64_t)len > (uint64_t)(c->end - c->p)) {
    fail(c, KSNAP_ERR_TRUNCATED, what);
    return NULL;
  }
  c->p += len;
  *lenp = (size_t)len;
  return p;
}

static ksnap_err_t cur_error(const cur_t *c, ksnap_error_t *error) {
  return ksnap_error_set(error, c->err,
                         "snapshot file is %s: %s at byte %" PRIu64,
                         c->err == KSNAP_ERR_TRUNCATED ? "truncated"
                                                       : "corrupt",
                         c->what, c->base_off + (uint64_t)(c->p - c->base));
}

void ksnap__snap_header_cleanup(ksnap__snap_header_t *hdr) {
  for (size_t i = 0; i < hdr->nstates; i++)
    free(hdr->states[i].name);
  free(hdr->states);
  for (size_t i = 0; i < hdr->nmanifest; i++)
    free(hdr->manifest[i]);
  free(hdr->manifest);
  memset(hdr, 0, sizeof(*hdr));
}

void ksnap__snap_reader_cleanup(ksnap__snap_reader_t *r) {
  ksnap__snap_header_cleanup(&r->hdr);
  free(r->offsets);
  free(r->crcs);
  r->offsets = NULL;
  r->crcs = NULL;
}

/* Copies a metadata value into a NUL-terminated string. */
static char *dupval(const uint8_t *v, size_t len) {
  char *s = malloc(len + 1);

  if (s) {
    memcpy(s, v, len);
    s[len] = '\0';
  }
  return s;
}

static int parse_kind(const char *word, size_t n) {
  static const char *const names[] = {"value", "list", "map", "split",
                                      "union"};
  for (int k = 0; k < 5; k++)
    if (strlen(names[k]) == n && !memcmp(word, names[k], n))
      return k;
  return -1;
}

/* "KIND TTL NAME\n"* -> hdr->states; @returns 0 or -1 (malformed). */
static int parse_states(ksnap__snap_header_t *hdr, const char *text) {
  const char *p = text;

  while (*p) {
    const char *nl = strchr(p, '\n'), *sp1, *sp2;
    ksnap__snap_desc_t *d;
    char *endp;
    int kind;

    if (!nl || hdr->nstates >= KSNAP__SNAP_MAX_STATES)
      return -1;
    sp1 = memchr(p, ' ', (size_t)(nl - p));
    sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(nl - sp1 - 1)) : NULL;
    if (!sp2 || sp2 + 1 == nl)
      return -1;
    if ((kind = parse_kind(p, (size_t)(sp1 - p))) < 0)
      return -1;
    d = realloc(hdr->states, (hdr->nstates + 1) * sizeof(*d));
    if (!d)
      return -1;
    hdr->states = d;
    d += hdr->nstates;
    d->kind = (ksnap_state_kind_t)kind;
    d->ttl_ms = strtoll(sp1 + 1, &endp, 10);
    if (endp != sp2 || d->ttl_ms < 0)
      return -1;
    d->name = dupval((const uint8_t *)sp2 + 1, (size_t)(nl - sp2 - 1));
    if (!d->name)
      return -1;
    hdr->nstates++;
    p = nl + 1;
  }
  return 0;
}

static int parse_manifest(ksnap__snap_header_t *hdr, const char *text) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    char **m;

    if (!nl || nl == p || hdr->nmanifest >= KSNAP__SNAP_MAX_MANIFEST)
      return -1;
    m = realloc(hdr->manifest, (hdr->nmanifest + 1) * sizeof(*m));
    if (!m)
      return -1;
    hdr->manifest = m;
    if (!(m[hdr->nmanifest] = dupval((const uint8_t *)p, (size_t)(nl - p))))
      return -1;
    hdr->nmanifest++;
    p = nl + 1;
  }
  return 0;
}

typedef struct meta_s {
  const uint8_t *v[9];
  size_t len[9];
} meta_t;

static const char *const meta_keys[] = {
    "avro.schema",      "avro.codec",   "ksnap.version",
    "ksnap.range",      "ksnap.checkpoint", "ksnap.incremental",
    "ksnap.states",     "ksnap.manifest",   "ksnap.index"};

static int parse_meta(cur_t *c, meta_t *m) {
  for (;;) {
    int64_t n = get_long(c, "metadata block count");
    if (c->err || n == 0)
      return c->err ? -1 : 0;
    if (n < 0) { /* negative count: a byte size follows */
      n = -n;
      (void)get_long(c, "metadata block size");
    }
    if (n > 1000)
      return fail(c, KSNAP_ERR_CORRUPT, "metadata block count");
    while (n--) {
      size_t klen = 0, vlen = 0;
      const uint8_t *k = get_bytes(c, &klen, "metadata key");
      const uint8_t *v = get_bytes(c, &vlen, "metadata value");
      if (c->err)
        return -1;
      for (size_t i = 0; i < 9; i++)
        if (strlen(meta_keys[i]) == klen && !memcmp(k, meta_keys[i], klen)) {
          m->v[i] = v;
          m->len[i] = vlen;
        }
    }
  }
}

static ksnap_err_t check_index(ksnap__snap_reader_t *r, const uint8_t *idx,
                               size_t idxlen, size_t header_len,
                               int header_only, ksnap_error_t *error) {
  size_t nslots = (size_t)(r->hdr.kg_end - r->hdr.kg_start) + 1;

  if (idxlen != 8 + (nslots + 1) * 8 + nslots * 4 ||
      ksnap__rd32(idx + 4) != (uint32_t)nslots)
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "snapshot file is corrupt: bad key-group index");
  r->nslots = nslots;
  r->offsets = malloc((nslots + 1) * sizeof(uint64_t));
  r->crcs = malloc(nslots * sizeof(uint32_t));
  if (!r->offsets || !r->crcs)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i <= nslots; i++) {
    r->offsets[i] = ksnap__rd64(idx + 8 + i * 8);
    if (i ? r->offsets[i] < r->offsets[i - 1] : r->offsets[0] != header_len)
      return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                             "snapshot file is corrupt: bad key-group index");
  }
  for (size_t i = 0; i < nslots; i++)
    r->crcs[i] = ksnap__rd32(idx + 8 + (nslots + 1) * 8 + i * 4);
  if (!header_only && r->offsets[nslots] != r->len)
    return ksnap_error_set(error,
                           r->offsets[nslots] > r->len ? KSNAP_ERR_TRUNCATED
                                                       : KSNAP_ERR_CORRUPT,
                           "snapshot file is %s: %zu bytes, index says %" PRIu64,
                           r->offsets[nslots] > r->len ? "truncated"
                                                       : "corrupt",
                           r->len, r->offsets[nslots]);
  return KSNAP_ERR_OK;
}

static ksnap_err_t parse_header(ksnap__snap_reader_t *r, const meta_t *m,
                                ksnap_error_t *error) {
  char *s = NULL;
  int ok;

  for (int i = 0; i < 9; i++)
    if (!m->v[i] && i != 1)
      return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                             "snapshot file is corrupt: no %s in header",
                             meta_keys[i]);
  if (m->v[1] && (m->len[1] != 4 || memcmp(m->v[1], "null", 4)))
    return ksnap_error_set(error, KSNAP_ERR_UNSUPPORTED,
                           "snapshot file uses an unsupported Avro codec");
  if (!(s = dupval(m->v[2], m->len[2])))
    goto nomem;
  r->hdr.version = atoi(s);
  free(s);
  if (r->hdr.version > KSNAP_STATE_FORMAT_VERSION)
    return ksnap_error_set(error, KSNAP_ERR_SCHEMA_VERSION,
                           "snapshot format version %d is newer than the "
                           "supported version %d",
                           r->hdr.version, KSNAP_STATE_FORMAT_VERSION);
  if (r->hdr.version < 1)
    goto corrupt;
  if (!(s = dupval(m->v[3], m->len[3])))
    goto nomem;
  ok = sscanf(s, "%d %d %d", &r->hdr.max_parallelism, &r->hdr.kg_start,
              &r->hdr.kg_end) == 3;
  free(s);
  if (!ok || r->hdr.max_parallelism < 1 || r->hdr.max_parallelism > 32768 ||
      r->hdr.kg_start < 0 || r->hdr.kg_end < r->hdr.kg_start ||
      r->hdr.kg_end > r->hdr.max_parallelism)
    goto corrupt;
  if (!(s = dupval(m->v[4], m->len[4])))
    goto nomem;
  r->hdr.checkpoint_id = strtoll(s, NULL, 10);
  free(s);
  r->hdr.incremental = m->len[5] == 1 && m->v[5][0] == '1';
  if (!(s = dupval(m->v[6], m->len[6])))
    goto nomem;
  ok = parse_states(&r->hdr, s) == 0;
  free(s);
  if (!ok)
    goto corrupt;
  if (!(s = dupval(m->v[7], m->len[7])))
    goto nomem;
  ok = parse_manifest(&r->hdr, s) == 0;
  free(s);
  if (!ok)
    goto corrupt;
  return KSNAP_ERR_OK;
corrupt:
  return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                         "snapshot file is corrupt: bad ksnap header");
nomem:
  return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
}

ksnap_err_t ksnap__snap_reader_open(ksnap__snap_reader_t *r,
                                    const uint8_t *data, size_t len,
                                    int header_only, ksnap_error_t *error) {
  cur_t c = {data, data + len, data, 0, KSNAP_ERR_OK, NULL};
  meta_t m;
  uint32_t crc;
  uint8_t zero[4] = {0, 0, 0, 0};
  size_t header_len, index_pos;
  ksnap_err_t err;

  memset(r, 0, sizeof(*r));
  memset(&m, 0, sizeof(m));
  r->data = data;
  r->len = len;
  if (len < 4)
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "snapshot file is truncated: %zu bytes", len);
  if (memcmp(data, "Obj\x01", 4))
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "not an Avro object container file");
  c.p += 4;
  if (parse_meta(&c, &m))
    return cur_error(&c, error);
  if ((size_t)(c.end - c.p) < 16) {
    fail(&c, KSNAP_ERR_TRUNCATED, "sync marker");
    return cur_error(&c, error);
  }
  memcpy(r->sync, c.p, 16);
  c.p += 16;
  header_len = (size_t)(c.p - data);
  if ((err = parse_header(r, &m, error)))
    goto fail;
  if (m.len[8] < 8) {
    err = ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                          "snapshot file is corrupt: bad key-group index");
    goto fail;
  }
  index_pos = (size_t)(m.v[8] - data);
  crc = ksnap__crc32(0, data, index_pos);
  crc = ksnap__crc32(crc, zero, 4);
  crc = ksnap__crc32(crc, m.v[8] + 4, header_len - index_pos - 4);
  if (crc != ksnap__rd32(m.v[8])) {
    err = ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                          "snapshot file header checksum mismatch");
    goto fail;
  }
  if ((err = check_index(r, m.v[8], m.len[8], header_len, header_only,
                         error)))
    goto fail;
  ksnap__snap_reader_set_window(r, data, 0, len);
  return KSNAP_ERR_OK;
fail:
  ksnap__snap_reader_cleanup(r);
  return err;
}

static int decode_entry(cur_t *c, const ksnap__snap_reader_t *r,
                        ksnap_state_entry_t *e) {
  int64_t v;

  memset(e, 0, sizeof(*e));
  v = get_long(c, "state index");
  if (!c->err && (v < 0 || (uint64_t)v >= r->hdr.nstates))
    return fail(c, KSNAP_ERR_CORRUPT, "state index");
  e->state_index = (int)v;
  e->state = c->err ? NULL : r->hdr.states[v].name;
  e->kind = c->err ? 0 : r->hdr.states[v].kind;
  v = get_long(c, "key group");
  if (!c->err && (v < -1 || v >= r->hdr.max_parallelism))
    return fail(c, KSNAP_ERR_CORRUPT, "key group");
  e->key_group = (int)v;
  v = get_long(c, "op");
  if (!c->err && v != 0 && v != 1)
    return fail(c, KSNAP_ERR_CORRUPT, "op");
  e->tombstone = (int)v;
  e->key = get_bytes(c, &e->klen, "key");
  v = get_long(c, "userKey union index");
  if (!c->err && v != 0 && v != 1)
    return fail(c, KSNAP_ERR_CORRUPT, "userKey union index");
  if ((e->has_user_key = (int)v))
    e->user_key = get_bytes(c, &e->uklen, "userKey");
  e->value = get_bytes(c, &e->vlen, "value");
  e->ts = get_long(c, "timestamp");
  if (c->err)
    return -1;
  if (e->has_user_key != (e->kind == KSNAP_STATE_MAP) ||
      (e->key_group < 0) != (e->kind >= KSNAP_STATE_OP_SPLIT))
    return fail(c, KSNAP_ERR_CORRUPT, "entry of the wrong kind");
  return 0;
}

ksnap_err_t ksnap__snap_reader_read(ksnap__snap_reader_t *r, int kg_lo,
                                    int kg_hi, ksnap_state_entry_cb_t cb,
                                    void *opaque, ksnap_error_t *error) {
  size_t s_lo, s_hi;
  uint64_t lo, hi;
  cur_t c;

  if (kg_lo < 0) {
    s_lo = r->nslots - 1;
    s_hi = r->nslots;
  } else {
    kg_lo = kg_lo < r->hdr.kg_start ? r->hdr.kg_start : kg_lo;
    kg_hi = kg_hi > r->hdr.kg_end ? r->hdr.kg_end : kg_hi;
    if (kg_hi <= kg_lo)
      return KSNAP_ERR_OK;
    s_lo = (size_t)(kg_lo - r->hdr.kg_start);
    s_hi = (size_t)(kg_hi - r->hdr.kg_start);
  }
  lo = r->offsets[s_lo];
  hi = r->offsets[s_hi];
  if (lo < r->win_off || hi - r->win_off > r->win_len) {
    if (r->win_off == 0 && r->win_len == r->len)
      return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                             "snapshot file is truncated: %zu bytes", r->len);
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "snapshot bytes %" PRIu64 "..%" PRIu64
                           " are not in the window read",
                           lo, hi);
  }
  for (size_t s = s_lo; s < s_hi; s++) {
    if (ksnap__crc32(0, r->win + (r->offsets[s] - r->win_off),
                     r->offsets[s + 1] - r->offsets[s]) == r->crcs[s])
      continue;
    if (s == r->nslots - 1)
      return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                             "snapshot file checksum mismatch in the "
                             "operator state");
    return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                           "snapshot file checksum mismatch in key group %d",
                           r->hdr.kg_start + (int)s);
  }
  c.base = r->win;
  c.base_off = r->win_off;
  c.p = r->win + (lo - r->win_off);
  c.end = r->win + (hi - r->win_off);
  c.err = KSNAP_ERR_OK;
  for (size_t s = s_lo; c.p < c.end;) {
    uint64_t pos = c.base_off + (uint64_t)(c.p - c.base);
    int64_t count = get_long(&c, "block count");
    int64_t size = get_long(&c, "block size");
    const uint8_t *bend;
    int expect_kg;

    while (s + 1 < s_hi && pos >= r->offsets[s + 1])
      s++;
    expect_kg = s == r->nslots - 1 ? -1 : r->hdr.kg_start + (int)s;
    if (c.err)
      return cur_error(&c, error);
    if (count <= 0 || size < 0 || size > c.end - c.p || count > size)
      return fail(&c, KSNAP_ERR_CORRUPT, "block header"), cur_error(&c, error);
    bend = c.p + size;
    while (count--) {
      ksnap_state_entry_t e;
      cur_t ec = c;
      ec.end = bend;
      if (decode_entry(&ec, r, &e) || e.key_group != expect_kg) {
        fail(&ec, KSNAP_ERR_CORRUPT, "entry");
        return cur_error(&ec, error);
      }
      c.p = ec.p;
      if (cb(opaque, &e))
        return ksnap_error_set(error, KSNAP_ERR_INTERRUPTED,
                               "stopped by the callback");
    }
    if (c.p != bend || c.end - c.p < 16 || memcmp(c.p, r->sync, 16))
      return fail(&c, KSNAP_ERR_CORRUPT, "block end or sync marker"),
             cur_error(&c, error);
    c.p += 16;
  }
  return KSNAP_ERR_OK;
}

void ksnap__snap_reader_set_window(ksnap__snap_reader_t *r,
                                   const uint8_t *win, uint64_t off,
                                   size_t len) {
  r->win = win;
  r->win_off = off;
  r->win_len = len;
}

void ksnap__snap_reader_range(const ksnap__snap_reader_t *r, int kg_lo,
                              int kg_hi, uint64_t *lop, uint64_t *hip) {
  size_t s_lo, s_hi;

  if (kg_lo < 0) {
    s_lo = r->nslots - 1;
    s_hi = r->nslots;
  } else {
    kg_lo = kg_lo < r->hdr.kg_start ? r->hdr.kg_start : kg_lo;
    kg_lo = kg_lo > r->hdr.kg_end ? r->hdr.kg_end : kg_lo;
    kg_hi = kg_hi > r->hdr.kg_end ? r->hdr.kg_end : kg_hi;
    kg_hi = kg_hi < kg_lo ? kg_lo : kg_hi;
    s_lo = (size_t)(kg_lo - r->hdr.kg_start);
    s_hi = (size_t)(kg_hi - r->hdr.kg_start);
  }
  *lop = r->offsets[s_lo];
  *hip = r->offsets[s_hi];
}
