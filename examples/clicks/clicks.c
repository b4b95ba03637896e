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
 *           record's timestamp (the event time parse set). Per page a map
 *           state "windows": window start -> (count, fired). Per click it
 *           counts, and registers two event-time timers: at the window's
 *           end - 1 (the firing: emit (PAGE@WINDOW_START, "COUNT"), then
 *           the window is marked fired) and CLICKS_LATENESS_MS later (the
 *           cleanup: the window is removed; it fires first if it never
 *           did). A click for a window that already fired is counted and
 *           the new count emitted at once (a late firing, as Flink's
 *           allowed lateness). Every result carries the timestamp
 *           window end - 1.
 * Loaded by `stage.<name>.operator=libclicks.so:parse` (or :window). The
 * window size and the allowed lateness are the constants below (a job
 * file has no per-operator keys): both stages must be built with the
 * same CLICKS_LATENESS_MS.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

#define CLICKS_WINDOW_MS 60000
#define CLICKS_LATENESS_MS 10000
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

typedef struct window_s {
  int windows_id;
} window_t;

/* One window of a page, the map state's value. */
typedef struct window_state_s {
  int64_t count;
  int64_t fired; /* 1 once its result was emitted */
} window_state_t;

/* The map state's user key: the window's start, 8 bytes big-endian. */
static void start_key(int64_t start, uint8_t out[8]) {
  for (int i = 7; i >= 0; i--, start >>= 8)
    out[i] = (uint8_t)(start & 0xff);
}

static ksnap_err_t window_open(ksnap_operator_ctx_t *ctx, void **instp,
                               ksnap_error_t *error) {
  window_t *w = calloc(1, sizeof(*w));
  ksnap_state_t *state;
  ksnap_err_t err;

  if (!w)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, "windows", KSNAP_STATE_MAP, 0,
                                  &w->windows_id, error))) {
    free(w);
    return err;
  }
  *instp = w;
  return KSNAP_ERR_OK;
}

/* The window of the current key starting at @p start: @returns 1 with
 * *@p ws, 0 if there is none. */
static int window_get(ksnap_state_t *state, const window_t *w,
                      int64_t start, window_state_t *ws) {
  uint8_t k[8];
  const void *v;
  size_t len;

  start_key(start, k);
  if (ksnap_state_map_get(state, w->windows_id, k, sizeof(k), &v, &len) !=
          KSNAP_ERR_OK ||
      len != sizeof(*ws))
    return 0;
  memcpy(ws, v, sizeof(*ws));
  return 1;
}

static ksnap_err_t window_put(ksnap_state_t *state, const window_t *w,
                              int64_t start, const window_state_t *ws,
                              ksnap_error_t *error) {
  uint8_t k[8];

  start_key(start, k);
  return ksnap_state_map_put(state, w->windows_id, k, sizeof(k), ws,
                             sizeof(*ws), error);
}

/* Emits (PAGE@START, "COUNT") with the timestamp window end - 1. */
static ksnap_err_t window_emit(ksnap_operator_ctx_t *ctx, const void *page,
                               size_t page_len, int64_t start,
                               int64_t count, ksnap_error_t *error) {
  char key[CLICKS_PAGE_MAX + 32], value[32];
  int kn, vn;

  kn = snprintf(key, sizeof(key), "%.*s@%" PRId64, (int)page_len,
                (const char *)page, start);
  vn = snprintf(value, sizeof(value), "%" PRId64, count);
  ksnap_ctx_set_timestamp(ctx, start + CLICKS_WINDOW_MS - 1);
  return ksnap_ctx_emit(ctx, key, (size_t)kn, value, (size_t)vn, NULL, 0,
                        error);
}

static ksnap_err_t window_process(ksnap_operator_ctx_t *ctx, void *inst,
                                  const ksnap_record_t *rec,
                                  ksnap_error_t *error) {
  window_t *w = inst;
  window_state_t ws = {0, 0};
  ksnap_state_t *state;
  int64_t ts = rec->timestamp_ms, start, end;
  ksnap_err_t err;

  if (!rec->key || rec->key_len == 0 || rec->key_len > CLICKS_PAGE_MAX ||
      ts <= 0 || ts > CLICKS_TIME_MAX)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE,
                           "not a click of parse (key length %zu, "
                           "timestamp %" PRId64 ")",
                           rec->key_len, ts);
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  start = ts - ts % CLICKS_WINDOW_MS;
  end = start + CLICKS_WINDOW_MS;
  window_get(state, w, start, &ws);
  ws.count++;
  if ((err = window_put(state, w, start, &ws, error)))
    return err;
  if (ws.fired) { /* a late firing: the new count at once */
    ksnap_ctx_counter_add(ctx, "clicks_late_firings", 1);
    return window_emit(ctx, rec->key, rec->key_len, start, ws.count, error);
  }
  /* Registering a timer again changes nothing (one per key and time). */
  if ((err = ksnap_ctx_event_timer_register(ctx, end - 1, error)))
    return err;
  return ksnap_ctx_event_timer_register(ctx, end - 1 + CLICKS_LATENESS_MS,
                                        error);
}

static ksnap_err_t window_on_timer(ksnap_operator_ctx_t *ctx, void *inst,
                                   const void *key, size_t key_len,
                                   int64_t time_ms, ksnap_error_t *error) {
  window_t *w = inst;
  window_state_t ws;
  ksnap_state_t *state;
  int64_t start;
  uint8_t k[8];
  ksnap_err_t err;

  if (!ksnap_ctx_timer_is_event_time(ctx) || !key)
    return KSNAP_ERR_OK; /* window registers no other timers */
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  /* The firing of the window that ends at time_ms + 1. */
  start = time_ms + 1 - CLICKS_WINDOW_MS;
  if (start >= 0 && start % CLICKS_WINDOW_MS == 0 &&
      window_get(state, w, start, &ws) && !ws.fired) {
    ws.fired = 1;
    if ((err = window_put(state, w, start, &ws, error)) ||
        (err = window_emit(ctx, key, key_len, start, ws.count, error)))
      return err;
  }
  /* The cleanup of the window that ended CLICKS_LATENESS_MS earlier (both
   * timers may fire in one advance of the watermark, in any order). */
  start -= CLICKS_LATENESS_MS;
  if (start >= 0 && start % CLICKS_WINDOW_MS == 0 &&
      window_get(state, w, start, &ws)) {
    if (!ws.fired &&
        (err = window_emit(ctx, key, key_len, start, ws.count, error)))
      return err;
    start_key(start, k);
    ksnap_state_map_remove(state, w->windows_id, k, sizeof(k));
  }
  return KSNAP_ERR_OK;
}

static void window_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t window_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "window",
    .open = window_open,
    .process = window_process,
    .on_timer = window_on_timer,
    .close = window_close,
};

const ksnap_operator_t *ksnap_operator_window(void) { return &window_op; }
