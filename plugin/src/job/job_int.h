/*
 * Internals of the job graph (ksnap/job.h), shared by job.c (ksnap_job_new,
 * accessors, task assignment, channels, destroy), job_parse.c (reading the
 * stage.* keys into stages and topics), job_validate.c (graph checks and
 * the topological order) and job_build.c (what those three share).
 *
 * Ownership: the job owns every stage and topic; stages point at topics
 * and topics at their writer stage, never freed through those pointers.
 */
#ifndef KSNAP_JOB_INT_H
#define KSNAP_JOB_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/job.h"

/* Longest Kafka topic name. */
#define KSNAP__JOB_TOPIC_MAX 249

struct ksnap_job_topic_s {
  char *name;
  ksnap_job_topic_kind_t kind;
  int32_t partitions;        /* exchange only; -1 otherwise */
  ksnap_job_stage_t *writer; /* exchange only */
  int32_t reader_p;          /* exchange only: the parallelism of every
                                stage reading it (keys are partitioned
                                for it); 0 otherwise */
  const char *output;        /* exchange only: the writer's named output
                                it carries (the stage's string), NULL: the
                                default output */
  size_t first_use;          /* topological index of first use (ordering) */
};

/* An entry of stage.S.input as written, before resolution. */
typedef struct ksnap__job_ref_s {
  int is_stage;         /* stage:NAME, else source:TOPIC */
  char *name;           /* the stage (without .OUTPUT) or the topic */
  char *output;         /* stage:NAME.OUTPUT: OUTPUT; NULL: the default */
  char *entry;          /* the entry as written (trimmed): the input's name
                           operators see (ksnap_record_t.input) */
} ksnap__job_ref_t;

struct ksnap_job_stage_s {
  char *name;
  int32_t parallelism;
  char *op;
  size_t index; /* topological position */
  size_t decl;  /* position of first appearance in the configuration */
  ksnap__job_ref_t *refs;
  size_t nrefs;
  char **sinks; /* stage.S.output[.NAME] topics as written */
  const char **sink_outs; /* per sink: its named output (an entry of
                             outs), NULL: the default output */
  size_t nsinks;
  char **outs;    /* the named outputs, stage.S.output.NAME, in file order */
  char **out_keys; /* the key of each (for problems) */
  size_t nouts;
  ksnap_job_topic_t **inputs; /* one per ref, resolved */
  size_t ninputs;
  ksnap_job_topic_t **outputs; /* exchanges (one per reader parallelism,
                                  if read) first, then sinks */
  const char **output_names; /* per output: its named output, NULL: the
                               default */
  size_t noutputs;
  int64_t partitions; /* stage.S.partitions; 0 if unset */
  ksnap_job_tolerance_t tolerance; /* errors.tolerance (stage, else job) */
  char *dlq;       /* dead-letter topic; NULL: none (or tolerance none) */
  char *dlq_key;   /* the key it was read from (for problems) */
  int dlq_headers; /* errors.deadletterqueue.context.headers.enable */
};

struct ksnap_job_s {
  char *name;
  ksnap_job_stage_t **stages; /* declaration order while building, then
                                 topological order */
  size_t nstages;
  ksnap_job_topic_t **topics; /* sources, exchanges, sinks when built */
  size_t ntopics;
};

/* The state of one ksnap_job_new() call. */
typedef struct ksnap__job_build_s {
  const ksnap_conf_t *conf;
  ksnap_job_t *job;
  ksnap_conf_error_cb_t *cb;
  void *opaque;
  ksnap_err_t first; /* code of the first problem */
  int nomem;
} ksnap__job_build_t;

/* job_build.c: reports a problem with @p key: "[FILE:LINE: ]KEY: MESSAGE". */
void ksnap__job_problem(ksnap__job_build_t *b, ksnap_err_t code,
                        const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reports "[FILE: ]missing required property "KEY"[ (WHY)]". */
void ksnap__job_missing(ksnap__job_build_t *b, const char *key,
                        const char *why);

/* @returns the topic named @p name (any kind), or NULL. */
ksnap_job_topic_t *ksnap__job_topic_find(ksnap_job_t *job, const char *name);

/* @returns the exchange topic of @p writer's output @p output (NULL: the
 * default) read by stages of parallelism @p reader_p, or NULL. */
ksnap_job_topic_t *ksnap__job_exchange_find(ksnap_job_t *job,
                                            const ksnap_job_stage_t *writer,
                                            const char *output,
                                            int32_t reader_p);

/* @returns @p stage's named output @p name (its own string), or NULL. */
const char *ksnap__job_out_find(const ksnap_job_stage_t *stage,
                                const char *name);

/* Adds a topic (name copied); NULL and b->nomem set when out of memory. */
ksnap_job_topic_t *ksnap__job_topic_add(ksnap__job_build_t *b,
                                        const char *name,
                                        ksnap_job_topic_kind_t kind);

/* job_parse.c: creates the stages from the stage.* keys and reads each
 * one's properties, inputs (as refs) and sink outputs. */
void ksnap__job_parse(ksnap__job_build_t *b);

/* job_validate.c: resolves stage refs, creates exchange topics, checks
 * the graph, sorts the stages topologically and orders the topics. */
void ksnap__job_validate(ksnap__job_build_t *b);

/* job_copart.c: refuses a stage with several inputs whose records cannot
 * be co-partitioned by key (a source topic among them, P > 1). */
void ksnap__job_check_copartition(ksnap__job_build_t *b);

#endif /* KSNAP_JOB_INT_H */
