/*
 * Streamed writes (see ksnap/storage.h): the CRC32C trailer computed on
 * the way, an optional head written last (its checksum combined with the
 * rest's, so nothing is read twice), and an optional writer thread.
 *
 * THREADING
 *   The caller's thread calls every ksnap_storage_writer_* function. With
 *   a buffer_size the writer owns a thread that makes the backend calls
 *   (w_write) for full buffers while the caller fills the next one; from
 *   open to commit or abort it is the only user of the storage. The two
 *   threads share `job` (the buffer being stored), `spare` and the first
 *   error under the mutex:
 *
 *     caller: fill ----full----> handoff: wait until job == NULL,
 *                                job = fill, fill = spare, spare = NULL
 *     thread: job != NULL ----> w_write(job) ----> spare = job, job = NULL
 *
 *   so at most two buffers exist, and job == NULL implies spare != NULL.
 *   Before the head, the trailer and the commit the caller drains (hands
 *   the partial buffer over and waits until job == NULL) and stops the
 *   thread: the backend calls after that are the caller's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "base/util.h"
#include "storage_int.h"

struct ksnap_storage_writer_s {
  ksnap_storage_t *st;
  ksnap__bwriter_t *bw;
  uint32_t crc; /* of the data after the head */
  uint64_t len;
  size_t head_len;
  int head_set;
  uint32_t head_crc;
  /* writer thread (buffer_size > 0) */
  size_t buffer_size;
  uint8_t *fill, *spare, *job;
  size_t nfill, njob;
  int running, stop;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ksnap_err_t err; /* the thread's first failure */
  ksnap_error_t error;
};

static void *writer_main(void *arg) {
  ksnap_storage_writer_t *w = arg;
  ksnap_error_t error;

  pthread_mutex_lock(&w->mu);
  for (;;) {
    uint8_t *buf;
    size_t n;
    int failed;
    ksnap_err_t err = KSNAP_ERR_OK;
    while (!w->job && !w->stop)
      pthread_cond_wait(&w->cv, &w->mu);
    if (!w->job)
      break;
    buf = w->job;
    n = w->njob;
    failed = w->err != KSNAP_ERR_OK; /* after a failure, or an abort */
    pthread_mutex_unlock(&w->mu);
    if (!failed)
      err = w->st->ops->w_write(w->bw, buf, n, &error);
    pthread_mutex_lock(&w->mu);
    if (err && !w->err) {
      w->err = err;
      w->error = error;
    }
    w->spare = buf;
    w->job = NULL;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static ksnap_err_t thread_error(ksnap_storage_writer_t *w,
                                ksnap_error_t *error) {
  if (error)
    *error = w->error;
  return w->err;
}

/* Hands the filled buffer to the thread (waiting for the one before). */
static ksnap_err_t handoff(ksnap_storage_writer_t *w, ksnap_error_t *error) {
  ksnap_err_t err;

  pthread_mutex_lock(&w->mu);
  while (w->job)
    pthread_cond_wait(&w->cv, &w->mu);
  if (!(err = w->err) && w->nfill) {
    w->job = w->fill;
    w->njob = w->nfill;
    w->fill = w->spare;
    w->spare = NULL;
    w->nfill = 0;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return err ? thread_error(w, error) : KSNAP_ERR_OK;
}

/* Stores what is buffered and ends the thread; the backend is the
 * caller's again. */
static ksnap_err_t stop_thread(ksnap_storage_writer_t *w,
                               ksnap_error_t *error) {
  ksnap_err_t err;

  if (!w->running)
    return KSNAP_ERR_OK;
  err = handoff(w, error);
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  w->running = 0;
  if (!err && w->err)
    err = thread_error(w, error);
  return err;
}

static void writer_free(ksnap_storage_writer_t *w) {
  if (w->buffer_size) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
  }
  free(w->fill);
  free(w->spare);
  free(w);
}

static ksnap_err_t start_thread(ksnap_storage_writer_t *w,
                                ksnap_error_t *error) {
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->fill = malloc(w->buffer_size);
  w->spare = malloc(w->buffer_size);
  if (!w->fill || !w->spare)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (pthread_create(&w->thread, NULL, writer_main, w))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "%s: cannot start a writer thread",
                           ksnap_storage_url(w->st));
  w->running = 1;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_storage_writer_open_opts(
    ksnap_storage_t *st, const char *key,
    const ksnap_storage_writer_opts_t *opts, ksnap_storage_writer_t **out,
    ksnap_error_t *error) {
  ksnap_storage_writer_t *w;
  ksnap_err_t err;

  *out = NULL;
  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  if (!(w = calloc(1, sizeof(*w))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  w->st = st;
  w->head_len = opts ? opts->head_len : 0;
  w->buffer_size = opts ? opts->buffer_size : 0;
  if ((err = st->ops->w_open(st, key, w->head_len, &w->bw, error))) {
    writer_free(w);
    return err;
  }
  if (w->buffer_size && (err = start_thread(w, error))) {
    ksnap_storage_writer_abort(w);
    return err;
  }
  *out = w;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_storage_writer_open(ksnap_storage_t *st, const char *key,
                                      ksnap_storage_writer_t **out,
                                      ksnap_error_t *error) {
  return ksnap_storage_writer_open_opts(st, key, NULL, out, error);
}

ksnap_err_t ksnap_storage_writer_write(ksnap_storage_writer_t *w,
                                       const void *data, size_t len,
                                       ksnap_error_t *error) {
  const uint8_t *p = data;
  ksnap_err_t err;

  w->crc = ksnap__crc32c(w->crc, data, len);
  w->len += len;
  if (!w->running)
    return w->st->ops->w_write(w->bw, data, len, error);
  while (len) {
    size_t n = KSNAP_MIN(len, w->buffer_size - w->nfill);
    memcpy(w->fill + w->nfill, p, n);
    w->nfill += n;
    p += n;
    len -= n;
    if (w->nfill == w->buffer_size && (err = handoff(w, error)))
      return err;
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_storage_writer_set_head(ksnap_storage_writer_t *w,
                                          const void *data, size_t len,
                                          ksnap_error_t *error) {
  ksnap_err_t err;

  if (!w->head_len || w->head_set || len != w->head_len)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: head of %zu bytes does not fit the writer "
                           "(%zu reserved%s)", ksnap_storage_url(w->st), len,
                           w->head_len, w->head_set ? ", already set" : "");
  if ((err = stop_thread(w, error)) ||
      (err = w->st->ops->w_head(w->bw, data, len, error)))
    return err;
  w->head_crc = ksnap__crc32c(0, data, len);
  w->head_set = 1;
  return KSNAP_ERR_OK;
}

void ksnap_storage_writer_stat(const ksnap_storage_writer_t *w,
                               ksnap_storage_stat_t *stat) {
  stat->size = w->len + (w->head_set ? w->head_len : 0);
  stat->crc32c = w->head_set ? ksnap__crc32c_combine(w->head_crc, w->crc,
                                                     w->len)
                             : w->crc;
}

ksnap_err_t ksnap_storage_writer_commit(ksnap_storage_writer_t *w,
                                        ksnap_error_t *error) {
  uint8_t trailer[KSNAP__TRAILER_SIZE];
  const ksnap__storage_ops_t *ops = w->st->ops;
  ksnap_storage_stat_t stat;
  ksnap_err_t err;

  if (w->head_len && !w->head_set) {
    err = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                          "%s: writer committed without its head",
                          ksnap_storage_url(w->st));
    ksnap_storage_writer_abort(w);
    return err;
  }
  if ((err = stop_thread(w, error))) {
    ksnap_storage_writer_abort(w);
    return err;
  }
  ksnap_storage_writer_stat(w, &stat);
  ksnap__trailer_encode(trailer, stat.crc32c, stat.size);
  err = ops->w_write(w->bw, trailer, sizeof(trailer), error);
  if (err)
    ops->w_abort(w->bw);
  else
    err = ops->w_commit(w->bw, error);
  writer_free(w);
  return err;
}

void ksnap_storage_writer_abort(ksnap_storage_writer_t *w) {
  if (!w)
    return;
  if (w->running) {
    pthread_mutex_lock(&w->mu);
    w->err = w->err ? w->err : KSNAP_ERR_ABORTED; /* skip what is queued */
    pthread_mutex_unlock(&w->mu);
    stop_thread(w, NULL);
  }
  w->st->ops->w_abort(w->bw);
  writer_free(w);
}
