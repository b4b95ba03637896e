/*
 * Watermarks of a task's inputs and the task's own (watermark.h).
 */
#include "input/watermark.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"


ksnap_err_t ksnap_wm_init(ksnap_wm_t *w, int32_t n, int64_t now_ms,
                          ksnap_error_t *error) {
  size_t cnt = n > 0 ? (size_t)n : 1;

  memset(w, 0, sizeof(*w));
  w->wm = malloc(cnt * sizeof(*w->wm));
  w->idle = calloc(cnt, 1);
  w->seen_ms = malloc(cnt * sizeof(*w->seen_ms));
  if (!w->wm || !w->idle || !w->seen_ms) {
    ksnap_wm_cleanup(w);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  w->n = n > 0 ? n : 0;
  for (int32_t i = 0; i < w->n; i++) {
    w->wm[i] = KSNAP_WM_MIN;
    w->seen_ms[i] = now_ms;
  }
  w->task = KSNAP_WM_MIN;
  w->task_idle = w->n == 0;
  return KSNAP_ERR_OK;
}

void ksnap_wm_cleanup(ksnap_wm_t *w) {
  free(w->wm);
  free(w->idle);
  free(w->seen_ms);
  memset(w, 0, sizeof(*w));
}

void ksnap_wm_seen(ksnap_wm_t *w, int32_t i, int64_t now_ms) {
  if (i < 0 || i >= w->n)
    return;
  w->idle[i] = 0;
  w->seen_ms[i] = now_ms;
}

void ksnap_wm_input(ksnap_wm_t *w, int32_t i, int64_t wm, int idle) {
  if (i < 0 || i >= w->n)
    return;
  if (wm > w->wm[i])
    w->wm[i] = wm;
  w->idle[i] = idle != 0;
}

int64_t ksnap_wm_of(const ksnap_wm_t *w, int32_t i) {
  return i >= 0 && i < w->n ? w->wm[i] : KSNAP_WM_MIN;
}

int ksnap_wm_is_idle(const ksnap_wm_t *w, int32_t i) {
  return i >= 0 && i < w->n && w->idle[i];
}

void ksnap_wm_idle_check(ksnap_wm_t *w, int64_t now_ms, int64_t timeout_ms) {
  if (timeout_ms <= 0)
    return;
  for (int32_t i = 0; i < w->n; i++)
    if (now_ms - w->seen_ms[i] >= timeout_ms)
      w->idle[i] = 1;
}

int ksnap_wm_advance(ksnap_wm_t *w) {
  int64_t min = KSNAP_WM_MAX;
  int active = 0, was_idle = w->task_idle;

  for (int32_t i = 0; i < w->n; i++)
    if (!w->idle[i]) {
      active = 1;
      if (w->wm[i] < min)
        min = w->wm[i];
    }
  w->task_idle = !active;
  if (active && min > w->task) {
    w->task = min;
    return 1;
  }
  return was_idle != w->task_idle;
}

void ksnap_wm_floor(ksnap_wm_t *w, int64_t floor) {
  if (floor > w->task)
    w->task = floor;
}

/* ---- in a snapshot ---- */

static void put32(uint8_t *p, int32_t v) {
  uint32_t u = (uint32_t)v;

  for (int i = 3; i >= 0; i--, u >>= 8)
    p[i] = (uint8_t)(u & 0xff);
}

static int32_t get32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                   (uint32_t)p[2] << 8 | p[3]);
}

size_t ksnap_wm_encode_input(const char *name, int64_t wm, int idle,
                             uint8_t *out) {
  size_t len = strlen(name);

  if (len > KSNAP_WM_ENTRY_MAX - 10)
    len = KSNAP_WM_ENTRY_MAX - 10;
  out[0] = 'i';
  ksnap__put_be64(out + 1, wm);
  out[9] = (uint8_t)(idle != 0);
  memcpy(out + 10, name, len);
  return 10 + len;
}

size_t ksnap_wm_encode_task(const ksnap_wm_t *w, int32_t index,
                            int32_t parallelism, uint8_t *out) {
  out[0] = 't';
  ksnap__put_be64(out + 1, w->task);
  out[9] = (uint8_t)(w->task_idle != 0);
  put32(out + 10, index);
  put32(out + 14, parallelism);
  memset(out + 18, 0, 4);
  return 22;
}

size_t ksnap_wm_restore(ksnap_wm_t *w, const char *const *names,
                        const void *const *entries, const size_t *lens,
                        size_t count, int32_t index, int32_t parallelism) {
  int64_t own = KSNAP_WM_MIN, low = KSNAP_WM_MAX;
  int has_own = 0, has_low = 0;
  size_t used = 0;

  for (size_t e = 0; e < count; e++) {
    const uint8_t *b = entries[e];
    size_t len = lens[e];
    if (len == 22 && b[0] == 't') {
      int64_t wm = ksnap__get_be64(b + 1);
      if (get32(b + 10) == index && get32(b + 14) == parallelism) {
        own = wm;
        has_own = 1;
      }
      if (wm < low)
        low = wm;
      has_low = 1;
      used++;
      continue;
    }
    if (len < 10 || b[0] != 'i')
      continue;
    for (int32_t i = 0; i < w->n; i++)
      if (strlen(names[i]) == len - 10 && !memcmp(names[i], b + 10, len - 10)) {
        ksnap_wm_input(w, i, ksnap__get_be64(b + 1), b[9]);
        used++;
        break;
      }
  }
  if (has_own || has_low)
    ksnap_wm_floor(w, has_own ? own : low);
  ksnap_wm_advance(w);
  return used;
}
