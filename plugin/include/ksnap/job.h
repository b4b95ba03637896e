/**
 * @file job.h
 * @brief The job graph: stages, topics, tasks and their input channels,
 * built from the `stage.<name>.*` keys of a job configuration.
 *
 * Syntax (CONFIGURATION.md has the same text, from the property table):
 *  - `stage.S.input`: comma-separated `source:TOPIC` (external source
 *    topic), `stage:NAME` (the default output of stage NAME, through its
 *    exchange topic) or `stage:NAME.OUT` (stage NAME's named output OUT);
 *  - `stage.S.output`: comma-separated `sink:TOPIC` (external sink topic,
 *    written transactionally): the stage's default output, what
 *    ksnap_ctx_emit() writes. Edges between stages are declared only by
 *    the reader's input;
 *  - `stage.S.output.OUT`: a named output OUT of S (a side output, one
 *    of several routes), written by ksnap_ctx_emit_to(ctx, "OUT", ...):
 *    comma-separated `sink:TOPIC`, or empty when only stages read it
 *    (`stage:S.OUT`). It must go somewhere (a sink or a reader), and a
 *    reader may name only declared outputs. OUT is 1 to 100 characters
 *    of A-Z a-z 0-9 _ -, not `p` followed by digits. Each named output
 *    read by stages has exchange topics of its own, `JOB.S.OUT` (and
 *    `JOB.S.OUT.pP` for readers of another parallelism);
 *  - `stage.S.operator`: `LIB.so:NAME` or a built-in name (operator.h);
 *  - `stage.S.parallelism` P: tasks `S[0]` .. `S[P-1]`;
 *  - `stage.S.partitions`: partitions of each exchange topic of S, which
 *    exist when some stage reads `stage:S`: one per distinct parallelism
 *    P of S's readers, partitioned for P; the first reader's (declaration
 *    order) is `JOB.S`, one of another parallelism P reads `JOB.S.pP`.
 *    Default: P partitions;
 *  - `stage.S.errors.tolerance`, `stage.S.errors.deadletterqueue.*`: the
 *    stage's handling of failed records, each defaulting to the job's
 *    `errors.*` key. A dead-letter topic is not a topic of the job graph
 *    (ksnap_job_topic() does not list it); it may not be a source, sink,
 *    exchange or control topic of the job.
 *
 * Assignment: partition p of any input topic (source or exchange) is read
 * by task p mod P of the reading stage. Every task of a writer stage may
 * write every partition of each of its exchange topics (a record goes to
 * each of them), so the input channels of a
 * task (plugin/PROTOCOL.md section 1: channel = (partition, writer task) of an exchange
 * topic) are every (topic, partition it reads, writer 0..P_writer-1).
 *
 * Co-partitioning: the records of one key reach the same task from every
 * input of a stage (its keyed state and timers are shared across
 * inputs). Exchange inputs are partitioned by key group for the reader,
 * so they always are; a source topic is partitioned by its producer, so
 * a stage of parallelism above 1 with several inputs may read no source
 * topic ("stage.S.input: the inputs of stage S (...) cannot be
 * co-partitioned by key: ..."): read it in a stage of its own.
 *
 * Decisions: several stages may write the same sink topic (each sink task
 * has its own transactional ids), and several stages may read the same
 * source topic; a topic may not be both a source and a sink of one job,
 * nor be named like one of the job's exchange topics or `JOB.ksnap.*`
 * (the control topics). A stage nobody reads must have a sink output
 * (of its default output or a named one);
 * an exchange topic needs at least as many partitions as each reader
 * has tasks, so that every task has input channels.
 *
 * Validation problems are reported one line each, as the configuration's
 * are: "FILE:LINE: stage.a.input: cycle a -> b -> a" (FILE:LINE of the key,
 * omitted when the key was not read from a file), or "FILE: ..." for a
 * missing key.
 *
 * Threading: a ksnap_job_t is immutable once built; every const call may
 * be made from any thread. It does not reference the configuration it was
 * built from.
 */
#ifndef KSNAP_JOB_H
#define KSNAP_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_job_s ksnap_job_t;
typedef struct ksnap_job_stage_s ksnap_job_stage_t;
typedef struct ksnap_job_topic_s ksnap_job_topic_t;

/** Kinds of topics a job touches. */
typedef enum ksnap_job_topic_kind_e {
  KSNAP_JOB_TOPIC_SOURCE,   /**< external input; offsets are source state */
  KSNAP_JOB_TOPIC_EXCHANGE, /**< between two stages, created by ksnap */
  KSNAP_JOB_TOPIC_SINK,     /**< external output, transactional */
} ksnap_job_topic_kind_t;

/** One input channel of a task: a partition and one upstream writer. */
typedef struct ksnap_job_channel_s {
  const ksnap_job_topic_t *topic; /**< an exchange topic */
  int32_t partition;
  int32_t writer; /**< task index in the topic's writer stage */
} ksnap_job_channel_t;

/** Longest task id "STAGE[i]" including the NUL. */
#define KSNAP_JOB_TASK_ID_SIZE 112

/**
 * Builds the job graph from @p conf (finalized; job.name set) and checks
 * it. Every problem goes to @p error_cb (NULL: logged at level ERR);
 * building goes on after a problem so that all are reported at once.
 * @returns KSNAP_ERR_OK with *jobp set (free with ksnap_job_destroy());
 * otherwise *jobp is NULL and the code is the first problem's:
 * KSNAP_ERR_CONF_MISSING (no job.name, no stage, a stage without input
 * or operator, or without output while no stage reads it),
 * KSNAP_ERR_CONF_VALUE (any other problem), or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_job_new(const ksnap_conf_t *conf, ksnap_job_t **jobp,
                          ksnap_conf_error_cb_t *error_cb, void *opaque);

/** Frees @p job. NULL is a no-op. */
void ksnap_job_destroy(ksnap_job_t *job);

/**
 * The job's preflight: every check that the coordinator, a worker or one
 * of its tasks makes at start and that needs no server, in one call, so
 * that a job that cannot run is refused before anything connects:
 *  - ksnap_conf_finalize() (required properties, cross-property rules);
 *  - the rules of a job that runs: kafka.transaction.timeout.ms above
 *    execution.checkpointing.interval * sink.producer-pool-size +
 *    execution.checkpointing.timeout (the sink's rule, same words),
 *    kafka.bootstrap.servers and state.checkpoints.dir set, credentials
 *    for an s3:// directory (s3.access-key and s3.secret-key, or
 *    AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), rest.address an IPv4
 *    address when rest.port is set;
 *  - the job graph (ksnap_job_new(); skipped without job.name);
 *  - every stage's operator resolved as a worker resolves it
 *    (ksnap_operator_resolve() with @p job_dir: the library loaded, its
 *    symbol present, its ABI version this ksnap's), then released.
 * Every problem goes to @p error_cb (NULL: logged at level ERR) as one
 * line, "FILE:LINE: KEY...: MESSAGE" naming the setting that makes it
 * wrong ("FILE: missing required property ..." for an unset key); all
 * checks run, so that every problem is reported at once.
 * @p job_dir: the job file's directory, where operator libraries are
 * looked up first (NULL: none), as given to the worker.
 * @returns KSNAP_ERR_OK, with *jobp set to the job graph when @p jobp is
 * not NULL (free with ksnap_job_destroy()); otherwise the first
 * problem's code (KSNAP_ERR_CONF_MISSING, KSNAP_ERR_CONF_VALUE,
 * KSNAP_ERR_NOT_FOUND, KSNAP_ERR_UNSUPPORTED, KSNAP_ERR_INVALID_ARG) or
 * KSNAP_ERR_NOMEM, and *jobp NULL.
 * @remark Loading an operator library runs its initialisers and its
 * ksnap_operator_NAME() function, as the worker does.
 */
ksnap_err_t ksnap_job_preflight(ksnap_conf_t *conf, const char *job_dir,
                                ksnap_job_t **jobp,
                                ksnap_conf_error_cb_t *error_cb,
                                void *opaque);

/** @returns job.name. */
const char *ksnap_job_name(const ksnap_job_t *job);

/** @returns the number of stages. */
size_t ksnap_job_stage_cnt(const ksnap_job_t *job);

/**
 * @returns stage @p i in topological order (every stage after the stages
 * it reads; ties in the order the stages first appear in the
 * configuration), or NULL if @p i is out of range.
 */
const ksnap_job_stage_t *ksnap_job_stage(const ksnap_job_t *job, size_t i);

/** @returns the stage named @p name, or NULL. */
const ksnap_job_stage_t *ksnap_job_stage_find(const ksnap_job_t *job,
                                              const char *name);

/** @returns the number of distinct topics (sources, exchanges, sinks). */
size_t ksnap_job_topic_cnt(const ksnap_job_t *job);

/**
 * @returns topic @p i: source topics first, then exchange topics, then
 * sink topics, each group in topological order of first use; NULL if out
 * of range.
 */
const ksnap_job_topic_t *ksnap_job_topic(const ksnap_job_t *job, size_t i);

/** Stage accessors. Strings are owned by the job. */
const char *ksnap_job_stage_name(const ksnap_job_stage_t *stage);
int32_t ksnap_job_stage_parallelism(const ksnap_job_stage_t *stage);
/** @returns the operator spec as written ("libwc.so:split" or "count"). */
const char *ksnap_job_stage_operator(const ksnap_job_stage_t *stage);
/** @returns the position of @p stage in topological order. */
size_t ksnap_job_stage_index(const ksnap_job_stage_t *stage);

/** Inputs in the order written in stage.S.input. */
size_t ksnap_job_stage_input_cnt(const ksnap_job_stage_t *stage);
const ksnap_job_topic_t *ksnap_job_stage_input(const ksnap_job_stage_t *stage,
                                               size_t i);
/**
 * @returns the name of input @p i as written in stage.S.input, trimmed
 * ("source:TOPIC" or "stage:NAME"), the name an operator sees in
 * ksnap_record_t.input; NULL if out of range.
 */
const char *ksnap_job_stage_input_name(const ksnap_job_stage_t *stage,
                                       size_t i);

/**
 * Outputs: the stage's exchange topics first (of every output that a
 * stage reads), then the sink topics in the order written in
 * stage.S.output, then those of the named outputs.
 */
size_t ksnap_job_stage_output_cnt(const ksnap_job_stage_t *stage);
const ksnap_job_topic_t *ksnap_job_stage_output(const ksnap_job_stage_t *stage,
                                                size_t i);
/** @returns the named output that output topic @p i belongs to, NULL for
 * the default output (and out of range). */
const char *ksnap_job_stage_output_name(const ksnap_job_stage_t *stage,
                                        size_t i);
/** The named outputs (stage.S.output.NAME) in the order of the file. */
size_t ksnap_job_stage_named_output_cnt(const ksnap_job_stage_t *stage);
const char *ksnap_job_stage_named_output(const ksnap_job_stage_t *stage,
                                         size_t i);
/** @returns the stage's own string of named output @p name (valid while
 * the job lives), NULL if the stage has no such output. */
const char *ksnap_job_stage_output_find(const ksnap_job_stage_t *stage,
                                        const char *name);
/** @returns 1 if the default output goes somewhere (a sink or a reader
 * of stage:S); a stage with named outputs only may have none. */
int ksnap_job_stage_has_default_output(const ksnap_job_stage_t *stage);

/**
 * @returns 1 if the stage reads source topics only: its tasks are source
 * tasks, which start checkpoints on TRIGGER. A stage reading an exchange
 * topic aligns barriers instead (even if it also reads a source topic).
 */
int ksnap_job_stage_is_source(const ksnap_job_stage_t *stage);

/** @returns 1 if the stage writes at least one sink topic. */
int ksnap_job_stage_is_sink(const ksnap_job_stage_t *stage);

/** What a stage's task does with a record whose processing fails. */
typedef enum ksnap_job_tolerance_e {
  KSNAP_JOB_TOLERANCE_NONE = 0, /**< the task fails (errors.tolerance=none) */
  KSNAP_JOB_TOLERANCE_ALL,      /**< the record is skipped, its effects
                                     undone, and dead-lettered if the stage
                                     has a dead-letter topic (all) */
} ksnap_job_tolerance_t;

/** @returns the stage's errors.tolerance (its own key, else the job's). */
ksnap_job_tolerance_t ksnap_job_stage_tolerance(
    const ksnap_job_stage_t *stage);

/**
 * @returns the stage's dead-letter topic (errors.deadletterqueue.topic.name
 * of the stage, else of the job), or NULL: none set, set empty, or the
 * stage's tolerance is none (a dead-letter topic is used only with all,
 * as in Kafka Connect).
 */
const char *ksnap_job_stage_dlq_topic(const ksnap_job_stage_t *stage);

/** @returns 1 if the stage's dead-letter records carry the context
 * headers (errors.deadletterqueue.context.headers.enable). */
int ksnap_job_stage_dlq_headers(const ksnap_job_stage_t *stage);

/**
 * @returns 1 if the stage's tasks write Kafka transactions: it has a sink
 * topic or a dead-letter topic. Such a task commits its epoch's
 * transaction when the checkpoint completes, reports COMMITTED, and
 * replays an epoch whose commit was lost (plugin/PROTOCOL.md section 8).
 */
int ksnap_job_stage_is_transactional(const ksnap_job_stage_t *stage);

/** Writes "STAGE[task]" into @p buf (at most @p size bytes). */
void ksnap_job_task_id(const ksnap_job_stage_t *stage, int32_t task,
                       char *buf, size_t size);

/**
 * The assignment rule: @returns the task (0..@p parallelism-1) that reads
 * partition @p partition, i.e. partition mod parallelism.
 */
int32_t ksnap_job_partition_task(int32_t partition, int32_t parallelism);

/**
 * The partitions task @p task of @p stage reads of a topic with
 * @p partition_cnt partitions (for a source topic, the count from the
 * broker's metadata; for an exchange topic, ksnap_job_topic_partitions()):
 * those p with p mod P == task, ascending. Writes at most @p max of them
 * to @p partitions (may be NULL when @p max is 0).
 * @returns how many there are (possibly more than @p max).
 */
size_t ksnap_job_task_partitions(const ksnap_job_stage_t *stage, int32_t task,
                                 int32_t partition_cnt, int32_t *partitions,
                                 size_t max);

/**
 * The input channels of task @p task of @p stage: for each exchange input
 * (in input order), each partition the task reads (ascending), each
 * writer task 0..P_writer-1. These are what barrier alignment waits for.
 * Source topics have no channels (they carry no barriers).
 * @returns KSNAP_ERR_OK with *channelsp (malloc'd, free() it; NULL when
 * *cntp is 0) and *cntp; KSNAP_ERR_INVALID_ARG if @p task is out of
 * range; KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_job_task_channels(const ksnap_job_stage_t *stage,
                                    int32_t task,
                                    ksnap_job_channel_t **channelsp,
                                    size_t *cntp);

/** Topic accessors. */
const char *ksnap_job_topic_name(const ksnap_job_topic_t *topic);
ksnap_job_topic_kind_t ksnap_job_topic_kind(const ksnap_job_topic_t *topic);
/** @returns "source", "exchange" or "sink". */
const char *ksnap_job_topic_kind_name(ksnap_job_topic_kind_t kind);
/**
 * @returns the partition count of an exchange topic (ksnap creates it so);
 * -1 for source and sink topics (known only from the broker).
 */
int32_t ksnap_job_topic_partitions(const ksnap_job_topic_t *topic);
/** @returns the stage writing an exchange topic; NULL otherwise. */
const ksnap_job_stage_t *ksnap_job_topic_writer(const ksnap_job_topic_t *topic);
/**
 * @returns the parallelism every reader of an exchange topic has: its
 * records are partitioned for it (a key goes to a partition its reading
 * task owns); 0 for source and sink topics.
 */
int32_t ksnap_job_topic_reader_parallelism(const ksnap_job_topic_t *topic);
/** @returns the writer's named output an exchange topic carries; NULL for
 * the default output and for source and sink topics. */
const char *ksnap_job_topic_output(const ksnap_job_topic_t *topic);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_JOB_H */
