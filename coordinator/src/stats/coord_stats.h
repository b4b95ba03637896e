/**
 * @file coord_stats.h
 * @brief Checkpoint statistics kept by the coordinator (as Flink's
 *        CheckpointStatsTracker): per checkpoint and per task timings and
 *        sizes, running counts and a summary, rendered as JSON (REST
 *        endpoint), as a table (`ksnap checkpoints list`, like the
 *        checkpoint tab of Flink's web UI) and as Prometheus text.
 *
 * Times are milliseconds of the clock the coordinator is driven with
 * (wall clock in production: the table prints them as UTC). Per-task
 * timings are those the task reported in its ACK (microseconds).
 *
 * History: the newest `history` checkpoints are kept in detail (at least
 * those still in progress); counts and the summary cover all of them.
 * Besides the checkpoints, each task's latest HEARTBEAT gives its record
 * counts (records in and out of its running instance).
 *
 * Threading: none; owned by the coordinator's thread. Renderers only
 * read.
 */
#ifndef KSNAP_COORD_STATS_H
#define KSNAP_COORD_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ksnap/buf.h"
#include "ksnap/error.h"
#include "ksnap/job.h"
#include "ksnap/records.h"

typedef struct ksnap_coord_stats_s ksnap_coord_stats_t;

/** The ACK's unaligned_reason of a savepoint's task whose alignment reached
 *  the buffer limit and waited without memory: dropped the blocked
 *  channels' records and read them again after its (aligned) snapshot. */
#define KSNAP_STATS_REREAD 5

typedef enum ksnap_stats_status_e {
  KSNAP_STATS_IN_PROGRESS,
  KSNAP_STATS_COMPLETED,
  KSNAP_STATS_FAILED, /**< aborted: declined, expired, subsumed... */
} ksnap_stats_status_t;

/** One task's part of one checkpoint. */
typedef struct ksnap_task_stats_s {
  char task[KSNAP_JOB_TASK_ID_SIZE]; /**< "stage[i]" */
  bool acked;
  int64_t ack_ms; /**< when its ACK arrived */
  ksnap_timings_t timings;
  int64_t state_size;
  ksnap_record_errors_t errors; /**< failed records at its cut (ack_v3) */
  ksnap_align_stats_t align;    /**< its alignment (ack_v4) */
  /** A savepoint's task that waited without memory (unaligned_reason
   *  KSNAP_STATS_REREAD): the bytes it dropped at the alignment buffer
   *  limit and read again after its snapshot (its ACK's bytes_buffered;
   *  the bytes it held stayed under the limit and are not reported). */
  int64_t bytes_reread;
  /** A source task's positions at its cut (next offset to read per
   *  partition, owned copies); none for a task reading no source topic. */
  ksnap_source_offset_t *offsets;
  size_t offset_cnt;
} ksnap_task_stats_t;

/** A task's latest HEARTBEAT (of its newest generation): the records its
 *  running instance took in and sent out since it started. */
typedef struct ksnap_task_live_s {
  char task[KSNAP_JOB_TASK_ID_SIZE]; /**< "stage[i]" */
  int64_t generation;
  int64_t heartbeat_ms; /**< when the coordinator received it */
  int64_t records_in;
  int64_t records_out;
} ksnap_task_live_t;

/** One checkpoint (read-only view). */
typedef struct ksnap_ckpt_stats_s {
  int64_t id;
  ksnap_stats_status_t status;
  bool is_savepoint;
  int64_t trigger_ms;
  int64_t end_ms;   /**< completion or failure; -1 while in progress */
  char *failure;    /**< failure reason (FAILED only) */
  char *external_path; /**< a completed savepoint's directory, or NULL */
  int64_t state_size;     /**< sum over the tasks that acked */
  int64_t bytes_buffered; /**< sum over the tasks that acked */
  ksnap_record_errors_t errors; /**< sum over the tasks that acked */
  size_t unaligned_cnt;     /**< tasks that switched to unaligned */
  int32_t unaligned_reason; /**< the highest of their reasons (ack_v4) */
  int64_t paused_us;        /**< longest partition pause of a task */
  size_t reread_cnt;        /**< tasks that waited without memory */
  int64_t bytes_reread;     /**< the bytes they dropped and read again */
  size_t acked_cnt;
  size_t task_cnt;
  ksnap_task_stats_t *tasks; /**< task_cnt entries */
} ksnap_ckpt_stats_t;

/** min/avg/max of one quantity over the completed checkpoints. */
typedef struct ksnap_stats_minmax_s {
  int64_t cnt, min, max, sum;
} ksnap_stats_minmax_t;

/** Counts and summary over every checkpoint ever reported. */
typedef struct ksnap_stats_summary_s {
  int64_t triggered, in_progress, completed, failed, restored;
  /** Completed checkpoints in which a task switched to unaligned on
   *  aligned-checkpoint-timeout, or on the alignment buffer limit. */
  int64_t unaligned_timeout, unaligned_buffer_limit;
  ksnap_stats_minmax_t duration_ms, state_size, bytes_buffered;
  int64_t last_completed_id, last_failed_id; /**< or KSNAP_CHECKPOINT_NONE */
  /** The latest completed checkpoint (kept here when the history drops
   *  it): end-to-end duration, state size, bytes buffered, the longest
   *  task alignment, completion time. */
  int64_t last_duration_ms, last_size, last_buffered, last_alignment_us;
  int64_t last_end_ms;
  int64_t last_restored_id, last_restored_ms, last_restored_generation;
  /** A bounded job that finished (JOB_FINISHED written): its final
   *  checkpoint, else KSNAP_CHECKPOINT_NONE. */
  int64_t finished_id;
  /** The failed-record counts of the latest completed checkpoint: its
   *  sum, and per task (kept here when the history drops it): each
   *  task's part of it (timings, sizes, the records it tolerated and
   *  dead-lettered up to its cut). */
  ksnap_record_errors_t last_errors;
  ksnap_task_stats_t *last_tasks;
  size_t last_task_cnt;
} ksnap_stats_summary_t;

/** One member of the job (a worker started with --join) as the
 *  coordinator's member table has it (coord_stats_members.c). */
typedef struct ksnap_member_stats_s {
  char id[128];   /**< its instance id */
  char host[128];
  int32_t slots;  /**< its capacity in tasks (worker.slots) */
  int32_t tasks;  /**< tasks it owns now */
} ksnap_member_stats_t;

/** The members and the job's capacity, as of the coordinator's latest
 *  look (unknown until ksnap_coord_stats_members() is called: a table
 *  read from the history has no member view). */
typedef struct ksnap_members_view_s {
  bool known;
  ksnap_member_stats_t *members;
  size_t cnt, cap;
  int64_t slots;          /**< the members' slots together */
  int64_t tasks_vacant;   /**< tasks no instance owns (waiting) */
  int64_t slots_missing;  /**< tasks the members cannot take for want of
                               slots: > 0 means the job waits */
  int64_t removed;        /**< members removed (silent or lost) so far */
} ksnap_members_view_t;

/** @returns new statistics keeping @p history checkpoints, or NULL. */
ksnap_coord_stats_t *ksnap_coord_stats_new(size_t history);
void ksnap_coord_stats_destroy(ksnap_coord_stats_t *stats);

/** Events (KSNAP_ERR_NOMEM, or KSNAP_ERR_NOT_FOUND for an unknown id or
 *  task: the statistics are then unchanged). */
ksnap_err_t ksnap_coord_stats_triggered(ksnap_coord_stats_t *stats,
                                        int64_t id, int64_t trigger_ms,
                                        bool is_savepoint,
                                        const char *const *tasks,
                                        size_t task_cnt);
ksnap_err_t ksnap_coord_stats_acked(ksnap_coord_stats_t *stats, int64_t id,
                                    const char *task, int64_t ack_ms,
                                    const ksnap_timings_t *timings,
                                    int64_t state_size,
                                    const ksnap_record_errors_t *errors);
/** How task @p task aligned checkpoint @p id (its ACK's ack_v4 fields; after
 *  ksnap_coord_stats_acked()). NOT_FOUND as above. */
ksnap_err_t ksnap_coord_stats_aligned(ksnap_coord_stats_t *stats, int64_t id,
                                      const char *task,
                                      const ksnap_align_stats_t *align);
/** "-" (aligned), "unaligned", "timeout", "buffer-limit" or "trigger"
 *  (snapshot-on-trigger: the TRIGGER came first): why a task
 *  switched to unaligned (ksnap_align_stats_t.unaligned_reason). */
const char *ksnap_stats_unaligned_name(int32_t reason);
ksnap_err_t ksnap_coord_stats_completed(ksnap_coord_stats_t *stats,
                                        int64_t id, int64_t end_ms);
/** Completed savepoint @p id's directory URL (copied; ignored for a
 *  checkpoint, whose place is implied: chk-<id>/). */
ksnap_err_t ksnap_coord_stats_external_path(ksnap_coord_stats_t *stats,
                                            int64_t id, const char *path);
ksnap_err_t ksnap_coord_stats_failed(ksnap_coord_stats_t *stats, int64_t id,
                                     int64_t end_ms, const char *reason);
/** A task's HEARTBEAT arrived at @p now_ms: its record counts replace
 *  those of its last one, unless it is of an older generation (a stale
 *  instance). KSNAP_ERR_NOMEM for a new task without memory. */
ksnap_err_t ksnap_coord_stats_heartbeat(ksnap_coord_stats_t *stats,
                                        int64_t now_ms,
                                        const ksnap_heartbeat_t *hb);
/** The member table now (@p members copied, replacing the last one),
 *  with the tasks without owner, the slots missing and the members
 *  removed so far. KSNAP_ERR_NOMEM (the view is then unchanged). */
ksnap_err_t ksnap_coord_stats_members(ksnap_coord_stats_t *stats,
                                      const ksnap_member_stats_t *members,
                                      size_t cnt, int64_t tasks_vacant,
                                      int64_t slots_missing, int64_t removed);
/** The member view (known = false before the first call). */
const ksnap_members_view_t *ksnap_coord_stats_members_view(
    const ksnap_coord_stats_t *stats);

/** Task @p task's source positions in its ACK of checkpoint @p id
 *  (copied: the source lag of coord_stats_lag.c is measured from those of
 *  the latest completed checkpoint). NOT_FOUND, NOMEM as above. */
ksnap_err_t ksnap_coord_stats_positions(ksnap_coord_stats_t *stats,
                                        int64_t id, const char *task,
                                        const ksnap_source_offset_t *offsets,
                                        size_t offset_cnt);
/** The end offset of a source partition (as the driver last read it from
 *  the broker), replacing the previous one. KSNAP_ERR_NOMEM. */
ksnap_err_t ksnap_coord_stats_end_offset(ksnap_coord_stats_t *stats,
                                         const char *topic,
                                         int32_t partition, int64_t end);
/** The source partitions of the latest completed checkpoint (those whose
 *  end offsets the lag needs), over its tasks: @returns entry @p i or
 *  NULL. */
const ksnap_source_offset_t *ksnap_coord_stats_source_at(
    const ksnap_coord_stats_t *stats, size_t i);
/** Source lag of task @p task: the sum over its partitions of the end
 *  offset minus the position the latest completed checkpoint recorded for
 *  it (never below 0). @returns false (no lag) for a task that reads no
 *  source topic, that is not in that checkpoint, or while a partition's
 *  end offset is unknown. */
bool ksnap_coord_stats_task_lag(const ksnap_coord_stats_t *stats,
                                const char *task, int64_t *lagp);

/** The job finished with final checkpoint @p id (JOB_FINISHED). */
void ksnap_coord_stats_finished(ksnap_coord_stats_t *stats, int64_t id);
/** The job was restored (generation) from @p id (or NONE) at @p ms. */
void ksnap_coord_stats_restored(ksnap_coord_stats_t *stats,
                                int64_t generation, int64_t id, int64_t ms);

/**
 * Rebuilds statistics from the job's topics, for `ksnap checkpoints list
 * JOB` without a running coordinator: @p ctl are the records of
 * `<job>.ksnap.control` and @p acks those of `<job>.ksnap.acks`, each with
 * its Kafka message timestamp (@p ctl_ts, @p ack_ts: ACK and HEARTBEAT
 * times and the end of a checkpoint come from them; trigger times from
 * the TRIGGER record). Each task's record counts are its last HEARTBEAT's
 * (@p acks in topic order).
 * Order across the two topics does not matter. ACKs of checkpoints whose
 * TRIGGER is gone are skipped.
 * @returns KSNAP_ERR_OK with *statsp (ksnap_coord_stats_destroy() it), or
 * KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_coord_stats_from_history(
    const ksnap_job_t *job, const ksnap_control_record_t *ctl,
    const int64_t *ctl_ts, size_t ctl_cnt, const ksnap_ack_record_t *acks,
    const int64_t *ack_ts, size_t ack_cnt, size_t history,
    ksnap_coord_stats_t **statsp);

/** @returns checkpoint @p id if still in the history, else NULL. */
const ksnap_ckpt_stats_t *ksnap_coord_stats_get(
    const ksnap_coord_stats_t *stats, int64_t id);
/** The history, newest first: @returns entry @p i or NULL. */
const ksnap_ckpt_stats_t *ksnap_coord_stats_at(
    const ksnap_coord_stats_t *stats, size_t i);
const ksnap_stats_summary_t *ksnap_coord_stats_summary(
    const ksnap_coord_stats_t *stats);
/** The tasks heard from, in the order of their first HEARTBEAT: @returns
 *  entry @p i or NULL. */
const ksnap_task_live_t *ksnap_coord_stats_live_at(
    const ksnap_coord_stats_t *stats, size_t i);

const char *ksnap_stats_status_name(ksnap_stats_status_t status);

/**
 * Renderers append to @p out. JSON: {"counts": {...}, "summary": {...},
 * "latest": {...}, "tasks": [{heartbeat counts, and a source task's
 * "source_lag_records"}], "history": [{...
 * "tasks": [...]}]}. Table: the summary lines and one row per checkpoint,
 * newest first; its SYNC, ASYNC, ALIGNMENT and START DELAY are the
 * longest over the tasks that acknowledged. Detail: one row per task of
 * checkpoint @p id (KSNAP_ERR_NOT_FOUND if not in the history).
 * Prometheus (coord_stats_prom.c): text exposition format 0.0.4, every
 * metric labelled job="@p job", per-task ones also task, stage and
 * subtask. @returns KSNAP_ERR_OK or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_coord_stats_json(const ksnap_coord_stats_t *stats,
                                   ksnap_buf_t *out);
ksnap_err_t ksnap_coord_stats_table(const ksnap_coord_stats_t *stats,
                                    ksnap_buf_t *out);
ksnap_err_t ksnap_coord_stats_detail(const ksnap_coord_stats_t *stats,
                                     int64_t id, ksnap_buf_t *out);
ksnap_err_t ksnap_coord_stats_prometheus(const ksnap_coord_stats_t *stats,
                                         const char *job, ksnap_buf_t *out);

#endif /* KSNAP_COORD_STATS_H */
