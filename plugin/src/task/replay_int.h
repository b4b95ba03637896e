/* Internal to the epoch replay: replay.c drives (the chain of checkpoints,
 * C's snapshot, the commit), replay_segment.c replays one segment of input
 * (see the comments at their tops). */
#ifndef KSNAP_REPLAY_INT_H
#define KSNAP_REPLAY_INT_H

#include "ksnap/error.h"
#include "ksnap/records.h"

struct ksnap_task_s;
struct ksnap__fired_list_s;

/** Replays exchange segment @p from -> @p to (from NULL: from offset 0,
 * generation g(to) only) through the task's operator, firing the timers
 * of @p log (the run's firings in the segment, fired.h) where the run
 * fired them. */
ksnap_err_t ksnap__replay_exchange_segment(struct ksnap_task_s *task,
                                           const ksnap_checkpoint_meta_t *from,
                                           const ksnap_checkpoint_meta_t *to,
                                           const struct ksnap__fired_list_s *log,
                                           ksnap_error_t *error);

/** Replays the task's source partitions from @p from's offsets (NULL: the
 * beginning) to @p to's, in one range (no generations on source records). */
ksnap_err_t ksnap__replay_source_segment(struct ksnap_task_s *task,
                                         const ksnap_checkpoint_meta_t *from,
                                         const ksnap_checkpoint_meta_t *to,
                                         const struct ksnap__fired_list_s *log,
                                         ksnap_error_t *error);

#endif /* KSNAP_REPLAY_INT_H */
