/*
 * Epoch replay: a sink task's replay, on restore, of the epochs whose
 * commit was lost (see replay.c for the steps).
 */
#ifndef KSNAP_REPLAY_H
#define KSNAP_REPLAY_H

#include <stdint.h>

#include "ksnap/error.h"

struct ksnap_task_s;

/**
 * Called by a sink task restoring from checkpoint N = @p base_id, after
 * ksnap_2pc_new() fenced every slot id and before chk-N's state is
 * loaded and the first live transaction begins. Reads the task's last
 * committed transaction C from the progress topic; if C < N, replays the
 * input between C's cut and N's through the operator on C's state and
 * commits the output with progress record N (sink epoch N). No-op on a
 * fresh start or when C >= N.
 * @returns OK; KSNAP_ERR_RETENTION when replay data (exchange/source
 * records, or the ACK of an aborted C) was deleted; KSNAP_ERR_STATE when
 * N's chain of completed checkpoints does not lead to C;
 * KSNAP_ERR_UNSUPPORTED across a rescale of the sink stage; storage,
 * Kafka and operator errors. The task must fail on any error (nothing of
 * the replay was committed then; a later restore tries again).
 * Threading: the task's processing thread.
 */
ksnap_err_t ksnap__replay_epoch(struct ksnap_task_s *task, int64_t base_id,
                                ksnap_error_t *error);

#endif /* KSNAP_REPLAY_H */
