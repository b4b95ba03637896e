/* Shared machinery of the record codecs (internal; see ksnap/records.h).
 *
 * Encoding: ksnap__codec_value_new() gives an empty generic Avro value of
 * the record type's schema, the codec_<x>.c file fills it with the
 * ksnap__av_set_* helpers, ksnap__codec_write() frames it.
 * Decoding: ksnap__codec_read() checks the envelope, validates the whole
 * Avro body against the schema (ksnap__codec_walk: lengths, indices,
 * booleans, trailing bytes) and only then lets avro-c read it, because
 * avro-c 1.11 allocates whatever a string length prefix claims.
 *
 * Threading: reentrant. Schemas and value classes are built once
 * (pthread_once) and never freed; generic values belong to the caller.
 * avro-c keeps its last error message in a process-wide buffer
 * (avro_strerror, not thread-safe), so ksnap's own helpers report through
 * ksnap__codec_fail() (thread-local) instead, and avro_strerror() is only
 * quoted for failures inside avro-c itself. */
#ifndef KSNAP_CODEC_H
#define KSNAP_CODEC_H

#include <avro.h>

#include "ksnap/records.h"

/* Runs an avro-c call returning 0 or an errno into `rc` (an int in
 * scope); jumps to `fail` on an error. */
#define KSNAP__AV(expr)     \
  do {                      \
    if ((rc = (expr)) != 0) \
      goto fail;            \
  } while (0)

/** Creates an empty value of @p type's current schema (decref it). */
ksnap_err_t ksnap__codec_value_new(ksnap_record_type_t type,
                                   avro_value_t *value, ksnap_error_t *error);

/** Writes the envelope and @p value (also sets schema_version) to @p out. */
ksnap_err_t ksnap__codec_write(ksnap_record_type_t type, avro_value_t *value,
                               ksnap_buf_t *out, ksnap_error_t *error);

/**
 * Checks and reads @p buf into a new value (avro_value_decref it on OK).
 * @p label names the record in errors until the body's union branch is
 * known ("ACK record truncated at byte 37 of 52").
 */
ksnap_err_t ksnap__codec_read(ksnap_record_type_t type, const void *buf,
                              size_t len, avro_value_t *value,
                              ksnap_error_t *error);

/**
 * Records why a codec helper failed, in a thread-local message that the
 * next ksnap__codec_encode_error()/decode_error() on this thread reports
 * (and clears). @returns @p rc (an errno). These three live in
 * codec_error.c, below every other file of the codec.
 */
int ksnap__codec_fail(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** The error for avro-c failure @p rc while encoding a @p what record:
 * KSNAP_ERR_NOMEM for ENOMEM, else KSNAP_ERR_INVALID_ARG. */
ksnap_err_t ksnap__codec_encode_error(ksnap_error_t *error, int rc,
                                      const char *what);

/** The same while decoding: KSNAP_ERR_NOMEM or KSNAP_ERR_CORRUPT. */
ksnap_err_t ksnap__codec_decode_error(ksnap_error_t *error, int rc,
                                      const char *what);

/*
 * A record whose Avro body is the union field "body", with the record's
 * kind as the branch index (ACK_TOPIC, CONTROL): one encode and one decode
 * around the branch (codec_union.c), typed by these callbacks.
 */
typedef struct ksnap__codec_union_s {
  ksnap_record_type_t type;
  const char *label; /* names the record in errors until the branch is known */
  /* Names branch @p disc in errors ("ACK"; "UNKNOWN" when out of range). */
  const char *(*branch_name)(int disc);
  /* Fills @p body, branch @p rec's kind, from @p rec; 0 or an errno. */
  int (*set_body)(avro_value_t *body, const void *rec);
  /* Sets @p rec's kind to @p disc and reads @p body into it; 0 or an errno
   * (with ksnap__codec_fail() for an unknown branch). */
  int (*get_body)(const avro_value_t *body, int disc, void *rec);
  /* Frees what get_body() filled in, and zeroes @p rec. */
  void (*cleanup)(void *rec);
} ksnap__codec_union_t;

/** Encodes @p rec, whose kind (the branch) is @p disc, into @p out. */
ksnap_err_t ksnap__codec_union_encode(const ksnap__codec_union_t *u, int disc,
                                      const void *rec, ksnap_buf_t *out,
                                      ksnap_error_t *error);

/** Decodes @p buf into @p rec (zeroed by the caller); on an error @p rec is
 *  cleaned up. */
ksnap_err_t ksnap__codec_union_decode(const ksnap__codec_union_t *u,
                                      const void *buf, size_t len, void *rec,
                                      ksnap_error_t *error);

/**
 * Validates the Avro binary @p buf[start..len) against @p schema.
 * Offsets in messages count from @p buf (the envelope included).
 */
ksnap_err_t ksnap__codec_walk(avro_schema_t schema, const uint8_t *buf,
                              size_t len, size_t start, const char *label,
                              ksnap_error_t *error);

/* Field setters on a record value; 0 or an errno (avro_strerror() set). */
/** Whether @p rec has @p field: a record of an older schema version may
 *  lack a field added since (its decoder then fills the default). */
bool ksnap__av_has(const avro_value_t *rec, const char *field);
int ksnap__av_set_long(avro_value_t *rec, const char *field, int64_t v);
int ksnap__av_set_int(avro_value_t *rec, const char *field, int32_t v);
int ksnap__av_set_bool(avro_value_t *rec, const char *field, bool v);
int ksnap__av_set_enum(avro_value_t *rec, const char *field, int v, int cnt);
int ksnap__av_set_string(avro_value_t *rec, const char *field, const char *v);
/** ["null","long"]: null when @p v == KSNAP_CHECKPOINT_NONE. */
int ksnap__av_set_opt_id(avro_value_t *rec, const char *field, int64_t v);
/** ["null","string"]: null when @p v is NULL. */
int ksnap__av_set_opt_string(avro_value_t *rec, const char *field,
                             const char *v);
/** Selects union branch @p disc of field @p field; @p branch gets it. */
int ksnap__av_branch(avro_value_t *rec, const char *field, int disc,
                     avro_value_t *branch);
int ksnap__av_set_task(avro_value_t *rec, const char *field,
                       const ksnap_task_id_t *task);
int ksnap__av_set_options(avro_value_t *rec, const char *field,
                          const ksnap_ckpt_options_t *options);
/* Array fields: one generic loop per direction, typed by callbacks that
 * fill one item. On a get failure *itemsp keeps what was read (the rest
 * zeroed, *cntp set) for the caller's cleanup. */
typedef int (*ksnap__av_set_item_fn)(avro_value_t *v, const void *item);
typedef int (*ksnap__av_get_item_fn)(const avro_value_t *v, void *item);
int ksnap__av_set_array(avro_value_t *rec, const char *field,
                        const void *items, size_t cnt, size_t item_size,
                        ksnap__av_set_item_fn set);
int ksnap__av_get_array(const avro_value_t *rec, const char *field,
                        void **itemsp, size_t *cntp, size_t item_size,
                        ksnap__av_get_item_fn get);
/* Snapshot helpers: @p field NULL means @p rec is the TaskSnapshot. */
int ksnap__av_set_snapshot(avro_value_t *rec, const char *field,
                           const ksnap_task_snapshot_t *snapshot);

/* Field getters; the input was validated, so errors mean NOMEM or a bug. */
int ksnap__av_get_long(const avro_value_t *rec, const char *field,
                       int64_t *v);
int ksnap__av_get_int(const avro_value_t *rec, const char *field,
                      int32_t *v);
int ksnap__av_get_bool(const avro_value_t *rec, const char *field, bool *v);
int ksnap__av_get_enum(const avro_value_t *rec, const char *field, int *v);
/** Copies a string field into *@p v (malloc). */
int ksnap__av_get_string(const avro_value_t *rec, const char *field,
                         char **v);
int ksnap__av_get_opt_id(const avro_value_t *rec, const char *field,
                         int64_t *v);
int ksnap__av_get_opt_string(const avro_value_t *rec, const char *field,
                             char **v);
/** Gets the union field @p field: its discriminant and current branch. */
int ksnap__av_get_branch(const avro_value_t *rec, const char *field,
                         int *disc, avro_value_t *branch);
int ksnap__av_get_task(const avro_value_t *rec, const char *field,
                       ksnap_task_id_t *task);
int ksnap__av_get_options(const avro_value_t *rec, const char *field,
                          ksnap_ckpt_options_t *options);
int ksnap__av_get_snapshot(const avro_value_t *rec, const char *field,
                           ksnap_task_snapshot_t *snapshot);

/** @returns 1 if @p s[0..len) is valid UTF-8 (no overlongs, surrogates). */
int ksnap__utf8_valid(const uint8_t *s, size_t len);

/** @returns 1 if @p checksum is "crc32c:..." or "sha256:..." (non-empty). */
int ksnap__checksum_valid(const char *checksum);

#endif /* KSNAP_CODEC_H */
