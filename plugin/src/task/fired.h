/*
 * The firing log of a sink task's timers, and the epoch replay's plan that
 * fires them again (PROTOCOL.md section 8.4). Pure: no task, no I/O.
 *
 * A firing is one timer the run fired: its key and time, and where in
 * the task's input it fired: per input channel (an exchange channel, or
 * an assigned source partition, in the input's own order), the offset
 * after the last record of that channel processed before it in the run
 * (0: none in the run). The run writes each firing into its state
 * (task_timer.c), so checkpoint N's snapshot holds the firings since the
 * last completed checkpoint, each tagged with the cut it followed.
 *
 * The plan of one replayed segment P -> Q: the firings of Q's log tagged
 * at or after P, in firing order. While the replay reads the segment in
 * its own order (never paused), a record of channel c at an offset at or
 * past the next firing's position for c is held (copied, in arrival
 * order) instead of processed; a firing fires once every channel has
 * processed up to its position; then held records run, each as soon as
 * it is no longer past the (new) next firing's position. So every firing
 * sees exactly the records of every channel it saw in the run, and the
 * records of each channel run in offset order.
 * Threading: the processing thread (the epoch replay's).
 */
#ifndef KSNAP_TASK_FIRED_H
#define KSNAP_TASK_FIRED_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"
#include "ksnap/operator.h"

/** One timer the run fired. */
typedef struct ksnap__fired_s {
  int64_t tag;     /* the id of the cut it followed (0: none) */
  int64_t seq;     /* firing order within the run */
  int64_t time_ms; /* the timer's time */
  int nokey;       /* a timer without a key: on_timer gets none */
  uint8_t *key;    /* the record key, or the state key of one without */
  size_t klen;
  int64_t *pos;    /* per channel: offset after its last processed record */
  int32_t npos;
  int event;       /* an event-time timer */
  int64_t wm;      /* the task's watermark at the firing (an entry written
                    * before watermarks: KSNAP_WATERMARK_MIN) */
} ksnap__fired_t;

/** The map state holding the log, under the task's own key of the timers
 * without a key: user key (tag, seq) 16 bytes big-endian. */
#define KSNAP__FIRED_STATE "ksnap.timers.fired"

/** @p f's user key (16 bytes) and value (malloc'd into *@p valp). */
void ksnap__fired_user_key(int64_t tag, int64_t seq, uint8_t out[16]);
void ksnap__fired_parse_key(const uint8_t uk[16], int64_t *tagp,
                            int64_t *seqp);
ksnap_err_t ksnap__fired_encode(const ksnap__fired_t *f, uint8_t **valp,
                                size_t *lenp, ksnap_error_t *error);
/** Decodes a log entry into @p f (owned: ksnap__fired_cleanup()).
 * @returns KSNAP_ERR_CORRUPT naming what is wrong. */
ksnap_err_t ksnap__fired_decode(const uint8_t *uk, size_t uklen,
                                const uint8_t *val, size_t vlen,
                                ksnap__fired_t *f, ksnap_error_t *error);
void ksnap__fired_cleanup(ksnap__fired_t *f);

/** A list of firings (a segment's, in (tag, seq) order once sorted). */
typedef struct ksnap__fired_list_s {
  ksnap__fired_t *v;
  size_t n, cap;
} ksnap__fired_list_t;

/** Adds @p f (taken: the list owns its buffers), or replaces the entry of
 * the same (tag, seq). */
ksnap_err_t ksnap__fired_list_put(ksnap__fired_list_t *l, ksnap__fired_t *f,
                                  ksnap_error_t *error);
/** Removes the entry (tag, seq), if any. */
void ksnap__fired_list_remove(ksnap__fired_list_t *l, int64_t tag,
                              int64_t seq);
void ksnap__fired_list_sort(ksnap__fired_list_t *l);
void ksnap__fired_list_cleanup(ksnap__fired_list_t *l);

/* ---- the replay's plan ---- */

/** A record the plan runs: the caller's copy (held) or its own. */
typedef struct ksnap__plan_rec_s {
  int32_t chan;
  int64_t offset;
  void *rec; /* the caller's record */
} ksnap__plan_rec_t;

/** Runs one record / fires one firing; non-zero stops with that error. */
typedef ksnap_err_t (*ksnap__plan_run_fn)(void *opaque, int32_t chan,
                                          void *rec, ksnap_error_t *error);
typedef ksnap_err_t (*ksnap__plan_fire_fn)(void *opaque,
                                           const ksnap__fired_t *f,
                                           ksnap_error_t *error);

typedef struct ksnap__plan_s {
  const ksnap__fired_list_t *log; /* the segment's firings, in order */
  size_t next;                    /* the next one to fire */
  int32_t nchan;
  int64_t *done;           /* per channel: offset after its last run record
                            * (starts at the segment's start position) */
  ksnap__plan_rec_t *held; /* in arrival order */
  size_t nheld, capheld;
  ksnap__plan_run_fn run;
  ksnap__plan_fire_fn fire;
  void (*drop)(void *rec); /* frees a held record (NULL: not owned) */
  void *opaque;
  int64_t fired;
} ksnap__plan_t;

/** A held record: a copy of @p r (key, value, headers, topic) in one
 * allocation, freed with free(). @returns NULL when out of memory. */
ksnap_record_t *ksnap__plan_copy_record(const ksnap_record_t *r);

/** @p start: per channel, the segment's first offset (NULL: 0). Checks
 * that every firing has @p nchan positions (KSNAP_ERR_CORRUPT). */
ksnap_err_t ksnap__plan_init(ksnap__plan_t *p, const ksnap__fired_list_t *log,
                             int32_t nchan, const int64_t *start,
                             ksnap_error_t *error);
void ksnap__plan_cleanup(ksnap__plan_t *p);

/** 1 if a record of @p chan at @p offset must wait for the next firing
 * (the caller copies it and passes the copy to ksnap__plan_hold()). */
int ksnap__plan_must_hold(const ksnap__plan_t *p, int32_t chan,
                          int64_t offset);
ksnap_err_t ksnap__plan_hold(ksnap__plan_t *p, int32_t chan, int64_t offset,
                             void *rec, ksnap_error_t *error);
/** Runs a record that need not wait (after must_hold() said 0), then
 * whatever became ready. */
ksnap_err_t ksnap__plan_record(ksnap__plan_t *p, int32_t chan, int64_t offset,
                               void *rec, ksnap_error_t *error);
/** Fires every firing that is ready and runs the held records it frees,
 * until nothing moves. */
ksnap_err_t ksnap__plan_advance(ksnap__plan_t *p, ksnap_error_t *error);
/** At the segment's cut: advance; a firing left (its position beyond what
 * the segment holds) fails with KSNAP_ERR_STATE. */
ksnap_err_t ksnap__plan_finish(ksnap__plan_t *p, ksnap_error_t *error);

#endif /* KSNAP_TASK_FIRED_H */
