/*
 * Reading a task's part of a completed checkpoint (restore.h): the
 * checkpoint's _metadata, and the state and keyed timers of the task's
 * stage, from the snapshot files of every task of that stage (so a changed
 * parallelism redistributes key groups). Used by a restore (task_open.c)
 * and by the epoch replay (replay.c). Threading: the task's processing
 * thread.
 */
#include "restore.h"

#include <stdlib.h>
#include <string.h>

#include "task_int.h"

/* Loads and decodes <job>/chk-<id>/_metadata. */
ksnap_err_t ksnap__restore_load_meta(ksnap_task_t *task, int64_t id,
                                     ksnap_storage_t *st,
                                     ksnap_checkpoint_meta_t *meta,
                                     ksnap_error_t *error) {
  char key[512];
  ksnap_buf_t buf;
  ksnap_err_t err;

  snprintf(key, sizeof(key), "%s/chk-%lld/_metadata", ksnap_job_name(task->job),
           (long long)id);
  ksnap_buf_init(&buf);
  if (!(err = ksnap_storage_get(st, key, &buf, error)))
    err = ksnap_codec_meta_decode(buf.data, buf.len, meta, error);
  ksnap_buf_cleanup(&buf);
  if (err)
    ksnap_error_prefix(error, "restoring %s from checkpoint %lld", task->id,
                       (long long)id);
  return err;
}

int ksnap__restore_is_mine(const ksnap_task_t *task,
                           const ksnap_task_snapshot_t *ts) {
  return !strcmp(ts->task.stage, ksnap_job_stage_name(task->stage));
}

/* A keyed timer in a restored file (chains in order: a delta's tombstone
 * removes what an older file added). */
static int restore_timer(void *opaque, const ksnap_state_entry_t *e) {
  ksnap_task_t *task = opaque;
  int lo, hi;
  int64_t t = 0;

  ksnap_state_key_group_range(task->max_par, task->parallelism, task->index,
                              &lo, &hi);
  if (strcmp(e->state, KSNAP__TIMER_STATE) || e->key_group < lo ||
      e->key_group >= hi || !e->has_user_key || e->uklen != 8)
    return 0;
  for (int i = 0; i < 8; i++)
    t = (int64_t)((uint64_t)t << 8 | e->user_key[i]);
  return ksnap__task_restore_timer(task, t, e->key, e->klen, e->tombstone);
}

/* State: one chain per old task of the stage (old task order). */
ksnap_err_t ksnap__restore_state(ksnap_task_t *task,
                                 const ksnap_checkpoint_meta_t *meta,
                                 ksnap_storage_t *st, ksnap_error_t *error) {
  size_t n = 0, nf = 0;
  int32_t maxidx = -1;
  ksnap_state_chain_t *chains = calloc(meta->task_cnt + 1, sizeof(*chains));
  ksnap_state_file_t *files;
  ksnap_buf_t *bufs;
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t i = 0; i < meta->task_cnt; i++)
    nf += meta->tasks[i].handle_cnt;
  files = calloc(nf + 1, sizeof(*files));
  bufs = calloc(nf + 1, sizeof(*bufs));
  if (!chains || !files || !bufs) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  nf = 0;
  /* old task order; a gap (an epoch replay from an aborted checkpoint's
   * ACKs, where a task of the stage did not ACK) is skipped */
  for (size_t i = 0; i < meta->task_cnt; i++)
    if (ksnap__restore_is_mine(task, &meta->tasks[i]) &&
        meta->tasks[i].task.index > maxidx)
      maxidx = meta->tasks[i].task.index;
  for (int32_t idx = 0; idx <= maxidx && !err; idx++) {
    const ksnap_task_snapshot_t *ts = NULL;
    for (size_t i = 0; i < meta->task_cnt; i++)
      if (ksnap__restore_is_mine(task, &meta->tasks[i]) &&
          meta->tasks[i].task.index == idx)
        ts = &meta->tasks[i];
    if (!ts)
      continue;
    chains[n].files = &files[nf];
    for (size_t h = 0; h < ts->handle_cnt && !err; h++, nf++) {
      ksnap_buf_init(&bufs[nf]);
      err = ksnap_storage_get(st, ts->handles[h].path, &bufs[nf], error);
      files[nf].data = bufs[nf].data;
      files[nf].len = bufs[nf].len;
      chains[n].nfiles++;
    }
    n++;
  }
  if (!err && n)
    err = ksnap_state_restore(ksnap__task_state(task), chains, n, error);
  for (size_t i = 0; !err && i < nf; i++)
    err = ksnap_state_file_decode(files[i].data, files[i].len, NULL,
                                  restore_timer, task, error);
out:
  for (size_t i = 0; bufs && i < nf; i++)
    ksnap_buf_cleanup(&bufs[i]);
  free(bufs);
  free(files);
  free(chains);
  return err;
}

