/*
 * Typed values of the configuration: parsing (with the fixed error
 * wording of ksnap/conf.h), normalized formatting, ${VAR} substitution.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_int.h"
#include "ksnap/buf.h"

typedef struct unit_s {
  const char *name;
  int64_t factor;
} unit_t;

/* Longest names first is not needed: a unit must match the whole suffix. */
static const unit_t duration_units[] = {
    {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {NULL, 0}};
/* As Flink's MemorySize: every unit is a power of 1024. */
static const unit_t size_units[] = {
    {"b", 1},           {"k", 1024},        {"kb", 1024},
    {"kib", 1024},      {"m", 1048576},     {"mb", 1048576},
    {"mib", 1048576},   {"g", 1073741824},  {"gb", 1073741824},
    {"gib", 1073741824}, {NULL, 0}};

const char *ksnap__conf_type_name(ksnap_conf_type_t type) {
  switch (type) {
  case KSNAP_CONF_STRING: return "string";
  case KSNAP_CONF_INT: return "int";
  case KSNAP_CONF_BOOL: return "bool";
  case KSNAP_CONF_DURATION: return "duration";
  case KSNAP_CONF_SIZE: return "size";
  case KSNAP_CONF_ENUM: return "enum";
  case KSNAP_CONF_URL: return "url";
  case KSNAP_CONF_DOUBLE: return "double";
  }
  return "?";
}

/* Parses a non-negative decimal integer; -1 if not one or overflowing. */
static int parse_digits(const char *s, size_t n, int64_t *vp) {
  int64_t v = 0;

  if (n == 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]) || v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *vp = v;
  return 0;
}

/* NUMBER [spaces] [UNIT]; a bare number has factor 1. */
static int parse_with_unit(const char *v, const unit_t *units, int64_t *vp) {
  size_t n = strspn(v, "0123456789");
  const char *u = v + n;
  int64_t num;

  if (parse_digits(v, n, &num) == -1)
    return -1;
  while (*u == ' ')
    u++;
  if (!*u) {
    if (u != v + n)
      return -1; /* trailing spaces without a unit */
    *vp = num;
    return 0;
  }
  for (const unit_t *un = units; un->name; un++) {
    if (strcasecmp(u, un->name))
      continue;
    if (num > INT64_MAX / un->factor)
      return -1;
    *vp = num * un->factor;
    return 0;
  }
  return -1;
}

static void format_units(int64_t v, const unit_t *units, const char *const *names,
                         char *buf, size_t size) {
  int best = 0;

  for (int i = 0; units[i].name; i++)
    if (v != 0 && v % units[i].factor == 0)
      best = i;
  snprintf(buf, size, "%" PRId64 "%s", v / units[best].factor, names[best]);
}

/* Millionths as the shortest decimal: 1500000 -> "1.5", 2000000 -> "2". */
static void format_micro(int64_t v, char *buf, size_t size) {
  int64_t a = v < 0 ? -v : v;
  int n = snprintf(buf, size, "%s%" PRId64 ".%06" PRId64, v < 0 ? "-" : "",
                   a / KSNAP__CONF_MICRO, a % KSNAP__CONF_MICRO);

  if (n <= 0 || (size_t)n >= size)
    return;
  while (n > 0 && buf[n - 1] == '0')
    buf[--n] = '\0';
  if (n > 0 && buf[n - 1] == '.')
    buf[--n] = '\0';
}

void ksnap__conf_format_num(ksnap_conf_type_t type, int64_t v, char *buf,
                            size_t size) {
  static const char *const dnames[] = {"ms", "s", "min", "h"};
  static const unit_t sizes[] = {
      {"b", 1}, {"k", 1024}, {"m", 1048576}, {"g", 1073741824}, {NULL, 0}};
  static const char *const snames[] = {"", "KiB", "MiB", "GiB"};

  if (type == KSNAP_CONF_DURATION)
    format_units(v, duration_units, dnames, buf, size);
  else if (type == KSNAP_CONF_SIZE)
    format_units(v, sizes, snames, buf, size);
  else if (type == KSNAP_CONF_DOUBLE)
    format_micro(v, buf, size);
  else
    snprintf(buf, size, "%" PRId64, v);
}

static int parse_int(const char *v, int64_t *vp) {
  char *end;
  long long x;

  if (!*v || isspace((unsigned char)*v))
    return -1;
  errno = 0;
  x = strtoll(v, &end, 10);
  if (errno || *end)
    return -1;
  *vp = x;
  return 0;
}

/* A finite decimal number (no hex, no inf/nan) in millionths, rounded. */
static int parse_double(const char *v, int64_t *vp) {
  char *end;
  double x;

  if (!*v || isspace((unsigned char)*v) ||
      strspn(v, "+-0123456789.eE") != strlen(v))
    return -1;
  errno = 0;
  x = strtod(v, &end);
  if (errno || *end || !(x > -9e12 && x < 9e12))
    return -1;
  x *= KSNAP__CONF_MICRO;
  *vp = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
  return 0;
}

static int parse_enum(const char *enums, const char *v, char **normp,
                      int64_t *vp) {
  const char *p = enums;
  int64_t idx = 0;

  for (;;) {
    size_t n = strcspn(p, "|");
    if (n == strlen(v) && !strncasecmp(p, v, n)) {
      *normp = strndup(p, n);
      *vp = idx;
      return 0;
    }
    if (!p[n])
      return -1;
    p += n + 1;
    idx++;
  }
}

static int url_ok(const char *v) {
  const char *scheme_end = strstr(v, "://");

  if (!*v)
    return 0;
  if (!strncmp(v, "s3://", 5)) {
    size_t n = strcspn(v + 5, "/");
    return n >= 3 && n <= 63 &&
           strspn(v + 5, "abcdefghijklmnopqrstuvwxyz0123456789.-") >= n;
  }
  if (!strncmp(v, "file://", 7))
    return v[7] == '/';
  return scheme_end == NULL; /* a plain path */
}

/* Type parsing: 0 ok, -1 bad syntax (errstr set), -2 out of range. */
static int parse_typed(const ksnap__conf_prop_t *prop, const char *key,
                       const char *shown, const char *v, char **normp,
                       int64_t *vp, char *errstr, size_t size) {
  char buf[64];

  *vp = 0;
  switch (prop->type) {
  case KSNAP_CONF_STRING:
    break;
  case KSNAP_CONF_URL:
    if (url_ok(v))
      break;
    snprintf(errstr, size, "%s: invalid URL \"%s\" (expected "
             "s3://BUCKET/PREFIX, file:///PATH or a path)", key, shown);
    return -1;
  case KSNAP_CONF_BOOL:
    if (!strcasecmp(v, "true") || !strcasecmp(v, "false")) {
      *vp = !strcasecmp(v, "true");
      *normp = strdup(*vp ? "true" : "false");
      return 0;
    }
    snprintf(errstr, size, "%s: invalid boolean \"%s\" (expected true or "
             "false)", key, shown);
    return -1;
  case KSNAP_CONF_ENUM:
    if (parse_enum(prop->enums, v, normp, vp) == 0)
      return 0;
    snprintf(errstr, size, "%s: invalid value \"%s\" (expected one of ",
             key, shown);
    for (const char *p = prop->enums; *p; p++) {
      size_t n = strlen(errstr);
      if (n + 3 < size)
        *p == '|' ? snprintf(errstr + n, size - n, ", ")
                  : snprintf(errstr + n, size - n, "%c", *p);
    }
    strncat(errstr, ")", size - strlen(errstr) - 1);
    return -1;
  case KSNAP_CONF_INT:
  case KSNAP_CONF_DURATION:
  case KSNAP_CONF_SIZE:
  case KSNAP_CONF_DOUBLE:
    if (prop->type == KSNAP_CONF_INT      ? parse_int(v, vp)
        : prop->type == KSNAP_CONF_DOUBLE ? parse_double(v, vp)
        : parse_with_unit(v, prop->type == KSNAP_CONF_SIZE ? size_units
                                                           : duration_units,
                          vp)) {
      snprintf(errstr, size, "%s: invalid %s \"%s\" (expected %s)", key,
               ksnap__conf_type_name(prop->type), shown,
               prop->type == KSNAP_CONF_INT      ? "an integer"
               : prop->type == KSNAP_CONF_DOUBLE ? "a decimal number"
               : prop->type == KSNAP_CONF_SIZE
                   ? "a number with optional unit b, kb, mb, gb, kib, mib or gib"
                   : "a number with unit ms, s, min or h");
      return -1;
    }
    if (*vp < prop->vmin || *vp > prop->vmax) {
      char lo[32], hi[32];
      ksnap__conf_format_num(prop->type, *vp, buf, sizeof(buf));
      ksnap__conf_format_num(prop->type, prop->vmin, lo, sizeof(lo));
      ksnap__conf_format_num(prop->type, prop->vmax, hi, sizeof(hi));
      snprintf(errstr, size, "%s: value %s is outside allowed range %s..%s",
               key, buf, lo, hi);
      return -1;
    }
    ksnap__conf_format_num(prop->type, *vp, buf, sizeof(buf));
    *normp = strdup(buf);
    return 0;
  }
  *normp = strdup(v);
  return 0;
}

int ksnap__conf_parse_value(const ksnap__conf_prop_t *prop, const char *key,
                            const char *value, char **normp, int64_t *nump,
                            char *errstr, size_t errstr_size) {
  char *norm = NULL, *trimmed = NULL;
  const char *shown;
  int n, r = -1;

  /* Typed values ignore surrounding blanks (a .properties value keeps its
   * trailing ones); strings, secrets among them, are kept verbatim. */
  if (prop->type != KSNAP_CONF_STRING) {
    size_t b = strspn(value, " \t\f"), e = strlen(value);
    while (e > b && strchr(" \t\f", value[e - 1]))
      e--;
    if (!(value = trimmed = strndup(value + b, e - b)))
      goto oom;
  }
  shown = (prop->flags & KSNAP__CONF_SECRET) ? KSNAP__CONF_MASK : value;
  if (parse_typed(prop, key, shown, value, &norm, nump, errstr,
                  errstr_size) == -1)
    goto done;
  if (prop->check) {
    n = snprintf(errstr, errstr_size, "%s: ", key);
    if (n > 0 && (size_t)n < errstr_size &&
        prop->check(value, errstr + n, errstr_size - (size_t)n) == -1)
      goto done;
    errstr[0] = '\0';
  }
  if (!norm && !(norm = strdup(value)))
    goto oom;
  *normp = norm;
  norm = NULL;
  r = 0;
  goto done;
oom:
  snprintf(errstr, errstr_size, "%s: out of memory", key);
done:
  free(norm);
  free(trimmed);
  return r;
}

/* ${file:PATH}: the whole content of the file PATH (a secret kept out of
 * the job file), without one trailing newline. -1 with errstr set. */
static int append_file(ksnap_buf_t *out, const char *path, char *errstr,
                       size_t errstr_size) {
  FILE *fp = path[0] == '/' ? fopen(path, "rb") : NULL;
  size_t start = out->len, n;
  char chunk[4096];
  int err;

  if (!fp) {
    if (path[0] != '/')
      snprintf(errstr, errstr_size, "${file:%s}: the path must be absolute",
               path);
    else
      snprintf(errstr, errstr_size, "${file:%s}: cannot open: %s", path,
               strerror(errno));
    return -1;
  }
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
    ksnap_buf_append(out, chunk, n);
  err = ferror(fp);
  fclose(fp);
  if (err) {
    snprintf(errstr, errstr_size, "${file:%s}: read error", path);
    return -1;
  }
  if (out->len > start && ((char *)out->data)[out->len - 1] == '\n')
    out->len--;
  if (out->len > start && ((char *)out->data)[out->len - 1] == '\r')
    out->len--;
  out->data[out->len] = '\0';
  if (memchr((char *)out->data + start, '\0', out->len - start)) {
    snprintf(errstr, errstr_size, "${file:%s}: the file holds a NUL byte",
             path);
    return -1;
  }
  return 0;
}

int ksnap__conf_substitute(const char *value, char **outp, char *errstr,
                           size_t errstr_size) {
  ksnap_buf_t out;
  const char *p = value;

  ksnap_buf_init(&out);
  ksnap_buf_append(&out, "", 0);
  while (*p) {
    const char *dollar = strstr(p, "${"), *end, *dflt, *env;
    char name[256];
    size_t nlen;

    if (!dollar) {
      ksnap_buf_append(&out, p, strlen(p));
      break;
    }
    if (dollar > p && dollar[-1] == '$') { /* $${ is a literal ${ */
      ksnap_buf_append(&out, p, (size_t)(dollar - p) - 1);
      ksnap_buf_append(&out, "${", 2);
      p = dollar + 2;
      continue;
    }
    ksnap_buf_append(&out, p, (size_t)(dollar - p));
    if (!(end = strchr(dollar + 2, '}'))) {
      snprintf(errstr, errstr_size, "unterminated \"${\"");
      goto fail;
    }
    if (!strncmp(dollar + 2, "file:", 5)) {
      char path[4096];
      size_t plen = (size_t)(end - (dollar + 7));
      if (plen == 0 || plen >= sizeof(path)) {
        snprintf(errstr, errstr_size, "invalid file reference \"%.*s\"",
                 (int)(end - dollar + 1), dollar);
        goto fail;
      }
      memcpy(path, dollar + 7, plen);
      path[plen] = '\0';
      if (append_file(&out, path, errstr, errstr_size))
        goto fail;
      p = end + 1;
      continue;
    }
    dflt = strstr(dollar + 2, ":-");
    if (dflt && dflt > end)
      dflt = NULL;
    nlen = (size_t)((dflt ? dflt : end) - (dollar + 2));
    if (nlen == 0 || nlen >= sizeof(name) ||
        strspn(dollar + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvw"
                           "xyz0123456789_") != nlen) {
      snprintf(errstr, errstr_size, "invalid variable reference \"%.*s\"",
               (int)(end - dollar + 1), dollar);
      goto fail;
    }
    memcpy(name, dollar + 2, nlen);
    name[nlen] = '\0';
    env = getenv(name);
    if (env && *env)
      ksnap_buf_append(&out, env, strlen(env));
    else if (dflt)
      ksnap_buf_append(&out, dflt + 2, (size_t)(end - dflt - 2));
    else if (env)
      ; /* set but empty, no default: empty */
    else {
      snprintf(errstr, errstr_size, "environment variable \"%s\" is not set",
               name);
      goto fail;
    }
    p = end + 1;
  }
  *outp = (char *)ksnap_buf_detach(&out, NULL);
  return *outp ? 0 : -1;
fail:
  ksnap_buf_cleanup(&out);
  return -1;
}

int ksnap__conf_edit_distance(const char *a, const char *b, int cap) {
  size_t la = strlen(a), lb = strlen(b);
  int row[128], best;

  if (lb >= 128 || (la > lb ? la - lb : lb - la) > (size_t)cap)
    return cap + 1;
  for (size_t j = 0; j <= lb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    best = row[0];
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int cost = diag + (a[i - 1] != b[j - 1]);
      row[j] = cost < up + 1 ? cost : up + 1;
      if (row[j - 1] + 1 < row[j])
        row[j] = row[j - 1] + 1;
      diag = up;
      if (row[j] < best)
        best = row[j];
    }
    if (best > cap)
      return cap + 1;
  }
  return row[lb] > cap ? cap + 1 : row[lb];
}

void ksnap__conf_mask_in(char *msg, size_t size, const char *secret) {
  size_t slen = strlen(secret), mlen = strlen(KSNAP__CONF_MASK);
  char *p = msg;

  if (!slen)
    return;
  while ((p = strstr(p, secret))) {
    size_t off = (size_t)(p - msg), tail = strlen(p + slen) + 1;
    if (off + mlen >= size) { /* no room for the mask: cut here */
      *p = '\0';
      return;
    }
    if (off + mlen + tail > size)
      tail = size - off - mlen; /* truncate the message's end */
    memmove(p + mlen, p + slen, tail);
    memcpy(p, KSNAP__CONF_MASK, mlen);
    msg[size - 1] = '\0';
    p += mlen;
  }
}
