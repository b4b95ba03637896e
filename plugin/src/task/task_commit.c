/*
 * COMPLETE(N) at a task (DESIGN.md section 4 step 6), on its processing
 * thread: a sink task commits every pending transaction whose epoch ended
 * at a barrier <= N, in increasing order, each with its progress record
 * (sink task, N_i, G) written to <job>.ksnap.progress inside the same
 * transaction (sink.h), then reports COMMITTED(N). An ABORT leaves the
 * transactions pending (task_input.c, ksnap__task_abort()): the next
 * completed checkpoint commits them. A source task commits the
 * checkpoint's offsets to the job's consumer group (monitoring only).
 */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "ksnap/log.h"
#include "task_int.h"
#include "base/util.h"

#define COMMIT_TIMEOUT_MS 60000
#define COMMIT_RETRIES 5

static ksnap_err_t commit_one(ksnap_task_t *task, const ksnap__txn_t *txn,
                              ksnap_error_t *error) {
  ksnap_sink_progress_t pr = {
      {(char *)ksnap_job_stage_name(task->stage), task->index}, txn->end_id,
      atomic_load(&task->gen)};
  ksnap_buf_t buf;
  ksnap_err_t err;

  ksnap_buf_init(&buf);
  if ((err = ksnap_codec_progress_encode(&pr, &buf, error)))
    goto out;
  for (int i = 0; i < COMMIT_RETRIES; i++) {
    err = ksnap_sink_commit(task->sink, txn->epoch, buf.data, buf.len,
                            COMMIT_TIMEOUT_MS, error);
    if (!err || !error->retriable)
      break;
    KSNAP_WARN("task", "%s: committing transaction %lld: %s (retrying)",
               task->id, (long long)txn->end_id, error->msg);
  }
out:
  ksnap_buf_cleanup(&buf);
  return err;
}

/* Commits the pending transactions that ended at barriers <= @p id. */
static ksnap_err_t commit_sink(ksnap_task_t *task, int64_t id,
                               ksnap_error_t *error) {
  ksnap_err_t err = KSNAP_ERR_OK;

  pthread_mutex_lock(&task->mu);
  while (!err && task->ntxns > 0 && task->txns[0].end_id <= id) {
    ksnap__txn_t txn;
    while (task->txns[0].precommitted == 0)
      pthread_cond_wait(&task->cv, &task->mu);
    txn = task->txns[0];
    pthread_mutex_unlock(&task->mu);
    if (txn.precommitted < 0)
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: transaction of checkpoint %lld was not "
                            "pre-committed; it cannot be committed",
                            task->id, (long long)txn.end_id);
    else
      err = commit_one(task, &txn, error);
    if (!err) /* tests: die between the commits of several pending ones */
      ksnap__fault_id("sink.after-commit", txn.end_id);
    pthread_mutex_lock(&task->mu);
    if (!err) {
      memmove(&task->txns[0], &task->txns[1],
              (task->ntxns - 1) * sizeof(task->txns[0]));
      task->ntxns--;
    }
  }
  pthread_mutex_unlock(&task->mu);
  return err;
}

static void commit_source(ksnap_task_t *task, int64_t id) {
  ksnap_error_t error;
  size_t keep = 0;
  int done = 0;

  for (size_t i = task->nsrcpos; i-- > 0 && !done;)
    if (task->srcpos[i].id <= id) {
      if (ksnap_source_commit(task->source, task->srcpos[i].pos,
                              task->srcpos[i].n, &error))
        KSNAP_WARN("task", "%s: committing offsets of checkpoint %lld to the "
                   "group: %s", task->id, (long long)id, error.msg);
      done = 1;
    }
  for (size_t i = 0; i < task->nsrcpos; i++) {
    if (task->srcpos[i].id <= id)
      ksnap_kafka_pos_free(task->srcpos[i].pos, task->srcpos[i].n);
    else
      task->srcpos[keep++] = task->srcpos[i];
  }
  task->nsrcpos = keep;
}

ksnap_err_t ksnap__task_complete(ksnap_task_t *task, int64_t id,
                                 ksnap_error_t *error) {
  ksnap_err_t err;

  if (task->sink) {
    ksnap_ack_record_t rec = {.type = KSNAP_ACKT_COMMITTED};
    /* tests: crash after the decision, before the commit */
    ksnap__fault_id("sink.before-commit", id);
    ksnap__fault_who("sink.before-commit", task->id);
    if ((err = commit_sink(task, id, error)))
      return err;
    rec.u.committed = (ksnap_committed_t){
        id, {(char *)ksnap_job_stage_name(task->stage), task->index},
        atomic_load(&task->gen)};
    if ((err = ksnap_control_client_send(task->cc, &rec, error)))
      KSNAP_ERR("task", "%s: cannot send COMMITTED(%lld): %s", task->id,
                (long long)id, error->msg);
  }
  if (task->source)
    commit_source(task, id);
  if (task->ops->notify_checkpoint_complete)
    task->ops->notify_checkpoint_complete(&task->ctx, task->inst, id);
  return KSNAP_ERR_OK;
}
