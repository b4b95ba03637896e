/*
 * state_snapshot.c: the snapshot file writer and reader.
 *
 * A snapshot file is a standard Avro object container file (codec null)
 * whose records follow plugin/schemas/state_v1.avsc (embedded below), so
 * any Avro reader can read it. ksnap adds header metadata and fixes the
 * block order so one file serves every parallelism:
 *
 *   "Obj" 0x01
 *   metadata map: avro.schema, avro.codec=null, ksnap.version, ksnap.range,
 *                 ksnap.checkpoint, ksnap.incremental, ksnap.states,
 *                 ksnap.manifest, ksnap.index (always last)
 *   sync marker (16 bytes)
 *   blocks of key group kg_start, then kg_start+1, ..., then the
 *   operator-state block(s); each block (count, size, records, sync) holds
 *   entries of ONE key group and at most ~1 MiB.
 *
 * ksnap.index (binary, little endian), nslots = key groups + 1:
 *   u32 header CRC-32 (over the header bytes with these 4 bytes zero)
 *   u32 nslots
 *   u64 offset[nslots + 1]   slot i is [offset[i], offset[i+1]),
 *                            offset[nslots] = file length
 *   u32 crc[nslots]          CRC-32 of each slot's bytes
 * so a task restoring key groups [a, b) reads (or range-GETs) only
 * [offset[a-start], offset[b-start]) and checks exactly those bytes.
 *
 * Why not avro-c's container API: avro_file_writer_* writes through a
 * FILE* and exposes no block offsets (we need them for the index) and its
 * generic-value path is much slower than the direct encoding of seven
 * fields. The encoding here follows the Avro 1.11 spec (zig-zag varints,
 * length-prefixed bytes, union index); tests read our files back with
 * avro-c's avro_file_reader_fp to prove conformance.
 *
 * The reader never trusts a length: every read is bounds-checked and a
 * bad file yields CORRUPT, TRUNCATED, CHECKSUM or SCHEMA_VERSION.
 * Threading: none (a writer or reader belongs to its caller's thread).
 */
#include "state_snapshot.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "base/util.h"

#define BLOCK_MAX (1u << 20)
/* A block is encoded after HEADROOM bytes, where its header (count and
 * size varints) goes once known, so it leaves in one piece. */
#define HEADROOM 20

const char ksnap__state_schema_v1[] =
    "{\"type\":\"record\",\"name\":\"Entry\",\"namespace\":\"ksnap.state.v1\","
    "\"fields\":["
    "{\"name\":\"state\",\"type\":\"int\"},"
    "{\"name\":\"keyGroup\",\"type\":\"int\"},"
    "{\"name\":\"op\",\"type\":{\"type\":\"enum\",\"name\":\"Op\","
    "\"symbols\":[\"PUT\",\"DELETE\"]}},"
    "{\"name\":\"key\",\"type\":\"bytes\"},"
    "{\"name\":\"userKey\",\"type\":[\"null\",\"bytes\"]},"
    "{\"name\":\"value\",\"type\":\"bytes\"},"
    "{\"name\":\"timestamp\",\"type\":\"long\"}]}";

static const char *const kind_names[] = {"value", "list", "map", "split",
                                         "union"};

/* ---- encoding ---------------------------------------------------- */

static size_t put_long(uint8_t *p, int64_t v) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  size_t n = 0;

  while (z & ~0x7full) {
    p[n++] = (uint8_t)((z & 0x7f) | 0x80);
    z >>= 7;
  }
  p[n++] = (uint8_t)z;
  return n;
}

static ksnap_err_t buf_long(ksnap_buf_t *b, int64_t v) {
  uint8_t tmp[10];
  return ksnap_buf_append(b, tmp, put_long(tmp, v));
}

static ksnap_err_t buf_bytes(ksnap_buf_t *b, const void *p, size_t len) {
  if (buf_long(b, (int64_t)len))
    return KSNAP_ERR_NOMEM;
  return ksnap_buf_append(b, p, len);
}

static void le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static ksnap_err_t meta(ksnap_buf_t *b, const char *key, const void *value,
                        size_t len) {
  if (buf_bytes(b, key, strlen(key)))
    return KSNAP_ERR_NOMEM;
  return buf_bytes(b, value, len);
}

static size_t index_size(int nslots) {
  return 8 + ((size_t)nslots + 1) * 8 + (size_t)nslots * 4;
}

static ksnap_err_t header_text(ksnap_buf_t *t, const ksnap__snap_header_t *hdr,
                               int what) {
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_buf_reset(t);
  if (what == 0) {
    for (size_t i = 0; i < hdr->nstates && !err; i++)
      err = ksnap_buf_appendf(t, "%s %" PRId64 " %s\n",
                              kind_names[hdr->states[i].kind],
                              hdr->states[i].ttl_ms, hdr->states[i].name);
  } else {
    for (size_t i = 0; i < hdr->nmanifest && !err; i++)
      err = ksnap_buf_appendf(t, "%s\n", hdr->manifest[i]);
  }
  return err;
}

/* Encodes the header into @p out with the index zeroed. */
static ksnap_err_t encode_header(ksnap__snap_writer_t *w, ksnap_buf_t *out,
                                 const ksnap__snap_header_t *hdr) {
  ksnap_buf_t t;
  char num[64];
  size_t isz = index_size(w->nslots);
  ksnap_err_t err = KSNAP_ERR_NOMEM;

  ksnap_buf_init(&t);
  if (ksnap_buf_append(out, "Obj\x01", 4) || buf_long(out, 9) ||
      meta(out, "avro.schema", ksnap__state_schema_v1,
           strlen(ksnap__state_schema_v1)) ||
      meta(out, "avro.codec", "null", 4))
    goto done;
  snprintf(num, sizeof(num), "%d", KSNAP_STATE_FORMAT_VERSION);
  if (meta(out, "ksnap.version", num, strlen(num)))
    goto done;
  snprintf(num, sizeof(num), "%d %d %d", hdr->max_parallelism,
           hdr->kg_start, hdr->kg_end);
  if (meta(out, "ksnap.range", num, strlen(num)))
    goto done;
  snprintf(num, sizeof(num), "%" PRId64, hdr->checkpoint_id);
  if (meta(out, "ksnap.checkpoint", num, strlen(num)) ||
      meta(out, "ksnap.incremental", hdr->incremental ? "1" : "0", 1))
    goto done;
  if (header_text(&t, hdr, 0) || meta(out, "ksnap.states", t.data, t.len) ||
      header_text(&t, hdr, 1) || meta(out, "ksnap.manifest", t.data, t.len))
    goto done;
  if (buf_bytes(out, "ksnap.index", 11) || buf_long(out, (int64_t)isz) ||
      ksnap_buf_reserve(out, isz))
    goto done;
  w->index_pos = out->len;
  memset(out->data + out->len, 0, isz);
  out->len += isz;
  if (buf_long(out, 0) || ksnap_buf_append(out, w->sync, 16))
    goto done;
  err = KSNAP_ERR_OK;
done:
  ksnap_buf_cleanup(&t);
  return err;
}

static void make_sync(uint8_t sync[16], int64_t checkpoint_id) {
  static uint64_t counter;
  uint64_t seed = (uint64_t)ksnap__now_us() ^
                  (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 40) ^
                  (uint64_t)checkpoint_id * 0x9e3779b97f4a7c15ull;

  for (int i = 0; i < 16; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    sync[i] = (uint8_t)(seed >> 56);
  }
}

ksnap_err_t ksnap__snap_writer_begin(ksnap__snap_writer_t *w,
                                     const ksnap_state_out_t *out,
                                     size_t buffer_size,
                                     const ksnap__snap_header_t *hdr,
                                     ksnap_error_t *error) {
  memset(w, 0, sizeof(*w));
  ksnap_buf_init(&w->head);
  ksnap_buf_init(&w->block);
  w->out = out;
  w->buffer_size = buffer_size ? buffer_size : KSNAP__SNAP_BUFFER_DEFAULT;
  /* blocks of at most half a buffer (writes of whole blocks) */
  w->block_max = KSNAP_MAX(KSNAP_MIN((size_t)BLOCK_MAX, w->buffer_size / 2),
                           (size_t)1);
  w->kg_start = hdr->kg_start;
  w->nslots = hdr->kg_end - hdr->kg_start + 1;
  w->offsets = calloc((size_t)w->nslots + 1, sizeof(uint64_t));
  w->crcs = calloc((size_t)w->nslots, sizeof(uint32_t));
  make_sync(w->sync, hdr->checkpoint_id);
  if (!w->offsets || !w->crcs || ksnap_buf_reserve(&w->block, HEADROOM) ||
      encode_header(w, &w->head, hdr))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "cannot encode snapshot header: out of memory");
  w->block.len = HEADROOM;
  w->pos = w->head.len;
  w->offsets[0] = w->pos;
  return out->begin(out->opaque, w->head.len, error);
}

/* Hands body bytes to the output; the current slot's CRC follows. */
static ksnap_err_t emit(ksnap__snap_writer_t *w, const void *p, size_t len,
                        ksnap_error_t *error) {
  w->crc = ksnap__crc32(w->crc, p, len);
  w->pos += len;
  return w->out->write(w->out->opaque, p, len, error);
}

static ksnap_err_t flush_block(ksnap__snap_writer_t *w, ksnap_error_t *error) {
  uint8_t tmp[HEADROOM], *start;
  size_t n, size = w->block.len - HEADROOM;
  ksnap_err_t err;

  if (!w->block_count)
    return KSNAP_ERR_OK;
  n = put_long(tmp, w->block_count);
  n += put_long(tmp + n, (int64_t)size);
  start = w->block.data + HEADROOM - n;
  memcpy(start, tmp, n);
  if (ksnap_buf_append(&w->block, w->sync, 16))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "out of memory encoding a snapshot");
  err = emit(w, start, n + size + 16, error);
  w->block.len = HEADROOM;
  w->block_count = 0;
  return err;
}

/* Moves to slot @p slot, closing the slots in between (empty: CRC 0). */
static ksnap_err_t enter_slot(ksnap__snap_writer_t *w, int slot,
                              ksnap_error_t *error) {
  ksnap_err_t err;

  if (slot == w->cur_slot)
    return KSNAP_ERR_OK;
  if ((err = flush_block(w, error)))
    return err;
  w->crcs[w->cur_slot] = w->crc;
  w->crc = 0;
  while (w->cur_slot < slot)
    w->offsets[++w->cur_slot] = w->pos;
  return KSNAP_ERR_OK;
}

/* The Avro record of @p e at @p p, which has room for it. */
static size_t encode_entry(uint8_t *p, const ksnap_state_entry_t *e) {
  size_t n = put_long(p, e->state_index);

  n += put_long(p + n, e->key_group);
  n += put_long(p + n, e->tombstone ? 1 : 0);
  n += put_long(p + n, (int64_t)e->klen);
  memcpy(p + n, e->key, e->klen);
  n += e->klen;
  n += put_long(p + n, e->has_user_key ? 1 : 0);
  if (e->has_user_key) {
    n += put_long(p + n, (int64_t)e->uklen);
    memcpy(p + n, e->user_key, e->uklen);
    n += e->uklen;
  }
  n += put_long(p + n, (int64_t)e->vlen);
  if (e->vlen)
    memcpy(p + n, e->value, e->vlen);
  n += e->vlen;
  return n + put_long(p + n, e->ts);
}

ksnap_err_t ksnap__snap_writer_add(ksnap__snap_writer_t *w,
                                   const ksnap_state_entry_t *e,
                                   ksnap_error_t *error) {
  int slot = e->key_group < 0 ? w->nslots - 1 : e->key_group - w->kg_start;
  size_t bound = 8 * 10 + e->klen + e->uklen + e->vlen;
  ksnap_err_t err;

  if (slot < w->cur_slot || slot >= w->nslots ||
      (e->key_group >= 0 && slot == w->nslots - 1))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "key group %d out of order or range", e->key_group);
  if ((err = enter_slot(w, slot, error)))
    return err;
  if (w->block.len - HEADROOM >= w->block_max &&
      (err = flush_block(w, error)))
    return err;
  if (ksnap_buf_reserve(&w->block, bound))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "out of memory encoding a snapshot");
  w->block.len += encode_entry(w->block.data + w->block.len, e);
  w->block_count++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__snap_writer_finish(ksnap__snap_writer_t *w,
                                      ksnap_error_t *error) {
  uint8_t *idx, zero[4] = {0, 0, 0, 0};
  size_t ns = (size_t)w->nslots;
  uint32_t crc;
  ksnap_err_t err;

  if ((err = enter_slot(w, w->nslots - 1, error)) ||
      (err = flush_block(w, error)))
    return err;
  w->crcs[w->cur_slot] = w->crc;
  w->offsets[w->nslots] = w->pos;
  idx = w->head.data + w->index_pos;
  le32(idx + 4, (uint32_t)w->nslots);
  for (size_t i = 0; i <= ns; i++)
    le64(idx + 8 + i * 8, w->offsets[i]);
  for (size_t i = 0; i < ns; i++)
    le32(idx + 8 + (ns + 1) * 8 + i * 4, w->crcs[i]);
  crc = ksnap__crc32(0, w->head.data, w->index_pos);
  crc = ksnap__crc32(crc, zero, 4);
  crc = ksnap__crc32(crc, idx + 4, w->head.len - w->index_pos - 4);
  le32(idx, crc);
  return w->out->head(w->out->opaque, w->head.data, w->head.len, error);
}

void ksnap__snap_writer_cleanup(ksnap__snap_writer_t *w) {
  ksnap_buf_cleanup(&w->head);
  ksnap_buf_cleanup(&w->block);
  free(w->offsets);
  free(w->crcs);
  w->offsets = NULL;
  w->crcs = NULL;
}

/* ---- the whole file into a buffer ---- */

static ksnap_err_t buf_begin(void *opaque, size_t head_len,
                             ksnap_error_t *error) {
  ksnap_buf_t *b = opaque;

  if (b->len) /* offsets are file offsets: the file must start at 0 */
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "snapshot output buffer must be empty");
  if (ksnap_buf_reserve(b, head_len))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  memset(b->data, 0, head_len);
  b->len = head_len;
  return KSNAP_ERR_OK;
}

static ksnap_err_t buf_write(void *opaque, const void *data, size_t len,
                             ksnap_error_t *error) {
  if (ksnap_buf_append(opaque, data, len))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  return KSNAP_ERR_OK;
}

static ksnap_err_t buf_head(void *opaque, const void *data, size_t len,
                            ksnap_error_t *error) {
  (void)error;
  memcpy(((ksnap_buf_t *)opaque)->data, data, len);
  return KSNAP_ERR_OK;
}

void ksnap__snap_out_buf(ksnap_state_out_t *out, ksnap_buf_t *buf) {
  out->begin = buf_begin;
  out->write = buf_write;
  out->head = buf_head;
  out->opaque = buf;
}
