/*
 * The task's private struct, shared by its files:
 *   task.c             state machine, processing loop, control messages
 *   task_open.c        opening/closing one run: state, outputs, inputs
 *   replay.c           epoch replay of a sink task on restore (replay.h)
 *   replay_segment.c   the replay of one segment of input
 *   restore.c          a checkpoint's _metadata and the stage's state
 *   task_input.c       records from the source / exchange reader, aligner
 *                      actions
 *   task_input_open.c  opening the inputs: gate, channel positions, reader
 *   task_snap.c        sync phase (task thread) and async phase (snap pool)
 *   task_commit.c      COMPLETE: sink commits, source group commits
 *   task_ctx.c         the operator context (ksnap/context.h), one record
 *                      through the operator
 *   task_storage.c     the job's checkpoint storage from its properties
 *
 * Calls go one way: a file calls only files of lower layers.
 *   6  task.c
 *   5  task_open.c        task_commit.c
 *   4  replay.c
 *   3  replay_segment.c   task_input.c
 *   2  task_input_open.c  task_snap.c
 *   1  restore.c          task_storage.c
 *   0  task_ctx.c
 *
 * Fields are owned by the processing thread unless marked [mu] (guarded
 * by task->mu) or [atomic].
 */
#ifndef KSNAP_TASK_INT_H
#define KSNAP_TASK_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "input/aligner.h"
#include "exchange/exchange.h"
#include "ksnap/operator.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"
#include "ksnap/state.h"
#include "sink/two_phase.h"
#include "source/source.h"
#include "task.h"

typedef enum ksnap__task_state_e {
  KSNAP__TASK_CREATED = 0,
  KSNAP__TASK_OPENING,
  KSNAP__TASK_RUNNING,
  KSNAP__TASK_RESTORING,
  KSNAP__TASK_FAILED,
  KSNAP__TASK_CLOSED,
  KSNAP__TASK_WAITING,
  KSNAP__TASK_REPLACED,
} ksnap__task_state_t;

/* Ownership of the task by this instance (task.c). */
typedef enum ksnap__task_own_e {
  KSNAP__OWN_NONE = 0,  /* not the owner: claiming, or not started */
  KSNAP__OWN_TENTATIVE, /* took the task with no decision of the
                         * coordinator (before it decides owners) */
  KSNAP__OWN_DECIDED,   /* a RESTORE or ASSIGN named this instance */
} ksnap__task_own_t;

struct ksnap_operator_ctx_s {
  ksnap_task_t *task;
};

typedef struct ksnap__timer_s {
  int64_t time_ms;
  void *key;
  size_t klen;
} ksnap__timer_t;

/** Source positions of a snapshot, committed to the group on COMPLETE. */
typedef struct ksnap__srcpos_s {
  int64_t id;
  ksnap_kafka_pos_t *pos;
  size_t n;
} ksnap__srcpos_t;

typedef struct ksnap__msg_s {
  struct ksnap__msg_s *next;
  size_t len;
  uint8_t data[];
} ksnap__msg_t;

#define KSNAP__TASK_MAX_SRCPOS 16
#define KSNAP__TASK_MAX_COUNTERS 16
/** Reserved keyed map state holding the keyed timers: record key ->
 * (time as 8 bytes big-endian -> ""), so they are in every snapshot. */
#define KSNAP__TIMER_STATE "ksnap.timers"


struct ksnap_task_s {
  /* identity (immutable) */
  const ksnap_conf_t *conf;
  const ksnap_job_t *job;
  const ksnap_job_stage_t *stage;
  int32_t index, parallelism;
  char id[KSNAP_JOB_TASK_ID_SIZE];
  char *job_dir;
  int is_source, is_sink, max_par;
  ksnap_control_client_t *cc;
  ksnap__snap_pool_t *pool;
  ksnap_operator_handle_t *oph;
  const ksnap_operator_t *ops;
  struct ksnap_operator_ctx_s ctx;

  /* processing thread */
  ksnap__task_state_t st;
  void *inst;
  int opened;
  const ksnap_record_t *cur; /* the record being processed */
  const void *cur_key;       /* key of the record / timer */
  size_t cur_klen;
  int key_set;
  int64_t base_id, base_gen;
  ksnap_state_t *state;
  ksnap_source_t *source;
  ksnap_exchange_reader_t *reader;
  ksnap_gate_t *gate;
  ksnap_aligner_t *al;
  ksnap_exchange_t *writer;
  const char *ex_topic; /* the stage's exchange output, NULL if none */
  int32_t ex_parts, ex_reader_p;
  ksnap_2pc_t *sink; /* the sink's two-phase commit, NULL if not a sink */
  int64_t last_trigger;  /* last checkpoint id started here */
  int64_t barrier_ts;    /* trigger timestamp of the aligning checkpoint */
  ksnap_ckpt_options_t barrier_opts;
  ksnap__srcpos_t srcpos[KSNAP__TASK_MAX_SRCPOS];
  size_t nsrcpos;
  ksnap__timer_t *timers;
  size_t ntimers, captimers;
  int timer_state; /* id of the map state KSNAP__TIMER_STATE */
  char *counter_names[KSNAP__TASK_MAX_COUNTERS];

  /* shared */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ksnap__msg_t *qhead, *qtail;        /* [mu] control records */
  int inflight;                        /* [mu] async jobs running */
  atomic_llong gen;
  atomic_llong records_in, records_out;
  atomic_llong counters[KSNAP__TASK_MAX_COUNTERS];
  atomic_int stop, failed, running, replaced;
  atomic_int alive; /* RUNNING or RESTORING: heartbeats go out */
  pthread_t thread;
  int thread_started;
  int start_claim;      /* start by claiming the task (set before start) */
  const char *instance; /* this worker process's instance id (borrowed) */
  ksnap__task_own_t own; /* what this instance knows of its ownership */
};

/* task_open.c: one run's inputs, outputs and state (see its top) */
ksnap_err_t ksnap__task_open_io(ksnap_task_t *task, int64_t gen,
                                int64_t base_id, ksnap_error_t *error);
void ksnap__task_close_io(ksnap_task_t *task);

/* task_snap.c */
ksnap_err_t ksnap__task_snapshot(ksnap_task_t *task, int64_t id,
                                 int64_t trigger_ts,
                                 const ksnap_ckpt_options_t *opts,
                                 const ksnap_action_t *act,
                                 ksnap_error_t *error);
/** DECLINE(id); @p task_failed: the task fails with it (the coordinator
 *  restores the job and does not count the decline). */
void ksnap__task_decline(ksnap_task_t *task, int64_t id, const char *reason,
                         bool task_failed);
void ksnap__task_wait_async(ksnap_task_t *task);

/* task_commit.c */
ksnap_err_t ksnap__task_complete(ksnap_task_t *task, int64_t id,
                                 ksnap_error_t *error);

/* task_ctx.c */
/** One record through the operator (the live loop and the epoch replay). */
ksnap_err_t ksnap__task_process(ksnap_task_t *task, const ksnap_record_t *rec,
                                ksnap_error_t *error);
/**
 * The exchange partition of @p key (ksnap/context.h's rule): topic of @p n
 * partitions read by a stage of parallelism @p p, so that reading task
 * (partition mod p) owns the key's key group; @p seq spreads records
 * without key.
 */
int32_t ksnap__exchange_partition(const void *key, size_t klen, int32_t n,
                                  int32_t p, int max_par, int64_t seq);
void ksnap__task_fire_timers(ksnap_task_t *task, int64_t now_ms);
void ksnap__task_free_timers(ksnap_task_t *task);
ksnap_err_t ksnap__task_add_timer(ksnap_task_t *task, int64_t time_ms,
                                  const void *key, size_t klen,
                                  ksnap_error_t *error);
void ksnap__task_set_current(ksnap_task_t *task, const ksnap_record_t *rec,
                             const void *key, size_t klen);

#endif /* KSNAP_TASK_INT_H */
