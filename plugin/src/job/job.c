/*
 * The job graph (ksnap/job.h): building (the steps live in job_parse.c
 * and job_validate.c, their shared helpers in job_build.c), accessors,
 * task assignment and input channels. A built job is immutable; see
 * job_int.h for ownership.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_int.h"

static void stage_destroy(ksnap_job_stage_t *stage) {
  for (size_t i = 0; i < stage->nrefs; i++) {
    free(stage->refs[i].name);
    free(stage->refs[i].entry);
    free(stage->refs[i].output);
  }
  free(stage->refs);
  for (size_t i = 0; i < stage->nsinks; i++)
    free(stage->sinks[i]);
  free(stage->sinks);
  free(stage->sink_outs);
  for (size_t i = 0; i < stage->nouts; i++) {
    free(stage->outs[i]);
    free(stage->out_keys[i]);
  }
  free(stage->outs);
  free(stage->out_keys);
  free(stage->output_names);
  free(stage->inputs);
  free(stage->outputs);
  free(stage->name);
  free(stage->op);
  free(stage->dlq);
  free(stage->dlq_key);
  free(stage);
}

void ksnap_job_destroy(ksnap_job_t *job) {
  if (!job)
    return;
  for (size_t i = 0; i < job->nstages; i++)
    stage_destroy(job->stages[i]);
  for (size_t i = 0; i < job->ntopics; i++) {
    free(job->topics[i]->name);
    free(job->topics[i]);
  }
  free(job->stages);
  free(job->topics);
  free(job->name);
  free(job);
}

ksnap_err_t ksnap_job_new(const ksnap_conf_t *conf, ksnap_job_t **jobp,
                          ksnap_conf_error_cb_t *error_cb, void *opaque) {
  ksnap__job_build_t b = {conf, NULL, error_cb, opaque, KSNAP_ERR_OK, 0};
  const char *name = NULL;

  *jobp = NULL;
  if (!(b.job = calloc(1, sizeof(*b.job))))
    return KSNAP_ERR_NOMEM;
  if (ksnap_conf_get_str(conf, "job.name", &name))
    ksnap__job_missing(&b, "job.name", NULL);
  else if (!(b.job->name = strdup(name)))
    b.nomem = 1;
  if (!b.nomem)
    ksnap__job_parse(&b);
  if (!b.nomem && b.job->name && b.job->nstages)
    ksnap__job_validate(&b); /* also after a problem: report them all */
  if (b.nomem || b.first) {
    ksnap_job_destroy(b.job);
    return b.nomem ? KSNAP_ERR_NOMEM : b.first;
  }
  *jobp = b.job;
  return KSNAP_ERR_OK;
}

const char *ksnap_job_name(const ksnap_job_t *job) { return job->name; }

size_t ksnap_job_stage_cnt(const ksnap_job_t *job) { return job->nstages; }

const ksnap_job_stage_t *ksnap_job_stage(const ksnap_job_t *job, size_t i) {
  return i < job->nstages ? job->stages[i] : NULL;
}

size_t ksnap_job_topic_cnt(const ksnap_job_t *job) { return job->ntopics; }

const ksnap_job_topic_t *ksnap_job_topic(const ksnap_job_t *job, size_t i) {
  return i < job->ntopics ? job->topics[i] : NULL;
}

const char *ksnap_job_stage_name(const ksnap_job_stage_t *stage) {
  return stage->name;
}

int32_t ksnap_job_stage_parallelism(const ksnap_job_stage_t *stage) {
  return stage->parallelism;
}

const char *ksnap_job_stage_operator(const ksnap_job_stage_t *stage) {
  return stage->op;
}

size_t ksnap_job_stage_index(const ksnap_job_stage_t *stage) {
  return stage->index;
}

size_t ksnap_job_stage_input_cnt(const ksnap_job_stage_t *stage) {
  return stage->ninputs;
}

const ksnap_job_topic_t *ksnap_job_stage_input(const ksnap_job_stage_t *stage,
                                               size_t i) {
  return i < stage->ninputs ? stage->inputs[i] : NULL;
}

const char *ksnap_job_stage_input_name(const ksnap_job_stage_t *stage,
                                       size_t i) {
  return i < stage->ninputs ? stage->refs[i].entry : NULL;
}

size_t ksnap_job_stage_output_cnt(const ksnap_job_stage_t *stage) {
  return stage->noutputs;
}

const ksnap_job_topic_t *ksnap_job_stage_output(const ksnap_job_stage_t *stage,
                                                size_t i) {
  return i < stage->noutputs ? stage->outputs[i] : NULL;
}

const char *ksnap_job_stage_output_name(const ksnap_job_stage_t *stage,
                                        size_t i) {
  return i < stage->noutputs ? stage->output_names[i] : NULL;
}

size_t ksnap_job_stage_named_output_cnt(const ksnap_job_stage_t *stage) {
  return stage->nouts;
}

const char *ksnap_job_stage_named_output(const ksnap_job_stage_t *stage,
                                         size_t i) {
  return i < stage->nouts ? stage->outs[i] : NULL;
}

const char *ksnap_job_stage_output_find(const ksnap_job_stage_t *stage,
                                        const char *name) {
  return ksnap__job_out_find(stage, name);
}

int ksnap_job_stage_has_default_output(const ksnap_job_stage_t *stage) {
  for (size_t i = 0; i < stage->noutputs; i++)
    if (!stage->output_names[i])
      return 1;
  return 0;
}

int ksnap_job_stage_is_source(const ksnap_job_stage_t *stage) {
  for (size_t i = 0; i < stage->ninputs; i++)
    if (stage->inputs[i]->kind != KSNAP_JOB_TOPIC_SOURCE)
      return 0;
  return stage->ninputs > 0;
}

int ksnap_job_stage_is_sink(const ksnap_job_stage_t *stage) {
  for (size_t i = 0; i < stage->noutputs; i++)
    if (stage->outputs[i]->kind == KSNAP_JOB_TOPIC_SINK)
      return 1;
  return 0;
}

ksnap_job_tolerance_t ksnap_job_stage_tolerance(
    const ksnap_job_stage_t *stage) {
  return stage->tolerance;
}

const char *ksnap_job_stage_dlq_topic(const ksnap_job_stage_t *stage) {
  return stage->dlq;
}

int ksnap_job_stage_dlq_headers(const ksnap_job_stage_t *stage) {
  return stage->dlq_headers;
}

int ksnap_job_stage_is_transactional(const ksnap_job_stage_t *stage) {
  return ksnap_job_stage_is_sink(stage) || stage->dlq != NULL;
}

void ksnap_job_task_id(const ksnap_job_stage_t *stage, int32_t task,
                       char *buf, size_t size) {
  snprintf(buf, size, "%s[%d]", stage->name, (int)task);
}

int32_t ksnap_job_partition_task(int32_t partition, int32_t parallelism) {
  return partition % parallelism;
}

size_t ksnap_job_task_partitions(const ksnap_job_stage_t *stage, int32_t task,
                                 int32_t partition_cnt, int32_t *partitions,
                                 size_t max) {
  size_t n = 0;

  if (task < 0 || task >= stage->parallelism)
    return 0;
  for (int32_t p = task; p < partition_cnt; p += stage->parallelism, n++)
    if (n < max)
      partitions[n] = p;
  return n;
}

ksnap_err_t ksnap_job_task_channels(const ksnap_job_stage_t *stage,
                                    int32_t task,
                                    ksnap_job_channel_t **channelsp,
                                    size_t *cntp) {
  ksnap_job_channel_t *v = NULL;
  size_t n = 0, cap = 0;

  *channelsp = NULL;
  *cntp = 0;
  if (task < 0 || task >= stage->parallelism)
    return KSNAP_ERR_INVALID_ARG;
  for (size_t i = 0; i < stage->ninputs; i++) {
    const ksnap_job_topic_t *t = stage->inputs[i];
    if (t->kind != KSNAP_JOB_TOPIC_EXCHANGE)
      continue;
    for (int32_t q = task; q < t->partitions; q += stage->parallelism) {
      for (int32_t w = 0; w < t->writer->parallelism; w++) {
        if (n == cap) {
          ksnap_job_channel_t *nv;
          cap = cap ? 2 * cap : 16;
          if (!(nv = realloc(v, cap * sizeof(*v)))) {
            free(v);
            return KSNAP_ERR_NOMEM;
          }
          v = nv;
        }
        v[n++] = (ksnap_job_channel_t){t, q, w};
      }
    }
  }
  *channelsp = v;
  *cntp = n;
  return KSNAP_ERR_OK;
}

const char *ksnap_job_topic_name(const ksnap_job_topic_t *topic) {
  return topic->name;
}

ksnap_job_topic_kind_t ksnap_job_topic_kind(const ksnap_job_topic_t *topic) {
  return topic->kind;
}

const char *ksnap_job_topic_kind_name(ksnap_job_topic_kind_t kind) {
  switch (kind) {
  case KSNAP_JOB_TOPIC_SOURCE:
    return "source";
  case KSNAP_JOB_TOPIC_EXCHANGE:
    return "exchange";
  case KSNAP_JOB_TOPIC_SINK:
    return "sink";
  }
  return "?";
}

int32_t ksnap_job_topic_partitions(const ksnap_job_topic_t *topic) {
  return topic->partitions;
}

const ksnap_job_stage_t *ksnap_job_topic_writer(const ksnap_job_topic_t *topic) {
  return topic->writer;
}

int32_t ksnap_job_topic_reader_parallelism(const ksnap_job_topic_t *topic) {
  return topic->reader_p;
}

const char *ksnap_job_topic_output(const ksnap_job_topic_t *topic) {
  return topic->output;
}
