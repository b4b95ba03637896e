/*
 * Snapshot thread pool (see snap_pool.h): a mutex-guarded FIFO of jobs and
 * a condition variable; each job is owned by the queue until a thread pops
 * it, then by that thread.
 */
#include "snap_pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job_s {
  ksnap__snap_job_fn_t *fn;
  void *arg;
  struct job_s *next;
} job_t;

struct ksnap__snap_pool_s {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  job_t *head, *tail;
  int stop;
  int nthreads;
  pthread_t threads[16];
};

static void *worker_main(void *arg) {
  ksnap__snap_pool_t *pool = arg;

  for (;;) {
    job_t *job;
    pthread_mutex_lock(&pool->lock);
    while (!pool->head && !pool->stop)
      pthread_cond_wait(&pool->cond, &pool->lock);
    if (!(job = pool->head)) {
      pthread_mutex_unlock(&pool->lock);
      return NULL;
    }
    if (!(pool->head = job->next))
      pool->tail = NULL;
    pthread_mutex_unlock(&pool->lock);
    job->fn(job->arg);
    free(job);
  }
}

ksnap__snap_pool_t *ksnap__snap_pool_new(int nthreads, ksnap_error_t *error) {
  ksnap__snap_pool_t *pool = calloc(1, sizeof(*pool));

  if (nthreads < 1)
    nthreads = 1;
  if (nthreads > 16)
    nthreads = 16;
  if (!pool) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->cond, NULL);
  for (; pool->nthreads < nthreads; pool->nthreads++)
    if (pthread_create(&pool->threads[pool->nthreads], NULL, worker_main,
                       pool)) {
      ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot start a pool thread");
      ksnap__snap_pool_destroy(pool);
      return NULL;
    }
  return pool;
}

void ksnap__snap_pool_destroy(ksnap__snap_pool_t *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->cond);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->nthreads; i++)
    pthread_join(pool->threads[i], NULL);
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->cond);
  free(pool);
}

ksnap_err_t ksnap__snap_pool_submit(ksnap__snap_pool_t *pool,
                                    ksnap__snap_job_fn_t *fn, void *arg,
                                    ksnap_error_t *error) {
  job_t *job = calloc(1, sizeof(*job));

  if (!job)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  job->fn = fn;
  job->arg = arg;
  pthread_mutex_lock(&pool->lock);
  if (pool->tail)
    pool->tail->next = job;
  else
    pool->head = job;
  pool->tail = job;
  pthread_cond_signal(&pool->cond);
  pthread_mutex_unlock(&pool->lock);
  return KSNAP_ERR_OK;
}
