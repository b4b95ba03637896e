/* The embedded mock cluster of `ksnap run` and `ksnap dev-broker` (see
 * embedded.h). */
#include "embedded.h"

#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "topics.h"

struct ksnap_embedded_s {
  rd_kafka_t *rk; /* hosts the cluster; sends nothing */
  rd_kafka_mock_cluster_t *mcluster;
  char *bootstraps;
};

ksnap_embedded_t *ksnap_embedded_start(ksnap_error_t *error) {
  return ksnap_embedded_start_brokers(1, error);
}

ksnap_embedded_t *ksnap_embedded_start_brokers(int brokers,
                                               ksnap_error_t *error) {
  ksnap_embedded_t *emb = calloc(1, sizeof(*emb));
  rd_kafka_conf_t *conf;
  char errstr[512];

  if (!emb) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  conf = rd_kafka_conf_new();
  /* log_level 4 hides the "no bootstrap.servers" notice */
  rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof(errstr));
  if (!(emb->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                               sizeof(errstr)))) {
    rd_kafka_conf_destroy(conf);
    ksnap_error_set(error, KSNAP_ERR_KAFKA, "embedded broker: %s", errstr);
    free(emb);
    return NULL;
  }
  if (!(emb->mcluster = rd_kafka_mock_cluster_new(emb->rk, brokers)) ||
      !(emb->bootstraps =
            strdup(rd_kafka_mock_cluster_bootstraps(emb->mcluster)))) {
    ksnap_error_set(error, KSNAP_ERR_KAFKA,
                    "cannot start the embedded broker (mock cluster)");
    ksnap_embedded_stop(emb);
    return NULL;
  }
  ksnap__topics_mock_register(emb->bootstraps, emb->mcluster);
  return emb;
}

ksnap_err_t ksnap_embedded_create_topic(ksnap_embedded_t *emb,
                                        const char *topic, int partitions,
                                        int replication, ksnap_error_t *error) {
  rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(emb->mcluster, topic, partitions, replication);

  if (err)
    return ksnap_error_set(error, KSNAP_ERR_KAFKA, "cannot create topic %s: %s",
                           topic, rd_kafka_err2str(err));
  return KSNAP_ERR_OK;
}

const char *ksnap_embedded_bootstraps(const ksnap_embedded_t *emb) {
  return emb->bootstraps;
}

void ksnap_embedded_stop(ksnap_embedded_t *emb) {
  if (!emb)
    return;
  if (emb->mcluster) {
    ksnap__topics_mock_unregister(emb->mcluster);
    rd_kafka_mock_cluster_destroy(emb->mcluster);
  }
  if (emb->rk)
    rd_kafka_destroy(emb->rk);
  free(emb->bootstraps);
  free(emb);
}
