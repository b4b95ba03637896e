/* Validates Avro binary against a schema before avro-c reads it.
 *
 * avro-c 1.11.1 trusts its input more than ksnap can: a string or bytes
 * length prefix is malloc'd before the reader notices the buffer is too
 * short (a corrupt 2^60 is a giant allocation, an ASan abort), booleans
 * take any byte, enum indices are not range-checked. This walker visits
 * the encoding exactly as avro-c's value reader will, but checks every
 * length against the bytes that remain and every index against the
 * schema, allocating nothing. Strings must be UTF-8 without NUL bytes.
 * Whatever it accepts, avro-c reads in bounds.
 *
 * Threading: reentrant; the walker lives on the caller's stack. */
#include <inttypes.h>
#include <string.h>

#include "codec.h"

/* Our schemas nest a few levels; a deeper walk means a recursive schema. */
#define WALK_MAX_DEPTH 32

typedef struct walker_s {
  const uint8_t *buf;
  size_t len;
  size_t pos;
  const char *label; /* record name for messages */
  char branch[48];   /* "ACK" once the body union branch is known */
  ksnap_error_t *error;
} walker_t;

static ksnap_err_t truncated(walker_t *w, size_t at) {
  return ksnap_error_set(w->error, KSNAP_ERR_TRUNCATED,
                         "%s record truncated at byte %zu of %zu", w->label,
                         at, w->len);
}

static ksnap_err_t corrupt(walker_t *w, size_t at, const char *what) {
  return ksnap_error_set(w->error, KSNAP_ERR_CORRUPT,
                         "%s record corrupt at byte %zu of %zu: %s", w->label,
                         at, w->len, what);
}

/* Zig-zag varint of at most 10 bytes, as avro-c's read_long. */
static ksnap_err_t read_long(walker_t *w, int64_t *v) {
  size_t start = w->pos;
  uint64_t acc = 0;

  for (int i = 0; i < 10; i++) {
    uint8_t b;

    if (w->pos >= w->len)
      return truncated(w, start);
    b = w->buf[w->pos++];
    if (i == 9 && b > 1)
      return corrupt(w, start, "varint overflows 64 bits");
    acc |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = (int64_t)(acc >> 1) ^ -(int64_t)(acc & 1);
      return KSNAP_ERR_OK;
    }
  }
  return corrupt(w, start, "varint longer than 10 bytes");
}

static ksnap_err_t read_int(walker_t *w, int64_t *v) {
  size_t start = w->pos;
  ksnap_err_t err = read_long(w, v);

  if (!err && (*v < INT32_MIN || *v > INT32_MAX))
    return corrupt(w, start, "int out of range");
  return err;
}

int ksnap__utf8_valid(const uint8_t *s, size_t len) {
  size_t i = 0;

  while (i < len) {
    uint8_t c = s[i];
    uint32_t cp;
    size_t n;

    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf)
      n = 1, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3, cp = c & 0x07;
    else
      return 0; /* continuation byte, overlong lead, or > U+10FFFF */
    if (n > len - i - 1)
      return 0;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += n + 1;
  }
  return 1;
}

/* A length prefix followed by that many bytes (string or bytes). */
static ksnap_err_t walk_bytes(walker_t *w, int is_string) {
  size_t start = w->pos;
  ksnap_err_t err;
  int64_t n = 0;

  if ((err = read_long(w, &n)))
    return err;
  if (n < 0)
    return corrupt(w, start, "negative length");
  if ((uint64_t)n > w->len - w->pos)
    return truncated(w, start);
  if (is_string && memchr(w->buf + w->pos, '\0', (size_t)n))
    return corrupt(w, start, "NUL byte inside a string");
  if (is_string && !ksnap__utf8_valid(w->buf + w->pos, (size_t)n))
    return corrupt(w, start, "string is not valid UTF-8");
  w->pos += (size_t)n;
  return KSNAP_ERR_OK;
}

/* The fewest bytes a value of @p schema can take (0 only for null). */
static size_t min_size(avro_schema_t schema, int depth) {
  size_t sum = 0;

  if (depth > WALK_MAX_DEPTH)
    return 1;
  switch (avro_typeof(schema)) {
  case AVRO_NULL:
    return 0;
  case AVRO_FLOAT:
    return 4;
  case AVRO_DOUBLE:
    return 8;
  case AVRO_FIXED:
    return (size_t)avro_schema_fixed_size(schema);
  case AVRO_LINK:
    return min_size(avro_schema_link_target(schema), depth + 1);
  case AVRO_RECORD:
    for (size_t i = 0; i < avro_schema_record_size(schema); i++)
      sum += min_size(avro_schema_record_field_get_by_index(schema, (int)i),
                      depth + 1);
    return sum;
  default:
    return 1; /* varints, lengths, block counts, union indices */
  }
}

static ksnap_err_t walk(walker_t *w, avro_schema_t schema, int depth);

static ksnap_err_t walk_array(walker_t *w, avro_schema_t items, int depth) {
  size_t item_min = min_size(items, 0);
  ksnap_err_t err;

  for (;;) {
    size_t start = w->pos;
    int64_t count;

    if ((err = read_long(w, &count)))
      return err;
    if (count == 0)
      return KSNAP_ERR_OK;
    if (count < 0) {
      int64_t block_size;

      if (count == INT64_MIN)
        return corrupt(w, start, "invalid array block count");
      count = -count;
      if ((err = read_long(w, &block_size)))
        return err;
      if (block_size < 0)
        return corrupt(w, start, "negative array block size");
    }
    /* Every item takes item_min bytes: a count the rest of the buffer
     * cannot hold is a truncation, found before looping over it. */
    if (item_min && (uint64_t)count > (w->len - w->pos) / item_min)
      return truncated(w, start);
    if (!item_min && count > 65536)
      return corrupt(w, start, "array block too long");
    for (int64_t i = 0; i < count; i++)
      if ((err = walk(w, items, depth + 1)))
        return err;
  }
}

static ksnap_err_t walk_union(walker_t *w, avro_schema_t schema, int depth) {
  size_t start = w->pos;
  avro_schema_t branch;
  ksnap_err_t err;
  int64_t disc;

  if ((err = read_long(w, &disc)))
    return err;
  if (disc < 0 || (uint64_t)disc >= avro_schema_union_size(schema))
    return corrupt(w, start, "union branch out of range");
  branch = avro_schema_union_branch(schema, (int)disc);
  /* The body union of a topic envelope names the record from now on. */
  if (depth == 1 && avro_typeof(branch) == AVRO_RECORD && !w->branch[0]) {
    const char *name = avro_schema_name(branch);
    size_t i;

    for (i = 0; name[i] && i + 1 < sizeof(w->branch); i++)
      w->branch[i] = (char)(name[i] >= 'a' && name[i] <= 'z'
                                ? name[i] - 'a' + 'A' : name[i]);
    w->branch[i] = '\0';
    w->label = w->branch;
  }
  return walk(w, branch, depth + 1);
}

static ksnap_err_t walk(walker_t *w, avro_schema_t schema, int depth) {
  size_t start = w->pos;
  ksnap_err_t err;
  int64_t v;

  if (depth > WALK_MAX_DEPTH)
    return corrupt(w, start, "schema nests too deeply");
  switch (avro_typeof(schema)) {
  case AVRO_NULL:
    return KSNAP_ERR_OK;
  case AVRO_BOOLEAN:
    if (w->pos >= w->len)
      return truncated(w, start);
    if (w->buf[w->pos] > 1)
      return corrupt(w, start, "boolean is neither 0 nor 1");
    w->pos++;
    return KSNAP_ERR_OK;
  case AVRO_INT32:
    return read_int(w, &v);
  case AVRO_INT64:
    return read_long(w, &v);
  case AVRO_FLOAT:
  case AVRO_DOUBLE:
  case AVRO_FIXED: {
    size_t n = min_size(schema, 0);
    if (n > w->len - w->pos)
      return truncated(w, start);
    w->pos += n;
    return KSNAP_ERR_OK;
  }
  case AVRO_STRING:
    return walk_bytes(w, 1);
  case AVRO_BYTES:
    return walk_bytes(w, 0);
  case AVRO_ENUM:
    if ((err = read_long(w, &v)))
      return err;
    if (v < 0 || v >= avro_schema_enum_number_of_symbols(schema))
      return corrupt(w, start, "enum symbol out of range");
    return KSNAP_ERR_OK;
  case AVRO_ARRAY:
    return walk_array(w, avro_schema_array_items(schema), depth);
  case AVRO_UNION:
    return walk_union(w, schema, depth);
  case AVRO_RECORD:
    for (size_t i = 0; i < avro_schema_record_size(schema); i++) {
      avro_schema_t field =
          avro_schema_record_field_get_by_index(schema, (int)i);
      if ((err = walk(w, field, depth + 1)))
        return err;
    }
    return KSNAP_ERR_OK;
  case AVRO_LINK:
    return walk(w, avro_schema_link_target(schema), depth + 1);
  default: /* maps: none of our schemas has one */
    return corrupt(w, start, "unsupported schema type");
  }
}

ksnap_err_t ksnap__codec_walk(avro_schema_t schema, const uint8_t *buf,
                              size_t len, size_t start, const char *label,
                              ksnap_error_t *error) {
  walker_t w = {buf, len, start, label, "", error};
  ksnap_err_t err = walk(&w, schema, 0);

  if (err)
    return err;
  if (w.pos != len)
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "%s record has %zu trailing bytes after byte %zu",
                           w.label, len - w.pos, w.pos);
  return KSNAP_ERR_OK;
}
