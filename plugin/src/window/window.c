/*
 * Event-time windows (ksnap/window.h), on the operator API alone: a keyed
 * value state and event-time timers.
 *
 * A key's windows are one value: a count (4 bytes), then per window its
 * start and end (8 bytes each), a fired flag (1) and the accumulator
 * (acc_size bytes), integers big-endian. A call loads the current key's
 * value into a working copy, changes it, and writes it back (or clears
 * it when no window is left). The accumulator is handed to the aggregate
 * in an aligned copy.
 *
 * Timers: a window registers two event-time timers, at end - 1 (fire)
 * and end - 1 + allowed lateness (cleanup; the same timer when the
 * lateness is 0). A timer finds its windows by their end; one of a
 * session merged away finds none and does nothing. A merged session is
 * fired if one of the sessions it took in was: the record that merged
 * them fires it again at once, with the merged aggregate.
 */
#include "ksnap/window.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#include "ksnap/state.h"

#define HDR 4
#define FIXED 17 /* start, end, fired */

struct ksnap_windows_s {
  ksnap_window_spec_t spec;
  ksnap_window_agg_t agg;
  int state_id;
  uint8_t *buf; /* the current key's windows */
  size_t n, cap;
  void *acc, *other; /* aligned copies of accumulators */
};

static size_t get32(const uint8_t *p) {
  return (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
}

static size_t entry_size(const ksnap_windows_t *w) {
  return FIXED + w->agg.acc_size;
}

static uint8_t *entry(ksnap_windows_t *w, size_t i) {
  return w->buf + HDR + i * entry_size(w);
}

static int64_t start_of(const uint8_t *e) { return ksnap__get_be64(e); }
static int64_t end_of(const uint8_t *e) { return ksnap__get_be64(e + 8); }

static ksnap_err_t check_spec(const ksnap_window_spec_t *s,
                              const ksnap_window_agg_t *a,
                              ksnap_error_t *error) {
  const char *bad = NULL;

  if (s->allowed_lateness_ms < 0)
    bad = "allowed_lateness_ms below 0";
  else if (s->kind == KSNAP_WINDOW_TUMBLING && s->size_ms <= 0)
    bad = "size_ms of a tumbling window not above 0";
  else if (s->kind == KSNAP_WINDOW_SLIDING &&
           (s->size_ms <= 0 || s->slide_ms <= 0 || s->slide_ms > s->size_ms))
    bad = "sliding window: size_ms and slide_ms must be above 0, slide_ms "
          "at most size_ms";
  else if (s->kind == KSNAP_WINDOW_SESSION && (s->gap_ms <= 0 || !a->merge))
    bad = "session window: gap_ms must be above 0 and the aggregate needs "
          "merge";
  else if (s->kind < KSNAP_WINDOW_TUMBLING || s->kind > KSNAP_WINDOW_SESSION)
    bad = "unknown window kind";
  else if (!a->init || !a->add || !a->emit)
    bad = "the aggregate needs init, add and emit";
  if (bad)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG, "windows: %s", bad);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_windows_open(ksnap_operator_ctx_t *ctx,
                               const char *state_name,
                               const ksnap_window_spec_t *spec,
                               const ksnap_window_agg_t *agg,
                               ksnap_windows_t **windowsp,
                               ksnap_error_t *error) {
  ksnap_windows_t *w;
  ksnap_state_t *st;
  ksnap_err_t err;

  *windowsp = NULL;
  if ((err = check_spec(spec, agg, error)))
    return err;
  if (!(w = calloc(1, sizeof(*w))) ||
      !(w->acc = calloc(1, agg->acc_size + 1)) ||
      !(w->other = calloc(1, agg->acc_size + 1))) {
    ksnap_windows_close(w);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  w->spec = *spec;
  w->agg = *agg;
  if ((err = ksnap_ctx_state(ctx, &st, error)) ||
      (err = ksnap_state_register(st, state_name, KSNAP_STATE_VALUE, 0,
                                  &w->state_id, error))) {
    ksnap_windows_close(w);
    return err;
  }
  *windowsp = w;
  return KSNAP_ERR_OK;
}

void ksnap_windows_close(ksnap_windows_t *w) {
  if (!w)
    return;
  free(w->buf);
  free(w->acc);
  free(w->other);
  free(w);
}

static ksnap_err_t reserve(ksnap_windows_t *w, size_t n,
                           ksnap_error_t *error) {
  size_t need = HDR + n * entry_size(w);
  void *p;

  if (need <= w->cap)
    return KSNAP_ERR_OK;
  if (!(p = realloc(w->buf, need * 2)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  w->buf = p;
  w->cap = need * 2;
  return KSNAP_ERR_OK;
}

/* The current key's windows into the working copy. */
static ksnap_err_t load(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                        ksnap_state_t **stp, ksnap_error_t *error) {
  const void *v;
  size_t len, n;
  ksnap_err_t err;

  w->n = 0;
  if ((err = ksnap_ctx_state(ctx, stp, error)))
    return err;
  if (ksnap_state_value_get(*stp, w->state_id, &v, &len))
    return reserve(w, 1, error);
  n = len >= HDR ? get32(v) : 0;
  if (len < HDR || len != HDR + n * entry_size(w))
    return ksnap_error_set(error, KSNAP_ERR_CORRUPT,
                           "windows: a key's value of %zu bytes is not "
                           "windows of a %zu-byte aggregate", len,
                           w->agg.acc_size);
  if ((err = reserve(w, n + 1, error)))
    return err;
  memcpy(w->buf, v, len);
  w->n = n;
  return KSNAP_ERR_OK;
}

static ksnap_err_t store(ksnap_windows_t *w, ksnap_state_t *st,
                         ksnap_error_t *error) {
  uint32_t n = (uint32_t)w->n;

  if (!w->n) {
    ksnap_state_clear(st, w->state_id);
    return KSNAP_ERR_OK;
  }
  w->buf[0] = (uint8_t)(n >> 24);
  w->buf[1] = (uint8_t)(n >> 16);
  w->buf[2] = (uint8_t)(n >> 8);
  w->buf[3] = (uint8_t)n;
  return ksnap_state_value_put(st, w->state_id, w->buf,
                               HDR + w->n * entry_size(w), error);
}

static void drop(ksnap_windows_t *w, size_t i) {
  if (i + 1 < w->n)
    memcpy(entry(w, i), entry(w, w->n - 1), entry_size(w));
  w->n--;
}

/* A new window [start, end) with a fresh accumulator: @returns its index. */
static ksnap_err_t append(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                          int64_t start, int64_t end, size_t *ip,
                          ksnap_error_t *error) {
  int64_t late = w->spec.allowed_lateness_ms;
  uint8_t *e;
  ksnap_err_t err;

  if ((err = reserve(w, w->n + 1, error)) ||
      (err = ksnap_ctx_event_timer_register(ctx, end - 1, error)) ||
      (err = ksnap_ctx_event_timer_register(ctx, end - 1 + late, error)))
    return err;
  e = entry(w, w->n);
  ksnap__put_be64(e, start);
  ksnap__put_be64(e + 8, end);
  e[16] = 0;
  w->agg.init(w->acc, w->agg.opaque);
  memcpy(e + FIXED, w->acc, w->agg.acc_size);
  *ip = w->n++;
  return KSNAP_ERR_OK;
}

/* Window @p i's result to the emit callback, stamped end - 1. */
static ksnap_err_t emit(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                        size_t i, const void *key, size_t klen, int late,
                        ksnap_error_t *error) {
  const uint8_t *e = entry(w, i);
  ksnap_window_result_t r = {key, klen, start_of(e), end_of(e), w->acc,
                             late};

  memcpy(w->acc, e + FIXED, w->agg.acc_size); /* r.acc points here */
  ksnap_ctx_set_timestamp(ctx, r.end_ms - 1);
  return w->agg.emit(ctx, &r, w->agg.opaque, error);
}

/* Adds @p rec to window @p i; a window that fired fires again. */
static ksnap_err_t add_to(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                          size_t i, const ksnap_record_t *rec,
                          ksnap_error_t *error) {
  uint8_t *e = entry(w, i);
  ksnap_err_t err;

  memcpy(w->acc, e + FIXED, w->agg.acc_size);
  if ((err = w->agg.add(w->acc, rec, w->agg.opaque, error)))
    return err;
  memcpy(e + FIXED, w->acc, w->agg.acc_size);
  return e[16] ? emit(w, ctx, i, rec->key, rec->key_len, 1, error)
               : KSNAP_ERR_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;

  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Tumbling and sliding: the record into each window of its time that is
 * not past its cleanup at @p wm. */
static ksnap_err_t add_fixed(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                             const ksnap_record_t *rec, int64_t wm,
                             int *addedp, ksnap_error_t *error) {
  int64_t ts = rec->timestamp_ms, size = w->spec.size_ms,
          slide = w->spec.kind == KSNAP_WINDOW_SLIDING ? w->spec.slide_ms
                                                       : size;
  ksnap_err_t err;

  for (int64_t s = floor_div(ts, slide) * slide; s > ts - size; s -= slide) {
    size_t i;
    if (s + size - 1 + w->spec.allowed_lateness_ms <= wm)
      continue; /* late for this one */
    for (i = 0; i < w->n; i++)
      if (start_of(entry(w, i)) == s && end_of(entry(w, i)) == s + size)
        break;
    if ((i == w->n && (err = append(w, ctx, s, s + size, &i, error))) ||
        (err = add_to(w, ctx, i, rec, error)))
      return err;
    *addedp = 1;
  }
  return KSNAP_ERR_OK;
}

/* Session: [ts, ts + gap), merged with every window it overlaps. */
static ksnap_err_t add_session(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                               const ksnap_record_t *rec, int64_t wm,
                               int *addedp, ksnap_error_t *error) {
  int64_t s = rec->timestamp_ms, e = s + w->spec.gap_ms;
  size_t i, keep;
  ksnap_err_t err;

  if (e - 1 + w->spec.allowed_lateness_ms <= wm)
    return KSNAP_ERR_OK; /* late */
  /* the windows it joins: their bounds first */
  for (i = 0; i < w->n; i++)
    if (start_of(entry(w, i)) < e && s < end_of(entry(w, i))) {
      if (start_of(entry(w, i)) < s)
        s = start_of(entry(w, i));
      if (end_of(entry(w, i)) > e)
        e = end_of(entry(w, i));
    }
  /* a window already [s, e) keeps its accumulator and fired flag */
  for (keep = 0; keep < w->n; keep++)
    if (start_of(entry(w, keep)) == s && end_of(entry(w, keep)) == e)
      break;
  if (keep == w->n && (err = append(w, ctx, s, e, &keep, error)))
    return err;
  for (i = 0; i < w->n;) {
    if (i == keep || !(start_of(entry(w, i)) < e && s < end_of(entry(w, i)))) {
      i++;
      continue;
    }
    memcpy(w->acc, entry(w, keep) + FIXED, w->agg.acc_size);
    memcpy(w->other, entry(w, i) + FIXED, w->agg.acc_size);
    w->agg.merge(w->acc, w->other, w->agg.opaque);
    memcpy(entry(w, keep) + FIXED, w->acc, w->agg.acc_size);
    entry(w, keep)[16] |= entry(w, i)[16]; /* fired: fires again below */
    drop(w, i);
    if (keep == w->n)
      keep = i; /* it moved into the dropped one's place */
  }
  *addedp = 1;
  return add_to(w, ctx, keep, rec, error);
}

ksnap_err_t ksnap_windows_add(ksnap_windows_t *w, ksnap_operator_ctx_t *ctx,
                              const ksnap_record_t *rec, int *latep,
                              ksnap_error_t *error) {
  int64_t wm = ksnap_ctx_watermark(ctx);
  ksnap_state_t *st;
  int added = 0;
  ksnap_err_t err;

  *latep = 0;
  if (!rec->key)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "windows: a record without a key");
  if ((err = load(w, ctx, &st, error)))
    return err;
  err = w->spec.kind == KSNAP_WINDOW_SESSION
            ? add_session(w, ctx, rec, wm, &added, error)
            : add_fixed(w, ctx, rec, wm, &added, error);
  if (!err && (err = ksnap_ctx_state(ctx, &st, error)) == KSNAP_ERR_OK)
    err = store(w, st, error);
  *latep = !err && !added;
  return err;
}

ksnap_err_t ksnap_windows_on_timer(ksnap_windows_t *w,
                                   ksnap_operator_ctx_t *ctx,
                                   const void *key, size_t klen,
                                   int64_t time_ms, ksnap_error_t *error) {
  int64_t late = w->spec.allowed_lateness_ms;
  ksnap_state_t *st;
  int changed = 0;
  ksnap_err_t err;

  if (!ksnap_ctx_timer_is_event_time(ctx) || !key)
    return KSNAP_ERR_OK;
  if ((err = load(w, ctx, &st, error)))
    return err;
  for (size_t i = 0; i < w->n;) {
    uint8_t *e = entry(w, i);
    int64_t end = end_of(e);
    if (end - 1 == time_ms && !e[16]) {
      if ((err = emit(w, ctx, i, key, klen, 0, error)))
        return err;
      e[16] = 1;
      changed = 1;
    }
    if (end - 1 + late == time_ms) {
      if (!e[16] && (err = emit(w, ctx, i, key, klen, 0, error)))
        return err; /* never fired (a merged session past its time) */
      drop(w, i);
      changed = 1;
      continue;
    }
    i++;
  }
  if (!changed)
    return KSNAP_ERR_OK;
  if ((err = ksnap_ctx_state(ctx, &st, error)))
    return err;
  return store(w, st, error);
}

void ksnap_window_count_init(void *acc, void *opaque) {
  int64_t zero = 0;

  (void)opaque;
  memcpy(acc, &zero, sizeof(zero));
}

ksnap_err_t ksnap_window_count_add(void *acc, const ksnap_record_t *rec,
                                   void *opaque, ksnap_error_t *error) {
  int64_t n;

  (void)rec;
  (void)opaque;
  (void)error;
  memcpy(&n, acc, sizeof(n));
  n++;
  memcpy(acc, &n, sizeof(n));
  return KSNAP_ERR_OK;
}

void ksnap_window_count_merge(void *acc, const void *other, void *opaque) {
  int64_t a, b;

  (void)opaque;
  memcpy(&a, acc, sizeof(a));
  memcpy(&b, other, sizeof(b));
  a += b;
  memcpy(acc, &a, sizeof(a));
}
