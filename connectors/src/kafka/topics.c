/*
 * Admin API topic creation (see topics.h). Each call owns a short-lived
 * client; nothing is shared.
 */
#include "topics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include "kafka_client.h" /* rdkafka.h, which rdkafka_mock.h needs first */
#include <librdkafka/rdkafka_mock.h>
#include "base/util.h"

/* Mock clusters registered by ksnap__topics_mock_register(): their
 * Admin API cannot create topics, rd_kafka_mock_topic_create() can. */
#define MOCK_MAX 8
static struct {
  char *bootstraps;
  rd_kafka_mock_cluster_t *mcluster;
} mocks[MOCK_MAX];
static pthread_mutex_t mocks_lock = PTHREAD_MUTEX_INITIALIZER;

void ksnap__topics_mock_register(const char *bootstraps, void *mcluster) {
  pthread_mutex_lock(&mocks_lock);
  for (int i = 0; i < MOCK_MAX; i++) {
    if (!mocks[i].bootstraps) {
      mocks[i].bootstraps = strdup(bootstraps);
      mocks[i].mcluster = mcluster;
      break;
    }
  }
  pthread_mutex_unlock(&mocks_lock);
}

void ksnap__topics_mock_unregister(void *mcluster) {
  pthread_mutex_lock(&mocks_lock);
  for (int i = 0; i < MOCK_MAX; i++) {
    if (mocks[i].mcluster == mcluster) {
      free(mocks[i].bootstraps);
      mocks[i].bootstraps = NULL;
      mocks[i].mcluster = NULL;
    }
  }
  pthread_mutex_unlock(&mocks_lock);
}

/* Marks the spec named @p name as existing in @p results (may be NULL). */
static void mark_existed(const ksnap_topic_spec_t *specs, size_t n,
                         ksnap_topic_result_t *results, const char *name) {
  for (size_t i = 0; results && i < n; i++)
    if (!strcmp(specs[i].name, name))
      results[i].existed = 1;
}

static int find_bootstrap(void *opaque, const char *name, const char *value) {
  if (!strcmp(name, "bootstrap.servers"))
    *(const char **)opaque = value;
  return 0;
}

/* Creates @p specs on the registered mock cluster serving the job's
 * bootstrap.servers. @returns 1 if there is one (*codep set), else 0. */
static int create_on_mock(const ksnap_conf_t *conf,
                          const ksnap_topic_spec_t *specs, size_t n,
                          ksnap_topic_result_t *results, ksnap_err_t *codep,
                          ksnap_error_t *error) {
  const char *bootstraps = NULL;
  int found = 0;

  ksnap_conf_foreach_kafka(conf, find_bootstrap, &bootstraps);
  if (!bootstraps)
    return 0;
  *codep = KSNAP_ERR_OK;
  pthread_mutex_lock(&mocks_lock);
  for (int i = 0; i < MOCK_MAX && !found; i++) {
    if (!mocks[i].bootstraps || strcmp(mocks[i].bootstraps, bootstraps))
      continue;
    found = 1;
    for (size_t t = 0; t < n && !*codep; t++) {
      rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(
          mocks[i].mcluster, specs[t].name, specs[t].partitions, 1);
      if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
        mark_existed(specs, n, results, specs[t].name);
      else if (err)
        *codep = ksnap_error_set(error, KSNAP_ERR_KAFKA,
                                 "cannot create topic %s on the embedded "
                                 "broker: %s",
                                 specs[t].name, rd_kafka_err2str(err));
    }
  }
  pthread_mutex_unlock(&mocks_lock);
  return found;
}

static ksnap_err_t check_results(rd_kafka_event_t *ev,
                                 const ksnap_topic_spec_t *specs, size_t n,
                                 ksnap_topic_result_t *results,
                                 ksnap_error_t *error) {
  const rd_kafka_CreateTopics_result_t *res =
      rd_kafka_event_CreateTopics_result(ev);
  const rd_kafka_topic_result_t **topics;
  size_t cnt;

  if (rd_kafka_event_error(ev))
    return ksnap__kafka_resp_error(error, NULL, rd_kafka_event_error(ev),
                                   "CreateTopics");
  topics = rd_kafka_CreateTopics_result_topics(res, &cnt);
  for (size_t i = 0; i < cnt; i++) {
    rd_kafka_resp_err_t err = rd_kafka_topic_result_error(topics[i]);
    const char *name = rd_kafka_topic_result_name(topics[i]);
    if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
      mark_existed(specs, n, results, name);
    else if (err)
      return ksnap_error_set(error, KSNAP_ERR_KAFKA,
                             "cannot create topic %s: %s: %s", name,
                             rd_kafka_err2name(err),
                             rd_kafka_topic_result_error_string(topics[i]));
  }
  return KSNAP_ERR_OK;
}

static ksnap_err_t create(rd_kafka_t *rk, const ksnap_topic_spec_t *specs,
                          size_t n, int timeout_ms,
                          ksnap_topic_result_t *results, ksnap_error_t *error) {
  rd_kafka_NewTopic_t **nt = calloc(n ? n : 1, sizeof(*nt));
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t *opts =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_event_t *ev = NULL;
  char errstr[512];
  ksnap_err_t code = KSNAP_ERR_OK;

  rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, errstr,
                                              sizeof(errstr));
  rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, errstr,
                                            sizeof(errstr));
  for (size_t i = 0; i < n && !code; i++) {
    nt[i] = rd_kafka_NewTopic_new(specs[i].name, specs[i].partitions, -1,
                                  errstr, sizeof(errstr));
    if (!nt[i])
      code = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "topic %s: %s",
                             specs[i].name, errstr);
    else if (specs[i].compact)
      rd_kafka_NewTopic_set_config(nt[i], "cleanup.policy", "compact");
  }
  if (!code) {
    /* in slices: a refused login or an untrusted broker ends the wait */
    int64_t end = ksnap__now_us() + (int64_t)(timeout_ms + 2000) * 1000;
    rd_kafka_CreateTopics(rk, nt, n, opts, q);
    while (!(ev = rd_kafka_queue_poll(q, 250)) && ksnap__now_us() < end &&
           !ksnap__kafka_security_failure(NULL, "CreateTopics"))
      ;
    if (ev)
      code = check_results(ev, specs, n, results, error);
    else if (!(code = ksnap__kafka_security_failure(error, "CreateTopics")))
      code = ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                       "CreateTopics: no answer within %d ms",
                                       timeout_ms);
  }
  if (ev)
    rd_kafka_event_destroy(ev);
  for (size_t i = 0; i < n; i++)
    if (nt[i])
      rd_kafka_NewTopic_destroy(nt[i]);
  free(nt);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  return code;
}

/* @returns 1 if @p topic exists and every partition has a leader; then
 * *partitionsp is its partition count. */
static int ready(rd_kafka_t *rk, const char *topic, int timeout_ms,
                 int *partitionsp) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  int ok = 0;

  if (rkt && !rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) &&
      md->topic_cnt == 1 && !md->topics[0].err &&
      md->topics[0].partition_cnt > 0) {
    ok = 1;
    for (int p = 0; p < md->topics[0].partition_cnt; p++)
      if (md->topics[0].partitions[p].leader < 0 ||
          md->topics[0].partitions[p].err)
        ok = 0;
    *partitionsp = md->topics[0].partition_cnt;
  }
  if (md)
    rd_kafka_metadata_destroy(md);
  if (rkt)
    rd_kafka_topic_destroy(rkt);
  return ok;
}

/* Waits until every topic shows in the metadata with all its leaders. */
static ksnap_err_t wait_visible(rd_kafka_t *rk, const ksnap_topic_spec_t *specs,
                                size_t n, int timeout_ms,
                                ksnap_topic_result_t *results,
                                ksnap_error_t *error) {
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;

  for (size_t i = 0; i < n; i++) {
    for (;;) {
      int left = (int)((deadline - ksnap__now_us()) / 1000), partitions = 0;
      if (ready(rk, specs[i].name, KSNAP_MAX(left, 100), &partitions)) {
        if (results)
          results[i].partitions = partitions;
        break;
      }
      if (left <= 0)
        return ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                         "topic %s not ready within %d ms",
                                         specs[i].name, timeout_ms);
      usleep(100 * 1000);
    }
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_topics_ensure_report(const ksnap_conf_t *conf,
                                       const ksnap_topic_spec_t *specs,
                                       size_t n, int timeout_ms,
                                       ksnap_topic_result_t *results,
                                       ksnap_error_t *error) {
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, NULL, NULL, NULL};
  rd_kafka_t *rk = ksnap__kafka_new(conf, &opts, error);
  ksnap_err_t code;

  if (!rk)
    return error ? error->code : KSNAP_ERR_KAFKA;
  if (results)
    memset(results, 0, n * sizeof(*results));
  if (!create_on_mock(conf, specs, n, results, &code, error))
    code = create(rk, specs, n, timeout_ms, results, error);
  if (!code)
    code = wait_visible(rk, specs, n, timeout_ms, results, error);
  ksnap__kafka_destroy(rk);
  return code;
}

ksnap_err_t ksnap_topics_ensure(const ksnap_conf_t *conf,
                                const ksnap_topic_spec_t *specs, size_t n,
                                int timeout_ms, ksnap_error_t *error) {
  return ksnap_topics_ensure_report(conf, specs, n, timeout_ms, NULL, error);
}

ksnap_err_t ksnap_topics_ensure_job(const ksnap_conf_t *conf,
                                    const ksnap_topic_spec_t *exchange,
                                    size_t n, int timeout_ms,
                                    ksnap_error_t *error) {
  const char *job = NULL;
  char names[3][300];
  ksnap_topic_spec_t *all = calloc(n + 3, sizeof(*all));
  ksnap_err_t code;

  if (!all)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (ksnap_conf_get_str(conf, "job.name", &job) || !job) {
    free(all);
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "missing required property \"job.name\"");
  }
  snprintf(names[0], sizeof(names[0]), "%s.ksnap.control", job);
  snprintf(names[1], sizeof(names[1]), "%s.ksnap.acks", job);
  snprintf(names[2], sizeof(names[2]), "%s.ksnap.progress", job);
  all[0] = (ksnap_topic_spec_t){names[0], 1, 0};
  all[1] = (ksnap_topic_spec_t){names[1], 1, 0};
  all[2] = (ksnap_topic_spec_t){names[2], KSNAP_TOPICS_PROGRESS_PARTITIONS, 1};
  for (size_t i = 0; i < n; i++)
    all[3 + i] = exchange[i];
  code = ksnap_topics_ensure(conf, all, n + 3, timeout_ms, error);
  free(all);
  return code;
}
