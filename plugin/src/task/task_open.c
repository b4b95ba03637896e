/*
 * Opening and closing one run of a task (at start and on RESTORE), fresh
 * or restored from completed checkpoint N, on its processing thread. The
 * order is the point of this file:
 *   1. a new, empty state;
 *   2. N's _metadata (the coordinator writes it; the committed COMPLETE(N)
 *      record makes it valid), restore.c;
 *   3. the outputs: the exchange writer, then the sink, which fences every
 *      slot id (ksnap_2pc_new) and then replays a commit lost before the
 *      crash (replay.c) before its first live transaction begins;
 *   4. N's state (restore.c), only after the replay, which runs on C's;
 *   5. the inputs at N's positions (task_input_open.c).
 */
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "ksnap/storage.h"
#include "replay.h"
#include "restore.h"
#include "task_input.h"
#include "task_int.h"
#include "task_storage.h"
#include "base/util.h"

#define KAFKA_TIMEOUT_MS 30000

static ksnap_err_t open_outputs(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_err_t err;

  for (size_t i = 0; i < ksnap_job_stage_output_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_EXCHANGE)
      continue;
    task->ex_topic = ksnap_job_topic_name(t);
    task->ex_parts = ksnap_job_topic_partitions(t);
    task->ex_reader_p = 1;
    for (size_t s = ksnap_job_stage_cnt(task->job); s-- > 0;) {
      const ksnap_job_stage_t *r = ksnap_job_stage(task->job, s);
      for (size_t k = 0; k < ksnap_job_stage_input_cnt(r); k++)
        if (ksnap_job_stage_input(r, k) == t)
          task->ex_reader_p = ksnap_job_stage_parallelism(r);
    }
    if (!(task->writer = ksnap_exchange_new(task->conf, task->id,
                                            atomic_load(&task->gen),
                                            &task->ex_topic, 1,
                                            KAFKA_TIMEOUT_MS, error)))
      return error->code;
  }
  if (!task->is_sink)
    return KSNAP_ERR_OK;
  if (!(task->sink = ksnap_2pc_new(task->conf,
                                   ksnap_job_stage_name(task->stage),
                                   task->index, KAFKA_TIMEOUT_MS, error)))
    return error->code;
  for (size_t i = 0; i < ksnap_job_stage_output_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_SINK)
      ksnap_2pc_warm_topic(task->sink, ksnap_job_topic_name(t), 5000);
  }
  /* Epoch replay (replay.h): every slot id is fenced now
   * (ksnap_2pc_new); if the last committed transaction is older than
   * base_id, replay and commit the missing output first. */
  if ((err = ksnap__replay_epoch(task, error)))
    return err;
  return ksnap_2pc_begin(task->sink,
                         (task->base_id > 0 ? task->base_id : 0) + 1, error);
}

ksnap_err_t ksnap__task_open_io(ksnap_task_t *task, int64_t gen,
                                int64_t base_id, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t meta, *mp = NULL;
  ksnap_storage_t *st = NULL;
  ksnap_state_conf_t sc;
  ksnap_err_t err;

  memset(&meta, 0, sizeof(meta));
  atomic_store(&task->gen, gen);
  task->base_id = base_id > 0 ? base_id : 0;
  task->base_gen = -1;
  task->last_trigger = task->base_id;
  ksnap_state_conf_init(&sc);
  sc.max_parallelism = task->max_par;
  sc.parallelism = task->parallelism;
  sc.task_index = task->index;
  ksnap_conf_get_bool(task->conf, "state.backend.incremental",
                      &sc.incremental);
  if ((err = ksnap_state_new(&sc, &task->state, error)))
    return err;
  if ((err = ksnap_state_register(task->state, KSNAP__TIMER_STATE,
                                  KSNAP_STATE_MAP, 0, &task->timer_state,
                                  error)))
    return err;
  if (task->base_id) {
    if ((err = ksnap__task_storage_open(task->conf, &st, error)) ||
        (err = ksnap__restore_load_meta(task, task->base_id, st, &meta,
                                         error)))
      goto out;
    mp = &meta;
    task->base_gen = meta.generation;
  }
  /* outputs first: a sink fences, then replays a lost commit (replay.c),
   * and only then is chk-N's state loaded */
  if ((err = open_outputs(task, error)))
    goto out;
  if (mp && (err = ksnap__restore_state(task, &meta, st, error)))
    goto out;
  err = ksnap__task_open_inputs(task, mp, error);
  if (!err)
    KSNAP_INFO("task", "%s: running in generation %lld%s%lld", task->id,
               (long long)gen, task->base_id ? ", restored from checkpoint "
                                             : ", fresh start, checkpoint ",
               (long long)task->base_id);
out:
  ksnap_checkpoint_meta_cleanup(&meta);
  ksnap_storage_destroy(st);
  return err;
}

void ksnap__task_close_io(ksnap_task_t *task) {
  ksnap__task_wait_async(task);
  ksnap__task_close_inputs(task);
  ksnap_exchange_destroy(task->writer);
  ksnap_2pc_destroy(task->sink);
  ksnap_state_destroy(task->state);
  for (size_t i = 0; i < task->nsrcpos; i++)
    ksnap_kafka_pos_free(task->srcpos[i].pos, task->srcpos[i].n);
  task->nsrcpos = 0;
  ksnap__task_free_timers(task);
  task->writer = NULL;
  task->sink = NULL;
  task->state = NULL;
  task->ex_topic = NULL;
}
