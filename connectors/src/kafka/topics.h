/*
 * Creating a job's topics through the Admin API, idempotently (and
 * deleting topics, for throw-away jobs): a topic that already exists is
 * fine (its partition count is not changed; the
 * _report variant tells the caller which topics existed and how many
 * partitions each really has).
 *
 * A job's internal topics (plugin/PROTOCOL.md section 13.1):
 *   <job>.ksnap.control    1 partition  (coordinator -> tasks, ordered)
 *   <job>.ksnap.acks       1 partition  (tasks -> coordinator)
 *   <job>.ksnap.progress   KSNAP_TOPICS_PROGRESS_PARTITIONS partitions,
 *                          cleanup.policy=compact (key = sink task id)
 * plus its exchange topics, one per stage output, with the stage's
 * partition count. Replication factor: the broker's default.
 *
 * Threading: any thread; each call creates and destroys its own client.
 */
#ifndef KSNAP_TOPICS_H
#define KSNAP_TOPICS_H

#include <stddef.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"

#define KSNAP_TOPICS_PROGRESS_PARTITIONS 4

typedef struct ksnap_topic_spec_s {
  const char *name;
  int partitions;
  int compact; /**< cleanup.policy=compact */
} ksnap_topic_spec_t;

/** What ksnap_topics_ensure_report() found for one topic. */
typedef struct ksnap_topic_result_s {
  int existed;    /**< 1: it existed already (this call did not create it) */
  int partitions; /**< its partition count in the cluster's metadata */
} ksnap_topic_result_t;

/**
 * Creates every topic of @p specs that does not exist yet and waits until
 * the metadata shows all of them (bounded by @p timeout_ms). An existing
 * topic is left as it is, whatever its partition count.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_KAFKA naming the topic the broker
 * refused; CONNECT / TIMEOUT (retriable).
 */
ksnap_err_t ksnap_topics_ensure(const ksnap_conf_t *conf,
                                const ksnap_topic_spec_t *specs, size_t n,
                                int timeout_ms, ksnap_error_t *error);

/**
 * ksnap_topics_ensure() that also fills @p results (@p n entries, the
 * order of @p specs; NULL: none): whether each topic existed before the
 * call, and its partition count as the metadata shows it once ready. The
 * caller decides what an existing topic with another partition count
 * means. @p results is undefined when the call fails.
 */
ksnap_err_t ksnap_topics_ensure_report(const ksnap_conf_t *conf,
                                       const ksnap_topic_spec_t *specs,
                                       size_t n, int timeout_ms,
                                       ksnap_topic_result_t *results,
                                       ksnap_error_t *error);

/**
 * ksnap_topics_ensure() for the job's control, acks and progress topics
 * (named after job.name) plus @p exchange.
 */
ksnap_err_t ksnap_topics_ensure_job(const ksnap_conf_t *conf,
                                    const ksnap_topic_spec_t *exchange,
                                    size_t n, int timeout_ms,
                                    ksnap_error_t *error);

/**
 * Deletes the topics @p names (@p n of them); a topic that does not
 * exist is not an error (topics_delete.c).
 * @returns KSNAP_ERR_OK; KSNAP_ERR_KAFKA naming the topic the broker
 * refused to delete; CONNECT / TIMEOUT (retriable); NOMEM.
 */
ksnap_err_t ksnap_topics_delete(const ksnap_conf_t *conf,
                                const char *const *names, size_t n,
                                int timeout_ms, ksnap_error_t *error);

/**
 * Registers librdkafka's mock cluster @p mcluster (a
 * rd_kafka_mock_cluster_t *) serving @p bootstraps: ksnap_topics_ensure()
 * for a configuration whose kafka.bootstrap.servers equals @p bootstraps
 * then creates its topics with rd_kafka_mock_topic_create() (the mock's
 * Admin API does not answer CreateTopics; compaction is not modelled).
 * At most 8 at a time. Any thread.
 */
void ksnap__topics_mock_register(const char *bootstraps, void *mcluster);

/** Forgets @p mcluster (before destroying it). Any thread. */
void ksnap__topics_mock_unregister(void *mcluster);

#endif /* KSNAP_TOPICS_H */
