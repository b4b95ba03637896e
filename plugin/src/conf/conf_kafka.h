/*
 * kafka.* properties are checked by librdkafka itself, on a scratch
 * configuration, so that its own error text is the one users read.
 *
 * This header is an inversion of the layering: conf declares the
 * interface it needs and the Kafka wrapper, a folder above it, implements
 * it (connectors/src/kafka/kafka_conf.c). conf thus includes no librdkafka
 * header and calls librdkafka only through these four functions. Both
 * folders are compiled into libksnap, so the symbols always resolve.
 *
 * Threading: a ksnap__conf_kafka_t belongs to its ksnap_conf_t's thread.
 */
#ifndef KSNAP_CONF_KAFKA_H
#define KSNAP_CONF_KAFKA_H

#include <stddef.h>

/* A scratch librdkafka configuration used for validation. */
typedef struct ksnap__conf_kafka_s ksnap__conf_kafka_t;

/* @returns a new scratch configuration, or NULL when out of memory. */
ksnap__conf_kafka_t *ksnap__conf_kafka_new(void);

/* Frees @p kc. NULL is a no-op. */
void ksnap__conf_kafka_destroy(ksnap__conf_kafka_t *kc);

/* Sets @p name on the scratch conf: 0, or -1 with librdkafka's message
 * (one line) in errstr. */
int ksnap__conf_kafka_check(ksnap__conf_kafka_t *kc, const char *name,
                            const char *value, char *errstr,
                            size_t errstr_size);

/* @returns 1 if librdkafka knows the property @p name. */
int ksnap__conf_kafka_known(ksnap__conf_kafka_t *kc, const char *name);

#endif /* KSNAP_CONF_KAFKA_H */
