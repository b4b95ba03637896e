/*
 * A small fixed pool of threads for the snapshots' asynchronous phases
 * (plugin/PROTOCOL.md section 3.4: never the processing thread). Jobs run in
 * submission order, each on one pool thread; jobs of one task may run
 * concurrently (each owns its snapshot; task_snap.c orders what must be
 * ordered).
 *
 * Threading: submit from any thread; destroy from the owner once no
 * thread submits any more (it runs the queued jobs first).
 */
#ifndef KSNAP_SNAP_POOL_H
#define KSNAP_SNAP_POOL_H

#include "ksnap/error.h"

typedef struct ksnap__snap_pool_s ksnap__snap_pool_t;
typedef void(ksnap__snap_job_fn_t)(void *arg);

/** @returns a pool of @p nthreads (1..16) threads, or NULL (NOMEM). */
ksnap__snap_pool_t *ksnap__snap_pool_new(int nthreads, ksnap_error_t *error);

/** Runs the queued jobs, joins the threads, frees. NULL is a no-op. */
void ksnap__snap_pool_destroy(ksnap__snap_pool_t *pool);

/** Queues @p fn(@p arg). @returns OK or NOMEM. */
ksnap_err_t ksnap__snap_pool_submit(ksnap__snap_pool_t *pool,
                                    ksnap__snap_job_fn_t *fn, void *arg,
                                    ksnap_error_t *error);

#endif /* KSNAP_SNAP_POOL_H */
