/*
 * One record through a task's operator, with the stage's
 * errors.tolerance (task_record.c): a failed record fails the task, or is
 * undone, counted and dead-lettered. task->errs is this file's.
 * Threading: the processing thread; the counts are atomics, readable
 * from any thread.
 */
#ifndef KSNAP_TASK_RECORD_H
#define KSNAP_TASK_RECORD_H

#include <stdatomic.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/error.h"
#include "ksnap/operator.h"

struct ksnap_task_s;

/** Reserved operator state of a stage with errors.tolerance=all: one
 * entry per task, its counts (failed, dead-lettered) at the snapshot. */
#define KSNAP__ERRORS_STATE "ksnap.errors"

/** task->errs: no other file touches it. */
typedef struct ksnap__task_errs_s {
  atomic_llong failed;        /* records that failed and were tolerated */
  atomic_llong dead_lettered; /* of them, written to the dead-letter topic */
  int64_t log_ms;             /* when the last failure was logged */
  int64_t log_quiet;          /* failures since then, not logged */
} ksnap__task_errs_t;

/**
 * One record through the operator (the live loop and the epoch replay).
 * errors.tolerance=none: the operator's error is returned, prefixed with
 * the task, the operator and the record's topic[partition]@offset.
 * all: the record runs in a scope (state writes, emits and timers); on
 * success they are kept, on failure undone, and the record is counted,
 * logged and written to the stage's dead-letter topic inside the open
 * transaction; OK is returned. Errors that are not the record's (out of
 * memory, Kafka errors while producing) are returned in both modes: the
 * task must fail.
 */
/* @p chan: the record's input (its gate channel, or its source partition
 * in the task's order; -1: unknown). A watermark record (task_wm.h) goes
 * to the task's watermarks, not to the operator. */
ksnap_err_t ksnap__task_process(struct ksnap_task_s *task, int32_t chan,
                                const ksnap_record_t *rec,
                                ksnap_error_t *error);

/**
 * The operator's view (ksnap_record_t.headers) of @p n headers of a
 * consumed record: @p stack when they fit in @p cap, else an array
 * malloc'd into *@p heapp (else *@p heapp is NULL; the caller frees it).
 * @returns the array (NULL when @p n is 0), or NULL out of memory.
 */
const ksnap_header_t *ksnap__task_in_headers(const ksnap_kafka_header_t *h,
                                             size_t n, ksnap_header_t *stack,
                                             size_t cap,
                                             ksnap_header_t **heapp);

/** Snapshot's sync phase: writes the counts into KSNAP__ERRORS_STATE of
 * the current state (nothing for a stage that tolerates nothing) and
 * returns them. */
ksnap_err_t ksnap__task_errors_save(struct ksnap_task_s *task,
                                    int64_t *failedp, int64_t *dead_letteredp,
                                    ksnap_error_t *error);

/** After a restore: the counts from the restored KSNAP__ERRORS_STATE (the
 * sum of its entries, so a rescale keeps the stage's total); 0 without. */
void ksnap__task_errors_load(struct ksnap_task_s *task);

#endif /* KSNAP_TASK_RECORD_H */
