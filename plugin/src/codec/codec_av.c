/* Field setters and getters on generic Avro record values (see codec.h).
 * Each returns 0 or an errno; the message is in ksnap__codec_fail()'s
 * buffer or, for a failure inside avro-c, in avro_strerror(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

static int field(const avro_value_t *rec, const char *name,
                 avro_value_t *out) {
  if (avro_value_get_by_name(rec, name, out, NULL))
    return ksnap__codec_fail(EINVAL, "no field %s", name);
  return 0;
}

bool ksnap__av_has(const avro_value_t *rec, const char *name) {
  avro_value_t f;
  return avro_value_get_by_name(rec, name, &f, NULL) == 0;
}

int ksnap__av_set_long(avro_value_t *rec, const char *name, int64_t v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_set_long(&f, v) ? EINVAL : 0;
}

int ksnap__av_set_int(avro_value_t *rec, const char *name, int32_t v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_set_int(&f, v) ? EINVAL : 0;
}

int ksnap__av_set_bool(avro_value_t *rec, const char *name, bool v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_set_boolean(&f, v) ? EINVAL : 0;
}

int ksnap__av_set_enum(avro_value_t *rec, const char *name, int v, int cnt) {
  avro_value_t f;

  if (v < 0 || v >= cnt)
    return ksnap__codec_fail(EINVAL, "%s: enum value %d out of range 0..%d",
                             name, v, cnt - 1);
  return field(rec, name, &f) || avro_value_set_enum(&f, v) ? EINVAL : 0;
}

/* Strings go out as Avro strings: UTF-8, no NUL (C strings have none). */
static int check_string(const char *name, const char *v) {
  if (!v)
    return ksnap__codec_fail(EINVAL, "%s is NULL", name);
  if (!ksnap__utf8_valid((const uint8_t *)v, strlen(v)))
    return ksnap__codec_fail(EINVAL, "%s is not valid UTF-8", name);
  return 0;
}

int ksnap__av_set_string(avro_value_t *rec, const char *name, const char *v) {
  avro_value_t f;
  int rc;

  if ((rc = check_string(name, v)))
    return rc;
  return field(rec, name, &f) || avro_value_set_string(&f, v) ? EINVAL : 0;
}

int ksnap__av_branch(avro_value_t *rec, const char *name, int disc,
                     avro_value_t *branch) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_set_branch(&f, disc, branch)
             ? EINVAL : 0;
}

int ksnap__av_set_opt_id(avro_value_t *rec, const char *name, int64_t v) {
  avro_value_t branch;

  if (v < 0 && v != KSNAP_CHECKPOINT_NONE)
    return ksnap__codec_fail(EINVAL, "%s: negative id other than "
                             "KSNAP_CHECKPOINT_NONE", name);
  if (v == KSNAP_CHECKPOINT_NONE)
    return ksnap__av_branch(rec, name, 0, &branch) ||
           avro_value_set_null(&branch) ? EINVAL : 0;
  return ksnap__av_branch(rec, name, 1, &branch) ||
         avro_value_set_long(&branch, v) ? EINVAL : 0;
}

int ksnap__av_set_opt_string(avro_value_t *rec, const char *name,
                             const char *v) {
  avro_value_t branch;
  int rc;

  if (!v)
    return ksnap__av_branch(rec, name, 0, &branch) ||
           avro_value_set_null(&branch) ? EINVAL : 0;
  if ((rc = check_string(name, v)))
    return rc;
  return ksnap__av_branch(rec, name, 1, &branch) ||
         avro_value_set_string(&branch, v) ? EINVAL : 0;
}

int ksnap__av_get_long(const avro_value_t *rec, const char *name,
                       int64_t *v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_get_long(&f, v) ? EINVAL : 0;
}

int ksnap__av_get_int(const avro_value_t *rec, const char *name, int32_t *v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_get_int(&f, v) ? EINVAL : 0;
}

int ksnap__av_get_bool(const avro_value_t *rec, const char *name, bool *v) {
  avro_value_t f;
  int b = 0;

  if (field(rec, name, &f) || avro_value_get_boolean(&f, &b))
    return EINVAL;
  *v = b != 0;
  return 0;
}

int ksnap__av_get_enum(const avro_value_t *rec, const char *name, int *v) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_get_enum(&f, v) ? EINVAL : 0;
}

static int dup_string(const avro_value_t *v, char **out) {
  const char *s = NULL;
  size_t size = 0;

  if (avro_value_get_string(v, &s, &size))
    return EINVAL;
  /* size counts the NUL; the walker refused NULs inside strings. */
  *out = malloc(size ? size : 1);
  if (!*out)
    return ksnap__codec_fail(ENOMEM, "cannot allocate a string");
  if (size)
    memcpy(*out, s, size);
  (*out)[size ? size - 1 : 0] = '\0';
  return 0;
}

int ksnap__av_get_string(const avro_value_t *rec, const char *name,
                         char **v) {
  avro_value_t f;

  *v = NULL;
  return field(rec, name, &f) ? EINVAL : dup_string(&f, v);
}

int ksnap__av_get_branch(const avro_value_t *rec, const char *name, int *disc,
                         avro_value_t *branch) {
  avro_value_t f;
  return field(rec, name, &f) || avro_value_get_discriminant(&f, disc) ||
                 avro_value_get_current_branch(&f, branch)
             ? EINVAL : 0;
}

int ksnap__av_get_opt_id(const avro_value_t *rec, const char *name,
                         int64_t *v) {
  avro_value_t branch;
  int disc;

  if (ksnap__av_get_branch(rec, name, &disc, &branch))
    return EINVAL;
  if (disc == 0) {
    *v = KSNAP_CHECKPOINT_NONE;
    return 0;
  }
  if (avro_value_get_long(&branch, v))
    return EINVAL;
  if (*v < 0)
    return ksnap__codec_fail(ERANGE, "%s: negative id %lld", name,
                             (long long)*v);
  return 0;
}

int ksnap__av_get_opt_string(const avro_value_t *rec, const char *name,
                             char **v) {
  avro_value_t branch;
  int disc;

  *v = NULL;
  if (ksnap__av_get_branch(rec, name, &disc, &branch))
    return EINVAL;
  return disc == 0 ? 0 : dup_string(&branch, v);
}
