/*
 * state_json.c: one decoded snapshot entry as a JSON line, for
 * `ksnap inspect --state`. Bytes that are printable ASCII become JSON
 * strings; anything else becomes {"base64":"..."}. A list state's value
 * becomes a JSON array of its elements. Threading: none.
 */
#include <inttypes.h>
#include <string.h>

#include "ksnap/state.h"

static const char *const kind_names[] = {"value", "list", "map", "split",
                                         "union"};

static ksnap_err_t base64(ksnap_buf_t *out, const uint8_t *p, size_t len) {
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char q[4];

  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < len)
      v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < len)
      v |= p[i + 2];
    q[0] = tab[(v >> 18) & 63];
    q[1] = tab[(v >> 12) & 63];
    q[2] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
    q[3] = i + 2 < len ? tab[v & 63] : '=';
    if (ksnap_buf_append(out, q, 4))
      return KSNAP_ERR_NOMEM;
  }
  return KSNAP_ERR_OK;
}

static int printable(const uint8_t *p, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (p[i] < 0x20 || p[i] > 0x7e)
      return 0;
  return 1;
}

/* Appends @p p as a JSON string or {"base64":...}. */
static ksnap_err_t bytes(ksnap_buf_t *out, const uint8_t *p, size_t len) {
  if (!printable(p, len)) {
    if (ksnap_buf_append(out, "{\"base64\":\"", 11) || base64(out, p, len) ||
        ksnap_buf_append(out, "\"}", 2))
      return KSNAP_ERR_NOMEM;
    return KSNAP_ERR_OK;
  }
  if (ksnap_buf_append(out, "\"", 1))
    return KSNAP_ERR_NOMEM;
  for (size_t i = 0; i < len; i++) {
    if ((p[i] == '"' || p[i] == '\\') && ksnap_buf_append(out, "\\", 1))
      return KSNAP_ERR_NOMEM;
    if (ksnap_buf_append(out, &p[i], 1))
      return KSNAP_ERR_NOMEM;
  }
  return ksnap_buf_append(out, "\"", 1);
}

static ksnap_err_t list(ksnap_buf_t *out, const uint8_t *p, size_t len) {
  ksnap_state_list_iter_t it = {p, p + len};
  const void *v;
  size_t vlen;
  int first = 1;

  if (ksnap_buf_append(out, "[", 1))
    return KSNAP_ERR_NOMEM;
  while (ksnap_state_list_next(&it, &v, &vlen)) {
    if ((!first && ksnap_buf_append(out, ",", 1)) || bytes(out, v, vlen))
      return KSNAP_ERR_NOMEM;
    first = 0;
  }
  return ksnap_buf_append(out, "]", 1);
}

ksnap_err_t ksnap_state_entry_to_json(const ksnap_state_entry_t *e,
                                      ksnap_buf_t *out) {
  const char *kind = (unsigned)e->kind < 5 ? kind_names[e->kind] : "?";

  if (ksnap_buf_append(out, "{\"state\":", 9) ||
      bytes(out, (const uint8_t *)e->state, strlen(e->state)) ||
      ksnap_buf_appendf(out, ",\"kind\":\"%s\",\"keyGroup\":%d,\"op\":\"%s\"",
                        kind, e->key_group, e->tombstone ? "delete" : "put"))
    return KSNAP_ERR_NOMEM;
  if (e->key_group >= 0 &&
      (ksnap_buf_append(out, ",\"key\":", 7) || bytes(out, e->key, e->klen)))
    return KSNAP_ERR_NOMEM;
  if (e->has_user_key && (ksnap_buf_append(out, ",\"userKey\":", 11) ||
                          bytes(out, e->user_key, e->uklen)))
    return KSNAP_ERR_NOMEM;
  if (!e->tombstone) {
    if (ksnap_buf_append(out, ",\"value\":", 9) ||
        (e->kind == KSNAP_STATE_LIST ? list(out, e->value, e->vlen)
                                     : bytes(out, e->value, e->vlen)) ||
        ksnap_buf_appendf(out, ",\"timestamp\":%" PRId64, e->ts))
      return KSNAP_ERR_NOMEM;
  }
  return ksnap_buf_append(out, "}\n", 2);
}
