/*
 * Reading a task's part of a completed checkpoint (restore.h): the
 * checkpoint's _metadata, and the state and keyed timers of the task's
 * stage, from the snapshot files of every task of that stage (so a changed
 * parallelism redistributes key groups). Used by a restore (task_open.c)
 * and by the epoch replay (replay.c). Threading: the task's processing
 * thread.
 *
 * Snapshot files are never loaded whole: the state layer reads each file's
 * header, then only the task's key groups, by ranged reads of
 * state.backend.write-buffer-size windows, and checks each window against
 * the CRC-32s of the header's index (itself checksummed) before it applies
 * a single entry of it; the timers come with the entries applied. A file
 * whose size or CRC32C (from its trailer) is not what the checkpoint
 * recorded is refused before anything is read from it.
 */
#include "restore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fired.h"
#include "ksnap/log.h"
#include "storage/restore_point.h"
#include "task_int.h"
#include "task_storage.h"

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

/* 1 if @p url is the job's own checkpoint @p id. */
static int is_own(const ksnap_task_t *task, int64_t id, const char *url) {
  const char *dir = NULL;

  if (ksnap_conf_get_str(task->conf, "state.checkpoints.dir", &dir))
    return 0;
  return ksnap_restore_point_is_own(url, dir, ksnap_job_name(task->job), id);
}

ksnap_err_t ksnap__restore_open_point(ksnap_task_t *task, int64_t id,
                                      ksnap_storage_t **stp,
                                      ksnap_checkpoint_meta_t *meta,
                                      ksnap_error_t *error) {
  const char *url = task->life.base_url;
  char *base = NULL, *key = NULL;
  ksnap_buf_t buf;
  ksnap_err_t err;

  *stp = NULL;
  if (!url || is_own(task, id, url)) {
    if ((err = ksnap__task_storage_open(task->conf, stp, error)))
      return err;
    return ksnap__restore_load_meta(task, id, *stp, meta, error);
  }
  ksnap_buf_init(&buf);
  if (!(err = ksnap_restore_point_split(url, &base, &key, error)) &&
      !(err = ksnap__task_storage_open_url(task->conf, base, stp, error)) &&
      !(err = ksnap_storage_get(*stp, key, &buf, error)) &&
      !(err = ksnap_codec_meta_decode(buf.data, buf.len, meta, error)) &&
      meta->checkpoint_id != id)
    err = ksnap_error_set(error, KSNAP_ERR_INCOMPATIBLE,
                          "%s holds checkpoint %lld, not %lld", url,
                          (long long)meta->checkpoint_id, (long long)id);
  if (err)
    ksnap_error_prefix(error, "restoring %s from %s", task->id, url);
  ksnap_buf_cleanup(&buf);
  free(base);
  free(key);
  return err;
}

int ksnap__restore_is_mine(const ksnap_task_t *task,
                           const ksnap_task_snapshot_t *ts) {
  return !strcmp(ts->task.stage, ksnap_job_stage_name(task->stage));
}

/* A timer in a restored file, keyed or without key, processing-time (user
 * key the time) or event-time (the time and 'e') (chains in order: a
 * delta's tombstone removes what an older file added), or an entry of
 * the firing log. */
static int restore_timer(void *opaque, const ksnap_state_entry_t *e) {
  ksnap_task_t *task = opaque;
  int lo, hi;
  int64_t t = 0;

  ksnap_state_key_group_range(task->max_par, task->parallelism, task->index,
                              &lo, &hi);
  int nokey = !strcmp(e->state, KSNAP__TIMER_NOKEY_STATE);

  if (!strcmp(e->state, KSNAP__FIRED_STATE) && e->key_group >= lo &&
      e->key_group < hi && e->has_user_key) {
    ksnap__task_restore_fired(task, e->user_key, e->uklen, e->tombstone);
    return 0;
  }

  if ((!nokey && strcmp(e->state, KSNAP__TIMER_STATE)) || e->key_group < lo ||
      e->key_group >= hi || !e->has_user_key ||
      (e->uklen != 8 && (e->uklen != 9 || e->user_key[8] != 'e')))
    return 0;
  for (int i = 0; i < 8; i++)
    t = (int64_t)((uint64_t)t << 8 | e->user_key[i]);
  return ksnap__task_restore_timer(task, t, e->key, e->klen, nokey,
                                   e->uklen == 9, e->tombstone);
}

/* One snapshot file, read by ranges; @p last: the file read last (the
 * state layer reads a file before it decodes it), named in errors. */
typedef struct ranged_s {
  ksnap_storage_t *st;
  const char *key;
  const char **last;
} ranged_t;

static ksnap_err_t read_range(void *opaque, uint64_t off, size_t len,
                              uint8_t *dst, ksnap_error_t *error) {
  ranged_t *r = opaque;
  *r->last = r->key;
  return ksnap_storage_read_range(r->st, r->key, off, len, dst, error);
}

/* The file's size from its trailer, which must be what the checkpoint
 * recorded (an object replaced or cut since is refused). */
static ksnap_err_t file_size(ksnap_storage_t *st,
                             const ksnap_state_handle_t *h, uint64_t *sizep,
                             ksnap_error_t *error) {
  ksnap_storage_stat_t stat;
  char sum[24];
  ksnap_err_t err = ksnap_storage_head(st, h->path, &stat, error);

  if (err == KSNAP_ERR_NOT_FOUND) /* written before COMPLETE: lost since */
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "%s/%s: missing, but the checkpoint names it",
                           ksnap_storage_url(st), h->path);
  if (err)
    return err;
  snprintf(sum, sizeof(sum), "crc32c:%08x", (unsigned)stat.crc32c);
  if ((h->size > 0 && (uint64_t)h->size != stat.size) ||
      (h->checksum && !strncmp(h->checksum, "crc32c:", 7) &&
       strcmp(h->checksum, sum)))
    return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                           "%s/%s: %llu bytes, %s; the checkpoint recorded "
                           "%lld bytes, %s", ksnap_storage_url(st), h->path,
                           (unsigned long long)stat.size, sum,
                           (long long)h->size,
                           h->checksum ? h->checksum : "no checksum");
  *sizep = stat.size;
  return KSNAP_ERR_OK;
}

/* State: one chain per old task of the stage (old task order), into
 * @p state, each entry applied seen by @p observe. */
static ksnap_err_t restore_into(ksnap_task_t *task, ksnap_state_t *state,
                                const ksnap_checkpoint_meta_t *meta,
                                ksnap_storage_t *st,
                                ksnap_state_entry_cb_t observe, void *opaque,
                                ksnap_error_t *error) {
  size_t n = 0, nf = 0;
  int32_t maxidx = -1;
  ksnap_state_chain_t *chains = calloc(meta->task_cnt + 1, sizeof(*chains));
  ksnap_state_file_t *files;
  ranged_t *ranged;
  const char *last = NULL;
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t i = 0; i < meta->task_cnt; i++)
    nf += meta->tasks[i].handle_cnt;
  files = calloc(nf + 1, sizeof(*files));
  ranged = calloc(nf + 1, sizeof(*ranged));
  if (!chains || !files || !ranged) {
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
      ranged[nf] = (ranged_t){st, ts->handles[h].path, &last};
      files[nf].read = read_range;
      files[nf].read_opaque = &ranged[nf];
      err = file_size(st, &ts->handles[h], &files[nf].size, error);
      chains[n].nfiles++;
    }
    n++;
  }
  if (!err && n) {
    int64_t t0 = ksnap__now_us();
    err = ksnap_state_restore_observed(state, chains, n, observe, opaque,
                                       error);
    if (err && last && !strstr(error->msg, last))
      ksnap_error_prefix(error, "%s/%s", ksnap_storage_url(st), last);
    else if (!err)
      KSNAP_INFO("task", "%s: restored state from %zu files of checkpoint "
                 "%lld (%zu chains, %zu incremental files) in %lld ms",
                 task->id, nf, (long long)meta->checkpoint_id, n, nf - n,
                 (long long)(ksnap__now_us() - t0) / 1000);
  }
out:
  free(ranged);
  free(files);
  free(chains);
  return err;
}

ksnap_err_t ksnap__restore_state(ksnap_task_t *task,
                                 const ksnap_checkpoint_meta_t *meta,
                                 ksnap_storage_t *st, ksnap_error_t *error) {
  return restore_into(task, ksnap__task_state(task), meta, st, restore_timer,
                      task, error);
}

/* The firing log's entries of one restore (ksnap__restore_fired). */
typedef struct fired_read_s {
  ksnap_task_t *task;
  int64_t from_tag;
  ksnap__fired_list_t *log;
  ksnap_error_t *error;
  ksnap_err_t err;
} fired_read_t;

static int read_fired(void *opaque, const ksnap_state_entry_t *e) {
  fired_read_t *fr = opaque;
  ksnap__fired_t f;
  int64_t tag, seq;
  int lo, hi;

  ksnap_state_key_group_range(fr->task->max_par, fr->task->parallelism,
                              fr->task->index, &lo, &hi);
  if (strcmp(e->state, KSNAP__FIRED_STATE) || e->key_group < lo ||
      e->key_group >= hi || !e->has_user_key || e->uklen != 16)
    return 0;
  ksnap__fired_parse_key(e->user_key, &tag, &seq);
  if (e->tombstone) {
    ksnap__fired_list_remove(fr->log, tag, seq);
    return 0;
  }
  if (tag < fr->from_tag)
    return 0;
  if ((fr->err = ksnap__fired_decode(e->user_key, e->uklen, e->value,
                                     e->vlen, &f, fr->error)) ||
      (fr->err = ksnap__fired_list_put(fr->log, &f, fr->error)))
    return 1;
  return 0;
}

ksnap_err_t ksnap__restore_fired(ksnap_task_t *task,
                                 const ksnap_checkpoint_meta_t *meta,
                                 ksnap_storage_t *st, int64_t from_tag,
                                 ksnap__fired_list_t *log,
                                 ksnap_error_t *error) {
  fired_read_t fr = {task, from_tag, log, error, KSNAP_ERR_OK};
  ksnap_state_t *scratch = NULL;
  ksnap_err_t err;

  if ((err = ksnap__task_state_scratch(
           task, ksnap__task_timers_key_group(task), &scratch, error)))
    return err;
  err = restore_into(task, scratch, meta, st, read_fired, &fr, error);
  ksnap_state_destroy(scratch);
  if (fr.err)
    err = fr.err;
  if (err)
    return ksnap_error_prefix(error, "%s: the timers' firing log of "
                              "checkpoint %lld", task->id,
                              (long long)meta->checkpoint_id);
  ksnap__fired_list_sort(log);
  return KSNAP_ERR_OK;
}
