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

#include "base/util.h"

#define BLOCK_MAX (1u << 20)

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

/* Slicing-by-8 CRC-32 (IEEE); tables built once (pthread_once). */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  uint32_t (*t)[256] = crc_tab;

  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (int i = 0; i < 256; i++)
    for (int k = 1; k < 8; k++)
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
}

uint32_t ksnap__crc32(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = data;

  pthread_once(&crc_once, crc_init);
  crc = ~crc;
  for (; len >= 8; len -= 8, p += 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                         (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
                  (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
          crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
          crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
          crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
  }
  while (len--)
    crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

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

ksnap_err_t ksnap__snap_writer_begin(ksnap__snap_writer_t *w,
                                     ksnap_buf_t *out,
                                     const ksnap__snap_header_t *hdr,
                                     ksnap_error_t *error) {
  ksnap_buf_t t;
  char num[64];
  size_t isz;
  ksnap_err_t err = KSNAP_ERR_NOMEM;
  static uint64_t counter;
  uint64_t seed;

  memset(w, 0, sizeof(*w));
  ksnap_buf_init(&w->block);
  if (out->len) /* offsets are file offsets: the file must start at 0 */
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "snapshot output buffer must be empty");
  ksnap_buf_init(&t);
  w->out = out;
  w->kg_start = hdr->kg_start;
  w->nslots = hdr->kg_end - hdr->kg_start + 1;
  w->offsets = calloc((size_t)w->nslots + 1, sizeof(uint64_t));
  if (!w->offsets)
    goto done;
  seed = (uint64_t)ksnap__now_us() ^
         (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) << 40) ^
         (uint64_t)hdr->checkpoint_id * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 16; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    w->sync[i] = (uint8_t)(seed >> 56);
  }
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
  isz = index_size(w->nslots);
  if (buf_bytes(out, "ksnap.index", 11) || buf_long(out, (int64_t)isz) ||
      ksnap_buf_reserve(out, isz))
    goto done;
  w->index_pos = out->len;
  memset(out->data + out->len, 0, isz);
  out->len += isz;
  if (buf_long(out, 0) || ksnap_buf_append(out, w->sync, 16))
    goto done;
  w->header_len = out->len;
  w->offsets[0] = out->len;
  err = KSNAP_ERR_OK;
done:
  ksnap_buf_cleanup(&t);
  if (err)
    return ksnap_error_set(error, err, "cannot encode snapshot header: %s",
                           ksnap_err2str(err));
  return KSNAP_ERR_OK;
}

static ksnap_err_t flush_block(ksnap__snap_writer_t *w) {
  if (!w->block_count)
    return KSNAP_ERR_OK;
  if (buf_long(w->out, w->block_count) ||
      buf_long(w->out, (int64_t)w->block.len) ||
      ksnap_buf_append(w->out, w->block.data, w->block.len) ||
      ksnap_buf_append(w->out, w->sync, 16))
    return KSNAP_ERR_NOMEM;
  ksnap_buf_reset(&w->block);
  w->block_count = 0;
  return KSNAP_ERR_OK;
}

/* Moves to slot @p slot, closing the slots in between. */
static ksnap_err_t enter_slot(ksnap__snap_writer_t *w, int slot) {
  if (slot == w->cur_slot)
    return KSNAP_ERR_OK;
  if (flush_block(w))
    return KSNAP_ERR_NOMEM;
  while (w->cur_slot < slot)
    w->offsets[++w->cur_slot] = w->out->len;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__snap_writer_add(ksnap__snap_writer_t *w,
                                   const ksnap_state_entry_t *e,
                                   ksnap_error_t *error) {
  int slot = e->key_group < 0 ? w->nslots - 1 : e->key_group - w->kg_start;
  ksnap_buf_t *b = &w->block;
  uint8_t tmp[64];
  size_t n;

  if (slot < w->cur_slot || slot >= w->nslots ||
      (e->key_group >= 0 && slot == w->nslots - 1))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "key group %d out of order or range", e->key_group);
  if (enter_slot(w, slot))
    goto nomem;
  if (b->len > BLOCK_MAX && flush_block(w))
    goto nomem;
  n = put_long(tmp, e->state_index);
  n += put_long(tmp + n, e->key_group);
  n += put_long(tmp + n, e->tombstone ? 1 : 0);
  n += put_long(tmp + n, (int64_t)e->klen);
  if (ksnap_buf_append(b, tmp, n) || ksnap_buf_append(b, e->key, e->klen))
    goto nomem;
  n = put_long(tmp, e->has_user_key ? 1 : 0);
  if (e->has_user_key)
    n += put_long(tmp + n, (int64_t)e->uklen);
  if (ksnap_buf_append(b, tmp, n) ||
      (e->has_user_key && ksnap_buf_append(b, e->user_key, e->uklen)))
    goto nomem;
  n = put_long(tmp, (int64_t)e->vlen);
  if (ksnap_buf_append(b, tmp, n) || ksnap_buf_append(b, e->value, e->vlen))
    goto nomem;
  n = put_long(tmp, e->ts);
  if (ksnap_buf_append(b, tmp, n))
    goto nomem;
  w->block_count++;
  return KSNAP_ERR_OK;
nomem:
  return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                         "out of memory encoding a snapshot");
}

ksnap_err_t ksnap__snap_writer_finish(ksnap__snap_writer_t *w,
                                      ksnap_error_t *error) {
  uint8_t *idx, zero[4] = {0, 0, 0, 0};
  uint32_t crc;

  if (enter_slot(w, w->nslots - 1) || flush_block(w))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "out of memory encoding a snapshot");
  w->offsets[w->nslots] = w->out->len;
  idx = w->out->data + w->index_pos;
  le32(idx + 4, (uint32_t)w->nslots);
  for (int i = 0; i <= w->nslots; i++)
    le64(idx + 8 + (size_t)i * 8, w->offsets[i]);
  for (int i = 0; i < w->nslots; i++)
    le32(idx + 8 + ((size_t)w->nslots + 1) * 8 + (size_t)i * 4,
         ksnap__crc32(0, w->out->data + w->offsets[i],
                      w->offsets[i + 1] - w->offsets[i]));
  crc = ksnap__crc32(0, w->out->data, w->index_pos);
  crc = ksnap__crc32(crc, zero, 4);
  crc = ksnap__crc32(crc, idx + 4, w->header_len - w->index_pos - 4);
  le32(idx, crc);
  return KSNAP_ERR_OK;
}

void ksnap__snap_writer_cleanup(ksnap__snap_writer_t *w) {
  ksnap_buf_cleanup(&w->block);
  free(w->offsets);
  w->offsets = NULL;
}
