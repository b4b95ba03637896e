/*
 * Epoch replay: a sink task restoring from checkpoint N replays the epochs
 * whose commit was lost, and commits their output as transaction N.
 *
 * The failure: a sink task pre-committed (flushed) its transaction of
 * epoch N, the coordinator wrote _metadata and committed COMPLETE(N) (the
 * decision), and the task died before commit_transaction. The restored
 * instance's init_transactions aborts that transaction, and librdkafka
 * cannot resume another producer's transaction, so the epoch's output is
 * produced again from the input, which Kafka still holds.
 *
 * Steps, in this order (the order is what makes it exact):
 *  1. Fence: init_transactions on every slot id, so that no zombie of this
 *     task can still commit after step 2 read the progress. Done by
 *     ksnap_2pc_new() before ksnap__replay_epoch() is called (task_open.c).
 *  2. Read C, the task's last committed transaction, from the progress
 *     topic with read_committed up to its end: ksnap_2pc_last_committed().
 *     C >= N: nothing was lost, done.
 *  3. Load the task's own snapshot at C (the stage's state of C, through
 *     ksnap__restore_state, so a rescale of an upstream stage
 *     redistributes key groups as in a normal restore) into a state of its
 *     own; no C (the task never committed): empty state, channels from
 *     offset 0. A completed C has _metadata (on N's chain). An aborted C
 *     (its transaction stayed pending and was committed with a later
 *     checkpoint, then the task died before the next commit) has none: the
 *     task's own ACK(C) on <job>.ksnap.acks (ksnap__coord_read_history)
 *     holds its snapshot handles and channel positions / source offsets at
 *     C. A sink may only commit a transaction whose snapshot at its cut is
 *     durable, so that snapshot exists; the coordinator's retention keeps
 *     it (it keeps the newest completed checkpoint at or below the slowest
 *     sink's commit and everything after it). A missing ACK fails with
 *     KSNAP_ERR_RETENTION. The sink stage's parallelism must be unchanged
 *     since N (across a rescale: KSNAP_ERR_UNSUPPORTED).
 *  4. Replay exactly the input between C's cut and N's, segment by segment
 *     along the chain of completed checkpoints N, parent(N), ... back to C
 *     (parent_id in _metadata; from an aborted C, the first segment runs
 *     from C's cut to the first completed checkpoint after it), each
 *     segment under the acceptance rule of its own generation
 *     (replay_segment.c). Records go through the task's operator with the
 *     replay's state; its emits go to the sink's replay transaction only
 *     (the exchange writer, if the stage has one, is detached: downstream
 *     already has that output). Data deleted by retention fails loudly
 *     with KSNAP_ERR_RETENTION.
 *  5. Commit that output as one transaction, sink epoch N, pre-committed
 *     and committed with progress record {sink task, N, G}, then report
 *     COMMITTED(N) (the coordinator's retention keeps chk-C until then).
 *  6. The caller (task_open.c) then loads chk-N's state and begins epoch N+1.
 * A sink stage that reads source topics (a source task that is also a
 * sink) replays its assigned source partitions from C's offsets to N's in
 * one range (source records carry no generations, so the chain's segments
 * need no separate rules); a logical start position (nothing read before
 * C) starts at the log start and cannot be checked against retention.
 * Timers registered during the replay are written to the replay's own
 * timers' state, as the records' processing in the run did, and then
 * dropped: none fires by the clock (a replayed record registers its timer
 * at the replay's clock, not the run's). The timers the run fired between
 * C and N fire again from the checkpoints' firing logs, each at the point
 * of the input where it fired in the run (PROTOCOL.md section 8.4,
 * replay_input() below, fired.h). A stage with a dead-letter topic
 * replays the same way: its replayed records fail again and their dead-letter records go
 * to the replay's transaction (task_record.c).
 * A task whose finish ran between C and N (a bounded or a drained job:
 * its ACK(N) says input_ended, C's state has no ksnap.finished:
 * task_bounded.c) emitted
 * its finish's output in those epochs: the replay calls finish after the
 * last segment (no record follows an end of input), so that output is in
 * the replayed transaction too.
 * Test-only switch: KSNAP_FAULT=sink.skip-repair skips the replay
 * (fault.h).
 */
#include <stdlib.h>
#include <string.h>

#include "control/coord_io.h"
#include "base/fault.h"
#include "ksnap/log.h"
#include "replay.h"
#include "replay_int.h"
#include "restore.h"
#include "task_int.h"
#include "task_storage.h"
#include "base/util.h"
#include "fired.h"

#define PROGRESS_TIMEOUT_MS 120000
#define MAX_CHAIN 4096

/* Step 3 for a C without _metadata (an aborted checkpoint whose
 * transaction was committed with a later one): the task's own ACK(C) on
 * the acks topic holds its snapshot's handles and positions at C. */
#define MAX_ACKS 1024

typedef struct ack_find_s {
  ksnap_task_t *task;
  int64_t id;
  ksnap_ack_record_t recs[MAX_ACKS]; /* by task index of the stage */
  int have[MAX_ACKS];
  int found; /* this task's own ACK is among them */
} ack_find_t;

static int on_ack(void *opaque, const void *buf, size_t len, int64_t ts) {
  ack_find_t *af = opaque;
  ksnap_ack_record_t rec;
  ksnap_error_t e;
  int32_t idx;

  (void)ts;
  if (ksnap_codec_ack_decode(buf, len, &rec, &e))
    return 0;
  idx = rec.type == KSNAP_ACKT_ACK ? rec.u.ack.snapshot.task.index : -1;
  if (idx >= 0 && idx < MAX_ACKS && rec.u.ack.checkpoint_id == af->id &&
      !strcmp(rec.u.ack.snapshot.task.stage,
              ksnap_job_stage_name(af->task->stage))) {
    if (af->have[idx])
      ksnap_ack_record_cleanup(&af->recs[idx]);
    af->recs[idx] = rec;
    af->have[idx] = 1;
    if (idx == af->task->index)
      af->found = 1;
    return 0;
  }
  ksnap_ack_record_cleanup(&rec);
  return 0;
}

static ksnap_err_t find_own_ack(ksnap_task_t *task, int64_t id,
                                ack_find_t *af, ksnap_error_t *error) {
  char topic[512];
  ksnap_err_t err;

  af->task = task;
  af->id = id;
  snprintf(topic, sizeof(topic), "%s%s", ksnap_job_name(task->job),
           KSNAP_COORD_ACKS_SUFFIX);
  if ((err = ksnap__coord_read_history(task->conf, topic, PROGRESS_TIMEOUT_MS,
                                       on_ack, af, error)))
    return ksnap_error_prefix(error, "%s: reading its ACK(%lld) from %s",
                              task->id, (long long)id, topic);
  if (!af->found)
    return ksnap_error_set(
        error, KSNAP_ERR_RETENTION,
        "%s: the last committed transaction %lld belongs to a checkpoint "
        "without _metadata (aborted) and the task's ACK(%lld) with its "
        "snapshot positions is not on %s (deleted by retention?): the "
        "epoch replay cannot start from its snapshot", task->id,
        (long long)id, (long long)id, topic);
  return KSNAP_ERR_OK;
}

/* One epoch replay: restoring from N, the last committed C. */
typedef struct replay_s {
  ksnap_task_t *task;
  int64_t n_id, c, t0; /* N, C, when the replay started */
  ksnap_storage_t *st;
  ksnap_checkpoint_meta_t *chain; /* N, parent(N), ..., oldest first at */
  size_t n;                       /* chain[MAX_CHAIN - n] */
  ksnap_checkpoint_meta_t base;   /* C's _metadata (a completed C) */
  ksnap_checkpoint_meta_t ackmeta; /* C's ACKs (an aborted C) */
  ack_find_t *af;
} replay_t;

/* The chain N, parent(N), ... down to C (oldest first), or to the first
 * one below C (an aborted C); *@p idp: where it stopped. */
static ksnap_err_t load_chain(replay_t *r, int64_t *idp,
                              ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  const ksnap_checkpoint_meta_t *top;
  int64_t id;
  ksnap_err_t err;

  for (id = r->n_id; id > r->c; r->n++) {
    ksnap_checkpoint_meta_t *m;
    if (r->n == MAX_CHAIN)
      return ksnap_error_set(error, KSNAP_ERR_STATE, "%s: replay chain longer "
                             "than %d checkpoints", task->id, MAX_CHAIN);
    m = &r->chain[MAX_CHAIN - 1 - r->n];
    if ((err = ksnap__restore_load_meta(task, id, r->st, m, error))) {
      ksnap_error_prefix(error, "%s: the replay needs checkpoint %lld of the "
                         "chain %lld..%lld", task->id, (long long)id,
                         (long long)r->c, (long long)r->n_id);
      return err;
    }
    id = m->parent_id > 0 ? m->parent_id : 0;
  }
  *idp = id;
  top = &r->chain[MAX_CHAIN - 1];
  for (size_t i = 0; i < top->task_cnt; i++)
    if (ksnap__restore_is_mine(task, &top->tasks[i]) &&
        top->tasks[i].task.index >= task->parallelism)
      return ksnap_error_set(
          error, KSNAP_ERR_UNSUPPORTED,
          "%s: checkpoint %lld has task %d of this stage, now of "
          "parallelism %d: an epoch replay across a rescale is not "
          "supported", task->id, (long long)r->n_id,
          (int)top->tasks[i].task.index, (int)task->parallelism);
  return KSNAP_ERR_OK;
}

/* Step 3 for an aborted C (the chain stopped at @p id below C): C's
 * snapshot from the ACKs of C of the tasks of the stage. */
static ksnap_err_t base_from_acks(replay_t *r, int64_t id,
                                  ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  ksnap_checkpoint_meta_t *q = &r->chain[MAX_CHAIN - r->n], *am = &r->ackmeta;
  int64_t c = r->c;
  ksnap_err_t err;

  if (id > c || !r->n)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: the chain of checkpoint %lld does not pass "
                           "%lld", task->id, (long long)r->n_id,
                           (long long)c);
  if (!(r->af = calloc(1, sizeof(*r->af))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = find_own_ack(task, c, r->af, error)))
    return err;
  if (r->af->recs[task->index].u.ack.generation > q->generation)
    return ksnap_error_set(
        error, KSNAP_ERR_STATE,
        "%s: ACK(%lld) of generation %lld is newer than checkpoint %lld's",
        task->id, (long long)c,
        (long long)r->af->recs[task->index].u.ack.generation,
        (long long)q->checkpoint_id);
  KSNAP_WARN("task", "%s: the replay starts from the snapshot of aborted "
             "checkpoint %lld (its ACK), replaying to %lld through the "
             "completed checkpoints after it", task->id, (long long)c,
             (long long)r->n_id);
  am->job = (char *)ksnap_job_name(task->job);
  am->checkpoint_id = c;
  am->generation = r->af->recs[task->index].u.ack.generation;
  am->parent_id = KSNAP_CHECKPOINT_NONE;
  /* every task of the stage that ACKed C: keyed state needs only this
   * task's key groups (one of them); operator list state is divided
   * over all of them, which is exact only if all ACKed */
  if (!(am->tasks = calloc(MAX_ACKS, sizeof(*am->tasks))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int i = 0; i < MAX_ACKS; i++)
    if (r->af->have[i])
      am->tasks[am->task_cnt++] = r->af->recs[i].u.ack.snapshot;
  if ((int32_t)am->task_cnt < task->parallelism)
    KSNAP_WARN("task", "%s: only %zu of %d tasks of the stage acknowledged "
               "aborted checkpoint %lld: operator list state (if any) is "
               "restored from those only", task->id, am->task_cnt,
               (int)task->parallelism, (long long)c);
  return KSNAP_ERR_OK;
}

/* Step 4 with the timers the run fired: an exchange segment P -> Q with
 * Q's firing log from the first firing after P's cut; a source range
 * C -> N with the logs of every checkpoint of the chain, each from its
 * parent's cut (a restore in the chain pruned the older ones from N's). */
static ksnap_err_t replay_input(replay_t *r,
                                const ksnap_checkpoint_meta_t *base,
                                ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  const ksnap_checkpoint_meta_t *chain = &r->chain[MAX_CHAIN - r->n];
  ksnap__fired_list_t log = {0};
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t i = 0; i < r->n && !err; i++) {
    const ksnap_checkpoint_meta_t *from = i ? &chain[i - 1] : base;
    err = ksnap__restore_fired(task, &chain[i], r->st,
                               from ? from->checkpoint_id : 0, &log, error);
    if (!err && !task->is_source) {
      err = ksnap__replay_exchange_segment(task, from, &chain[i], &log,
                                           error);
      ksnap__fired_list_cleanup(&log);
    }
  }
  if (!err && task->is_source)
    err = ksnap__replay_source_segment(task, base, &chain[r->n - 1], &log,
                                       error);
  ksnap__fired_list_cleanup(&log);
  return err;
}

/* Whether the task's finish ran between C (the replay's state) and N (its
 * ACK(N) said input_ended): then the replay must finish too. */
static ksnap_err_t finished_since_c(replay_t *r, int *yesp,
                                    ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  ack_find_t *af;
  int id, at_c;
  ksnap_err_t err;

  *yesp = 0; /* a bounded job's, or a drained one's */
  if ((err = ksnap__task_bounded_was_finished(task, &id, &at_c, error)) ||
      at_c)
    return err;
  if (!(af = calloc(1, sizeof(*af))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  err = find_own_ack(task, r->n_id, af, error);
  if (!err)
    *yesp = af->recs[task->index].u.ack.input_ended;
  for (int i = 0; i < MAX_ACKS; i++)
    if (af->have[i])
      ksnap_ack_record_cleanup(&af->recs[i]);
  free(af);
  return err;
}

/* Steps 3-5 from @p base (C's snapshot, NULL: no C) along the chain. */
static ksnap_err_t replay_and_commit(replay_t *r,
                                     const ksnap_checkpoint_meta_t *base,
                                     ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  ksnap__task_replay_t live;
  int fin = 0;
  ksnap_err_t err;

  if ((err = ksnap__task_replay_enter(task, &live, error)))
    return err;
  ksnap__task_exchange_detach(task);
  if ((base && (err = ksnap__restore_state(task, base, r->st, error))) ||
      (err = ksnap__task_op_open(task, error)) ||
      (err = ksnap_2pc_begin(task->sink, r->n_id, error)))
    goto out;
  err = replay_input(r, base, error);
  if (!err && (err = finished_since_c(r, &fin, error)) == KSNAP_ERR_OK &&
      fin) {
    KSNAP_INFO("task", "%s: epoch replay: finish ran before checkpoint "
               "%lld: finishing again in the replay", task->id,
               (long long)r->n_id);
    err = ksnap__task_op_finish(task, error);
  }
  if (!err) /* step 5: transaction N, progress record N */
    err = ksnap_2pc_commit_now(task->sink, atomic_load(&task->gen),
                               error);
out:
  ksnap__task_op_close(task);
  ksnap__task_free_timers(task); /* the replay's: dropped, chk-N's load */
  ksnap__task_replay_leave(task, &live);
  ksnap__task_exchange_attach(task);
  return err;
}

/* Step 5's report: COMMITTED(N); the coordinator's retention keeps chk-C
 * until it hears of it. */
static void report_committed(replay_t *r) {
  ksnap_task_t *task = r->task;
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_COMMITTED};
  ksnap_error_t e;

  KSNAP_WARN("task", "%s: epoch replay done: transaction %lld committed "
             "with the replayed output of checkpoints %lld..%lld in %lld ms",
             task->id, (long long)r->n_id, (long long)r->c + 1,
             (long long)r->n_id, (long long)(ksnap__wallclock_ms() - r->t0));
  rec.u.committed = (ksnap_committed_t){
      r->n_id, {(char *)ksnap_job_stage_name(task->stage), task->index},
      atomic_load(&task->gen)};
  if (ksnap_control_client_send(task->cc, &rec, &e))
    KSNAP_WARN("task", "%s: cannot send COMMITTED(%lld) after the replay: "
               "%s", task->id, (long long)r->n_id, e.msg);
}

/* Steps 3-5, once C is known to be older than N. */
static ksnap_err_t replay(replay_t *r, ksnap_error_t *error) {
  ksnap_task_t *task = r->task;
  const ksnap_checkpoint_meta_t *base = NULL;
  int64_t id = 0;
  ksnap_err_t err;

  if ((err = ksnap__task_storage_open(task->conf, &r->st, error)))
    return err;
  if (!(r->chain = calloc(MAX_CHAIN, sizeof(*r->chain)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((err = load_chain(r, &id, error)))
    goto out;
  if (id != r->c) { /* C has no _metadata: an aborted checkpoint */
    if ((err = base_from_acks(r, id, error)))
      goto out;
    base = &r->ackmeta;
  } else if (r->c > 0) {
    if ((err = ksnap__restore_load_meta(task, r->c, r->st, &r->base,
                                        error))) {
      ksnap_error_prefix(error, "%s: the replay needs checkpoint %lld (the "
                         "last committed transaction's snapshot)", task->id,
                         (long long)r->c);
      goto out;
    }
    base = &r->base;
  }
  if (!(err = replay_and_commit(r, base, error)))
    report_committed(r);
out:
  if (err)
    ksnap_error_prefix(error, "epoch replay");
  return err;
}

static void replay_cleanup(replay_t *r) {
  for (size_t i = 0; r->chain && i < r->n; i++)
    ksnap_checkpoint_meta_cleanup(&r->chain[MAX_CHAIN - 1 - i]);
  free(r->chain);
  ksnap_checkpoint_meta_cleanup(&r->base);
  for (int i = 0; r->af && i < MAX_ACKS; i++)
    if (r->af->have[i])
      ksnap_ack_record_cleanup(&r->af->recs[i]);
  free(r->af);
  free(r->ackmeta.tasks);
  ksnap_storage_destroy(r->st);
}

ksnap_err_t ksnap__replay_epoch(ksnap_task_t *task, int64_t base_id,
                                ksnap_error_t *error) {
  replay_t r;
  ksnap_err_t err;

  memset(&r, 0, sizeof(r));
  r.task = task;
  r.n_id = base_id;
  r.t0 = ksnap__wallclock_ms();
  if (!task->sink || base_id <= 0)
    return KSNAP_ERR_OK;
  if ((err = ksnap_2pc_last_committed(task->sink, PROGRESS_TIMEOUT_MS, &r.c,
                                      error)))
    return err;
  if (r.c >= base_id) {
    KSNAP_DBG(TASK, "task", "%s: last committed transaction %lld, restored "
              "from %lld: no epoch replay", task->id, (long long)r.c,
              (long long)base_id);
    return KSNAP_ERR_OK;
  }
  if (ksnap__fault_on("sink.skip-repair")) {
    KSNAP_WARN("task", "%s: KSNAP_FAULT=sink.skip-repair: NOT replaying "
               "transactions %lld..%lld (their output is lost)", task->id,
               (long long)r.c + 1, (long long)base_id);
    return KSNAP_ERR_OK;
  }
  KSNAP_WARN("task", "%s: last committed transaction is %lld but checkpoint "
             "%lld completed: replaying its output (epoch replay)", task->id,
             (long long)r.c, (long long)base_id);
  err = replay(&r, error);
  replay_cleanup(&r);
  return err;
}
