/*
 * The embedded Kafka cluster: librdkafka's mock cluster (127.0.0.1, random
 * ports) hosted in this process, for `ksnap run` with
 * kafka.bootstrap.servers=embedded (one broker) and for `ksnap dev-broker`
 * (N brokers, its --topic list). Each cluster is registered with topics.h,
 * so that ksnap_topics_ensure() creates topics on it.
 *
 * It is NOT a real broker: it does not enforce read_committed or fencing,
 * so it shows the mechanics of checkpoints, not exactly-once guarantees;
 * it keeps about 5 MB per partition.
 *
 * Threading: start/create_topic/stop from one thread; the cluster runs on
 * librdkafka's own threads and serves clients of any thread or process.
 */
#ifndef KSNAP_EMBEDDED_H
#define KSNAP_EMBEDDED_H

#include "ksnap/error.h"

typedef struct ksnap_embedded_s ksnap_embedded_t;

/** ksnap_embedded_start_brokers(1, error). */
ksnap_embedded_t *ksnap_embedded_start(ksnap_error_t *error);

/** @returns a running cluster of @p brokers brokers (>= 1), or NULL with
 *  KSNAP_ERR_KAFKA / NOMEM. */
ksnap_embedded_t *ksnap_embedded_start_brokers(int brokers,
                                               ksnap_error_t *error);

/** Creates @p topic with @p partitions partitions, each on
 *  @p replication brokers. @returns KSNAP_ERR_KAFKA ("cannot create topic
 *  T: REASON") on failure. */
ksnap_err_t ksnap_embedded_create_topic(ksnap_embedded_t *emb,
                                        const char *topic, int partitions,
                                        int replication, ksnap_error_t *error);

/** "127.0.0.1:PORT[,...]", one address per broker; owned by @p emb. */
const char *ksnap_embedded_bootstraps(const ksnap_embedded_t *emb);

/** Stops the cluster and frees. NULL is a no-op. */
void ksnap_embedded_stop(ksnap_embedded_t *emb);

#endif /* KSNAP_EMBEDDED_H */
