/* The Avro schemas compiled into libksnap (internal).
 *
 * The table is generated at build time from plugin/schemas/<name>_v<N>.avsc
 * by plugin/cmake/embed_schemas.cmake (target ksnap_schemas), so the
 * library never reads schema files at run time. Immutable; any thread. */
#ifndef KSNAP_CODEC_SCHEMAS_H
#define KSNAP_CODEC_SCHEMAS_H

#include <stddef.h>

typedef struct ksnap__schema_text_s {
  const char *name; /**< "barrier", "control", "ack", "progress", "metadata" */
  int version;      /**< N of <name>_v<N>.avsc */
  const char *json; /**< NUL-terminated schema text */
  size_t len;       /**< strlen(json) */
} ksnap__schema_text_t;

extern const ksnap__schema_text_t ksnap__schema_texts[];
extern const size_t ksnap__schema_text_cnt;

#endif /* KSNAP_CODEC_SCHEMAS_H */
