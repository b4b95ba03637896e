/*
 * What the steps of building a job share (job.c, job_parse.c,
 * job_validate.c): problem reports and the lookups and additions of
 * topics and stages. The lowest file of the job graph: it calls no other,
 * so calls between the files go one way (job.c -> job_parse.c,
 * job_validate.c -> job_build.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_int.h"
#include "ksnap/log.h"

void ksnap__job_problem(ksnap__job_build_t *b, ksnap_err_t code,
                        const char *key, const char *fmt, ...) {
  const char *where = ksnap_conf_where(b->conf, key);
  char msg[1024];
  int n;
  va_list ap;

  n = snprintf(msg, sizeof(msg), "%s%s%s: ", where ? where : "",
               where ? ": " : "", key);
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(msg))
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  if (b->cb)
    b->cb(b->opaque, msg);
  else
    KSNAP_ERR("JOB", "%s", msg);
  if (!b->first)
    b->first = code;
}

void ksnap__job_missing(ksnap__job_build_t *b, const char *key,
                        const char *why) {
  const char *origin = ksnap_conf_origin(b->conf);
  char msg[1024];

  snprintf(msg, sizeof(msg), "%s%smissing required property \"%s\"%s%s%s",
           origin ? origin : "", origin ? ": " : "", key, why ? " (" : "",
           why ? why : "", why ? ")" : "");
  if (b->cb)
    b->cb(b->opaque, msg);
  else
    KSNAP_ERR("JOB", "%s", msg);
  if (!b->first)
    b->first = KSNAP_ERR_CONF_MISSING;
}

ksnap_job_topic_t *ksnap__job_topic_find(ksnap_job_t *job, const char *name) {
  for (size_t i = 0; i < job->ntopics; i++)
    if (!strcmp(job->topics[i]->name, name))
      return job->topics[i];
  return NULL;
}

ksnap_job_topic_t *ksnap__job_exchange_find(ksnap_job_t *job,
                                            const ksnap_job_stage_t *writer,
                                            const char *output,
                                            int32_t reader_p) {
  for (size_t i = 0; i < job->ntopics; i++) {
    const ksnap_job_topic_t *t = job->topics[i];
    if (t->writer == writer && t->reader_p == reader_p &&
        (t->output && output ? !strcmp(t->output, output)
                             : t->output == output))
      return job->topics[i];
  }
  return NULL;
}

const char *ksnap__job_out_find(const ksnap_job_stage_t *stage,
                                const char *name) {
  for (size_t i = 0; name && i < stage->nouts; i++)
    if (!strcmp(stage->outs[i], name))
      return stage->outs[i];
  return NULL;
}

ksnap_job_topic_t *ksnap__job_topic_add(ksnap__job_build_t *b,
                                        const char *name,
                                        ksnap_job_topic_kind_t kind) {
  ksnap_job_t *job = b->job;
  ksnap_job_topic_t *topic = calloc(1, sizeof(*topic)), **v;

  v = realloc(job->topics, (job->ntopics + 1) * sizeof(*v));
  if (v)
    job->topics = v;
  if (!topic || !v || !(topic->name = strdup(name))) {
    free(topic);
    b->nomem = 1;
    return NULL;
  }
  topic->kind = kind;
  topic->partitions = -1;
  job->topics[job->ntopics++] = topic;
  return topic;
}

const ksnap_job_stage_t *ksnap_job_stage_find(const ksnap_job_t *job,
                                              const char *name) {
  for (size_t i = 0; i < job->nstages; i++)
    if (!strcmp(job->stages[i]->name, name))
      return job->stages[i];
  return NULL;
}
