/*
 * A task's operator side: the operator and its instance, every call of
 * its callbacks, the context it is called with (ksnap/context.h), its
 * keyed state, processing-time timers and counters. task_ctx.c (the
 * operator and its context) and task_timer.c (timers) own task->op.
 * Calls only the exchange output (task_out.c) and the sink's two-phase
 * commit (produce) below it.
 * Threading: the processing thread; the counters are atomics, readable
 * from any thread.
 */
#ifndef KSNAP_TASK_CTX_H
#define KSNAP_TASK_CTX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"
#include "ksnap/operator.h"
#include "ksnap/records.h"
#include "ksnap/state.h"

struct ksnap_task_s;

#define KSNAP__TASK_MAX_COUNTERS 16
/** Reserved keyed map state holding the keyed timers: record key ->
 * (time as 8 bytes big-endian -> ""), so they are in every snapshot. */
#define KSNAP__TIMER_STATE "ksnap.timers"

struct ksnap_operator_ctx_s {
  struct ksnap_task_s *task;
};

typedef struct ksnap__timer_s {
  int64_t time_ms;
  void *key;
  size_t klen;
} ksnap__timer_t;

/** task->op: no other file touches it. */
typedef struct ksnap__task_op_s {
  ksnap_operator_handle_t *oph;
  const ksnap_operator_t *ops;
  struct ksnap_operator_ctx_s ctx;
  void *inst;
  int opened;
  const ksnap_record_t *cur; /* the record being processed */
  const void *cur_key;       /* key of the record / timer */
  size_t cur_klen;
  int key_set;
  ksnap_state_t *state;
  int timer_state; /* id of the map state KSNAP__TIMER_STATE */
  ksnap__timer_t *timers;
  size_t ntimers, captimers;
  char *counter_names[KSNAP__TASK_MAX_COUNTERS];
  atomic_llong counters[KSNAP__TASK_MAX_COUNTERS];
  atomic_llong records_in, records_out;
} ksnap__task_op_t;

/* task_ctx.c: the operator */

/** Resolves the stage's operator (@p job_dir: where its library is looked
 * up first). @returns NOT_FOUND / UNSUPPORTED / INVALID_ARG; NOMEM. */
ksnap_err_t ksnap__task_op_init(struct ksnap_task_s *task,
                                const char *job_dir, ksnap_error_t *error);
void ksnap__task_op_cleanup(struct ksnap_task_s *task);

/** The operator's open / close callbacks (an instance per run, and one
 * for the epoch replay). Close is a no-op unless open succeeded. */
ksnap_err_t ksnap__task_op_open(struct ksnap_task_s *task,
                                ksnap_error_t *error);
void ksnap__task_op_close(struct ksnap_task_s *task);

/** The operator's checkpoint hooks: before barrier @p id goes out, on
 * COMPLETE(@p id), on ABORT(@p id). */
ksnap_err_t ksnap__task_op_pre_barrier(struct ksnap_task_s *task, int64_t id,
                                       ksnap_error_t *error);
void ksnap__task_op_complete(struct ksnap_task_s *task, int64_t id);
void ksnap__task_op_aborted(struct ksnap_task_s *task, int64_t id);

/** One record through the operator (the live loop and the epoch replay). */
ksnap_err_t ksnap__task_process(struct ksnap_task_s *task,
                                const ksnap_record_t *rec,
                                ksnap_error_t *error);

/** A run's state: new and empty (with the timers' map state), freed. */
ksnap_err_t ksnap__task_state_open(struct ksnap_task_s *task,
                                   ksnap_error_t *error);
void ksnap__task_state_close(struct ksnap_task_s *task);
/** The current state (the run's, or the epoch replay's while it runs). */
ksnap_state_t *ksnap__task_state(struct ksnap_task_s *task);

/** The epoch replay runs on a state of its own: enter() sets the run's
 * state aside (into *@p livep) for a new empty one; leave() drops the
 * replay's state and puts the run's back. */
ksnap_err_t ksnap__task_replay_enter(struct ksnap_task_s *task,
                                     ksnap_state_t **livep,
                                     ksnap_error_t *error);
void ksnap__task_replay_leave(struct ksnap_task_s *task,
                              ksnap_state_t *live);

/* task_timer.c: processing-time timers */

/** Fires the timers due at @p now_ms. @returns 1 if an on_timer callback
 * failed (the task must fail), else 0. */
int ksnap__task_fire_timers(struct ksnap_task_s *task, int64_t now_ms);
void ksnap__task_free_timers(struct ksnap_task_s *task);

/** A keyed timer entry of a restored state file, in file order: a
 * tombstone removes the timer an older file added. */
int ksnap__task_restore_timer(struct ksnap_task_s *task, int64_t time_ms,
                              const void *key, size_t klen, int tombstone);

/** Sets the record (or timer key) the operator is called for. */
void ksnap__task_set_current(struct ksnap_task_s *task,
                             const ksnap_record_t *rec, const void *key,
                             size_t klen);

#endif /* KSNAP_TASK_CTX_H */
