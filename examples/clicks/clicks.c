/*
 * Clicks operators (libclicks.so): clicks per page per minute in
 * tumbling event-time windows, with allowed lateness, late firings and a
 * side output for the clicks that come too late.
 *   parse:  a click's value is "PAGE EVENT_TIME_MS[ MORE]" (text; PAGE 1
 *           to 200 bytes without ' ' or '@', EVENT_TIME_MS a positive
 *           integer, MORE, e.g. a sequence number, kept as it is). The
 *           input's key is not used. parse sets the emit's timestamp to
 *           EVENT_TIME_MS (which makes it the record's event time: the
 *           source's watermark follows it) and compares it with the
 *           watermark of the click's source partition before the click
 *           (ksnap_ctx_watermark(), deterministic):
 *             EVENT_TIME_MS <= watermark - CLICKS_LATENESS_MS
 *                          -> named output "late" (key PAGE, the value as
 *                             it came, header "clicks.watermark": that
 *                             watermark in decimal)
 *             otherwise    -> the default output, key PAGE, the value as
 *                             it came (read by window)
 *             malformed    -> named output "bad" (the record as it came,
 *                             its key and headers too, with a header
 *                             "clicks.reason"; its timestamp and so its
 *                             event time stay its Kafka timestamp)
 *   window: keyed by page; tumbling windows of CLICKS_WINDOW_MS on the
 *           record's timestamp (the event time parse set), counted by the
 *           window library (ksnap/window.h: its keyed value state
 *           "windows", its event-time timers), allowed lateness
 *           CLICKS_LATENESS_MS. A window fires when the watermark reaches
 *           its end - 1: emit (PAGE@WINDOW_START, "COUNT"); it is removed
 *           CLICKS_LATENESS_MS later (firing first if it never did). A
 *           click for a window that already fired is counted and the new
 *           count emitted at once (a late firing, as Flink's allowed
 *           lateness). Every result carries the timestamp window end - 1.
 *   window_sliding: the same on sliding windows of CLICKS_SLIDING_SIZE_MS
 *           starting every CLICKS_SLIDING_SLIDE_MS (state "sliding"): a
 *           click counts in each of its windows; (PAGE@WINDOW_START,
 *           "COUNT").
 *   window_session: the same on session windows per page (state
 *           "sessions"): a click opens [ts, ts + CLICKS_SESSION_GAP_MS)
 *           and joins every session of its page it overlaps, merging
 *           them; (PAGE@START-END, "COUNT"), END the last click + the gap.
 *           A session that had fired and is extended or merged by a
 *           click within the allowed lateness fires at once under its
 *           new bounds: its earlier key's results stay as they were.
 * Loaded by `stage.<name>.operator=libclicks.so:parse` (or :window,
 * :window_sliding, :window_session). The window sizes, the gap and the
 * allowed lateness are the constants below (a job file has no
 * per-operator keys): every stage must be built with the same
 * CLICKS_LATENESS_MS.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"
#include "ksnap/window.h"

#define CLICKS_WINDOW_MS 60000
#define CLICKS_LATENESS_MS 10000
/* window_sliding: windows of 60 s every 20 s (a click is in 3) */
#define CLICKS_SLIDING_SIZE_MS 60000
#define CLICKS_SLIDING_SLIDE_MS 20000
/* window_session: a page's session ends 10 s after its last click */
#define CLICKS_SESSION_GAP_MS 10000
#define CLICKS_PAGE_MAX 200
/* Keeps window ends and cleanup times far from overflowing. */
#define CLICKS_TIME_MAX (INT64_MAX / 4)
#define MAX_HEADERS 32

/* Parses "PAGE EVENT_TIME_MS[ MORE]": @returns 0 with the page's length
 * (*@p plenp, from the value's start) and *@p tsp, -1 if malformed. */
static int parse_click(const ksnap_record_t *rec, size_t *plenp,
                       int64_t *tsp) {
  char buf[512], *sp, *end;
  long long ts;

  if (!rec->value || rec->value_len == 0 || rec->value_len >= sizeof(buf))
    return -1;
  memcpy(buf, rec->value, rec->value_len);
  buf[rec->value_len] = '\0';
  if (!(sp = strchr(buf, ' ')) || sp == buf ||
      (size_t)(sp - buf) > CLICKS_PAGE_MAX || memchr(buf, '@', sp - buf) ||
      !sp[1] || sp[1] == ' ' || sp[1] == '-' || sp[1] == '+')
    return -1;
  errno = 0;
  ts = strtoll(sp + 1, &end, 10);
  if (errno || end == sp + 1 || (*end && *end != ' ') || ts <= 0 ||
      ts > CLICKS_TIME_MAX)
    return -1;
  *plenp = (size_t)(sp - buf);
  *tsp = ts;
  return 0;
}

static ksnap_err_t parse_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  ksnap_header_t h[MAX_HEADERS];
  int64_t ts, wm;
  size_t plen, n = 0;
  char wmtext[32];

  (void)inst;
  if (parse_click(rec, &plen, &ts)) {
    static const char reason[] = "not PAGE EVENT_TIME_MS with a positive "
                                 "integer time";
    for (size_t i = 0; i < rec->header_cnt && n < MAX_HEADERS - 1; i++)
      h[n++] = rec->headers[i];
    h[n++] = (ksnap_header_t){"clicks.reason", reason, sizeof(reason) - 1};
    ksnap_ctx_counter_add(ctx, "clicks_bad", 1);
    return ksnap_ctx_emit_to(ctx, "bad", rec->key, rec->key_len, rec->value,
                             rec->value_len, h, n, error);
  }
  ksnap_ctx_set_timestamp(ctx, ts);
  /* Before this click, on its partition alone: a restore or a replay
   * sees the same value, so the click goes to the same output. */
  wm = ksnap_ctx_watermark(ctx);
  if (wm > KSNAP_WATERMARK_MIN + CLICKS_LATENESS_MS &&
      ts <= wm - CLICKS_LATENESS_MS) {
    snprintf(wmtext, sizeof(wmtext), "%" PRId64, wm);
    h[0] = (ksnap_header_t){"clicks.watermark", wmtext, strlen(wmtext)};
    ksnap_ctx_counter_add(ctx, "clicks_late", 1);
    return ksnap_ctx_emit_to(ctx, "late", rec->value, plen, rec->value,
                             rec->value_len, h, 1, error);
  }
  return ksnap_ctx_emit(ctx, rec->value, plen, rec->value, rec->value_len,
                        NULL, 0, error);
}

static const ksnap_operator_t parse_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "parse",
    .process = parse_process,
};

const ksnap_operator_t *ksnap_operator_parse(void) { return &parse_op; }

/* The windows of a window operator (one per task: the instance). */
typedef struct window_s {
  ksnap_windows_t *windows;
} window_t;

/* The count of a result (the count aggregate's int64_t accumulator). */
static int64_t result_count(const ksnap_window_result_t *r) {
  int64_t n;

  memcpy(&n, r->acc, sizeof(n));
  return n;
}

/* Emits (@p key, "COUNT") of @p r (the library set the timestamp: the
 * window's end - 1). */
static ksnap_err_t window_emit_key(ksnap_operator_ctx_t *ctx,
                                   const ksnap_window_result_t *r,
                                   const char *key, int kn,
                                   ksnap_error_t *error) {
  char value[32];
  int vn = snprintf(value, sizeof(value), "%" PRId64, result_count(r));

  if (r->late_firing)
    ksnap_ctx_counter_add(ctx, "clicks_late_firings", 1);
  return ksnap_ctx_emit(ctx, key, (size_t)kn, value, (size_t)vn, NULL, 0,
                        error);
}

/* Tumbling and sliding: (PAGE@WINDOW_START, "COUNT"). */
static ksnap_err_t window_emit_start(ksnap_operator_ctx_t *ctx,
                                     const ksnap_window_result_t *r,
                                     void *opaque, ksnap_error_t *error) {
  char key[CLICKS_PAGE_MAX + 32];
  int kn = snprintf(key, sizeof(key), "%.*s@%" PRId64, (int)r->key_len,
                    (const char *)r->key, r->start_ms);

  (void)opaque;
  return window_emit_key(ctx, r, key, kn, error);
}

/* Sessions: (PAGE@START-END, "COUNT"), END = the last click + the gap. */
static ksnap_err_t window_emit_session(ksnap_operator_ctx_t *ctx,
                                       const ksnap_window_result_t *r,
                                       void *opaque, ksnap_error_t *error) {
  char key[CLICKS_PAGE_MAX + 48];
  int kn = snprintf(key, sizeof(key), "%.*s@%" PRId64 "-%" PRId64,
                    (int)r->key_len, (const char *)r->key, r->start_ms,
                    r->end_ms);

  (void)opaque;
  return window_emit_key(ctx, r, key, kn, error);
}

/* Opens the windows of @p spec counting clicks, in the keyed value state
 * @p state_name, their results emitted by @p emit. */
static ksnap_err_t window_open_spec(
    ksnap_operator_ctx_t *ctx, void **instp, const char *state_name,
    const ksnap_window_spec_t *spec,
    ksnap_err_t (*emit)(ksnap_operator_ctx_t *, const ksnap_window_result_t *,
                        void *, ksnap_error_t *),
    ksnap_error_t *error) {
  const ksnap_window_agg_t agg = {
      .acc_size = sizeof(int64_t),
      .init = ksnap_window_count_init,
      .add = ksnap_window_count_add,
      .merge = ksnap_window_count_merge,
      .emit = emit,
  };
  window_t *w = calloc(1, sizeof(*w));
  ksnap_err_t err;

  if (!w)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_windows_open(ctx, state_name, spec, &agg, &w->windows,
                                error))) {
    free(w);
    return err;
  }
  *instp = w;
  return KSNAP_ERR_OK;
}

static ksnap_err_t window_open(ksnap_operator_ctx_t *ctx, void **instp,
                               ksnap_error_t *error) {
  const ksnap_window_spec_t spec = {
      .kind = KSNAP_WINDOW_TUMBLING,
      .size_ms = CLICKS_WINDOW_MS,
      .allowed_lateness_ms = CLICKS_LATENESS_MS,
  };
  return window_open_spec(ctx, instp, "windows", &spec, window_emit_start,
                          error);
}

static ksnap_err_t window_sliding_open(ksnap_operator_ctx_t *ctx,
                                       void **instp, ksnap_error_t *error) {
  const ksnap_window_spec_t spec = {
      .kind = KSNAP_WINDOW_SLIDING,
      .size_ms = CLICKS_SLIDING_SIZE_MS,
      .slide_ms = CLICKS_SLIDING_SLIDE_MS,
      .allowed_lateness_ms = CLICKS_LATENESS_MS,
  };
  return window_open_spec(ctx, instp, "sliding", &spec, window_emit_start,
                          error);
}

static ksnap_err_t window_session_open(ksnap_operator_ctx_t *ctx,
                                       void **instp, ksnap_error_t *error) {
  const ksnap_window_spec_t spec = {
      .kind = KSNAP_WINDOW_SESSION,
      .gap_ms = CLICKS_SESSION_GAP_MS,
      .allowed_lateness_ms = CLICKS_LATENESS_MS,
  };
  return window_open_spec(ctx, instp, "sessions", &spec, window_emit_session,
                          error);
}

static ksnap_err_t window_process(ksnap_operator_ctx_t *ctx, void *inst,
                                  const ksnap_record_t *rec,
                                  ksnap_error_t *error) {
  window_t *w = inst;
  int64_t ts = rec->timestamp_ms;
  int late;
  ksnap_err_t err;

  /* The page bounds the emit's key; the time keeps window ends and
   * cleanup times far from overflowing. */
  if (!rec->key || rec->key_len == 0 || rec->key_len > CLICKS_PAGE_MAX ||
      ts <= 0 || ts > CLICKS_TIME_MAX)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE,
                           "not a click of parse (key length %zu, "
                           "timestamp %" PRId64 ")",
                           rec->key_len, ts);
  if ((err = ksnap_windows_add(w->windows, ctx, rec, &late, error)))
    return err;
  /* Cannot happen after parse: it passed the click only if ts > wm - L,
   * wm its source partition's watermark before it, and the watermark of
   * this input before the click is at most wm (it comes from watermarks
   * parse sent before the click), so every window of the click (its end
   * above ts) has its cleanup time end - 1 + L >= ts + L above it. Counted
   * and dropped should a job feed window some other way. */
  if (late)
    ksnap_ctx_counter_add(ctx, "clicks_late_at_window", 1);
  return KSNAP_ERR_OK;
}

static ksnap_err_t window_on_timer(ksnap_operator_ctx_t *ctx, void *inst,
                                   const void *key, size_t key_len,
                                   int64_t time_ms, ksnap_error_t *error) {
  window_t *w = inst;

  /* Ignores processing-time timers (window registers none) and timers
   * the windows did not register. */
  return ksnap_windows_on_timer(w->windows, ctx, key, key_len, time_ms,
                                error);
}

static void window_close(ksnap_operator_ctx_t *ctx, void *inst) {
  window_t *w = inst;

  (void)ctx;
  if (w)
    ksnap_windows_close(w->windows);
  free(w);
}

static const ksnap_operator_t window_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "window",
    .open = window_open,
    .process = window_process,
    .on_timer = window_on_timer,
    .close = window_close,
};

static const ksnap_operator_t window_sliding_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "window_sliding",
    .open = window_sliding_open,
    .process = window_process,
    .on_timer = window_on_timer,
    .close = window_close,
};

static const ksnap_operator_t window_session_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "window_session",
    .open = window_session_open,
    .process = window_process,
    .on_timer = window_on_timer,
    .close = window_close,
};

const ksnap_operator_t *ksnap_operator_window_sliding(void) {
  return &window_sliding_op;
}

const ksnap_operator_t *ksnap_operator_window_session(void) {
  return &window_session_op;
}

const ksnap_operator_t *ksnap_operator_window(void) { return &window_op; }
