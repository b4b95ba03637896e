/*
 * A task's exchange output (see task_out.h): task->out is this file's.
 */
#include "task_out.h"

#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "ksnap/state.h"
#include "task_int.h"
#include "base/util.h"

#define KAFKA_TIMEOUT_MS 30000

int32_t ksnap__exchange_partition(const void *key, size_t klen, int32_t n,
                                  int32_t p, int max_par, int64_t seq) {
  int32_t t, nt, kg;

  if (!key)
    return (int32_t)(seq % n);
  kg = ksnap_state_key_group(key, klen, max_par);
  t = ksnap_state_task_of_key_group(max_par, p, kg);
  nt = (n - t + p - 1) / p;
  if (nt < 1)
    return t % n;
  return t + p * (kg % nt);
}

/* An exchange topic that existed with fewer partitions than the job file
 * asks for now (its reader grew past the count it was created with): the
 * records of the missing partitions cannot be written, at any restore, so
 * it is a configuration error (not retriable), named with its key. */
static ksnap_err_t check_partitions(const ksnap_task_t *task,
                                    ksnap_error_t *error) {
  const ksnap__task_out_t *out = &task->out;
  const char *stage = ksnap_job_stage_name(task->stage);

  for (size_t i = 0; i < out->ntopics; i++) {
    int have = ksnap_exchange_partitions(out->writer, out->topics[i]);
    if (have >= out->parts[i])
      continue;
    return ksnap_error_set(
        error, KSNAP_ERR_CONF_VALUE,
        "%s: exchange topic %s has %d partition%s on the broker, fewer than "
        "the %d that stage.%s.partitions asks for (by default the "
        "parallelism of its reader, %d): ksnap does not add partitions to a "
        "topic that exists; run stage %s's readers at %d tasks or fewer",
        task->id, out->topics[i], have, have == 1 ? "" : "s",
        (int)out->parts[i], stage, (int)out->reader_p[i], stage, have);
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_open_exchange(ksnap_task_t *task,
                                      ksnap_error_t *error) {
  ksnap__task_out_t *out = &task->out;
  size_t n = ksnap_job_stage_output_cnt(task->stage);

  out->topics = calloc(n + 1, sizeof(*out->topics));
  out->parts = calloc(n + 1, sizeof(*out->parts));
  out->reader_p = calloc(n + 1, sizeof(*out->reader_p));
  out->outs = calloc(n + 1, sizeof(*out->outs));
  if (!out->topics || !out->parts || !out->reader_p || !out->outs)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_EXCHANGE)
      continue;
    out->outs[out->ntopics] = ksnap_job_topic_output(t);
    out->topics[out->ntopics] = ksnap_job_topic_name(t);
    out->parts[out->ntopics] = ksnap_job_topic_partitions(t);
    out->reader_p[out->ntopics++] = ksnap_job_topic_reader_parallelism(t);
  }
  out->next = 0;
  if (out->ntopics &&
      !(out->writer = ksnap_exchange_new(task->conf, task->id,
                                         atomic_load(&task->gen), out->topics,
                                         out->ntopics, KAFKA_TIMEOUT_MS,
                                         error)))
    return error->code;
  return check_partitions(task, error);
}

void ksnap__task_close_exchange(ksnap_task_t *task) {
  ksnap__task_out_t *out = &task->out;

  ksnap_exchange_destroy(out->writer);
  out->writer = NULL;
  free(out->topics);
  free(out->parts);
  free(out->reader_p);
  free(out->outs);
  out->outs = NULL;
  out->topics = NULL;
  out->parts = out->reader_p = NULL;
  out->ntopics = out->next = 0;
  out->last_barrier = out->last_cancel = 0;
  out->ended = 0;
}

ksnap_err_t ksnap__task_exchange_produce(
    ksnap_task_t *task, const char *output, const void *key, size_t key_len,
    const void *value,
    size_t value_len, int64_t ts_ms, const ksnap_kafka_header_t *headers,
    size_t header_cnt, int64_t seq, ksnap_error_t *error) {
  ksnap__task_out_t *out = &task->out;

  if (!out->writer)
    return KSNAP_ERR_OK;
  for (; out->next < out->ntopics; out->next++) {
    size_t i = out->next;
    const char *o = out->outs[i];
    if (o && output ? strcmp(o, output) : o != output)
      continue; /* another output's topic */
    int32_t part = ksnap__exchange_partition(key, key_len, out->parts[i],
                                             out->reader_p[i], task->max_par,
                                             seq);
    ksnap_err_t err = ksnap_exchange_produce(out->writer, out->topics[i],
                                             part, key, key_len, value,
                                             value_len, ts_ms, headers,
                                             header_cnt, error);
    if (err)
      return err; /* a retry of this record resumes at topic i */
  }
  out->next = 0;
  return KSNAP_ERR_OK;
}

void ksnap__task_exchange_give_up(ksnap_task_t *task) { task->out.next = 0; }

ksnap_err_t ksnap__task_exchange_barrier(ksnap_task_t *task,
                                         ksnap_barrier_kind_t kind,
                                         int64_t id, int64_t ts_ms,
                                         const ksnap_ckpt_options_t *opts,
                                         ksnap_error_t *error) {
  ksnap_barrier_t b = {kind, id, ts_ms, *opts,
                       {(char *)ksnap_job_stage_name(task->stage), task->index},
                       atomic_load(&task->gen)};
  ksnap_buf_t buf;
  ksnap_err_t err;

  if (!task->out.writer || task->out.ended) /* no barrier after the end */
    return KSNAP_ERR_OK;
  ksnap_buf_init(&buf);
  if ((err = ksnap_codec_barrier_encode(&b, &buf, error)))
    goto out;
  if (kind == KSNAP_BARRIER_KIND_CANCEL)
    err = ksnap_exchange_broadcast_marker(task->out.writer, "cancel",
                                          buf.data, buf.len, error);
  else
    err = ksnap_exchange_broadcast_barrier(task->out.writer, id, buf.data,
                                           buf.len, error);
  if (!err && kind == KSNAP_BARRIER_KIND_CANCEL)
    task->out.last_cancel = id;
  else if (!err)
    task->out.last_barrier = id;
out:
  ksnap_buf_cleanup(&buf);
  return err;
}

ksnap_err_t ksnap__task_exchange_cancel(ksnap_task_t *task, int64_t id,
                                        ksnap_error_t *error) {
  const ksnap__task_out_t *out = &task->out;
  int64_t last = out->last_barrier > out->last_cancel ? out->last_barrier
                                                      : out->last_cancel;
  ksnap_ckpt_options_t opts = {0};

  if (!out->writer || out->ended ||
      !(id > last || (id == out->last_barrier && out->last_cancel < id)))
    return KSNAP_ERR_OK;
  KSNAP_INFO("task", "%s: cancellation marker of checkpoint %lld sent "
             "downstream", task->id, (long long)id);
  return ksnap__task_exchange_barrier(task, KSNAP_BARRIER_KIND_CANCEL, id,
                                      ksnap__wallclock_ms(), &opts, error);
}

ksnap_err_t ksnap__task_exchange_marker(ksnap_task_t *task, const char *kind,
                                        const void *payload, size_t len,
                                        ksnap_error_t *error) {
  if (!task->out.writer || task->out.ended)
    return KSNAP_ERR_OK;
  return ksnap_exchange_broadcast_marker(task->out.writer, kind, payload, len,
                                         error);
}

ksnap_err_t ksnap__task_exchange_end(ksnap_task_t *task, int *sentp,
                                     ksnap_error_t *error) {
  ksnap__task_out_t *out = &task->out;

  *sentp = 0;
  if (out->ended)
    return KSNAP_ERR_OK;
  out->ended = 1;
  *sentp = out->writer != NULL;
  return out->writer ? ksnap_exchange_broadcast_end(out->writer, error)
                     : KSNAP_ERR_OK;
}

int ksnap__task_exchange_ended(const ksnap_task_t *task) {
  return task->out.ended;
}

ksnap_err_t ksnap__task_exchange_delivered(ksnap_task_t *task, int64_t id,
                                           int timeout_ms,
                                           ksnap_error_t *error) {
  if (!task->out.writer)
    return KSNAP_ERR_OK;
  return ksnap_exchange_wait_delivered(task->out.writer, id, timeout_ms,
                                       error);
}

void ksnap__task_exchange_detach(ksnap_task_t *task) {
  task->out.detached = task->out.writer;
  task->out.writer = NULL;
}

void ksnap__task_exchange_attach(ksnap_task_t *task) {
  task->out.writer = task->out.detached;
  task->out.detached = NULL;
}
