/*
 * A savepoint's own directory (see coord_savepoint.h): its name, its keys
 * and its `_metadata` with handle paths relative to it.
 */
#include "coord_savepoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "coord_store.h"
#include "ksnap/buf.h"

ksnap_err_t ksnap__coord_savepoint_storage_open(const ksnap_conf_t *conf,
                                                ksnap_storage_t **stp,
                                                ksnap_error_t *error) {
  const char *dir = NULL;

  *stp = NULL;
  if (ksnap_conf_get_str(conf, "state.savepoints.dir", &dir) || !dir || !*dir)
    return ksnap__coord_storage_open(conf, stp, error);
  return ksnap__coord_storage_open_dir(conf, dir, stp, error);
}

static char *dup_printf(const char *fmt, const char *a, const char *b,
                        const char *c) {
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  if (ksnap_buf_appendf(&buf, fmt, a, b, c)) {
    ksnap_buf_cleanup(&buf);
    return NULL;
  }
  return (char *)ksnap_buf_detach(&buf, NULL);
}

static const char *sep(const char *dir) {
  return dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
}

/* 48 random bits as 12 hex digits: two savepoints of one id (a restarted
 * coordinator's) never share a directory. */
static void random_hex(char out[13]) {
  uint64_t r = 0;

  if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
    r = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 16 ^
        (uint64_t)clock();
  snprintf(out, 13, "%012" PRIx64, r & (uint64_t)0xffffffffffff);
}

/* The directory's URL and its key in the savepoint storage. */
static ksnap_err_t target(const ksnap_conf_t *conf, const char *job,
                          int64_t id, ksnap__coord_savepoint_t *sp,
                          ksnap_error_t *error) {
  const char *spdir = NULL, *dir = NULL;
  char name[400], rnd[13];

  random_hex(rnd);
  snprintf(name, sizeof(name), "savepoint-%s-%" PRId64 "-%s", job, id, rnd);
  if (!ksnap_conf_get_str(conf, "state.savepoints.dir", &spdir) && spdir &&
      *spdir) {
    sp->prefix = strdup(name);
    sp->url = dup_printf("%s%s%s", spdir, sep(spdir), name);
  } else if (!ksnap_conf_get_str(conf, "state.checkpoints.dir", &dir) &&
             dir) {
    sp->prefix = dup_printf("%s/%s%s", job, name, "");
    sp->url = dup_printf("%s%s%s", dir, sep(dir), sp->prefix ? sp->prefix
                                                             : "");
  } else {
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "neither state.savepoints.dir nor "
                           "state.checkpoints.dir is set");
  }
  if (!sp->prefix || !sp->url)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  return KSNAP_ERR_OK;
}

/* Task @p ts's handles with paths relative to the savepoint directory
 * (the file names), and the source and destination keys of each. */
static ksnap_err_t relocate_task(const ksnap_checkpoint_meta_t *meta,
                                 const ksnap_task_snapshot_t *ts,
                                 ksnap_task_snapshot_t *out,
                                 ksnap__coord_savepoint_t *sp,
                                 ksnap_error_t *error) {
  char own[400];

  *out = *ts; /* offsets, channels, timings: borrowed */
  out->handles = calloc(ts->handle_cnt ? ts->handle_cnt : 1,
                        sizeof(*out->handles));
  out->handle_cnt = 0;
  if (!out->handles)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  snprintf(own, sizeof(own), "%s/chk-%" PRId64 "/", meta->job,
           meta->checkpoint_id);
  for (size_t i = 0; i < ts->handle_cnt; i++) {
    const ksnap_state_handle_t *h = &ts->handles[i];
    const char *file = h->path + strlen(own);

    if (strncmp(h->path, own, strlen(own)) || !*file || strchr(file, '/'))
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "savepoint %" PRId64 ": task %s[%d]'s state "
                             "file %s is not under %s (a savepoint names "
                             "no other checkpoint's objects)",
                             meta->checkpoint_id, ts->task.stage,
                             (int)ts->task.index, h->path, own);
    out->handles[i] = *h;
    out->handles[i].path = strdup(file);
    out->handle_cnt = i + 1;
    sp->src[sp->n] = strdup(h->path);
    sp->dst[sp->n] = dup_printf("%s/%s%s", sp->prefix, file, "");
    sp->n++;
    if (!out->handles[i].path || !sp->src[sp->n - 1] || !sp->dst[sp->n - 1])
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  return KSNAP_ERR_OK;
}

static void free_relocated(ksnap_checkpoint_meta_t *m) {
  for (size_t t = 0; m->tasks && t < m->task_cnt; t++) {
    for (size_t i = 0; i < m->tasks[t].handle_cnt; i++)
      free(m->tasks[t].handles[i].path);
    free(m->tasks[t].handles);
  }
  free(m->tasks);
}

static size_t count_handles(const ksnap_checkpoint_meta_t *meta) {
  size_t n = 0;

  for (size_t t = 0; t < meta->task_cnt; t++)
    n += meta->tasks[t].handle_cnt;
  return n;
}

ksnap_err_t ksnap__coord_savepoint_plan(const ksnap_conf_t *conf,
                                        const ksnap_checkpoint_meta_t *meta,
                                        ksnap__coord_savepoint_t **spp,
                                        ksnap_error_t *error) {
  ksnap__coord_savepoint_t *sp = calloc(1, sizeof(*sp));
  ksnap_checkpoint_meta_t rel = *meta;
  size_t nh = count_handles(meta);
  ksnap_buf_t buf;
  ksnap_err_t err;

  *spp = NULL;
  ksnap_buf_init(&buf);
  rel.tasks = calloc(meta->task_cnt ? meta->task_cnt : 1, sizeof(*rel.tasks));
  rel.task_cnt = 0;
  if (!sp || !rel.tasks || !(sp->src = calloc(nh + 1, sizeof(char *))) ||
      !(sp->dst = calloc(nh + 1, sizeof(char *)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((err = target(conf, meta->job, meta->checkpoint_id, sp, error)))
    goto out;
  for (size_t t = 0; t < meta->task_cnt; t++, rel.task_cnt++)
    if ((err = relocate_task(meta, &meta->tasks[t], &rel.tasks[t], sp,
                             error))) {
      rel.task_cnt++; /* its handles are freed too */
      goto out;
    }
  if (!(err = ksnap_codec_meta_encode(&rel, &buf, error)))
    sp->meta = ksnap_buf_detach(&buf, &sp->meta_len);
out:
  free_relocated(&rel);
  ksnap_buf_cleanup(&buf);
  if (err)
    ksnap__coord_savepoint_free(sp);
  else
    *spp = sp;
  return err;
}

void ksnap__coord_savepoint_free(ksnap__coord_savepoint_t *sp) {
  if (!sp)
    return;
  for (size_t i = 0; i < sp->n; i++) {
    free(sp->src[i]);
    free(sp->dst[i]);
  }
  free(sp->src);
  free(sp->dst);
  free(sp->meta);
  free(sp->prefix);
  free(sp->url);
  free(sp);
}
