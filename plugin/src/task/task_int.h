/*
 * The task runtime's private struct and its map. One task is one parallel
 * instance of a stage, run by one processing thread (task.c).
 *
 * Files, by concern:
 *   task.c            the state machine, ownership, the processing thread
 *                     and its control queue; TRIGGER/COMPLETE/ABORT/RESTORE
 *   task_open.c       opening and closing one run: state, outputs (exchange
 *                     writer; sink: fence, epoch replay, first epoch),
 *                     restored state, inputs, in that order
 *   task_commit.c     COMPLETE(N) and ABORT(N) at the task
 *   replay.c          the epoch replay of a sink task's lost commit
 *   replay_segment.c  one segment of it, from exchange or source input
 *   task_poll.c       the live input loop: records, aligner actions
 *   task_snap.c       a snapshot's sync phase (processing thread) and async
 *                     phase (snapshot pool); DECLINE
 *   task_input.c      the inputs: opening, gate, channel positions, decoding
 *                     exchange records, what snapshots read of the inputs
 *   restore.c         a checkpoint's _metadata and the stage's state in it
 *   task_record.c     one record through the operator, by the stage's
 *                     errors.tolerance: undone, counted, dead-lettered
 *   task_timer.c      the operator's processing-time timers
 *   task_ctx.c        the operator, its callbacks and context
 *                     (ksnap/context.h), its state, emits held for a record
 *   task_out.c        the exchange output: writer, partition, barriers
 *   task_storage.c    the job's checkpoint storage from its properties
 * The sink's two-phase commit is connectors/src/sink/two_phase.h.
 *
 * Calls go one way: a file calls only the files below it in this list
 * (then the adapters of connectors/ and the core below them).
 *   9  task.c            -> task_open task_commit task_poll task_snap
 *                           task_timer task_ctx
 *   8  task_open.c       -> replay restore task_input task_snap task_record
 *                           task_timer task_ctx task_out task_storage
 *      task_commit.c     -> task_poll task_snap task_ctx
 *   7  replay.c          -> replay_segment restore task_timer task_ctx
 *                           task_out task_storage
 *   6  task_poll.c       -> task_snap task_input task_record task_ctx
 *                           task_out
 *      replay_segment.c  -> task_input restore task_record
 *   5  task_snap.c       -> task_input task_record task_ctx task_out
 *                           task_storage
 *   4  task_input.c      -> restore
 *   3  restore.c         -> task_timer task_ctx
 *      task_record.c     -> task_timer task_ctx
 *   2  task_timer.c      -> task_ctx
 *   1  task_ctx.c        -> task_out
 *   0  task_out.c  task_storage.c
 * The live loop (task_poll.c) and the epoch replay (replay_segment.c)
 * share the processing of one record (task_record.c) and the decoding of
 * exchange records (task_input.c); neither calls the other.
 *
 * State: struct ksnap_task_s holds the task's identity (immutable after
 * ksnap_task_new(), read by every file), the run's generation (written by
 * task.c, read by every file), and one sub-struct per concern, whose type
 * its module's header defines and which only the files of that concern
 * touch; the other files call their functions:
 *   life  task.c                     (task_int.h)
 *   in    task_input.c, task_poll.c  (task_input.h)
 *   out   task_out.c                 (task_out.h)
 *   snap  task_snap.c                (task_snap.h)
 *   op    task_ctx.c, task_timer.c   (task_ctx.h)
 *   errs  task_record.c              (task_record.h)
 *   sink  a handle: its state is private to sink/two_phase.c
 * Threading: the processing thread owns all of it, but the control queue
 * (life.mu: the control client's thread posts), the count of async phases
 * (snap.mu: the snapshot pool), the atomics (read by any thread), and the
 * sink's pending transactions (two_phase.c's mutex).
 */
#ifndef KSNAP_TASK_INT_H
#define KSNAP_TASK_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "control/control_client.h"
#include "ksnap/conf.h"
#include "ksnap/job.h"
#include "sink/two_phase.h"
#include "task.h"
#include "task_ctx.h"
#include "task_input.h"
#include "task_out.h"
#include "task_record.h"
#include "task_snap.h"
#include "task_wm.h"

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

/* A control record queued for the processing thread. */
typedef struct ksnap__msg_s {
  struct ksnap__msg_s *next;
  size_t len;
  uint8_t data[];
} ksnap__msg_t;

/** task->life, task.c's: the state machine, ownership, the run's base,
 * the processing thread and its control queue. */
typedef struct ksnap__task_life_s {
  ksnap__task_state_t st;
  ksnap__task_own_t own; /* what this instance knows of its ownership */
  const char *instance;  /* this worker process's instance id (borrowed) */
  int start_claim;       /* start by claiming the task (set before start) */
  int member;            /* a member's task: runs only while named (set
                          * before start; task.c) */
  int64_t base_id;       /* the checkpoint the run restores from, 0: none */
  char *base_url;        /* its _metadata's URL from the RESTORE (NULL:
                          * <job>/chk-N of the job's own checkpoints) */
  atomic_int stop, failed, running, replaced;
  atomic_int alive; /* RUNNING or RESTORING: heartbeats go out */
  pthread_t thread;
  int thread_started;
  pthread_mutex_t mu;          /* guards the control queue */
  ksnap__msg_t *qhead, *qtail; /* [mu] control records */
} ksnap__task_life_t;

struct ksnap_task_s {
  /* identity: set by ksnap_task_new(), immutable, read by every file */
  const ksnap_conf_t *conf;
  const ksnap_job_t *job;
  const ksnap_job_stage_t *stage;
  int32_t index, parallelism;
  int is_source, is_sink, max_par;
  char id[KSNAP_JOB_TASK_ID_SIZE];
  ksnap_control_client_t *cc;
  /* the run's generation: written by task.c only (before a run opens),
   * read by every file (and by other threads: heartbeats, getters) */
  atomic_llong gen;
  /* the generation in which the task's input ended and its finish ran
   * (or had run before its restore point), -1: not ended: written by
   * task_bounded.c (processing thread), read by heartbeats (task.c) and
   * snapshots (task_snap.c); ended_sent: the last one a heartbeat told */
  atomic_llong ended_gen, ended_sent;

  /* each concern's state, touched by its own files only */
  ksnap__task_life_t life; /* task.c */
  ksnap__task_in_t in;     /* task_input.c, task_poll.c */
  ksnap__task_out_t out;   /* task_out.c */
  ksnap__task_snap_t snap; /* task_snap.c */
  ksnap__task_op_t op;     /* task_ctx.c, task_timer.c */
  ksnap__task_errs_t errs; /* task_record.c */
  ksnap__task_wm_t wm;     /* task_wm.c */
  /* the two-phase commit of the task's transactional output
   * (sink/two_phase.h): its sink topics and its dead-letter topic; NULL
   * unless the stage has either (ksnap_job_stage_is_transactional): a
   * handle, its state is private to two_phase.c; opened and closed by
   * task_open.c, driven by task_ctx.c and task_record.c (produce),
   * task_snap.c (end, pre-commit), task_commit.c (commit) and replay.c */
  ksnap_2pc_t *sink;
};

/* task_open.c, for task.c: one run's state, outputs and inputs */
ksnap_err_t ksnap__task_open_io(ksnap_task_t *task, int64_t gen,
                                int64_t base_id, ksnap_error_t *error);
void ksnap__task_close_io(ksnap_task_t *task);

/* task_commit.c, for task.c */
ksnap_err_t ksnap__task_complete(ksnap_task_t *task, int64_t id,
                                 ksnap_error_t *error);
void ksnap__task_abort(ksnap_task_t *task, int64_t id, const char *reason);

#endif /* KSNAP_TASK_INT_H */
