/* Record envelope, embedded schema registry, Avro framing (see codec.h). */
#include "codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "codec_schemas.h"
#include "base/util.h"

#define TYPE_MAX KSNAP_RECORD_METADATA

typedef struct type_info_s {
  const char *file;  /* <file>_v<N>.avsc */
  const char *label; /* in errors: "<label> record truncated ..." */
} type_info_t;

static const type_info_t type_infos[TYPE_MAX + 1] = {
    [KSNAP_RECORD_BARRIER] = {"barrier", "BARRIER"},
    [KSNAP_RECORD_CONTROL] = {"control", "control-topic"},
    [KSNAP_RECORD_ACK] = {"ack", "ack-topic"},
    [KSNAP_RECORD_PROGRESS] = {"progress", "SINK_PROGRESS"},
    [KSNAP_RECORD_METADATA] = {"metadata", "CHECKPOINT_METADATA"},
};

typedef struct codec_class_s {
  avro_schema_t schema;
  avro_value_iface_t *iface;
} codec_class_t;

/* classes[type][version], built once by init_classes(), never freed.
 * Each type is versioned on its own: writers use the newest embedded
 * <name>_v<N>.avsc of the type (newest[type]), readers every N up to it. */
static codec_class_t classes[TYPE_MAX + 1][KSNAP_SCHEMA_VERSION + 1];
static int newest[TYPE_MAX + 1];
static pthread_once_t classes_once = PTHREAD_ONCE_INIT;
static char init_failure[256]; /* empty when init succeeded */

static int type_valid(ksnap_record_type_t type) {
  return type >= KSNAP_RECORD_BARRIER && type <= TYPE_MAX;
}

static int load_schema(const ksnap__schema_text_t *text) {
  for (int t = KSNAP_RECORD_BARRIER; t <= TYPE_MAX; t++) {
    codec_class_t *cls;

    if (strcmp(type_infos[t].file, text->name) != 0)
      continue;
    if (text->version < 1 || text->version > KSNAP_SCHEMA_VERSION) {
      snprintf(init_failure, sizeof(init_failure),
               "embedded schema %s_v%d.avsc: version outside 1..%d (raise "
               "KSNAP_SCHEMA_VERSION)", text->name, text->version,
               KSNAP_SCHEMA_VERSION);
      return -1;
    }
    cls = &classes[t][text->version];
    if (avro_schema_from_json_length(text->json, text->len, &cls->schema)) {
      snprintf(init_failure, sizeof(init_failure),
               "embedded schema %s_v%d.avsc does not parse: %s", text->name,
               text->version, avro_strerror());
      return -1;
    }
    cls->iface = avro_generic_class_from_schema(cls->schema);
    if (!cls->iface) {
      snprintf(init_failure, sizeof(init_failure),
               "embedded schema %s_v%d.avsc: no value class: %s", text->name,
               text->version, avro_strerror());
      return -1;
    }
    newest[t] = KSNAP_MAX(newest[t], text->version);
    return 0;
  }
  return 0; /* unknown file name: ignored */
}

static void init_classes(void) {
  for (size_t i = 0; i < ksnap__schema_text_cnt; i++)
    if (load_schema(&ksnap__schema_texts[i]))
      return;
  for (int t = KSNAP_RECORD_BARRIER; t <= TYPE_MAX; t++) {
    if (!newest[t]) {
      snprintf(init_failure, sizeof(init_failure),
               "no embedded schema %s_v<N>.avsc", type_infos[t].file);
      return;
    }
  }
}

static ksnap_err_t ensure_init(ksnap_error_t *error) {
  pthread_once(&classes_once, init_classes);
  if (init_failure[0])
    return ksnap_error_set(error, KSNAP_ERR_STATE, "%s", init_failure);
  return KSNAP_ERR_OK;
}

int ksnap_codec_schema_version(ksnap_record_type_t type) {
  if (ensure_init(NULL) || !type_valid(type))
    return 0;
  return newest[type];
}

static ksnap_err_t get_class(ksnap_record_type_t type, int version,
                             codec_class_t **clsp, ksnap_error_t *error) {
  ksnap_err_t err = ensure_init(error);

  if (err)
    return err;
  if (!type_valid(type) || version < 1 || version > KSNAP_SCHEMA_VERSION ||
      !classes[type][version].iface)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "no schema for record type %d version %d",
                           (int)type, version);
  *clsp = &classes[type][version];
  return KSNAP_ERR_OK;
}

const char *ksnap_record_type_name(ksnap_record_type_t type) {
  static const char *const names[TYPE_MAX + 1] = {
      [KSNAP_RECORD_BARRIER] = "BARRIER",
      [KSNAP_RECORD_CONTROL] = "CONTROL",
      [KSNAP_RECORD_ACK] = "ACK_TOPIC",
      [KSNAP_RECORD_PROGRESS] = "SINK_PROGRESS",
      [KSNAP_RECORD_METADATA] = "CHECKPOINT_METADATA",
  };
  return type_valid(type) ? names[type] : "UNKNOWN";
}

ksnap_err_t ksnap__codec_value_new(ksnap_record_type_t type,
                                   avro_value_t *value, ksnap_error_t *error) {
  codec_class_t *cls = NULL;
  ksnap_err_t err = ensure_init(error);

  if (err || (err = get_class(type, newest[type], &cls, error)))
    return err;

  if (avro_generic_value_new(cls->iface, value))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot create %s value: %s",
                           type_infos[type].label, avro_strerror());
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__codec_write(ksnap_record_type_t type, avro_value_t *value,
                               ksnap_buf_t *out, ksnap_error_t *error) {
  avro_writer_t writer;
  size_t size = 0;
  int rc;

  /* value came from ksnap__codec_value_new(): init is done. */
  int version = newest[type];

  if ((rc = ksnap__av_set_int(value, "schema_version", version)) ||
      (rc = avro_value_sizeof(value, &size)))
    return ksnap__codec_encode_error(error, rc, type_infos[type].label);
  ksnap_buf_reset(out);
  if (ksnap_buf_reserve(out, KSNAP_RECORD_HEADER_SIZE + size))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "cannot allocate %zu bytes for a %s record",
                           KSNAP_RECORD_HEADER_SIZE + size,
                           type_infos[type].label);
  out->data[0] = KSNAP_RECORD_MAGIC;
  out->data[1] = (uint8_t)type;
  out->data[2] = (uint8_t)version;
  writer = avro_writer_memory((const char *)out->data + 3, (int64_t)size);
  if (!writer)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot create writer");
  rc = avro_value_write(writer, value);
  avro_writer_free(writer);
  if (rc)
    return ksnap__codec_encode_error(error, rc, type_infos[type].label);
  out->len = KSNAP_RECORD_HEADER_SIZE + size;
  out->data[out->len] = '\0';
  return KSNAP_ERR_OK;
}

/* Checks magic and that the version is in 1..@p max; *versionp gets it. */
static ksnap_err_t check_header(const uint8_t *p, size_t len, const char *what,
                                int max, int *versionp, ksnap_error_t *error) {
  if (len < KSNAP_RECORD_HEADER_SIZE)
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "%s record truncated at byte %zu of %zu", what, len,
                           len);
  if (p[0] != KSNAP_RECORD_MAGIC)
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "%s record: bad magic byte 0x%02x (expected 'K')",
                           what, p[0]);
  if (p[2] == 0)
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "%s record: invalid schema version 0", what);
  if (p[2] > max)
    return ksnap_error_set(
        error, KSNAP_ERR_SCHEMA_VERSION,
        "schema version %d is newer than this ksnap supports (%d)", p[2], max);
  *versionp = p[2];
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_codec_peek(const void *buf, size_t len,
                             ksnap_record_type_t *typep, int *versionp,
                             ksnap_error_t *error) {
  const uint8_t *p = buf;
  ksnap_err_t err;
  int version = 0, max;

  if (!buf && len)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "NULL buffer");
  if ((err = ensure_init(error)))
    return err;
  max = KSNAP_SCHEMA_VERSION;
  if (len >= KSNAP_RECORD_HEADER_SIZE && type_valid(p[1]))
    max = newest[p[1]];
  if ((err = check_header(p, len, "ksnap", max, &version, error)))
    return err;
  if (!type_valid((ksnap_record_type_t)p[1]))
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "unknown record type %d", p[1]);
  if (typep)
    *typep = (ksnap_record_type_t)p[1];
  if (versionp)
    *versionp = version;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__codec_read(ksnap_record_type_t type, const void *buf,
                              size_t len, avro_value_t *value,
                              ksnap_error_t *error) {
  const char *what = type_infos[type].label;
  const uint8_t *p = buf;
  codec_class_t *cls = NULL;
  avro_reader_t reader;
  ksnap_err_t err;
  int32_t version_field = 0;
  int version = 0;
  int rc;

  if (!buf && len)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "NULL buffer");
  if ((err = ensure_init(error)) ||
      (err = check_header(p, len, what, newest[type], &version, error)))
    return err;
  if (p[1] != (uint8_t)type)
    return ksnap_error_set(
        error, KSNAP_ERR_CORRUPT, "expected a %s record (type %d), got type %d",
        ksnap_record_type_name(type), (int)type, p[1]);
  if ((err = get_class(type, version, &cls, error)))
    return err;
  if ((err = ksnap__codec_walk(cls->schema, p, len, KSNAP_RECORD_HEADER_SIZE,
                               what, error)))
    return err;
  if (avro_generic_value_new(cls->iface, value))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot create %s value",
                           what);
  reader = avro_reader_memory((const char *)p + KSNAP_RECORD_HEADER_SIZE,
                              (int64_t)(len - KSNAP_RECORD_HEADER_SIZE));
  rc = reader ? avro_value_read(reader, value) : ENOMEM;
  if (reader)
    avro_reader_free(reader);
  if (rc) {
    err = ksnap_error_set(error, KSNAP_ERR_CORRUPT, "%s record: %s", what,
                          avro_strerror());
  } else if (ksnap__av_get_int(value, "schema_version", &version_field) ||
             version_field != version) {
    err = ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                          "%s record: schema_version field %d does not match "
                          "envelope version %d",
                          what, (int)version_field, version);
  }
  if (err)
    avro_value_decref(value);
  return err;
}

ksnap_err_t ksnap_codec_to_json(const void *buf, size_t len, char **json,
                                ksnap_error_t *error) {
  ksnap_record_type_t type;
  avro_value_t value;
  ksnap_err_t err;

  *json = NULL;
  if ((err = ksnap_codec_peek(buf, len, &type, NULL, error)) ||
      (err = ksnap__codec_read(type, buf, len, &value, error)))
    return err;
  if (avro_value_to_json(&value, 1, json))
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot render %s as JSON",
                          type_infos[type].label);
  avro_value_decref(&value);
  return err;
}
