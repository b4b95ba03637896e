/*
 * Whether a restore point fits the task's stage at its parallelism now
 * (restore_fit.c): the checks of a restore at another parallelism, run
 * on the task's processing thread before anything is restored. A point
 * that does not fit fails with KSNAP_ERR_INCOMPATIBLE, which no restart
 * fixes (the job fails), with a message naming the stage.
 */
#ifndef KSNAP_RESTORE_FIT_H
#define KSNAP_RESTORE_FIT_H

#include <stdbool.h>

#include "ksnap/error.h"
#include "ksnap/records.h"

struct ksnap_task_s;

/** The parallelism @p stage had in @p meta (1 + its highest task index;
 *  0: not in it). */
int32_t ksnap__restore_fit_old_p(const ksnap_checkpoint_meta_t *meta,
                                 const char *stage);

/**
 * Exchange inputs: a checkpoint with records in flight on the task's
 * channels (a channel whose writer's barrier was not passed: an unaligned
 * snapshot) restores only if neither the task's stage nor the writing
 * stage changed parallelism, because those records were partitioned for
 * the old readers and carry old writers' channels.
 */
ksnap_err_t ksnap__restore_fit_inputs(struct ksnap_task_s *task,
                                      const ksnap_checkpoint_meta_t *meta,
                                      ksnap_error_t *error);

/**
 * A sink task restoring from checkpoint @p meta: *@p markp is set when its
 * epoch replay must not run and the sink's progress is to restart at the
 * checkpoint (a transaction with progress record N and no output):
 *  - the sink stage's parallelism changed: every old task of the stage
 *    must have committed N (no repair at another parallelism), else
 *    KSNAP_ERR_INCOMPATIBLE;
 *  - the point is another job's, or has no snapshot of the stage (a
 *    stage new in the graph): nothing of it is this task's to repair;
 *  - the task committed a transaction above N (a restore point older
 *    than the job's own history: the job went back to a savepoint).
 */
ksnap_err_t ksnap__restore_fit_sink(struct ksnap_task_s *task,
                                    const ksnap_checkpoint_meta_t *meta,
                                    bool *markp, ksnap_error_t *error);

#endif /* KSNAP_RESTORE_FIT_H */
