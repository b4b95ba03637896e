/*
 * Deleting topics through the Admin API (ksnap_topics_delete(),
 * topics.h), for tools that create throw-away jobs (`ksnap verify`).
 * Each call owns a short-lived client.
 */
#include <stdlib.h>

#include "kafka_client.h"
#include "topics.h"

static ksnap_err_t check_results(rd_kafka_event_t *ev, ksnap_error_t *error) {
  const rd_kafka_DeleteTopics_result_t *res =
      rd_kafka_event_DeleteTopics_result(ev);
  const rd_kafka_topic_result_t **topics;
  size_t cnt;

  if (rd_kafka_event_error(ev))
    return ksnap__kafka_resp_error(error, NULL, rd_kafka_event_error(ev),
                                   "DeleteTopics");
  topics = rd_kafka_DeleteTopics_result_topics(res, &cnt);
  for (size_t i = 0; i < cnt; i++) {
    rd_kafka_resp_err_t err = rd_kafka_topic_result_error(topics[i]);
    if (err && err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
      return ksnap_error_set(error, KSNAP_ERR_KAFKA,
                             "cannot delete topic %s: %s: %s",
                             rd_kafka_topic_result_name(topics[i]),
                             rd_kafka_err2name(err),
                             rd_kafka_topic_result_error_string(topics[i]));
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_topics_delete(const ksnap_conf_t *conf,
                                const char *const *names, size_t n,
                                int timeout_ms, ksnap_error_t *error) {
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, NULL, NULL, NULL};
  rd_kafka_t *rk = ksnap__kafka_new(conf, &opts, error);
  rd_kafka_DeleteTopic_t **dt = calloc(n ? n : 1, sizeof(*dt));
  rd_kafka_AdminOptions_t *ao = NULL;
  rd_kafka_queue_t *q = NULL;
  rd_kafka_event_t *ev = NULL;
  char errstr[512];
  ksnap_err_t code = KSNAP_ERR_OK;

  if (!rk || !dt) {
    code = rk ? ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory")
              : error->code;
    goto out;
  }
  q = rd_kafka_queue_new(rk);
  ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(ao, timeout_ms, errstr,
                                              sizeof(errstr));
  rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, errstr,
                                            sizeof(errstr));
  for (size_t i = 0; i < n; i++)
    dt[i] = rd_kafka_DeleteTopic_new(names[i]);
  rd_kafka_DeleteTopics(rk, dt, n, ao, q);
  ev = rd_kafka_queue_poll(q, timeout_ms + 2000);
  code = ev ? check_results(ev, error)
            : ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                        "DeleteTopics: no answer within %d "
                                        "ms", timeout_ms);
out:
  if (ev)
    rd_kafka_event_destroy(ev);
  for (size_t i = 0; dt && i < n; i++)
    if (dt[i])
      rd_kafka_DeleteTopic_destroy(dt[i]);
  free(dt);
  if (ao)
    rd_kafka_AdminOptions_destroy(ao);
  if (q)
    rd_kafka_queue_destroy(q);
  ksnap__kafka_destroy(rk);
  return code;
}
