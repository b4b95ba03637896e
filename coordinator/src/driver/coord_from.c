/*
 * A job's start from a savepoint or a retained checkpoint (coord_from.h).
 *
 * Why the history decides: `ksnap run JOB --from-savepoint URL` may be
 * started again by a supervisor with the same command line after the job
 * took checkpoints of its own. Going back to URL then would replay and
 * commit that output a second time. The RESTORE that started the job
 * from URL is on the control topic, so a start that finds it does the
 * usual global failover (from the point, or from the job's newer
 * checkpoint) instead.
 */
#include "coord_from.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/buf.h"
#include "ksnap/log.h"
#include "storage/restore_point.h"

/* @p a and @p b name the same point (trailing '/' and /_metadata aside). */
static int same_point(const char *a, const char *b) {
  char *ba = NULL, *ka = NULL, *bb = NULL, *kb = NULL;
  int same;

  if (ksnap_restore_point_split(a, &ba, &ka, NULL) ||
      ksnap_restore_point_split(b, &bb, &kb, NULL))
    same = 0;
  else
    same = !strcmp(ba, bb) && !strcmp(ka, kb);
  free(ba);
  free(ka);
  free(bb);
  free(kb);
  return same;
}

void ksnap__drv_from_replayed(ksnap__drv_t *d, ksnap__drv_from_t *f,
                              const ksnap_restore_t *r) {
  char *own;

  if (r->checkpoint_id <= 0 || !r->metadata_path || !*r->metadata_path)
    return;
  own = ksnap__coord_meta_url(d->conf, d->job_name, r->checkpoint_id);
  if (!own || !same_point(own, r->metadata_path))
    ksnap_coord_sm_restore_from(d->sm, r->checkpoint_id, r->metadata_path);
  free(own);
  if (f->url && same_point(f->url, r->metadata_path))
    f->seen = 1;
}

static ksnap_err_t load(ksnap__drv_t *d, const char *url,
                        ksnap_checkpoint_meta_t *meta, ksnap_error_t *error) {
  char *base = NULL, *key = NULL;
  ksnap_storage_t *st = NULL;
  ksnap_buf_t b;
  ksnap_err_t err;

  ksnap_buf_init(&b);
  if (!(err = ksnap_restore_point_split(url, &base, &key, error)) &&
      !(err = ksnap__coord_storage_open_dir(d->conf, base, &st, error)) &&
      !(err = ksnap_storage_get(st, key, &b, error)) &&
      !(err = ksnap_codec_meta_decode(b.data, b.len, meta, error)) &&
      (err = ksnap__coord_meta_verify(st, meta, error)))
    ksnap_checkpoint_meta_cleanup(meta);
  if (err)
    ksnap_error_prefix(error, "--from-savepoint %s", url);
  ksnap_buf_cleanup(&b);
  ksnap_storage_destroy(st);
  free(base);
  free(key);
  return err;
}

/* The stages of @p meta that the job graph does not have: f->cause
 * names the first, or a warning per stage with allow_non_restored. */
static void check_graph(ksnap__drv_t *d, ksnap__drv_from_t *f,
                        const ksnap_job_t *job,
                        const ksnap_checkpoint_meta_t *meta) {
  for (size_t i = 0; i < meta->task_cnt && !f->cause[0]; i++) {
    const char *stage = meta->tasks[i].task.stage;
    int first = 1;
    if (ksnap_job_stage_find(job, stage))
      continue;
    for (size_t k = 0; k < i; k++)
      first &= strcmp(meta->tasks[k].task.stage, stage) != 0;
    if (!first)
      continue;
    if (f->allow_non_restored)
      KSNAP_WARN("COORD", "job %s: %s: the state of stage %s is dropped: "
                 "the job graph has no such stage "
                 "(--allow-non-restored-state)", d->job_name, f->url, stage);
    else
      snprintf(f->cause, sizeof(f->cause),
               "cannot restore from %s: stage %s and its state (snapshot "
               "%s, %zu handle%s) are not in the job graph; a stage is "
               "matched by its name (stage.NAME.*): rename it back, or "
               "drop its state with --allow-non-restored-state", f->url,
               stage, meta->tasks[i].handle_cnt
                          ? meta->tasks[i].handles[0].path
                          : "without files",
               meta->tasks[i].handle_cnt,
               meta->tasks[i].handle_cnt == 1 ? "" : "s");
  }
}

ksnap_err_t ksnap__drv_from_prepare(ksnap__drv_t *d, ksnap__drv_from_t *f,
                                    const ksnap_job_t *job,
                                    ksnap_error_t *error) {
  ksnap_checkpoint_meta_t meta;
  ksnap_err_t err;

  if (!f->url)
    return KSNAP_ERR_OK;
  if (f->seen) {
    KSNAP_INFO("COORD", "job %s: the job already started from %s (its "
               "control history says so): not going back to it; restoring "
               "as after any coordinator restart", d->job_name, f->url);
    return KSNAP_ERR_OK;
  }
  if ((err = load(d, f->url, &meta, error)))
    return err;
  check_graph(d, f, job, &meta);
  if (!f->cause[0]) {
    if (strcmp(meta.job, d->job_name))
      KSNAP_INFO("COORD", "job %s: %s was taken by job %s", d->job_name,
                 f->url, meta.job);
    if ((err = ksnap_coord_sm_restore_from(d->sm, meta.checkpoint_id,
                                           f->url)))
      err = ksnap_error_set(error, err, "--from-savepoint %s", f->url);
    else {
      f->restore = 1;
      KSNAP_INFO("COORD", "job %s: starting from %s %" PRId64 " at %s",
                 d->job_name, meta.is_savepoint ? "savepoint" : "checkpoint",
                 meta.checkpoint_id, f->url);
    }
  }
  ksnap_checkpoint_meta_cleanup(&meta);
  return err;
}
