/*
 * The embedded Kafka cluster of `ksnap run` with
 * kafka.bootstrap.servers=embedded: librdkafka's mock cluster (one broker,
 * 127.0.0.1, random port) hosted in this process, registered with
 * topics.h so that ksnap_topics_ensure() creates topics on it.
 *
 * It is NOT a real broker (/work/shared/FACTS.md): it does not enforce
 * read_committed or fencing, so it shows the mechanics of checkpoints, not
 * exactly-once guarantees; it keeps about 5 MB per partition.
 *
 * Threading: start/stop from one thread; the cluster runs on librdkafka's
 * own threads and serves clients of any thread or process.
 */
#ifndef KSNAP_EMBEDDED_H
#define KSNAP_EMBEDDED_H

#include "ksnap/error.h"

typedef struct ksnap_embedded_s ksnap_embedded_t;

/** @returns a running cluster, or NULL with KSNAP_ERR_KAFKA / NOMEM. */
ksnap_embedded_t *ksnap_embedded_start(ksnap_error_t *error);

/** "127.0.0.1:PORT"; owned by @p emb. */
const char *ksnap_embedded_bootstraps(const ksnap_embedded_t *emb);

/** Stops the cluster and frees. NULL is a no-op. */
void ksnap_embedded_stop(ksnap_embedded_t *emb);

#endif /* KSNAP_EMBEDDED_H */
