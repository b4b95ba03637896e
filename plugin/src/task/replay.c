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
 * C) starts at the log start and cannot be checked against retention. Not
 * covered: timers registered during the replay are dropped (not fired).
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

/* Steps 3-5 with the chain @p chain[0..n-1] (oldest first) after @p base
 * (C's metadata, NULL: no C). */
static ksnap_err_t replay_and_commit(ksnap_task_t *task, ksnap_storage_t *st,
                                     const ksnap_checkpoint_meta_t *base,
                                     const ksnap_checkpoint_meta_t *chain,
                                     size_t n, ksnap_error_t *error) {
  ksnap_state_t *live = task->state, *rs = NULL;
  ksnap_exchange_t *writer = task->writer;
  ksnap_state_conf_t sc;
  int64_t id = task->base_id;
  void *inst = NULL;
  int opened = 0;
  ksnap_err_t err;

  ksnap_state_conf_init(&sc);
  sc.max_parallelism = task->max_par;
  sc.parallelism = task->parallelism;
  sc.task_index = task->index;
  if ((err = ksnap_state_new(&sc, &rs, error)))
    return err;
  task->state = rs;
  task->writer = NULL;
  if (base && (err = ksnap__restore_state(task, base, st, error)))
    goto out;
  task->inst = NULL;
  if (task->ops->open && (err = task->ops->open(&task->ctx, &inst, error)))
    goto out;
  task->inst = inst;
  opened = 1;
  if ((err = ksnap_2pc_begin(task->sink, id, error)))
    goto out;
  if (task->is_source)
    err = ksnap__replay_source_segment(task, base, &chain[n - 1], error);
  for (size_t i = 0; !task->is_source && i < n && !err; i++)
    err = ksnap__replay_exchange_segment(task, i ? &chain[i - 1] : base,
                                         &chain[i], error);
  if (!err) /* step 5: transaction N, progress record N */
    err = ksnap_2pc_commit_now(task->sink, atomic_load(&task->gen), error);
out:
  if (opened && task->ops->close)
    task->ops->close(&task->ctx, inst);
  task->inst = NULL;
  ksnap__task_free_timers(task);
  task->writer = writer;
  task->state = live;
  ksnap_state_destroy(rs);
  return err;
}

ksnap_err_t ksnap__replay_epoch(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t base, ackmeta, *chain = NULL;
  ack_find_t *af = NULL;
  ksnap_storage_t *st = NULL;
  int64_t c = 0, id, t0 = ksnap__wallclock_ms();
  size_t n = 0;
  int have_base = 0;
  ksnap_err_t err;

  memset(&base, 0, sizeof(base));
  memset(&ackmeta, 0, sizeof(ackmeta));
  if (!task->sink || task->base_id <= 0)
    return KSNAP_ERR_OK;
  if ((err = ksnap_2pc_last_committed(task->sink, PROGRESS_TIMEOUT_MS, &c,
                                      error)))
    return err;
  if (c >= task->base_id) {
    KSNAP_DBG(TASK, "task", "%s: last committed transaction %lld, restored "
              "from %lld: no epoch replay", task->id, (long long)c,
              (long long)task->base_id);
    return KSNAP_ERR_OK;
  }
  if (ksnap__fault_on("sink.skip-repair")) {
    KSNAP_WARN("task", "%s: KSNAP_FAULT=sink.skip-repair: NOT replaying "
               "transactions %lld..%lld (their output is lost)", task->id,
               (long long)c + 1, (long long)task->base_id);
    return KSNAP_ERR_OK;
  }
  KSNAP_WARN("task", "%s: last committed transaction is %lld but checkpoint "
             "%lld completed: replaying its output (epoch replay)", task->id,
             (long long)c, (long long)task->base_id);
  if ((err = ksnap__task_storage_open(task->conf, &st, error)))
    return err;
  if (!(chain = calloc(MAX_CHAIN, sizeof(*chain)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  /* the chain N, parent(N), ... down to C, stored oldest first at the end */
  for (id = task->base_id; id > c; n++) {
    ksnap_checkpoint_meta_t *m;
    if (n == MAX_CHAIN) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE, "%s: replay chain longer "
                            "than %d checkpoints", task->id, MAX_CHAIN);
      goto out;
    }
    m = &chain[MAX_CHAIN - 1 - n];
    if ((err = ksnap__restore_load_meta(task, id, st, m, error))) {
      ksnap_error_prefix(error, "%s: the replay needs checkpoint %lld of the "
                         "chain %lld..%lld", task->id, (long long)id,
                         (long long)c, (long long)task->base_id);
      goto out;
    }
    id = m->parent_id > 0 ? m->parent_id : 0;
  }
  for (size_t i = 0; i < chain[MAX_CHAIN - 1].task_cnt; i++)
    if (!strcmp(chain[MAX_CHAIN - 1].tasks[i].task.stage,
                ksnap_job_stage_name(task->stage)) &&
        chain[MAX_CHAIN - 1].tasks[i].task.index >= task->parallelism) {
      err = ksnap_error_set(
          error, KSNAP_ERR_UNSUPPORTED,
          "%s: checkpoint %lld has task %d of this stage, now of "
          "parallelism %d: an epoch replay across a rescale is not "
          "supported", task->id, (long long)task->base_id,
          (int)chain[MAX_CHAIN - 1].tasks[i].task.index,
          (int)task->parallelism);
      goto out;
    }
  if (id != c) { /* C has no _metadata: an aborted checkpoint */
    ksnap_checkpoint_meta_t *q = &chain[MAX_CHAIN - n];
    if (id > c || !n) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: the chain of checkpoint %lld does not pass "
                            "%lld", task->id, (long long)task->base_id,
                            (long long)c);
      goto out;
    }
    if (!(af = calloc(1, sizeof(*af)))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    if ((err = find_own_ack(task, c, af, error)))
      goto out;
    if (af->recs[task->index].u.ack.generation > q->generation) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: ACK(%lld) of generation %lld is newer than "
                            "checkpoint %lld's", task->id, (long long)c,
                            (long long)af->recs[task->index].u.ack.generation,
                            (long long)q->checkpoint_id);
      goto out;
    }
    KSNAP_WARN("task", "%s: the replay starts from the snapshot of aborted "
               "checkpoint %lld (its ACK), replaying to %lld through the "
               "completed checkpoints after it", task->id, (long long)c,
               (long long)task->base_id);
    ackmeta.job = (char *)ksnap_job_name(task->job);
    ackmeta.checkpoint_id = c;
    ackmeta.generation = af->recs[task->index].u.ack.generation;
    ackmeta.parent_id = KSNAP_CHECKPOINT_NONE;
    /* every task of the stage that ACKed C: keyed state needs only this
     * task's key groups (one of them); operator list state is divided
     * over all of them, which is exact only if all ACKed */
    if (!(ackmeta.tasks = calloc(MAX_ACKS, sizeof(*ackmeta.tasks)))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    for (int i = 0; i < MAX_ACKS; i++)
      if (af->have[i])
        ackmeta.tasks[ackmeta.task_cnt++] = af->recs[i].u.ack.snapshot;
    if ((int32_t)ackmeta.task_cnt < task->parallelism)
      KSNAP_WARN("task", "%s: only %zu of %d tasks of the stage acknowledged "
                 "aborted checkpoint %lld: operator list state (if any) is "
                 "restored from those only", task->id, ackmeta.task_cnt,
                 (int)task->parallelism, (long long)c);
    err = replay_and_commit(task, st, &ackmeta, &chain[MAX_CHAIN - n], n,
                            error);
    goto done;
  }
  if (c > 0) {
    if ((err = ksnap__restore_load_meta(task, c, st, &base, error))) {
      ksnap_error_prefix(error, "%s: the replay needs checkpoint %lld (the "
                         "last committed transaction's snapshot)", task->id,
                         (long long)c);
      goto out;
    }
    have_base = 1;
  }
  err = replay_and_commit(task, st, have_base ? &base : NULL,
                          &chain[MAX_CHAIN - n], n, error);
done:
  if (!err) {
    ksnap_ack_record_t rec = {.type = KSNAP_ACKT_COMMITTED};
    ksnap_error_t e;
    KSNAP_WARN("task", "%s: epoch replay done: transaction %lld committed "
               "with the replayed output of checkpoints %lld..%lld in %lld ms",
               task->id, (long long)task->base_id, (long long)c + 1,
               (long long)task->base_id,
               (long long)(ksnap__wallclock_ms() - t0));
    /* the coordinator's retention keeps chk-C until it hears of this */
    rec.u.committed = (ksnap_committed_t){
        task->base_id,
        {(char *)ksnap_job_stage_name(task->stage), task->index},
        atomic_load(&task->gen)};
    if (ksnap_control_client_send(task->cc, &rec, &e))
      KSNAP_WARN("task", "%s: cannot send COMMITTED(%lld) after the replay: "
                 "%s", task->id, (long long)task->base_id, e.msg);
  }
out:
  if (err)
    ksnap_error_prefix(error, "epoch replay");
  for (size_t i = 0; chain && i < n; i++)
    ksnap_checkpoint_meta_cleanup(&chain[MAX_CHAIN - 1 - i]);
  free(chain);
  ksnap_checkpoint_meta_cleanup(&base);
  for (int i = 0; af && i < MAX_ACKS; i++)
    if (af->have[i])
      ksnap_ack_record_cleanup(&af->recs[i]);
  free(af);
  free(ackmeta.tasks);
  ksnap_storage_destroy(st);
  return err;
}
