/* The part of the coordinator driver's state shared by its two files.
 * Both are run by one thread, the coordinator thread (the caller of
 * ksnap_coord_run_with()); the storage worker and the HTTP thread
 * never see this struct.
 *   coord_driver.c   start-up and the loop: creates and destroys every
 *                    handle; its own state (job, ack-topic consumer, REST
 *                    endpoint, observer) is private to it;
 *   coord_drv_act.c  events in, actions out: uses the handles below and
 *                    owns the end of the loop (done, result, error's
 *                    message). */
#ifndef KSNAP_COORD_DRV_INT_H
#define KSNAP_COORD_DRV_INT_H

#include "control/coord_io.h"
#include "state_machine/coord_sm.h"
#include "coord_store.h"
#include "coord_driver.h"
#include "ksnap/job.h"

/* Control writes and commits: one transaction each. */
#define KSNAP__DRV_TXN_TIMEOUT_MS 30000

typedef struct ksnap__drv_s {
  /* set by coord_driver.c at start; coord_drv_act.c uses them */
  const ksnap_conf_t *conf;
  const char *job_name;
  ksnap_coord_sm_t *sm;
  ksnap__coord_producer_t *prod;
  ksnap__coord_store_t *store;
  int64_t start_ms;     /* wall clock at start: older requests ignored */
  ksnap_error_t *error; /* the run's error (result's message) */
  /* written by coord_drv_act.c only (ksnap__drv_fail(), STOP_JOB) */
  int done;           /* leave the loop */
  ksnap_err_t result; /* why */
  /* the savepoint being finalized (one at a time): its directory's URL
   * goes into its COMPLETE (coord_drv_act.c) */
  int64_t sp_id;
  char *sp_url;
  /* a stop-with-savepoint that completed (STOP_JOB): JOB_STOPPED goes out
   * once every sink task committed it, or at stop_deadline_ms */
  int64_t stop_id; /* 0: none */
  int64_t stop_deadline_ms;
  char *stop_url;
} ksnap__drv_t;

/* How long a completed stop-with-savepoint waits for its sinks' commits
 * before it records the stop anyway (the next start from the savepoint
 * repairs a commit that did not happen, plugin/PROTOCOL.md section
 * 5.10). */
#define KSNAP__DRV_STOP_COMMIT_WAIT_MS 30000

/* JOB_STOPPED once the stop's commits are in or its wait is over. */
void ksnap__drv_stop_check(ksnap__drv_t *d, int64_t now_ms);

/* JOB_FINISHED once a bounded job's final checkpoint is committed by
 * every sink task (no time limit). */
void ksnap__drv_finish_check(ksnap__drv_t *d);

/* One record of the ack topic (a ksnap__coord_rec_cb_t). */
int ksnap__drv_on_ack(void *opaque, const void *buf, size_t len,
                      int64_t timestamp_ms);

/* Feeds finished storage operations to the state machine. */
void ksnap__drv_store_results(ksnap__drv_t *d);

/* Performs every action the state machine produced. */
void ksnap__drv_actions(ksnap__drv_t *d);

/* Ends the loop with @p code and a message (the first one wins). */
void ksnap__drv_fail(ksnap__drv_t *d, ksnap_err_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* KSNAP_COORD_DRV_INT_H */
