/*
 * Helpers for the pipeline tests (tests/integration/test_pipeline*.c): the
 * test plays the coordinator's part until it exists: it writes control
 * records (TRIGGER, COMPLETE, RESTORE) to <job>.ksnap.control, collects
 * ACK / DECLINE / COMMITTED from <job>.ksnap.acks and writes a completed
 * checkpoint's _metadata from the ACKs.
 */
#ifndef KSNAP_PIPETEST_H
#define KSNAP_PIPETEST_H

#include <stddef.h>
#include <sys/types.h>

#include "ksnap/records.h"

/** Generation of a job that was never restored (what workers start in). */
#define PT_G0 KSNAP_GENERATION_FIRST

#include <stddef.h>
#include <stdint.h>

#include "ksnap/records.h"
#include "ksnap/storage.h"

/** Produces one control record (non-transactionally) and flushes. */
void pt_send_control(const char *bootstrap, const char *job,
                     const ksnap_control_record_t *rec);
void pt_trigger(const char *bootstrap, const char *job, int64_t id,
                int64_t gen);
void pt_complete(const char *bootstrap, const char *job, int64_t id,
                 int64_t gen);
void pt_restore(const char *bootstrap, const char *job, int64_t gen,
                int64_t id);

/** A reader of the acks topic that keeps every record it decoded. */
typedef struct pt_acks_s pt_acks_t;
pt_acks_t *pt_acks_new(const char *bootstrap, const char *job);
void pt_acks_destroy(pt_acks_t *acks);

/**
 * Reads until @p n distinct tasks sent a record of @p type for checkpoint
 * @p id in generation @p gen (ACK, DECLINE, COMMITTED, or REGISTER /
 * HEARTBEAT with
 * @p id 0), or a DECLINE of
 * @p id arrives when waiting for ACKs, or @p timeout_ms passes.
 * @returns the number of distinct tasks seen; *@p recs (may be NULL)
 * points to them (owned by @p acks).
 */
size_t pt_acks_wait(pt_acks_t *acks, ksnap_ack_type_t type, int64_t id,
                    int64_t gen, size_t n, int timeout_ms,
                    const ksnap_ack_record_t ***recs);

/** Writes <job>/chk-<id>/_metadata built from @p acks' ACKs of @p id. */
void pt_write_metadata(ksnap_storage_t *st, const char *job, int64_t id,
                       int64_t gen, const ksnap_ack_record_t *const *acks,
                       size_t n);

/** As pt_write_metadata() with parent checkpoint @p parent (the previous
 * completed one, as the coordinator records it; a commit repair follows
 * the parents). */
void pt_write_metadata_parent(ksnap_storage_t *st, const char *job,
                              int64_t id, int64_t gen, int64_t parent,
                              const ksnap_ack_record_t *const *acks,
                              size_t n);

/** Produces @p n values to @p topic (@p partition, -1: round robin). */
void pt_produce(const char *bootstrap, const char *topic, int32_t partition,
                const char *const *values, size_t n);

/**
 * Produces source lines [@p from, @p to) (pt_line) to @p topic, line i to
 * partition i mod @p nparts.
 */
void pt_produce_lines(const char *bootstrap, const char *topic, int nparts,
                      size_t from, size_t to);

/** Stops a `ksnap worker` child process (SIGTERM) and reaps it. */
void pt_stop_worker(pid_t pid);

/**
 * Reads every partition of @p topic to its end with read_committed.
 * @returns "key:value" strings (free each and the array), *@p np of them.
 */
char **pt_consume_committed(const char *bootstrap, const char *topic,
                            int partitions, size_t *np);

#endif /* KSNAP_PIPETEST_H */
