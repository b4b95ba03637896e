/*
 * COMPLETE(N) at a task, on its processing thread: the coordinator
 * committed its decision (the COMPLETE record) after writing chk-N's
 * _metadata. A sink task commits every pending transaction that ended at
 * a barrier <= N, in increasing order, each with its own progress record
 * (sink/two_phase.h), then reports COMMITTED(N). An ABORT leaves the
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
    if ((err = ksnap_2pc_commit_upto(task->sink, id, atomic_load(&task->gen),
                                     error)))
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
