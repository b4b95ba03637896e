/**
 * @file records.h
 * @brief Every record ksnap writes to Kafka or storage, as plain C structs,
 *        and their binary codecs (Avro inside a small envelope).
 *
 * Envelope: every encoded record is
 *
 *     byte 0   'K'      magic (KSNAP_RECORD_MAGIC)
 *     byte 1   type     ksnap_record_type_t: which schema follows
 *     byte 2   version  schema version of this type the writer used
 *     byte 3.. Avro binary of the record with schema <name>_v<version>.avsc
 *              (plugin/schemas/, namespace io.ksnap.v1, compiled into the
 *              library). Its first field, schema_version, repeats byte 2.
 *
 * One type per topic: the control and ack topics carry several kinds of
 * record, so their schemas are an envelope record whose `body` is a union
 * (ControlRecord: TRIGGER | COMPLETE | ABORT | RESTORE | ASSIGN |
 * JOB_FAILED | JOB_STOPPED | MEMBER | JOB_FINISHED; AckRecord: REGISTER | HEARTBEAT |
 * ACK | DECLINE | COMMITTED | REQUEST | FAILURE | MEMBER).
 *
 * Versioning rule, per record type: writers always write their own
 * (newest) version of the type, ksnap_codec_schema_version(); readers
 * accept every version <= theirs and refuse a newer one with
 * KSNAP_ERR_SCHEMA_VERSION ("schema version 2 is newer than this ksnap
 * supports (1)"). Adding a field with a default (or a union branch at the
 * end) is a minor change: add <name>_v<N+1>.avsc next to the old file
 * (which stays: old data is read with its own schema, and the decoder
 * fills the new field's default) and raise KSNAP_SCHEMA_VERSION if N+1
 * exceeds it. Removing or retyping a field is a major change: a new
 * namespace (io.ksnap.v2) and new topic names.
 *
 * Decoding never trusts the input: a buffer that ends early is
 * KSNAP_ERR_TRUNCATED ("ACK record truncated at byte 37 of 52"), a wrong
 * magic or type, a bad union/enum index, a negative or oversized length,
 * an invalid boolean, a NUL inside a string, or bytes after the record are
 * KSNAP_ERR_CORRUPT. Lengths are checked against the remaining buffer
 * before anything is allocated.
 *
 * Ownership: a decoded struct owns its strings and arrays (malloc); free
 * them with the matching _cleanup(). On a decode error the struct is left
 * zeroed and owns nothing. Encoders only read their input (it may point to
 * borrowed strings; do not _cleanup() such a struct). String fields must
 * not be NULL unless documented as optional.
 *
 * Threading: all codec functions are reentrant; the embedded schemas are
 * parsed once, on first use, thread-safely.
 */
#ifndef KSNAP_RECORDS_H
#define KSNAP_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ksnap/buf.h"
#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KSNAP_RECORD_MAGIC 'K'
/** The newest schema version of any record type this library embeds
 *  (each type's own: ksnap_codec_schema_version()). */
#define KSNAP_SCHEMA_VERSION 7
/** Bytes before the Avro body: magic, type, version. */
#define KSNAP_RECORD_HEADER_SIZE 3
/** "No checkpoint" in optional checkpoint-id fields. */
#define KSNAP_CHECKPOINT_NONE ((int64_t)-1)
/** The generation of a job that was never restored; each restore adds 1. */
#define KSNAP_GENERATION_FIRST ((int64_t)0)

/** Byte 1 of the envelope: which schema the body has. */
typedef enum ksnap_record_type_e {
  KSNAP_RECORD_BARRIER = 1,  /**< exchange topics, header ksnap.ctl */
  KSNAP_RECORD_CONTROL = 2,  /**< <job>.ksnap.control */
  KSNAP_RECORD_ACK = 3,      /**< <job>.ksnap.acks */
  KSNAP_RECORD_PROGRESS = 4, /**< <job>.ksnap.progress */
  KSNAP_RECORD_METADATA = 5, /**< chk-N/_metadata in storage */
} ksnap_record_type_t;

/** One parallel instance of a stage: stage[index]. */
typedef struct ksnap_task_id_s {
  char *stage;
  int32_t index;
} ksnap_task_id_t;

typedef enum ksnap_ckpt_mode_e {
  KSNAP_CKPT_ALIGNED = 0,
  KSNAP_CKPT_UNALIGNED = 1,
  KSNAP_CKPT_AT_LEAST_ONCE = 2,
} ksnap_ckpt_mode_t;

typedef struct ksnap_ckpt_options_s {
  ksnap_ckpt_mode_t mode;
  bool is_savepoint;
  /** control_v7, TRIGGER only (a BARRIER does not carry it): the job is
   *  draining (`ksnap savepoint --stop --drain`); a source task fixes the
   *  ends of its partitions at its current positions before its snapshot */
  bool drain;
} ksnap_ckpt_options_t;

/* ---------------------------------------------------------------- barrier */

typedef enum ksnap_barrier_kind_e {
  KSNAP_BARRIER_KIND_BARRIER = 0, /**< barrier N */
  KSNAP_BARRIER_KIND_CANCEL = 1,  /**< checkpoint N was cancelled */
} ksnap_barrier_kind_t;

typedef struct ksnap_barrier_s {
  ksnap_barrier_kind_t kind;
  int64_t checkpoint_id;
  int64_t timestamp_ms;
  ksnap_ckpt_options_t options;
  ksnap_task_id_t writer;
  int64_t generation;
} ksnap_barrier_t;

/* ------------------------------------------------------ control topic */

typedef enum ksnap_control_type_e {
  KSNAP_CONTROL_TRIGGER = 0,
  KSNAP_CONTROL_COMPLETE = 1,
  KSNAP_CONTROL_ABORT = 2,
  KSNAP_CONTROL_RESTORE = 3,
  KSNAP_CONTROL_ASSIGN = 4,     /**< control_v2 */
  KSNAP_CONTROL_JOB_FAILED = 5, /**< control_v3 */
  KSNAP_CONTROL_JOB_STOPPED = 6, /**< control_v4 */
  KSNAP_CONTROL_MEMBER = 7,      /**< control_v5 */
  KSNAP_CONTROL_JOB_FINISHED = 8, /**< control_v6 */
} ksnap_control_type_t;

typedef struct ksnap_trigger_s {
  int64_t checkpoint_id;
  int64_t timestamp_ms;
  ksnap_ckpt_options_t options; /**< includes the savepoint flag */
  int64_t generation;
} ksnap_trigger_t;

typedef struct ksnap_complete_s {
  int64_t checkpoint_id;
  int64_t generation;
  char *metadata_path;
} ksnap_complete_t;

typedef struct ksnap_abort_s {
  int64_t checkpoint_id;
  int64_t generation;
  char *reason;
} ksnap_abort_t;

/**
 * Which task instance owns a task (control_v2). An instance is one worker
 * process's run: the worker_id of its REGISTER records, unique per process
 * start. "" means vacant: the task's last owner missed its heartbeats and
 * any instance may take the task.
 */
typedef struct ksnap_task_owner_s {
  ksnap_task_id_t task;
  char *instance;
} ksnap_task_owner_t;

typedef struct ksnap_restore_s {
  int64_t generation;
  int64_t checkpoint_id; /**< KSNAP_CHECKPOINT_NONE: start empty */
  char *metadata_path;   /**< optional: NULL when there is none */
  /** control_v2: the owner of every task in this generation. Empty (a v1
   *  record, or a RESTORE written by a tool) means "no owner table": every
   *  running instance restores, as in v1. */
  ksnap_task_owner_t *owners;
  size_t owner_cnt;
} ksnap_restore_t;

/**
 * ASSIGN (control_v2): the coordinator's answer to a claim (a REGISTER
 * with claim set), and its record of every change of a task's owner that
 * no RESTORE carries. The owner table of a generation is its RESTORE's
 * table updated by the ASSIGN records after it.
 */
typedef struct ksnap_assign_s {
  int64_t generation;
  ksnap_task_id_t task;
  char *instance; /**< the task's owner now ("": vacant) */
  char *refused;  /**< the instance whose claim was refused, or "" */
} ksnap_assign_t;

/**
 * JOB_FAILED (control_v3): the job failed for good in @p generation (the
 * restart strategy gave up, or a failure that no restore can fix). Every
 * worker that reads it stops; a coordinator that replays it does not
 * resume the job unless asked to (a later RESTORE resumes it).
 */
typedef struct ksnap_job_failed_s {
  int64_t generation;
  int64_t timestamp_ms; /**< the coordinator's clock when it failed */
  char *cause;
} ksnap_job_failed_t;

/**
 * JOB_STOPPED (control_v4): the job was stopped with savepoint
 * @p checkpoint_id (`ksnap savepoint --stop`), whose directory is
 * @p savepoint_url, after every sink task committed it (or the wait for
 * the commits timed out: the next start from the savepoint repairs them).
 * Every worker that reads it stops and exits 0; a coordinator that replays
 * it does not run the job again unless started from a savepoint (a later
 * RESTORE resumes it).
 */
typedef struct ksnap_job_stopped_s {
  int64_t generation;
  int64_t timestamp_ms; /**< the coordinator's clock when it stopped */
  int64_t checkpoint_id;
  char *savepoint_url;
} ksnap_job_stopped_t;

/**
 * MEMBER (control_v5): the coordinator's record of a member, a worker
 * started with --join that the coordinator assigns tasks to (PROTOCOL.md
 * section 11.5): @p present, it joined with @p slots (its capacity in
 * tasks) on @p host; not present, it left the job (@p reason: it missed
 * its heartbeats) and may never come back (a removed member that reads it
 * stops). A restarted coordinator rebuilds the members from these.
 */
typedef struct ksnap_member_s {
  int64_t generation;
  char *worker_id;
  char *host;
  int32_t slots;
  bool present;
  char *reason; /**< "" when present */
} ksnap_member_t;

/**
 * JOB_FINISHED (control_v6): every task's input ended (a bounded job,
 * source.stop-at=latest), the final checkpoint @p checkpoint_id (one
 * every task acknowledged with input_ended) completed and every sink task
 * committed it (plugin/PROTOCOL.md section 5.9). Every worker that reads
 * it stops and exits 0; a coordinator that replays it writes nothing and
 * exits 0 (a later RESTORE, from a savepoint, resumes the job).
 */
typedef struct ksnap_job_finished_s {
  int64_t generation;
  int64_t timestamp_ms; /**< the coordinator's clock when it finished */
  int64_t checkpoint_id;
} ksnap_job_finished_t;

/** One record of the control topic. */
typedef struct ksnap_control_record_s {
  ksnap_control_type_t type;
  union {
    ksnap_trigger_t trigger;
    ksnap_complete_t complete;
    ksnap_abort_t abort;
    ksnap_restore_t restore;
    ksnap_assign_t assign;
    ksnap_job_failed_t job_failed;
    ksnap_job_stopped_t job_stopped;
    ksnap_member_t member;
    ksnap_job_finished_t job_finished;
  } u;
} ksnap_control_record_t;

/* ------------------------------------------------ snapshots (ACK, meta) */

typedef struct ksnap_state_handle_s {
  char *path;
  int64_t size;
  char *checksum; /**< "crc32c:<hex>" or "sha256:<hex>" */
  int32_t key_group_start;
  int32_t key_group_end;
} ksnap_state_handle_t;

typedef struct ksnap_source_offset_s {
  char *topic;
  int32_t partition;
  int64_t offset;
} ksnap_source_offset_t;

/** Position of channel (topic, partition, writer): see plugin/PROTOCOL.md 6.1. */
typedef struct ksnap_channel_pos_s {
  char *topic;
  int32_t partition;
  ksnap_task_id_t writer;
  int64_t off_c; /**< first offset of this writer not in the state */
  bool passed;   /**< the writer's barrier was consumed */
} ksnap_channel_pos_t;

typedef struct ksnap_timings_s {
  int64_t sync_us;
  int64_t async_us;
  int64_t alignment_us;
  int64_t start_delay_us;
  int64_t bytes_buffered;
} ksnap_timings_t;

/** What one task contributed to a checkpoint. */
typedef struct ksnap_task_snapshot_s {
  ksnap_task_id_t task;
  ksnap_state_handle_t *handles;
  size_t handle_cnt;
  ksnap_source_offset_t *offsets;
  size_t offset_cnt;
  ksnap_channel_pos_t *channels;
  size_t channel_cnt;
  ksnap_timings_t timings;
} ksnap_task_snapshot_t;

/* ------------------------------------------------------------ ack topic */

typedef enum ksnap_ack_type_e {
  KSNAP_ACKT_REGISTER = 0,
  KSNAP_ACKT_HEARTBEAT = 1,
  KSNAP_ACKT_ACK = 2,
  KSNAP_ACKT_DECLINE = 3,
  KSNAP_ACKT_COMMITTED = 4,
  KSNAP_ACKT_REQUEST = 5, /**< an operator's request (CLI -> coordinator) */
  KSNAP_ACKT_FAILURE = 6, /**< ack_v3: a task failed */
  KSNAP_ACKT_MEMBER = 7,  /**< ack_v5: a member's announcement */
} ksnap_ack_type_t;

/**
 * REGISTER: a task instance (worker_id: unique per worker process start)
 * announces itself. With claim set (ack_v2) it asks to own the task and
 * has done nothing yet: it waits for an ASSIGN or a RESTORE that names it.
 * Without, it owns the task (or takes a vacant one), has opened it in
 * @p generation and is ready for checkpoints.
 */
typedef struct ksnap_register_s {
  ksnap_task_id_t task;
  char *worker_id;
  char *host;
  int32_t pid;
  int64_t generation;
  bool claim; /**< ack_v2; false in v1 records */
} ksnap_register_t;

typedef struct ksnap_heartbeat_s {
  ksnap_task_id_t task;
  int64_t generation;
  int64_t timestamp_ms;
  int64_t records_in;
  int64_t records_out;
  /** ack_v6 (false in older records): the task's input ended and its
   *  operator's finish ran in this generation. */
  bool input_ended;
} ksnap_heartbeat_t;

/** ack_v3 (0 in older records): a task's counts, at its snapshot's cut,
 * of the records whose processing failed and that it tolerated
 * (errors.tolerance=all), and of those it wrote to its dead-letter topic.
 * They are part of the task's state (restored with it), so they count
 * each failed record up to the cut once, whatever was restored. */
typedef struct ksnap_record_errors_s {
  int64_t failed;
  int64_t dead_lettered;
} ksnap_record_errors_t;

/** ack_v4 (0 in older records): how a task's alignment of the checkpoint
 * went. */
typedef struct ksnap_align_stats_s {
  /** 0 aligned; before every barrier came: 1 unaligned mode, 2
   *  aligned-checkpoint-timeout, 3 alignment buffer limit, 4 its TRIGGER
   *  came first (snapshot-on-trigger); 5 aligned all the same, a
   *  savepoint's alignment reached the buffer limit and waited without
   *  memory (the ACK's bytes_buffered are then the bytes it dropped and
   *  read again) (the numbers of ksnap_unaligned_reason_t) */
  int32_t unaligned_reason;
  int64_t paused_us; /**< longest time one input partition was paused */
} ksnap_align_stats_t;

typedef struct ksnap_ack_s {
  int64_t checkpoint_id;
  int64_t generation;
  ksnap_task_snapshot_t snapshot; /**< includes the task id */
  ksnap_record_errors_t errors;   /**< ack_v3 */
  ksnap_align_stats_t align;      /**< ack_v4 */
  /** ack_v6 (false in older records): at the checkpoint's cut the task's
   *  input had ended and its finish had run (its snapshot holds that); a
   *  checkpoint every task acknowledged so is the job's final one. */
  bool input_ended;
} ksnap_ack_t;

typedef struct ksnap_decline_s {
  int64_t checkpoint_id;
  ksnap_task_id_t task;
  int64_t generation;
  char *reason;
  /** ack_v2 (false in v1): the task failed with this checkpoint; the job
   *  restores and the decline is not counted as a checkpoint failure. */
  bool task_failed;
} ksnap_decline_t;

typedef struct ksnap_committed_s {
  int64_t checkpoint_id;
  ksnap_task_id_t task;
  int64_t generation;
} ksnap_committed_t;

/** What an operator asks the coordinator for (REQUEST record). */
typedef enum ksnap_request_kind_e {
  KSNAP_REQUEST_CHECKPOINT = 0,     /**< `ksnap checkpoint trigger` */
  KSNAP_REQUEST_SAVEPOINT = 1,      /**< `ksnap savepoint` */
  KSNAP_REQUEST_SAVEPOINT_STOP = 2, /**< `ksnap savepoint --stop` */
  KSNAP_REQUEST_RESTORE = 3,        /**< restore from the latest checkpoint */
  KSNAP_REQUEST_SAVEPOINT_DRAIN = 4, /**< `ksnap savepoint --stop --drain`
                                          (ack_v7) */
} ksnap_request_kind_t;

/**
 * A manual request on the ack topic: the one channel from operators to a
 * running coordinator that needs no network port of its own. The
 * coordinator only acts on requests written after it started (it reads
 * the ack topic from its end), so an old request is never replayed.
 */
typedef struct ksnap_request_s {
  ksnap_request_kind_t kind;
  char *requester; /**< free text, e.g. "ksnap-cli@host:pid" */
  int64_t timestamp_ms;
} ksnap_request_t;

/**
 * FAILURE (ack_v3): a task instance failed in @p generation; it does
 * nothing more until a RESTORE. @p retriable is false when a restore
 * cannot help (the task cannot start with this configuration): the
 * coordinator then fails the job at once.
 */
typedef struct ksnap_task_failure_s {
  ksnap_task_id_t task;
  char *worker_id; /**< the failed instance */
  int64_t generation;
  char *reason;
  bool retriable;
} ksnap_task_failure_t;

/**
 * MEMBER (ack_v5): a worker started with --join announces itself as a
 * member of the job (instance @p worker_id, unique per process start),
 * able to run @p slots tasks; sent at its start and every
 * heartbeat.interval after (its heartbeat). The coordinator assigns it
 * tasks in RESTORE owner tables and ASSIGN records.
 */
typedef struct ksnap_member_hb_s {
  char *worker_id;
  char *host;
  int32_t pid;
  int32_t slots;
  int64_t timestamp_ms;
} ksnap_member_hb_t;

/** One record of the ack topic. */
typedef struct ksnap_ack_record_s {
  ksnap_ack_type_t type;
  union {
    ksnap_register_t reg;
    ksnap_heartbeat_t heartbeat;
    ksnap_ack_t ack;
    ksnap_decline_t decline;
    ksnap_committed_t committed;
    ksnap_request_t request;
    ksnap_task_failure_t failure;
    ksnap_member_hb_t member;
  } u;
} ksnap_ack_record_t;

/* ------------------------------------------------- progress, metadata */

/** Progress topic: sink_task committed transaction_id in generation. */
typedef struct ksnap_sink_progress_s {
  ksnap_task_id_t sink_task;
  int64_t transaction_id; /**< the checkpoint id of the transaction */
  int64_t generation;
} ksnap_sink_progress_t;

/** The _metadata object of a completed checkpoint. */
typedef struct ksnap_checkpoint_meta_s {
  char *job;
  int64_t checkpoint_id;
  int64_t generation;
  int64_t parent_id; /**< KSNAP_CHECKPOINT_NONE for the first one */
  int64_t timestamp_ms;
  bool is_savepoint;
  ksnap_task_snapshot_t *tasks;
  size_t task_cnt;
} ksnap_checkpoint_meta_t;

/* --------------------------------------------------------------- codecs */

/**
 * Encoders: replace the contents of @p out with the encoded record.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_INVALID_ARG (a NULL required string, an
 * enum out of range, a malformed checksum, a negative optional id other
 * than KSNAP_CHECKPOINT_NONE) or KSNAP_ERR_NOMEM.
 *
 * Decoders: fill @p out (which need not be initialised) from @p buf.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_TRUNCATED, KSNAP_ERR_CORRUPT,
 * KSNAP_ERR_SCHEMA_VERSION or KSNAP_ERR_NOMEM; @p out owns nothing then.
 */
ksnap_err_t ksnap_codec_barrier_encode(const ksnap_barrier_t *barrier,
                                       ksnap_buf_t *out, ksnap_error_t *error);
ksnap_err_t ksnap_codec_barrier_decode(const void *buf, size_t len,
                                       ksnap_barrier_t *out,
                                       ksnap_error_t *error);

ksnap_err_t ksnap_codec_control_encode(const ksnap_control_record_t *rec,
                                       ksnap_buf_t *out, ksnap_error_t *error);
ksnap_err_t ksnap_codec_control_decode(const void *buf, size_t len,
                                       ksnap_control_record_t *out,
                                       ksnap_error_t *error);

ksnap_err_t ksnap_codec_ack_encode(const ksnap_ack_record_t *rec,
                                   ksnap_buf_t *out, ksnap_error_t *error);
ksnap_err_t ksnap_codec_ack_decode(const void *buf, size_t len,
                                   ksnap_ack_record_t *out,
                                   ksnap_error_t *error);

ksnap_err_t ksnap_codec_progress_encode(const ksnap_sink_progress_t *progress,
                                        ksnap_buf_t *out,
                                        ksnap_error_t *error);
ksnap_err_t ksnap_codec_progress_decode(const void *buf, size_t len,
                                        ksnap_sink_progress_t *out,
                                        ksnap_error_t *error);

ksnap_err_t ksnap_codec_meta_encode(const ksnap_checkpoint_meta_t *meta,
                                    ksnap_buf_t *out, ksnap_error_t *error);
ksnap_err_t ksnap_codec_meta_decode(const void *buf, size_t len,
                                    ksnap_checkpoint_meta_t *out,
                                    ksnap_error_t *error);

/**
 * @returns the schema version this library writes for @p type (the newest
 * it reads), or 0 for an unknown type.
 */
int ksnap_codec_schema_version(ksnap_record_type_t type);

/**
 * Reads only the envelope of @p buf: its type and version, so a consumer
 * can dispatch. Checks the magic and that the version is not newer.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_TRUNCATED, KSNAP_ERR_CORRUPT or
 * KSNAP_ERR_SCHEMA_VERSION.
 */
ksnap_err_t ksnap_codec_peek(const void *buf, size_t len,
                             ksnap_record_type_t *typep, int *versionp,
                             ksnap_error_t *error);

/**
 * Decodes any ksnap record (its type is read from the envelope) and
 * renders it as Avro JSON, for inspection tools and debug logs, e.g.
 * {"schema_version": 1, "body": {"io.ksnap.v1.Ack": {...}}}.
 * @param json set to a malloc'd NUL-terminated string (free() it).
 * @returns what the decoders return.
 */
ksnap_err_t ksnap_codec_to_json(const void *buf, size_t len, char **json,
                                ksnap_error_t *error);

/** Display names: "BARRIER", "TRIGGER", "ACK", "ALIGNED"... (static). */
const char *ksnap_record_type_name(ksnap_record_type_t type);
const char *ksnap_control_type_name(ksnap_control_type_t type);
const char *ksnap_ack_type_name(ksnap_ack_type_t type);
const char *ksnap_request_kind_name(ksnap_request_kind_t kind);
const char *ksnap_ckpt_mode_name(ksnap_ckpt_mode_t mode);

/** Cleanups free what a decoder allocated; NULL is a no-op. */
void ksnap_task_id_cleanup(ksnap_task_id_t *task);
void ksnap_task_snapshot_cleanup(ksnap_task_snapshot_t *snapshot);
void ksnap_barrier_cleanup(ksnap_barrier_t *barrier);
void ksnap_control_record_cleanup(ksnap_control_record_t *rec);
void ksnap_ack_record_cleanup(ksnap_ack_record_t *rec);
void ksnap_sink_progress_cleanup(ksnap_sink_progress_t *progress);
void ksnap_checkpoint_meta_cleanup(ksnap_checkpoint_meta_t *meta);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_RECORDS_H */
