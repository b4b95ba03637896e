/*
 * Watermarks of a task's inputs and the task's own (PROTOCOL.md section
 * 18). Pure: no Kafka, no threads; the caller passes the clock.
 *
 * An input is a source partition or an exchange channel, by the index the
 * task gives it. Each input's watermark only goes up. An idle input (a
 * source partition without records for the idle timeout, or a channel
 * whose writer said it is idle) does not hold the task back; a record or
 * a watermark from it makes it active again.
 *
 *   task watermark = max(previous, floor, min over the active inputs)
 *
 * so it never goes back, also when an idle input comes back behind it or
 * after a restore (the floor is the restored task watermark). With every
 * input idle (or none) the task is idle and its watermark stays.
 * Threading: the task's processing thread.
 */
#ifndef KSNAP_INPUT_WATERMARK_H
#define KSNAP_INPUT_WATERMARK_H

#include <stdint.h>

#include "ksnap/error.h"

/* KSNAP_WATERMARK_MIN and _MAX of ksnap/context.h */
#define KSNAP_WM_MIN INT64_MIN
#define KSNAP_WM_MAX INT64_MAX

typedef struct ksnap_wm_s {
  int32_t n;
  int64_t *wm;      /* per input */
  uint8_t *idle;    /* per input: 1 while it does not count */
  int64_t *seen_ms; /* per input: the clock at its last record */
  int64_t task;     /* the task's watermark */
  int task_idle;    /* every input idle */
} ksnap_wm_t;

/** @p n inputs, each active, seen at @p now_ms, at KSNAP_WM_MIN. */
ksnap_err_t ksnap_wm_init(ksnap_wm_t *w, int32_t n, int64_t now_ms,
                          ksnap_error_t *error);
void ksnap_wm_cleanup(ksnap_wm_t *w);

/** A record of input @p i at @p now_ms: active again. */
void ksnap_wm_seen(ksnap_wm_t *w, int32_t i, int64_t now_ms);
/** Input @p i's watermark reaches @p wm (a lower one changes nothing);
 * @p idle: its writer is idle (1) or active (0). */
void ksnap_wm_input(ksnap_wm_t *w, int32_t i, int64_t wm, int idle);
/** Input @p i's watermark, KSNAP_WM_MIN for an index outside. */
int64_t ksnap_wm_of(const ksnap_wm_t *w, int32_t i);
int ksnap_wm_is_idle(const ksnap_wm_t *w, int32_t i);

/** Source partitions: an input not seen for @p timeout_ms (> 0) by
 * @p now_ms becomes idle. */
void ksnap_wm_idle_check(ksnap_wm_t *w, int64_t now_ms, int64_t timeout_ms);

/** Recomputes the task's watermark. @returns 1 if it went up (or the
 * task went idle or active), else 0. */
int ksnap_wm_advance(ksnap_wm_t *w);
/** The task's watermark never goes below @p floor (a restored one). */
void ksnap_wm_floor(ksnap_wm_t *w, int64_t floor);

/*
 * In a snapshot the watermarks are entries of an operator list that every
 * task of the stage gets back whole (a union): one per input, "i", its
 * watermark (8 bytes big-endian), its idle flag (1) and its name (the
 * rest); one per task, "t", the task's watermark, its idle flag, its
 * index and the stage's parallelism (4 bytes each).
 */
#define KSNAP_WM_ENTRY_MAX 512

/** Input entry of @p name into @p out (KSNAP_WM_ENTRY_MAX bytes).
 * @returns its length (a name is cut to fit). */
size_t ksnap_wm_encode_input(const char *name, int64_t wm, int idle,
                             uint8_t *out);
/** The task's entry into @p out (22 bytes). @returns 22. */
size_t ksnap_wm_encode_task(const ksnap_wm_t *w, int32_t index,
                            int32_t parallelism, uint8_t *out);

/**
 * Restores @p w (fresh, its inputs named @p names) from a snapshot's
 * entries: an input takes the highest watermark of the entries of its
 * name, and their idle flag; an input no entry names (a new channel)
 * stays at KSNAP_WM_MIN. The floor is the task entry of the same
 * index at the same parallelism, else (a rescale) the lowest task entry,
 * so the task's watermark never goes back behind one the stage sent.
 * Entries it cannot read are skipped. @returns the number of entries used.
 */
size_t ksnap_wm_restore(ksnap_wm_t *w, const char *const *names,
                        const void *const *entries, const size_t *lens,
                        size_t count, int32_t index, int32_t parallelism);

#endif /* KSNAP_INPUT_WATERMARK_H */
