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
/** The most headers one emit may carry (ksnap/context.h). */
#define KSNAP__EMIT_MAX_HEADERS 64
/** Reserved keyed map state holding the keyed timers: record key ->
 * (time as 8 bytes big-endian -> ""), so they are in every snapshot; an
 * event-time timer's user key is its time and the byte 'e'. */
#define KSNAP__TIMER_STATE "ksnap.timers"
/* The map state of the timers without a key, under a key of the task's
 * own (task_timer.c), as KSNAP__TIMER_STATE. */
#define KSNAP__TIMER_NOKEY_STATE "ksnap.timers.nokey"

struct ksnap_operator_ctx_s {
  struct ksnap_task_s *task;
};

typedef struct ksnap__timer_s {
  int64_t time_ms;
  void *key; /* the record key, or for a timer without key its state key */
  size_t klen;
  int nokey; /* registered without a key: on_timer gets none */
  int event; /* an event-time timer: fires by the watermark (task_wm.h) */
} ksnap__timer_t;

/* Emits held back while one record runs (task_ctx.c). */
typedef struct ksnap__task_held_s ksnap__task_held_t;

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
  int64_t event_ts; /* emit_ts when the last process returned */
  int64_t emit_ts; /* the Kafka timestamp of the callback's emits, 0: the
                    * producer's clock (ksnap_ctx_set_timestamp()) */
  ksnap_state_t *state;
  int timer_state; /* id of the map state KSNAP__TIMER_STATE */
  int nokey_state; /* id of the map state KSNAP__TIMER_NOKEY_STATE */
  char nokey_key[24]; /* its state key for this task (0 length: not yet) */
  size_t nokey_klen;
  ksnap__timer_t *timers;
  size_t ntimers, captimers;
  int fired_state;    /* id of the map state KSNAP__FIRED_STATE */
  int64_t fired_tag;  /* the last cut: the tag of the next firing */
  int64_t fired_seq;  /* the next firing's number in this run */
  int64_t (*fired)[2]; /* (tag, seq) of the log's entries in the state */
  size_t nfired, capfired;
  int misused;               /* an emit to an output the stage lacks */
  ksnap_error_t misuse;      /* its error */
  int holding;               /* emits are held (ksnap__task_emits_hold) */
  ksnap__task_held_t *held;  /* those emits; kept between records */
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
/** The operator's finish (ABI 2; nothing for an ABI 1 operator): every
 * input ended (task_bounded.c calls it once per job). */
ksnap_err_t ksnap__task_op_finish(struct ksnap_task_s *task,
                                  ksnap_error_t *error);
void ksnap__task_op_aborted(struct ksnap_task_s *task, int64_t id);

/** The operator's process callback for @p rec, as the current record
 * (counted in records_in); the error is the operator's, unprefixed. The
 * live loop and the epoch replay call ksnap__task_process() (task_record.c),
 * which calls this. */
ksnap_err_t ksnap__task_op_process(struct ksnap_task_s *task,
                                   const ksnap_record_t *rec,
                                   ksnap_error_t *error);
/** The timestamp of the last process's emits when it returned (the last
 * ksnap_ctx_set_timestamp(), else the record's): its event time. */
int64_t ksnap__task_op_event_time(const struct ksnap_task_s *task);
/** @returns 1 once the operator emitted to an output the stage does not
 * have (since its open), with that error in *@p errorp (may be NULL): the
 * task must fail, whatever the operator returned, and no restart helps. */
int ksnap__task_op_misused(const struct ksnap_task_s *task,
                           const ksnap_error_t **errorp);

/** The operator's name (its struct's), for messages. */
const char *ksnap__task_op_name(const struct ksnap_task_s *task);

/**
 * While a record of a stage that tolerates failures runs, the operator's
 * emits are held (copied) instead of produced: hold() starts holding;
 * release() stops and produces the held records in emit order (@p keep,
 * the record succeeded: the errors of producing) or drops them (@p keep
 * 0). Emits outside a record (timers, hooks) are never held.
 */
ksnap_err_t ksnap__task_emits_hold(struct ksnap_task_s *task,
                                   ksnap_error_t *error);
ksnap_err_t ksnap__task_emits_release(struct ksnap_task_s *task, int keep,
                                      ksnap_error_t *error);

/** Backpressure on a produce: a full local producer queue (retriable) is
 * retried, one output at a time (an output that took the record is not
 * written again), until the queue drains or a minute passes. @returns 1
 * to try again (after a short sleep), 0 to give up with @p error. */
int ksnap__task_emit_retry(ksnap_error_t *error, int64_t *deadline_us);

/** A new empty state of key group @p kg alone, none registered (the
 * epoch replay reads a checkpoint's firing log into one: a restore into
 * it reads that key group's part of each file only). */
ksnap_err_t ksnap__task_state_scratch(struct ksnap_task_s *task, int kg,
                                      ksnap_state_t **statep,
                                      ksnap_error_t *error);
/** A run's state: new and empty (with the timers' map state), freed. */
ksnap_err_t ksnap__task_state_open(struct ksnap_task_s *task,
                                   ksnap_error_t *error);
void ksnap__task_state_close(struct ksnap_task_s *task);
/** The current state (the run's, or the epoch replay's while it runs). */
ksnap_state_t *ksnap__task_state(struct ksnap_task_s *task);

/** What the epoch replay sets aside of the run while it runs. */
typedef struct ksnap__task_replay_s {
  ksnap_state_t *state;
  int timer_state, nokey_state, fired_state;
} ksnap__task_replay_t;

/** The epoch replay runs on a state of its own: enter() sets the run's
 * state aside (into *@p live) for a new empty one with the timers' states
 * registered; leave() drops the replay's state and puts the run's
 * back. */
ksnap_err_t ksnap__task_replay_enter(struct ksnap_task_s *task,
                                     ksnap__task_replay_t *live,
                                     ksnap_error_t *error);
void ksnap__task_replay_leave(struct ksnap_task_s *task,
                              const ksnap__task_replay_t *live);

/* task_timer.c: processing-time timers */

/** Fires the timers due at @p now_ms. A sink task (@p pos not NULL: per
 * input channel, the offset after its last processed record) writes
 * each firing into its firing log first (fired.h). @returns 1 if an
 * on_timer callback failed or the log could not be written (the task
 * must fail), else 0. */
int ksnap__task_fire_timers(struct ksnap_task_s *task, int64_t now_ms,
                            const int64_t *pos, int32_t npos);
/** Fires the event-time timers due at watermark @p wm, in time order
 * (those their on_timer registers at or below @p wm too, a few rounds),
 * logged as ksnap__task_fire_timers() does. @returns as it. */
int ksnap__task_fire_event_timers(struct ksnap_task_s *task, int64_t wm,
                                  const int64_t *pos, int32_t npos);
/** The key group of the task's timers without a key and of its firing
 * log (one of its own). */
int ksnap__task_timers_key_group(struct ksnap_task_s *task);
/** Forgets the timers and the firing log's index (not the state). */
void ksnap__task_free_timers(struct ksnap_task_s *task);

/** The firing log (fired.h): cut() at a snapshot's sync phase (@p id
 * tags the firings after it; at open: the restored checkpoint); prune()
 * removes the entries tagged below @p id from the state (COMPLETE(@p id)
 * committed them: no epoch replay reaches back past it). */
void ksnap__task_fired_cut(struct ksnap_task_s *task, int64_t id);
ksnap_err_t ksnap__task_fired_prune(struct ksnap_task_s *task, int64_t id,
                                    ksnap_error_t *error);
/** A restored entry of the firing log (@p uk its user key): indexed, so
 * that prune() removes it. */
void ksnap__task_restore_fired(struct ksnap_task_s *task, const uint8_t *uk,
                               size_t uklen, int tombstone);
struct ksnap__fired_s;
/** The epoch replay fires @p f as the run did: on_timer with the run's
 * key and time (its emits stamped with that time), its entry removed
 * from the timers' state. @returns the error that fails the replay. */
ksnap_err_t ksnap__task_fire_recorded(struct ksnap_task_s *task,
                                      const struct ksnap__fired_s *f,
                                      ksnap_error_t *error);

/** The timers registered while one record runs: mark() before it;
 * drop(mark) forgets every timer registered since (their entries in the
 * state are state writes, undone with the record's state scope). Nothing fires
 * or restores timers while a record runs, so they are the list's tail. */
size_t ksnap__task_timers_mark(const struct ksnap_task_s *task);
void ksnap__task_timers_drop(struct ksnap_task_s *task, size_t mark);

/** A timer entry of a restored state file (@p nokey: of the timers
 * without a key), in file order: a tombstone removes the timer an older
 * file added. */
int ksnap__task_restore_timer(struct ksnap_task_s *task, int64_t time_ms,
                              const void *key, size_t klen, int nokey,
                              int event, int tombstone);

/** Sets the record (or timer key) the operator is called for, and the
 * timestamp of its emits (@p ts_ms: the record's, the timer's time; 0 for
 * the other callbacks: the producer's clock). */
void ksnap__task_set_current(struct ksnap_task_s *task,
                             const ksnap_record_t *rec, const void *key,
                             size_t klen, int64_t ts_ms);

#endif /* KSNAP_TASK_CTX_H */
