/* The snapshot file format (Avro object container, schema
 * plugin/schemas/state_v1.avsc): a writer that appends key-group blocks to
 * a ksnap_buf_t and a reader that validates a file's bytes and decodes
 * the key groups asked for. Bytes in, bytes out: no storage, no threads.
 * See state_snapshot.c for the layout. */
#ifndef KSNAP_STATE_SNAPSHOT_H
#define KSNAP_STATE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/buf.h"
#include "ksnap/error.h"
#include "base/checksum.h"
#include "ksnap/state.h"

#define KSNAP_STATE_FORMAT_VERSION 1
#define KSNAP__SNAP_MAX_STATES 1024
#define KSNAP__SNAP_MAX_MANIFEST 4096

/** A state's descriptor as stored in the header. */
typedef struct ksnap__snap_desc_s {
  char *name;
  ksnap_state_kind_t kind;
  int64_t ttl_ms;
} ksnap__snap_desc_t;

/** Everything in the header except the index. */
typedef struct ksnap__snap_header_s {
  int version;
  int max_parallelism;
  int kg_start, kg_end; /* the writer's key groups, end exclusive */
  int64_t checkpoint_id;
  int incremental;
  size_t nstates;
  ksnap__snap_desc_t *states;
  size_t nmanifest;
  char **manifest; /* oldest first, this file last */
} ksnap__snap_header_t;

/* Streams a file to a ksnap_state_out_t: the header is built first with
 * its index zeroed (its length is final), the body goes out block by
 * block (blocks of at most buffer_size / 2 bytes, 1 MiB at most, or one
 * larger entry), each slot's CRC computed on the way; finish fills the
 * index and hands the header over last. Memory: the header and one
 * block. */
typedef struct ksnap__snap_writer_s {
  const ksnap_state_out_t *out;
  ksnap_buf_t head;  /* the header; index zeroed until finish */
  ksnap_buf_t block; /* headroom for its header, the block's records */
  size_t buffer_size, block_max;
  long block_count;
  uint64_t pos;      /* file offset of the next byte written */
  size_t index_pos;  /* where ksnap.index's value starts in head */
  int kg_start, nslots, cur_slot;
  uint64_t *offsets; /* nslots + 1 */
  uint32_t *crcs;    /* nslots */
  uint32_t crc;      /* of cur_slot's bytes so far */
  uint8_t sync[16];
} ksnap__snap_writer_t;

/** Default of buffer_size (state.backend.write-buffer-size). */
#define KSNAP__SNAP_BUFFER_DEFAULT (2u << 20)

/** Builds the header and calls out->begin. @p buffer_size 0: default. */
ksnap_err_t ksnap__snap_writer_begin(ksnap__snap_writer_t *w,
                                     const ksnap_state_out_t *out,
                                     size_t buffer_size,
                                     const ksnap__snap_header_t *hdr,
                                     ksnap_error_t *error);

/** Appends one entry. Key groups must come in ascending order, operator
 * state (kg -1) last. */
ksnap_err_t ksnap__snap_writer_add(ksnap__snap_writer_t *w,
                                   const ksnap_state_entry_t *entry,
                                   ksnap_error_t *error);

/** Writes the rest, fills the index and its checksums, calls out->head. */
ksnap_err_t ksnap__snap_writer_finish(ksnap__snap_writer_t *w,
                                      ksnap_error_t *error);

/** Frees the writer's buffers (after finish or on error). */
void ksnap__snap_writer_cleanup(ksnap__snap_writer_t *w);

/** A ksnap_state_out_t that appends the file to @p buf (which must be
 * empty); @p out->opaque is @p buf. */
void ksnap__snap_out_buf(ksnap_state_out_t *out, ksnap_buf_t *buf);

typedef struct ksnap__snap_reader_s {
  const uint8_t *data;
  size_t len;
  ksnap__snap_header_t hdr;
  uint8_t sync[16];
  size_t nslots;      /* key groups of the range + 1 (operator state) */
  uint64_t *offsets;  /* nslots + 1 */
  uint32_t *crcs;     /* nslots */
  const uint8_t *win; /* bytes [win_off, win_off + win_len) of the file */
  uint64_t win_off;
  size_t win_len;
} ksnap__snap_reader_t;

/** Parses and checks the header and the index of a file's bytes.
 * @p header_only: @p data may be just a prefix holding the header. */
ksnap_err_t ksnap__snap_reader_open(ksnap__snap_reader_t *r,
                                    const uint8_t *data, size_t len,
                                    int header_only, ksnap_error_t *error);

/**
 * Decodes the entries of key groups [@p kg_lo, @p kg_hi) (clamped to the
 * file's range; kg_lo = kg_hi = -1 selects operator state), checking the
 * slots' checksums first. @p cb returning non-zero stops with
 * KSNAP_ERR_INTERRUPTED.
 */
ksnap_err_t ksnap__snap_reader_read(ksnap__snap_reader_t *r, int kg_lo,
                                    int kg_hi, ksnap_state_entry_cb_t cb,
                                    void *opaque, ksnap_error_t *error);

/**
 * Decodes from @p win, the file's bytes [@p off, @p off + @p len) (a
 * ranged read), instead of the bytes given to open (the default window).
 */
void ksnap__snap_reader_set_window(ksnap__snap_reader_t *r,
                                   const uint8_t *win, uint64_t off,
                                   size_t len);

/** The file bytes [*lop, *hip) holding key groups [kg_lo, kg_hi) (clamped
 * to the file's range), or the operator state for kg_lo = -1. */
void ksnap__snap_reader_range(const ksnap__snap_reader_t *r, int kg_lo,
                              int kg_hi, uint64_t *lop, uint64_t *hip);

void ksnap__snap_reader_cleanup(ksnap__snap_reader_t *r);

void ksnap__snap_header_cleanup(ksnap__snap_header_t *hdr);

/** The entry schema (state_v1.avsc) as embedded in every file. */
extern const char ksnap__state_schema_v1[];

static inline uint32_t ksnap__rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint64_t ksnap__rd64(const uint8_t *p) {
  return (uint64_t)ksnap__rd32(p) | (uint64_t)ksnap__rd32(p + 4) << 32;
}


#endif /* KSNAP_STATE_SNAPSHOT_H */
