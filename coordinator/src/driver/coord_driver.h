/*
 * The coordinator process loop around the pure state machine (coord_sm.h):
 * Kafka I/O (coord_io.h), storage on a worker thread (coord_store.h), the
 * optional HTTP status endpoint (coord_rest.h).
 *
 * Start-up, in this order:
 *  1. ensure the job's internal topics (control, acks, progress);
 *  2. create the control producer with the fixed transactional id
 *     "<job>.ksnap.coordinator": init_transactions fences an older
 *     coordinator of the job and aborts its open transaction, so what it
 *     wrote is decided before step 3 reads it;
 *  3. read the control topic (read_committed, to the end) and replay it
 *     into the state machine: generation, latest completed checkpoint, id
 *     counter, unresolved checkpoints (aborted at start);
 *  4. read the latest completed checkpoint's `_metadata` (storage verifies
 *     its CRC) and check every state handle it names against its object's
 *     trailer (present, same size and CRC32C): a missing or corrupt object
 *     fails the start clearly;
 *  4b. with execution.savepoint.path (`--from-savepoint`, coord_from.h):
 *     read and check that point, and make it the restore point unless the
 *     history already started from it; a point whose stages the job
 *     graph lacks fails the job (JOB_FAILED) unless
 *     execution.savepoint.ignore-unclaimed-state;
 *  5. consume the ack topic: from the beginning on a fresh job (tasks may
 *     have registered before the coordinator came up), else from its end
 *     (running tasks are recognized by their heartbeats);
 *  6. loop: acks -> events, storage results -> events, tick, actions.
 *
 * Actions: TRIGGER / ABORT / RESTORE / COMPLETE are each written in their
 * own transaction; COMPLETE is reported committed only when
 * commit_transaction returned OK, and not at all when the producer was
 * fenced (the loop ends). WRITE_METADATA is encoded at once and uploaded
 * on the storage thread; its result comes back as an event. RETIRE deletes
 * "<job>/chk-N/" (idempotent). FAIL_JOB writes JOB_FAILED(G, cause), so
 * that every worker stops and no later coordinator resumes the job by
 * itself, and ends the loop with KSNAP_ERR_JOB_FAILED and the cause;
 * STOP_JOB waits until every sink task committed the savepoint (at most
 * 30 s), writes JOB_STOPPED(G, id, URL), so that every worker stops, and
 * ends the loop with OK.
 *
 * A control history that ends with JOB_STOPPED (no RESTORE after it)
 * ends the start after step 4b with OK, writing nothing, unless
 * --from-savepoint sets a restore point the history did not start from.
 *
 * A control history that ends with JOB_FAILED (no RESTORE after it) stops
 * the start after step 5 with KSNAP_ERR_JOB_FAILED naming the cause,
 * unless ksnap_coord_opts_t.resume_failed asks to resume the job: then the
 * start's restore (a new generation from the latest completed checkpoint)
 * resumes it.
 *
 * Operator requests (`ksnap checkpoint trigger`, `ksnap savepoint
 * [--stop]`) arrive as REQUEST records on the ack topic; requests written
 * before the coordinator started are ignored.
 */
#ifndef KSNAP_COORD_DRIVER_H
#define KSNAP_COORD_DRIVER_H

#include <signal.h>

#include "stats/coord_stats.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

/**
 * Runs the coordinator of the job in the finalized @p conf until *@p stop
 * becomes non-zero (may be NULL), the job stops with a savepoint or fails.
 * @returns KSNAP_ERR_OK (stopped), KSNAP_ERR_JOB_FAILED (FAIL_JOB, or a
 * history that ends FAILED: the cause in @p error), KSNAP_ERR_FENCED (a
 * newer coordinator took over), or the start-up error (topics, Kafka, a
 * corrupt `_metadata`, ...).
 */
ksnap_err_t ksnap_coord_run(const ksnap_conf_t *conf,
                            volatile sig_atomic_t *stop,
                            ksnap_error_t *error);

/**
 * Receives the checkpoint statistics' summary (coord_stats.h) after every
 * turn of the coordinator's loop (at least every 100 ms), on the
 * coordinator's thread; @p summary is valid during the call only.
 */
typedef void(ksnap_coord_observer_t)(void *opaque,
                                     const ksnap_stats_summary_t *summary);

/** How ksnap_coord_run_with() runs; zeroed: as ksnap_coord_run(). */
typedef struct ksnap_coord_opts_s {
  ksnap_coord_observer_t *observer; /**< may be NULL */
  void *observer_opaque;
  /** Resume a job whose control history ends FAILED (the operator's
   *  deliberate choice: `ksnap coordinator --resume-failed`,
   *  KSNAP_RUN_RESUME_FAILED). */
  int resume_failed;
} ksnap_coord_opts_t;

/** ksnap_coord_run() with @p opts (NULL: none). */
ksnap_err_t ksnap_coord_run_with(const ksnap_conf_t *conf,
                                 volatile sig_atomic_t *stop,
                                 const ksnap_coord_opts_t *opts,
                                 ksnap_error_t *error);

#endif /* KSNAP_COORD_DRIVER_H */
