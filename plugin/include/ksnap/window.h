/*
 * Event-time windows for operators: tumbling, sliding and session
 * windows per key with an aggregate, fired by the watermark
 * (plugin/PROTOCOL.md section 18), with allowed lateness.
 *
 * A keyed operator opens one ksnap_windows_t in its open callback, gives
 * it every record in process (ksnap_windows_add()) and every timer in
 * on_timer (ksnap_windows_on_timer()). The windows of a key are one value
 * of a keyed value state of the operator's naming, so they are in every
 * snapshot and move with their key group on rescale; their timers are
 * event-time timers (ksnap_ctx_event_timer_register()).
 *
 * A record's event time is its timestamp (rec->timestamp_ms). It goes
 * into every window it belongs to whose cleanup time (end - 1 + allowed
 * lateness) is above the watermark of its input (ksnap_ctx_watermark():
 * deterministic, the same in a restore and an epoch replay); a record
 * with no such window is late (ksnap_windows_add() says so: the operator
 * may send it to a side output). For session windows a record's window
 * is its own [ts, ts + gap): it is late when that window's cleanup is at
 * or below the watermark, even if it overlaps a session still kept
 * (Flink merges first and checks the merged window); so lateness stays a
 * function of the record and its input's watermark alone. A window fires once the task's watermark
 * reaches its end - 1: the aggregate goes to the emit callback, with the
 * timestamp end - 1; a record added to a window that already fired fires
 * it again at once (a late firing). The window is removed when the
 * watermark reaches end - 1 + allowed lateness. Session windows of a key
 * merge when a record falls within the gap of two or more (the
 * aggregates merged; if one of them had fired, the merged one fires at
 * once, a late firing, else when the watermark reaches its end - 1).
 *
 * Threading: the task's processing thread, in the operator's callbacks.
 */
#ifndef KSNAP_WINDOW_H
#define KSNAP_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/context.h"
#include "ksnap/error.h"
#include "ksnap/operator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ksnap_window_kind_e {
  KSNAP_WINDOW_TUMBLING = 0, /**< [k * size, (k + 1) * size) */
  KSNAP_WINDOW_SLIDING = 1,  /**< [k * slide, k * slide + size) */
  KSNAP_WINDOW_SESSION = 2   /**< [first, last + gap), merged */
} ksnap_window_kind_t;

typedef struct ksnap_window_spec_s {
  ksnap_window_kind_t kind;
  int64_t size_ms;             /**< tumbling and sliding: > 0 */
  int64_t slide_ms;            /**< sliding: > 0, at most size_ms */
  int64_t gap_ms;              /**< session: > 0 */
  int64_t allowed_lateness_ms; /**< >= 0 */
} ksnap_window_spec_t;

/** One window's result: its key, bounds and aggregate. */
typedef struct ksnap_window_result_s {
  const void *key;
  size_t key_len;
  int64_t start_ms, end_ms; /**< [start, end) */
  const void *acc;          /**< the aggregate (acc_size bytes) */
  int late_firing;          /**< fired again for a late record */
} ksnap_window_result_t;

/**
 * The aggregate: an accumulator of @p acc_size bytes (plain bytes: it is
 * copied into the state), started by init, given each record by add,
 * merged by merge (session windows; NULL: sessions not supported), and
 * emitted by emit when the window fires (the emit's timestamp is already
 * the window's end - 1). @p opaque is the operator's.
 */
typedef struct ksnap_window_agg_s {
  size_t acc_size;
  void (*init)(void *acc, void *opaque);
  ksnap_err_t (*add)(void *acc, const ksnap_record_t *rec, void *opaque,
                     ksnap_error_t *error);
  void (*merge)(void *acc, const void *other, void *opaque);
  ksnap_err_t (*emit)(ksnap_operator_ctx_t *ctx,
                      const ksnap_window_result_t *result, void *opaque,
                      ksnap_error_t *error);
  void *opaque;
} ksnap_window_agg_t;

typedef struct ksnap_windows_s ksnap_windows_t;

/**
 * Windows of @p spec aggregated by @p agg (copied), in the keyed value
 * state @p state_name (registered here). Call in open.
 * @returns OK; INVALID_ARG naming the bad field; NOMEM; the state's
 * errors.
 */
ksnap_err_t ksnap_windows_open(ksnap_operator_ctx_t *ctx,
                               const char *state_name,
                               const ksnap_window_spec_t *spec,
                               const ksnap_window_agg_t *agg,
                               ksnap_windows_t **windowsp,
                               ksnap_error_t *error);
void ksnap_windows_close(ksnap_windows_t *windows);

/**
 * Adds @p rec (a keyed record, in process) to its windows: *@p latep 1
 * if it is too late for every one (not added), else 0. @returns OK, the
 * aggregate's or the emit's error (a late firing), INVALID_ARG for a
 * record without key, the state's errors.
 */
ksnap_err_t ksnap_windows_add(ksnap_windows_t *windows,
                              ksnap_operator_ctx_t *ctx,
                              const ksnap_record_t *rec, int *latep,
                              ksnap_error_t *error);

/**
 * In on_timer: fires and removes the current key's windows due at
 * @p time_ms. A processing-time timer or one the windows did not
 * register changes nothing. @returns OK or the emit's or state's error.
 */
ksnap_err_t ksnap_windows_on_timer(ksnap_windows_t *windows,
                                   ksnap_operator_ctx_t *ctx,
                                   const void *key, size_t key_len,
                                   int64_t time_ms, ksnap_error_t *error);

/** A ready aggregate: the number of records (an int64_t accumulator);
 * give it an emit of your own. */
void ksnap_window_count_init(void *acc, void *opaque);
ksnap_err_t ksnap_window_count_add(void *acc, const ksnap_record_t *rec,
                                   void *opaque, ksnap_error_t *error);
void ksnap_window_count_merge(void *acc, const void *other, void *opaque);

#ifdef __cplusplus
}
#endif

#endif /* KSNAP_WINDOW_H */
