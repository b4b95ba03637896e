/*
 * Plain types shared by the connector APIs (no librdkafka in here, so
 * runtime modules can include the connector headers).
 */
#ifndef KSNAP_KAFKA_TYPES_H
#define KSNAP_KAFKA_TYPES_H

#include <stddef.h>
#include <stdint.h>

/** Logical offsets, same values as librdkafka's RD_KAFKA_OFFSET_*. */
#define KSNAP_OFFSET_BEGINNING (-2)
#define KSNAP_OFFSET_END (-1)

/** One record header (value may be binary; NULL value = null header). */
typedef struct ksnap_kafka_header_s {
  const char *name;
  const void *value;
  size_t len;
} ksnap_kafka_header_t;

/** A partition and an offset: a start position or a "next offset". */
typedef struct ksnap_kafka_pos_s {
  const char *topic; /**< borrowed, unless documented otherwise */
  int32_t partition;
  int64_t offset;
} ksnap_kafka_pos_t;

/** Frees an array of positions whose topics are owned (malloc'd). */
void ksnap_kafka_pos_free(ksnap_kafka_pos_t *positions, size_t n);

typedef struct ksnap_kafka_consumer_s ksnap_kafka_consumer_t;

#endif /* KSNAP_KAFKA_TYPES_H */
