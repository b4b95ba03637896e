/* props: Java .properties parser. Syntax and errors: see props.h. */
#include "props.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/buf.h"

struct ksnap_props_s {
  char *name;
  ksnap_props_entry_t *entries;
  size_t count, cap;
};

typedef struct parser_s {
  ksnap_props_t *props;
  const char *text;
  size_t len, pos;
  int lineno; /* physical lines read so far */
  int nerrors;
  ksnap_props_error_cb_t *error_cb;
  void *opaque;
} parser_t;

static void perr(parser_t *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void perr(parser_t *p, int line, const char *fmt, ...) {
  char msg[512];
  int n;
  va_list ap;

  p->nerrors++;
  if (!p->error_cb)
    return;
  n = snprintf(msg, sizeof(msg), "%s:%d: ", p->props->name, line);
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  p->error_cb(p->opaque, msg);
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\f'; }

/* Reads the next physical line into [*sp, *ep); returns 0 at end. */
static int next_line(parser_t *p, size_t *sp, size_t *ep) {
  size_t i = p->pos;

  if (p->pos >= p->len)
    return 0;
  while (i < p->len && p->text[i] != '\n' && p->text[i] != '\r')
    i++;
  *sp = p->pos;
  *ep = i;
  if (i < p->len && p->text[i] == '\r')
    i++;
  if (i < p->len && p->text[i] == '\n' && (i == *ep || p->text[i - 1] == '\r'))
    i++;
  p->pos = i;
  p->lineno++;
  return 1;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Reads 4 hex digits at s[*ip]; returns the unit or -1. */
static long read_u4(const char *s, size_t len, size_t *ip) {
  long v = 0;

  if (*ip + 4 > len)
    return -1;
  for (int k = 0; k < 4; k++) {
    int h = hexval(s[*ip + k]);
    if (h < 0)
      return -1;
    v = v * 16 + h;
  }
  *ip += 4;
  return v;
}

static void put_utf8(ksnap_buf_t *out, unsigned long cp) {
  unsigned char b[4];
  size_t n;

  if (cp < 0x80) {
    b[0] = (unsigned char)cp, n = 1;
  } else if (cp < 0x800) {
    b[0] = (unsigned char)(0xC0 | (cp >> 6));
    b[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    b[0] = (unsigned char)(0xE0 | (cp >> 12));
    b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    b[0] = (unsigned char)(0xF0 | (cp >> 18));
    b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F)), n = 4;
  }
  ksnap_buf_append(out, b, n);
}

/* Decodes the \u escape whose 'u' is at s[*ip - 1]; -1 after an error. */
static int unescape_u(parser_t *p, int line, const char *s, size_t len,
                      size_t *ip, ksnap_buf_t *out) {
  long hi = read_u4(s, len, ip), lo;

  if (hi < 0)
    return perr(p, line, "invalid \\u escape"), -1;
  if (hi == 0)
    return perr(p, line, "\\u0000 is not allowed"), -1;
  if (hi >= 0xDC00 && hi <= 0xDFFF)
    return perr(p, line, "unpaired surrogate in \\u escape"), -1;
  if (hi >= 0xD800 && hi <= 0xDBFF) {
    if (*ip + 2 > len || s[*ip] != '\\' || s[*ip + 1] != 'u')
      return perr(p, line, "unpaired surrogate in \\u escape"), -1;
    *ip += 2;
    lo = read_u4(s, len, ip);
    if (lo < 0)
      return perr(p, line, "invalid \\u escape"), -1;
    if (lo < 0xDC00 || lo > 0xDFFF)
      return perr(p, line, "unpaired surrogate in \\u escape"), -1;
    put_utf8(out, 0x10000 + (((unsigned long)hi - 0xD800) << 10) +
                      ((unsigned long)lo - 0xDC00));
    return 0;
  }
  put_utf8(out, (unsigned long)hi);
  return 0;
}

/*
 * Unescapes s[*ip..] into @p out, stopping (for a key) before the first
 * unescaped separator. @returns -1 after an error.
 */
static int unescape(parser_t *p, int line, const char *s, size_t len,
                    size_t *ip, int is_key, ksnap_buf_t *out) {
  size_t i = *ip;

  while (i < len) {
    char c = s[i];
    if (is_key && (c == '=' || c == ':' || is_ws(c)))
      break;
    i++;
    if (c != '\\') {
      ksnap_buf_append(out, &c, 1);
      continue;
    }
    /* A logical line never ends in an unpaired backslash (see below). */
    c = s[i++];
    switch (c) {
    case 't': c = '\t'; break;
    case 'n': c = '\n'; break;
    case 'r': c = '\r'; break;
    case 'f': c = '\f'; break;
    case 'u':
      if (unescape_u(p, line, s, len, &i, out) == -1)
        return -1;
      continue;
    default: break;
    }
    ksnap_buf_append(out, &c, 1);
  }
  *ip = i;
  return 0;
}

static int add_entry(ksnap_props_t *props, const char *key, const char *value,
                     int line) {
  ksnap_props_entry_t *e;

  if (props->count == props->cap) {
    size_t cap = props->cap ? props->cap * 2 : 16;
    void *n = realloc(props->entries, cap * sizeof(*props->entries));
    if (!n)
      return -1;
    props->entries = n;
    props->cap = cap;
  }
  e = &props->entries[props->count];
  e->key = strdup(key);
  e->value = strdup(value);
  if (!e->key || !e->value) {
    free(e->key);
    free(e->value);
    return -1;
  }
  e->file = props->name;
  e->line = line;
  props->count++;
  return 0;
}

/* Parses one logical line (continuations joined). */
static int parse_logical(parser_t *p, int line, const char *s, size_t len) {
  ksnap_buf_t key, value;
  size_t i = 0;
  int r = 0;

  ksnap_buf_init(&key);
  ksnap_buf_init(&value);
  if (memchr(s, '\0', len)) {
    perr(p, line, "NUL byte is not allowed");
    goto done;
  }
  if (unescape(p, line, s, len, &i, 1, &key) == -1)
    goto done;
  while (i < len && is_ws(s[i]))
    i++;
  if (i < len && (s[i] == '=' || s[i] == ':'))
    i++;
  while (i < len && is_ws(s[i]))
    i++;
  if (unescape(p, line, s, len, &i, 0, &value) == -1)
    goto done;
  if (key.len == 0) {
    perr(p, line, "empty key");
    goto done;
  }
  r = add_entry(p->props, (char *)key.data,
                value.data ? (char *)value.data : "", line);
done:
  ksnap_buf_cleanup(&key);
  ksnap_buf_cleanup(&value);
  return r;
}

static size_t trailing_backslashes(const char *s, size_t start, size_t end) {
  size_t n = 0;

  while (end > start && s[end - 1] == '\\')
    end--, n++;
  return n;
}

static int parse_all(parser_t *p) {
  ksnap_buf_t logical;
  size_t s, e;
  int r = 0;

  ksnap_buf_init(&logical);
  if (p->len >= 3 && !memcmp(p->text, "\xEF\xBB\xBF", 3))
    p->pos = 3;
  while (r == 0 && next_line(p, &s, &e)) {
    int first = p->lineno;
    while (s < e && is_ws(p->text[s]))
      s++;
    if (s == e || p->text[s] == '#' || p->text[s] == '!')
      continue;
    ksnap_buf_reset(&logical);
    for (;;) {
      int cont = trailing_backslashes(p->text, s, e) % 2 == 1;
      ksnap_buf_append(&logical, p->text + s, (e - s) - (size_t)cont);
      if (!cont || !next_line(p, &s, &e))
        break;
      while (s < e && is_ws(p->text[s]))
        s++;
    }
    r = parse_logical(p, first, logical.data ? (char *)logical.data : "",
                      logical.len);
  }
  ksnap_buf_cleanup(&logical);
  return r;
}

ksnap_err_t ksnap_props_parse_string(const char *name, const char *text,
                                     size_t len, ksnap_props_t **propsp,
                                     ksnap_props_error_cb_t *error_cb,
                                     void *opaque) {
  parser_t p = {.text = text, .len = len, .error_cb = error_cb,
                .opaque = opaque};

  *propsp = NULL;
  if (!(p.props = calloc(1, sizeof(*p.props))) ||
      !(p.props->name = strdup(name))) {
    free(p.props);
    return KSNAP_ERR_NOMEM;
  }
  if (parse_all(&p) == -1) {
    ksnap_props_destroy(p.props);
    return KSNAP_ERR_NOMEM;
  }
  *propsp = p.props;
  return p.nerrors ? KSNAP_ERR_CONF_SYNTAX : KSNAP_ERR_OK;
}

ksnap_err_t ksnap_props_parse_file(const char *path, ksnap_props_t **propsp,
                                   ksnap_props_error_cb_t *error_cb,
                                   void *opaque) {
  ksnap_buf_t text;
  char chunk[8192], msg[512];
  FILE *fp;
  size_t n;
  ksnap_err_t err;

  *propsp = NULL;
  if (!(fp = fopen(path, "rb"))) {
    snprintf(msg, sizeof(msg), "%s: cannot open: %s", path, strerror(errno));
    if (error_cb)
      error_cb(opaque, msg);
    return KSNAP_ERR_IO;
  }
  ksnap_buf_init(&text);
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
    if (ksnap_buf_append(&text, chunk, n) != KSNAP_ERR_OK)
      break;
  if (ferror(fp) || n > 0) {
    snprintf(msg, sizeof(msg), "%s: cannot read: %s", path,
             n > 0 ? "out of memory" : strerror(errno));
    if (error_cb)
      error_cb(opaque, msg);
    fclose(fp);
    ksnap_buf_cleanup(&text);
    return KSNAP_ERR_IO;
  }
  fclose(fp);
  err = ksnap_props_parse_string(path, text.data ? (char *)text.data : "",
                                 text.len, propsp, error_cb, opaque);
  ksnap_buf_cleanup(&text);
  return err;
}

void ksnap_props_destroy(ksnap_props_t *props) {
  if (!props)
    return;
  for (size_t i = 0; i < props->count; i++) {
    free(props->entries[i].key);
    free(props->entries[i].value);
  }
  free(props->entries);
  free(props->name);
  free(props);
}

size_t ksnap_props_count(const ksnap_props_t *props) { return props->count; }

const ksnap_props_entry_t *ksnap_props_get(const ksnap_props_t *props,
                                           size_t i) {
  return i < props->count ? &props->entries[i] : NULL;
}

const char *ksnap_props_find(const ksnap_props_t *props, const char *key) {
  for (size_t i = props->count; i-- > 0;)
    if (!strcmp(props->entries[i].key, key))
      return props->entries[i].value;
  return NULL;
}
