/*
 * The snapshot of one task for checkpoint N (task_snap.h); task->snap is
 * this file's.
 *
 * Sync phase, ksnap__task_snapshot(), on the processing thread between two
 * records: prepare_snapshot_pre_barrier hook; barrier N broadcast
 * downstream FIRST (so that downstream alignment starts early); capture
 * source offsets (source task) or channel positions (the aligner's
 * SNAPSHOT positions); the failed-record counts into the state
 * (task_record.c); the state view (O(number of states)); the sink's epoch
 * transaction is flushed (every record of it acknowledged: the one pause
 * of the sync phase that waits for the broker, so that no record of the
 * next epoch can precede one of this epoch in a partition, two_phase.h
 * invariant 7), ends here, and the next one begins. A flush still
 * unfinished at execution.checkpointing.timeout declines checkpoint N
 * and nothing more: the transaction stays open into the next epoch
 * (end_epoch()). Then processing resumes.
 *
 * Async phase, snap_async(), on the snapshot pool: stream the state view
 * to <job>/chk-N/<stage>-<task> as it is serialized (in buffers of
 * state.backend.write-buffer-size, task_storage.h); wait for the delivery
 * of everything produced before barrier N and of the barrier records;
 * pre-commit the sink's transaction of the epoch (flushed at the barrier;
 * committable now that the snapshot at its cut is durable); then ACK(N) with
 * handles, sizes, checksums, positions and timings, or DECLINE(N, reason)
 * on any failure ("Declining checkpoint N: reason"). After a decline the
 * processing thread sends N's cancellation marker downstream
 * (ksnap__task_snap_cancel_declined()), which ends the alignment of N at
 * the tasks still waiting for other channels' barriers N.
 */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "ksnap/log.h"
#include "ksnap/storage.h"
#include "task_int.h"
#include "task_storage.h"
#include "base/util.h"

typedef struct snap_job_s {
  ksnap_task_t *task;
  int64_t id, gen, sink_epoch, timeout_ms;
  ksnap_state_snapshot_t *snap;
  char key[512];
  ksnap_source_offset_t *offsets;
  size_t noffsets;
  ksnap_channel_pos_t *chans;
  size_t nchans;
  ksnap_timings_t timings;
  ksnap_record_errors_t errors; /* the failed-record counts at the cut */
  ksnap_align_stats_t align;    /* how its alignment went (ACK) */
  bool input_ended;             /* its finish ran before the cut (ACK) */
  int kg_start, kg_end;
} snap_job_t;

static void job_free(snap_job_t *job) {
  for (size_t i = 0; i < job->noffsets; i++)
    free(job->offsets[i].topic);
  for (size_t i = 0; i < job->nchans; i++) {
    free(job->chans[i].topic);
    free(job->chans[i].writer.stage);
  }
  free(job->offsets);
  free(job->chans);
  free(job);
}

void ksnap__task_snap_init(ksnap_task_t *task, ksnap__snap_pool_t *pool) {
  task->snap.pool = pool;
  pthread_mutex_init(&task->snap.mu, NULL);
  pthread_cond_init(&task->snap.cv, NULL);
}

void ksnap__task_snap_cleanup(ksnap_task_t *task) {
  pthread_mutex_destroy(&task->snap.mu);
  pthread_cond_destroy(&task->snap.cv);
}

void ksnap__task_decline(ksnap_task_t *task, int64_t id, const char *reason,
                         bool task_failed) {
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_DECLINE};
  ksnap_error_t error;

  KSNAP_WARN("task", "%s: Declining checkpoint %lld: %s", task->id,
             (long long)id, reason);
  rec.u.decline = (ksnap_decline_t){
      id, {(char *)ksnap_job_stage_name(task->stage), task->index},
      atomic_load(&task->gen), (char *)reason, task_failed};
  if (ksnap_control_client_send(task->cc, &rec, &error))
    KSNAP_ERR("task", "%s: cannot send DECLINE(%lld): %s", task->id,
              (long long)id, error.msg);
}

int ksnap__task_snap_failed(const ksnap_task_t *task) {
  return atomic_load(&task->snap.sink_failed);
}

void ksnap__task_snap_clear_failed(ksnap_task_t *task) {
  atomic_store(&task->snap.sink_failed, 0);
}

void ksnap__task_snap_cancel_declined(ksnap_task_t *task) {
  int64_t id = atomic_load(&task->snap.declined);
  ksnap_error_t error;

  if (id <= task->snap.declined_sent)
    return;
  task->snap.declined_sent = id;
  if (ksnap__task_exchange_cancel(task, id, &error))
    KSNAP_WARN("task", "%s: cancellation marker of checkpoint %lld: %s",
               task->id, (long long)id, error.msg);
}

void ksnap__task_snap_close(ksnap_task_t *task) {
  ksnap__task_snap_t *snap = &task->snap;

  pthread_mutex_lock(&snap->mu);
  while (snap->inflight > 0)
    pthread_cond_wait(&snap->cv, &snap->mu);
  pthread_mutex_unlock(&snap->mu);
  /* a new run's checkpoints are newer: no marker of this run's declines */
  atomic_store(&snap->declined, 0);
  snap->declined_sent = 0;
  for (size_t i = 0; i < snap->nsrcpos; i++)
    ksnap_kafka_pos_free(snap->srcpos[i].pos, snap->srcpos[i].n);
  snap->nsrcpos = 0;
}

/* DECLINE(@p id); the processing thread then sends its cancellation
 * marker downstream (ksnap__task_snap_cancel_declined()). Any thread. */
static void decline(ksnap_task_t *task, int64_t id, const char *reason,
                    bool task_failed) {
  int64_t prev = atomic_load(&task->snap.declined);

  ksnap__task_decline(task, id, reason, task_failed);
  while (prev < id &&
         !atomic_compare_exchange_weak(&task->snap.declined, &prev, id))
    ;
}

/* Streams the state view to storage as it is serialized; fills the ACK's
 * handles (the files of the snapshot's manifest: this one and, for an
 * incremental snapshot, the ones it builds on). */
static ksnap_err_t upload_state(snap_job_t *job, ksnap_state_handle_t **hp,
                                size_t *nhp, ksnap_error_t *error) {
  ksnap_storage_t *st = NULL;
  ksnap_storage_stat_t own = {0, 0};
  const char *const *names;
  size_t n = ksnap_state_snapshot_manifest(job->snap, &names);
  ksnap_state_handle_t *h = calloc(n + 1, sizeof(*h));
  int64_t buffer = 2 << 20;
  ksnap_err_t err;

  if (!h) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  ksnap_conf_get_size(job->task->conf, "state.backend.write-buffer-size",
                      &buffer);
  if ((err = ksnap__task_storage_open(job->task->conf, &st, error)) ||
      (err = ksnap__task_storage_put_snapshot(st, job->key, job->snap,
                                              (size_t)buffer, &own, error)))
    goto out;
  for (size_t i = 0; i < n; i++) {
    ksnap_storage_stat_t stat = own;
    char *sum = malloc(24);
    if (!sum) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    h[i].checksum = sum;
    if (!(h[i].path = strdup(names[i]))) {
      *nhp = i;
      free(sum);
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    h[i].key_group_start = job->kg_start;
    h[i].key_group_end = job->kg_end;
    *nhp = i + 1;
    if (strcmp(names[i], job->key) &&
        (err = ksnap_storage_head(st, names[i], &stat, error)))
      goto out;
    h[i].size = (int64_t)stat.size;
    snprintf(sum, 24, "crc32c:%08x", (unsigned)stat.crc32c);
  }
out:
  *hp = h;
  ksnap_storage_destroy(st);
  return err;
}

/* Compaction by size: once the deltas of the chain just uploaded (every
 * file after the full one) hold more than
 * state.backend.incremental.max-delta-percent of the full file's bytes,
 * the task's next snapshot is full (the length limit is the state
 * layer's). Restores thus read a bounded multiple of the state's size. */
static void compact_if_large(snap_job_t *job, const ksnap_state_handle_t *h,
                             size_t nh) {
  int64_t pct = 50, deltas = 0;

  if (nh < 2)
    return;
  ksnap_conf_get_int(job->task->conf,
                     "state.backend.incremental.max-delta-percent", &pct);
  for (size_t i = 1; i < nh; i++)
    deltas += h[i].size;
  if (deltas * 100 <= pct * h[0].size)
    return;
  KSNAP_DBG(SNAPSHOT, "task", "%s: chain of checkpoint %lld: %zu files, "
            "deltas %lld bytes over %lld%% of the full file's %lld: the "
            "next snapshot is full", job->task->id, (long long)job->id, nh,
            (long long)deltas, (long long)pct, (long long)h[0].size);
  ksnap_state_snapshot_next_full(ksnap__task_state(job->task));
}

static void snap_async(void *arg) {
  snap_job_t *job = arg;
  ksnap_task_t *task = job->task;
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_ACK};
  ksnap_task_snapshot_t *ts = &rec.u.ack.snapshot;
  ksnap_state_handle_t *h = NULL;
  size_t nh = 0;
  int64_t t0 = ksnap__now_us();
  ksnap_error_t error;
  ksnap_err_t err;

  ksnap_error_clear(&error);
  err = upload_state(job, &h, &nh, &error);
  if (!err)
    compact_if_large(job, h, nh);
  ksnap_state_snapshot_end(job->snap, err == KSNAP_ERR_OK);
  if (!err)
    err = ksnap__task_exchange_delivered(task, job->id, (int)job->timeout_ms,
                                         &error);
  /* a transaction is only committable if the sink's own snapshot at its
   * cut is durable: else it is marked failed instead of pre-committed */
  if (job->sink_epoch > 0)
    ksnap_2pc_precommit(task->sink, job->sink_epoch, err != KSNAP_ERR_OK);
  if (err) {
    decline(task, job->id, error.msg, job->sink_epoch > 0);
    if (job->sink_epoch > 0) {
      /* the epoch's transaction can never be committed (no durable
       * snapshot at its cut): the sink task fails (task.c sees the flag)
       * and the job restores from the latest completed checkpoint */
      KSNAP_ERR("task", "%s: sink transaction of checkpoint %lld cannot be "
                "committed; failing the task", task->id, (long long)job->id);
      atomic_store(&task->snap.sink_failed, 1);
    }
  } else {
    job->timings.async_us = ksnap__now_us() - t0;
    rec.u.ack.checkpoint_id = job->id;
    rec.u.ack.generation = job->gen;
    ts->task = (ksnap_task_id_t){(char *)ksnap_job_stage_name(task->stage),
                                 task->index};
    ts->handles = h;
    ts->handle_cnt = nh;
    ts->offsets = job->offsets;
    ts->offset_cnt = job->noffsets;
    ts->channels = job->chans;
    ts->channel_cnt = job->nchans;
    ts->timings = job->timings;
    rec.u.ack.errors = job->errors;
    rec.u.ack.align = job->align;
    rec.u.ack.input_ended = job->input_ended;
    if (ksnap_control_client_send(task->cc, &rec, &error))
      KSNAP_ERR("task", "%s: cannot send ACK(%lld): %s", task->id,
                (long long)job->id, error.msg);
    else
      KSNAP_DBG(SNAPSHOT, "task", "%s: acknowledged checkpoint %lld "
                "(sync %lld us, async %lld us)", task->id, (long long)job->id,
                (long long)job->timings.sync_us,
                (long long)job->timings.async_us);
  }
  for (size_t i = 0; i < nh; i++) {
    free(h[i].checksum);
    free(h[i].path);
  }
  free(h);
  job_free(job);
  pthread_mutex_lock(&task->snap.mu);
  task->snap.inflight--;
  pthread_cond_broadcast(&task->snap.cv);
  pthread_mutex_unlock(&task->snap.mu);
}

/* Source offsets: into the job (ACK) and snap->srcpos (group commit). */
static ksnap_err_t capture_source(ksnap_task_t *task, snap_job_t *job,
                                  ksnap_error_t *error) {
  ksnap__task_snap_t *snap = &task->snap;
  ksnap_kafka_pos_t *pos;
  size_t n;
  ksnap_err_t err;

  if ((err = ksnap__task_source_positions(task, &pos, &n, error)))
    return err;
  if (!(job->offsets = calloc(n + 1, sizeof(*job->offsets)))) {
    ksnap_kafka_pos_free(pos, n);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++, job->noffsets++)
    job->offsets[i] = (ksnap_source_offset_t){strdup(pos[i].topic),
                                              pos[i].partition,
                                              pos[i].offset};
  if (snap->nsrcpos == KSNAP__TASK_MAX_SRCPOS) {
    ksnap_kafka_pos_free(snap->srcpos[0].pos, snap->srcpos[0].n);
    memmove(&snap->srcpos[0], &snap->srcpos[1],
            (KSNAP__TASK_MAX_SRCPOS - 1) * sizeof(snap->srcpos[0]));
    snap->nsrcpos--;
  }
  snap->srcpos[snap->nsrcpos++] = (ksnap__srcpos_t){job->id, pos, n};
  return KSNAP_ERR_OK;
}

void ksnap__task_commit_source(ksnap_task_t *task, int64_t id) {
  ksnap__task_snap_t *snap = &task->snap;
  ksnap_error_t error;
  size_t keep = 0;
  int done = 0;

  for (size_t i = snap->nsrcpos; i-- > 0 && !done;)
    if (snap->srcpos[i].id <= id) {
      if (ksnap__task_commit_offsets(task, snap->srcpos[i].pos,
                                     snap->srcpos[i].n, &error))
        KSNAP_WARN("task", "%s: committing offsets of checkpoint %lld to the "
                   "group: %s", task->id, (long long)id, error.msg);
      done = 1;
    }
  for (size_t i = 0; i < snap->nsrcpos; i++) {
    if (snap->srcpos[i].id <= id)
      ksnap_kafka_pos_free(snap->srcpos[i].pos, snap->srcpos[i].n);
    else
      snap->srcpos[keep++] = snap->srcpos[i];
  }
  snap->nsrcpos = keep;
}

/* The sink's epoch ends at this barrier once every record of it is
 * acknowledged, bounded by the checkpoint's timeout. A flush that timed
 * out declines the checkpoint only: the epoch's transaction stays open
 * and ends at a later barrier (two_phase.h invariant 5), and
 * job->sink_epoch is -1. */
static ksnap_err_t end_epoch(ksnap_task_t *task, snap_job_t *job,
                             ksnap_error_t *error) {
  int timeout_ms = ksnap__fault_on_id("sink.slow-flush", job->id)
                       ? 0
                       : (int)job->timeout_ms;
  ksnap_err_t err = ksnap_2pc_end(task->sink, job->id, timeout_ms,
                                  &job->sink_epoch, error);

  if (err != KSNAP_ERR_TIMEOUT)
    return err;
  decline(task, job->id, error->msg, false);
  ksnap_error_clear(error);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_snapshot(ksnap_task_t *task, int64_t id,
                                 int64_t trigger_ts,
                                 const ksnap_ckpt_options_t *opts,
                                 const ksnap_action_t *act,
                                 ksnap_error_t *error) {
  int64_t t0 = ksnap__now_us(), tmo = 600000;
  snap_job_t *job;
  ksnap_err_t err;

  if ((err = ksnap__task_op_pre_barrier(task, id, error)) ||
      (err = ksnap__task_exchange_barrier(task, KSNAP_BARRIER_KIND_BARRIER, id,
                                          trigger_ts, opts, error)))
    return err;
  ksnap__task_fired_cut(task, id); /* later firings are after cut id */
  if (!(job = calloc(1, sizeof(*job))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  ksnap_conf_get_duration_ms(task->conf, "execution.checkpointing.timeout",
                             &tmo);
  job->task = task;
  job->id = id;
  job->gen = atomic_load(&task->gen);
  job->input_ended = atomic_load(&task->ended_gen) == job->gen;
  job->timeout_ms = tmo;
  snprintf(job->key, sizeof(job->key), "%s/chk-%lld/%s-%d",
           ksnap_job_name(task->job), (long long)id,
           ksnap_job_stage_name(task->stage), (int)task->index);
  ksnap_state_key_group_range(task->max_par, task->parallelism, task->index,
                              &job->kg_start, &job->kg_end);
  err = task->is_source
            ? capture_source(task, job, error)
            : ksnap__task_cut_channels(task, act, &job->chans, &job->nchans,
                                       error);
  if (!err)
    err = ksnap__task_errors_save(task, &job->errors.failed,
                                  &job->errors.dead_lettered, error);
  if (!err)
    err = ksnap__task_wm_save(task, error);
  if (!err && opts && opts->is_savepoint) /* self-contained: no chain */
    ksnap_state_snapshot_next_full(ksnap__task_state(task));
  if (!err)
    err = ksnap_state_snapshot_begin(ksnap__task_state(task), id, job->key,
                                     &job->snap, error);
  if (!err && task->sink) /* the epoch ends here, the next one begins */
    err = end_epoch(task, job, error);
  if (err || job->sink_epoch < 0) {
    ksnap_state_snapshot_end(job->snap, 0);
    job_free(job);
    return err;
  }
  job->timings.sync_us = ksnap__now_us() - t0;
  if (act) {
    job->timings.alignment_us = act->align_ms * 1000;
    job->timings.start_delay_us = act->start_delay_ms * 1000;
    /* a savepoint that waited without memory (reason "savepoint
     * re-read") held at most the limit: its figure is what it dropped
     * and reads again */
    job->timings.bytes_buffered =
        act->unaligned_reason == KSNAP_UNALIGNED_REREAD
            ? (int64_t)act->bytes_dropped
            : (int64_t)act->bytes_buffered;
    job->align.unaligned_reason = (int32_t)act->unaligned_reason;
    job->align.paused_us = act->paused_ms * 1000;
  } else {
    int64_t d = ksnap__wallclock_ms() - trigger_ts;
    job->timings.start_delay_us = d > 0 ? d * 1000 : 0;
  }
  pthread_mutex_lock(&task->snap.mu);
  task->snap.inflight++;
  pthread_mutex_unlock(&task->snap.mu);
  if ((err = ksnap__snap_pool_submit(task->snap.pool, snap_async, job,
                                     error))) {
    pthread_mutex_lock(&task->snap.mu);
    task->snap.inflight--;
    pthread_mutex_unlock(&task->snap.mu);
    ksnap_state_snapshot_end(job->snap, 0);
    job_free(job);
    return err;
  }
  KSNAP_DBG(SNAPSHOT, "task", "%s: checkpoint %lld sync phase in %lld us",
            task->id, (long long)id, (long long)(ksnap__now_us() - t0));
  return KSNAP_ERR_OK;
}
