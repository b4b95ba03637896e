/*
 * COMPLETE(N) and ABORT(N) at a task, on its processing thread.
 *
 * COMPLETE(N): the coordinator committed its decision (the COMPLETE
 * record) after writing chk-N's _metadata. A sink task commits every
 * pending transaction that ended at a barrier <= N, in increasing order,
 * each with its own progress record (sink/two_phase.h), then reports
 * COMMITTED(N), and prunes its timers' firing log below N (no epoch
 * replay reaches back past a commit). A source task commits the checkpoint's offsets to the
 * job's consumer group (monitoring only). Then the operator hears of it.
 *
 * ABORT(N): the aligner releases the channels it blocked for N; the sink's
 * transactions stay pending (the next completed checkpoint commits them);
 * then the operator hears of it.
 */
#include "base/fault.h"
#include "ksnap/log.h"
#include "task_int.h"

ksnap_err_t ksnap__task_complete(ksnap_task_t *task, int64_t id,
                                 ksnap_error_t *error) {
  ksnap_err_t err;

  if (task->sink) {
    ksnap_ack_record_t rec = {.type = KSNAP_ACKT_COMMITTED};
    /* tests: crash after the decision, before the commit */
    ksnap__fault_id("sink.before-commit", id);
    ksnap__fault_who("sink.before-commit", task->id);
    if ((err = ksnap_2pc_commit_upto(task->sink, id,
                                     atomic_load(&task->gen), error)) ||
        (err = ksnap__task_fired_prune(task, id, error)))
      return err;
    rec.u.committed = (ksnap_committed_t){
        id, {(char *)ksnap_job_stage_name(task->stage), task->index},
        atomic_load(&task->gen)};
    if ((err = ksnap_control_client_send(task->cc, &rec, error)))
      KSNAP_ERR("task", "%s: cannot send COMMITTED(%lld): %s", task->id,
                (long long)id, error->msg);
  }
  if (task->is_source)
    ksnap__task_commit_source(task, id);
  ksnap__task_op_complete(task, id);
  return KSNAP_ERR_OK;
}

void ksnap__task_abort(ksnap_task_t *task, int64_t id, const char *reason) {
  ksnap__task_abort_alignment(task, id, reason);
  ksnap__task_op_aborted(task, id);
}
