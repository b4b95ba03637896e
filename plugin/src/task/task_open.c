/*
 * Opening and closing one run of a task (at start and on RESTORE), fresh
 * or restored from completed checkpoint N, on its processing thread. The
 * order is the point of this file:
 *   1. a new, empty state;
 *   2. N's _metadata (the coordinator writes it; the committed COMPLETE(N)
 *      record makes it valid), restore.c;
 *   3. the outputs: the exchange writer, then the sink (sink topics or a
 *      dead-letter topic), which fences every slot id (ksnap_2pc_new) and
 *      then replays a commit lost before the crash (replay.c) before its
 *      first live transaction begins;
 *   4. N's state (restore.c), only after the replay, which runs on C's,
 *      with the failed-record counts in it (task_record.c);
 *   5. the inputs at N's positions (task_input.c).
 */
#include <string.h>

#include "base/util.h"
#include "ksnap/log.h"
#include "ksnap/storage.h"
#include "replay.h"
#include "restore.h"
#include "restore_fit.h"
#include "task_int.h"
#include "task_storage.h"

#define KAFKA_TIMEOUT_MS 30000

/* The sink (the task's transactional output: sink topics, dead-letter
 * topic): fenced, a lost commit replayed, the first live epoch begun.
 * @p meta: the restore point (NULL: a fresh start). */
static ksnap_err_t open_sink(ksnap_task_t *task, int64_t base_id,
                             const ksnap_checkpoint_meta_t *meta,
                             ksnap_error_t *error) {
  const char *dlq = ksnap_job_stage_dlq_topic(task->stage);
  bool mark = false;
  ksnap_err_t err;

  if (!(task->sink = ksnap_2pc_new(task->conf,
                                   ksnap_job_stage_name(task->stage),
                                   task->index, KAFKA_TIMEOUT_MS, error)))
    return error->code;
  for (size_t i = 0; i < ksnap_job_stage_output_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_SINK)
      ksnap_2pc_warm_topic(task->sink, ksnap_job_topic_name(t), 5000);
  }
  if (dlq)
    ksnap_2pc_warm_topic(task->sink, dlq, 5000);
  /* Epoch replay (replay.h): every slot id is fenced now
   * (ksnap_2pc_new); if the last committed transaction is older than
   * base_id, replay and commit the missing output first. */
  if (meta && (err = ksnap__restore_fit_sink(task, meta, &mark, error)))
    return err;
  if (mark) { /* no replay: the progress restarts at N (restore_fit.h) */
    if ((err = ksnap_2pc_begin(task->sink, base_id, error)) ||
        (err = ksnap_2pc_commit_now(task->sink, atomic_load(&task->gen),
                                    error)))
      return err;
  } else if ((err = ksnap__replay_epoch(task, base_id, error))) {
    return err;
  }
  return ksnap_2pc_begin(task->sink, base_id + 1, error);
}

/* Milliseconds since @p *t0_us, which moves to now: the parts of an open
 * (a restore's breakdown in the "running" line). */
static long long lap_ms(int64_t *t0_us) {
  int64_t now = ksnap__now_us(), d = now - *t0_us;

  *t0_us = now;
  return (long long)(d / 1000);
}

ksnap_err_t ksnap__task_open_io(ksnap_task_t *task, int64_t gen,
                                int64_t base_id, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t meta, *mp = NULL;
  ksnap_storage_t *st = NULL;
  int64_t start_us = ksnap__now_us(), t_us = start_us;
  long long ms_meta = 0, ms_exchange, ms_sink = 0, ms_state = 0, ms_inputs;
  ksnap_err_t err;

  memset(&meta, 0, sizeof(meta));
  if (base_id < 0)
    base_id = 0;
  if ((err = ksnap__task_state_open(task, error)))
    return err;
  /* a fresh start reads no checkpoint: ask the storage whether this
   * task's credentials, trust and bucket work before any checkpoint
   * meets them (a restore's first read of _metadata finds out itself) */
  if (!base_id && (err = ksnap__task_storage_probe(
                       task->conf, ksnap_job_name(task->job), error)))
    return err;
  if (base_id) {
    if ((err = ksnap__restore_open_point(task, base_id, &st, &meta, error)) ||
        (err = ksnap__restore_fit_inputs(task, &meta, error)))
      goto out;
    mp = &meta;
    ms_meta = lap_ms(&t_us);
  }
  /* outputs first: a sink fences, then replays a lost commit (replay.c),
   * and only then is chk-N's state loaded */
  if ((err = ksnap__task_open_exchange(task, error)))
    goto out;
  ms_exchange = lap_ms(&t_us);
  if (ksnap_job_stage_is_transactional(task->stage)) {
    if ((err = open_sink(task, base_id, mp, error)))
      goto out;
    ms_sink = lap_ms(&t_us);
  }
  if (mp) {
    if ((err = ksnap__restore_state(task, &meta, st, error))) {
      if (err == KSNAP_ERR_INCOMPATIBLE)
        ksnap_error_prefix(error, "stage %s",
                           ksnap_job_stage_name(task->stage));
      goto out;
    }
    ms_state = lap_ms(&t_us);
  }
  ksnap__task_errors_load(task); /* the counts of the state, 0 if fresh */
  /* the firing log: what it holds is older than base_id, done with */
  ksnap__task_fired_cut(task, base_id);
  if ((err = ksnap__task_fired_prune(task, base_id, error)))
    goto out;
  err = ksnap__task_open_inputs(task, base_id, mp, error);
  if (!err) /* the inputs' and the task's watermarks, as the state holds */
    err = ksnap__task_wm_open(task, error);
  ms_inputs = lap_ms(&t_us);
  if (!err)
    KSNAP_INFO("task", "%s: running in generation %lld%s%lld, opened in %lld "
               "ms (metadata %lld, exchange %lld, sink %lld, state %lld, "
               "inputs %lld)", task->id, (long long)gen,
               base_id ? ", restored from checkpoint "
                       : ", fresh start, checkpoint ",
               (long long)base_id, (long long)(t_us - start_us) / 1000,
               ms_meta, ms_exchange, ms_sink, ms_state, ms_inputs);
out:
  ksnap_checkpoint_meta_cleanup(&meta);
  ksnap_storage_destroy(st);
  return err;
}

void ksnap__task_close_io(ksnap_task_t *task) {
  ksnap__task_snap_close(task);
  ksnap__task_wm_close(task);
  ksnap__task_close_inputs(task);
  ksnap__task_close_exchange(task);
  ksnap_2pc_destroy(task->sink);
  task->sink = NULL;
  ksnap__task_state_close(task);
  ksnap__task_free_timers(task);
}
