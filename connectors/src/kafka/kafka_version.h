/*
 * The version of librdkafka that ksnap runs with, for `ksnap version`,
 * without including librdkafka (this header is free of it, like every
 * header of the wrapper but kafka_client.h).
 */
#ifndef KSNAP_KAFKA_VERSION_H
#define KSNAP_KAFKA_VERSION_H

/** @returns librdkafka's version string ("2.0.2"); static. Thread-safe. */
const char *ksnap__kafka_lib_version(void);

#endif /* KSNAP_KAFKA_VERSION_H */
