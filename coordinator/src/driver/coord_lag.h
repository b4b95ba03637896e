/* The source-lag reader of the coordinator driver: a thread that reads
 * the end offsets of the job's source partitions from the broker, so the
 * coordinator thread never waits on the network for them. See
 * coord_lag.c. */
#ifndef KSNAP_COORD_LAG_H
#define KSNAP_COORD_LAG_H

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "stats/coord_stats.h"

typedef struct ksnap__lag_s ksnap__lag_t;

/** Starts the reader (its consumer, read_committed, and thread).
 *  @returns it or NULL with @p error. */
ksnap__lag_t *ksnap__lag_start(const ksnap_conf_t *conf, const char *job_name,
                               ksnap_error_t *error);

/** Coordinator thread, never blocks on Kafka: hands @p stats the end
 *  offsets the reader read last and tells the reader which partitions to
 *  read next (those of @p stats' latest completed checkpoint). */
void ksnap__lag_exchange(ksnap__lag_t *lag, ksnap_coord_stats_t *stats);

/** Stops the thread (waits at most one broker query) and frees @p lag.
 *  NULL is a no-op. */
void ksnap__lag_stop(ksnap__lag_t *lag);

#endif /* KSNAP_COORD_LAG_H */
