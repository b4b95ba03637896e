/* Consecutive checkpoint failures (coord_failures.h), as Flink's
 * CheckpointFailureManager: declined, expired and unwritable checkpoints
 * (not savepoints: Flink's job-level rule) newer than the last completed
 * one count; a completion resets the count; a count above
 * execution.checkpointing.tolerable-failed-checkpoints is a failure of the
 * job (the hub asks the restart strategy, as Flink fails over) and starts
 * the count again, as Flink clears it before failing the job. A restarted
 * coordinator starts at 0 (the count is not durable; nor is Flink's
 * across a JobManager failover). */
#include "coord_failures.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ksnap/records.h"

struct coord_failures_s {
  int tolerable;
  int failures;            /**< consecutive counted failures */
  int64_t last_success_id; /**< NONE if none */
};

coord_failures_t *ksnap__coord_failures_new(int tolerable) {
  coord_failures_t *failures = calloc(1, sizeof(*failures));

  if (!failures)
    return NULL;
  failures->tolerable = tolerable;
  failures->last_success_id = KSNAP_CHECKPOINT_NONE;
  return failures;
}

void ksnap__coord_failures_destroy(coord_failures_t *failures) {
  free(failures);
}

bool ksnap__coord_failures_count(coord_failures_t *failures, int64_t id,
                                 bool is_savepoint, const char *reason,
                                 char *why, size_t why_size) {
  if (is_savepoint || (failures->last_success_id != KSNAP_CHECKPOINT_NONE &&
                       id <= failures->last_success_id))
    return false;
  failures->failures++;
  if (failures->failures <= failures->tolerable)
    return false;
  snprintf(why, why_size,
           "Exceeded checkpoint tolerable failure threshold: %d consecutive "
           "checkpoint failures "
           "(execution.checkpointing.tolerable-failed-checkpoints=%d); the "
           "last: checkpoint %" PRId64 " %s",
           failures->failures, failures->tolerable, id, reason);
  failures->failures = 0;
  return true;
}

void ksnap__coord_failures_success(coord_failures_t *failures, int64_t id) {
  if (failures->last_success_id == KSNAP_CHECKPOINT_NONE ||
      id > failures->last_success_id) {
    failures->last_success_id = id;
    failures->failures = 0;
  }
}

void ksnap__coord_failures_start(coord_failures_t *failures, int64_t latest) {
  failures->last_success_id = latest;
}

int ksnap__coord_failures_cnt(const coord_failures_t *failures) {
  return failures->failures;
}
