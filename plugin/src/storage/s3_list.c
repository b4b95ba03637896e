/*
 * A small XML scanner for the two S3 bodies ksnap reads: ListObjectsV2
 * pages and <Error> documents (plus InitiateMultipartUpload's UploadId).
 * S3 bodies are flat and generated, so element text is found by tag name;
 * the five predefined entities and numeric references are unescaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"

static const char *find(const char *hay, size_t hlen, const char *needle) {
  size_t n = strlen(needle);
  if (n > hlen)
    return NULL;
  for (size_t i = 0; i + n <= hlen; i++)
    if (hay[i] == needle[0] && !memcmp(hay + i, needle, n))
      return hay + i;
  return NULL;
}

static void put_utf8(ksnap_buf_t *out, unsigned long cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) {
    b[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    b[0] = (char)(0xC0 | (cp >> 6));
    b[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    b[0] = (char)(0xE0 | (cp >> 12));
    b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    b[0] = (char)(0xF0 | (cp >> 18));
    b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  ksnap_buf_append(out, b, n);
}

static void unescape(const char *s, size_t len, ksnap_buf_t *out) {
  static const struct {
    const char *name;
    char c;
  } ents[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'},
              {"quot;", '"'}, {"apos;", '\''}};
  size_t i = 0;

  while (i < len) {
    const char *amp = memchr(s + i, '&', len - i);
    size_t upto = amp ? (size_t)(amp - s) : len, k;
    ksnap_buf_append(out, s + i, upto - i);
    if (!amp)
      break;
    i = upto + 1;
    for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++) {
      size_t n = strlen(ents[k].name);
      if (i + n <= len && !memcmp(s + i, ents[k].name, n)) {
        ksnap_buf_append(out, &ents[k].c, 1);
        i += n;
        break;
      }
    }
    if (k < sizeof(ents) / sizeof(ents[0]))
      continue;
    if (i < len && s[i] == '#') {
      char num[16];
      const char *semi = memchr(s + i, ';', len - i < 12 ? len - i : 12);
      if (semi && (size_t)(semi - (s + i)) < sizeof(num)) {
        int hex = s[i + 1] == 'x' || s[i + 1] == 'X';
        snprintf(num, sizeof(num), "%.*s", (int)(semi - (s + i) - 1 - hex),
                 s + i + 1 + hex);
        put_utf8(out, strtoul(num, NULL, hex ? 16 : 10));
        i = (size_t)(semi - s) + 1;
        continue;
      }
    }
    ksnap_buf_append(out, "&", 1); /* stray '&': keep it */
  }
  if (ksnap_buf_reserve(out, 0) == KSNAP_ERR_OK)
    out->data[out->len] = '\0';
}

int ksnap__xml_text(const char *xml, size_t len, size_t *pos,
                    const char *tag, ksnap_buf_t *out) {
  char open[64], close[64];
  const char *a, *b;

  snprintf(open, sizeof(open), "<%s>", tag);
  snprintf(close, sizeof(close), "</%s>", tag);
  if (*pos > len || !(a = find(xml + *pos, len - *pos, open)))
    return 0;
  a += strlen(open);
  if (!(b = find(a, len - (size_t)(a - xml), close)))
    return 0;
  unescape(a, (size_t)(b - a), out);
  *pos = (size_t)(b - xml) + strlen(close);
  return 1;
}

ksnap_err_t ksnap__s3_error_from_body(const char *xml, size_t len,
                                      long status, const char *what,
                                      ksnap_error_t *error) {
  ksnap_buf_t code, message;
  ksnap_err_t err;
  size_t pos = 0;

  ksnap_buf_init(&code);
  ksnap_buf_init(&message);
  if (xml)
    ksnap__xml_text(xml, len, &pos, "Code", &code);
  pos = 0;
  if (xml)
    ksnap__xml_text(xml, len, &pos, "Message", &message);
  for (size_t i = 0; i < message.len; i++) /* keep messages on one line */
    if (message.data[i] == '\n' || message.data[i] == '\r')
      message.data[i] = ' ';
  if (code.len && !strcmp((char *)code.data, "NoSuchBucket"))
    err = KSNAP_ERR_NO_SUCH_BUCKET;
  else if (status == 403)
    err = KSNAP_ERR_ACCESS_DENIED;
  else if (status == 404)
    err = KSNAP_ERR_NOT_FOUND;
  else
    err = KSNAP_ERR_HTTP;
  if (code.len)
    ksnap_error_set(error, err, "%s: %s: %s (HTTP %ld)", what,
                    (char *)code.data,
                    message.len ? (char *)message.data : "(no message)",
                    status);
  else
    ksnap_error_set(error, err, "%s: HTTP %ld%s", what, status,
                    status == 404   ? " (not found)"
                    : status == 403 ? " (access denied: check s3.access-key, "
                                      "s3.secret-key and the bucket policy)"
                                    : "");
  ksnap_buf_cleanup(&code);
  ksnap_buf_cleanup(&message);
  return err;
}

/* Percent-decodes @p s in place (keys under encoding-type=url). */
static void url_decode(char *s) {
  char *out = s;
  for (; *s; s++) {
    if (s[0] == '%' && s[1] && s[2]) {
      char hex[3] = {s[1], s[2], 0};
      *out++ = (char)strtoul(hex, NULL, 16);
      s += 2;
    } else {
      *out++ = *s == '+' ? ' ' : *s;
    }
  }
  *out = '\0';
}

int ksnap__s3_parse_list(const char *xml, size_t len,
                         ksnap__s3_list_page_cb_t *cb, void *opaque,
                         int *truncated, ksnap_buf_t *token) {
  ksnap_buf_t val;
  size_t pos = 0, end;
  int rc = 0, url_encoded = 0;

  if (!xml || !find(xml, len, "<ListBucketResult"))
    return -1;
  ksnap_buf_init(&val);
  *truncated = 0;
  if (ksnap__xml_text(xml, len, &pos, "EncodingType", &val))
    url_encoded = !strcmp((char *)val.data, "url");
  pos = 0;
  ksnap_buf_reset(&val);
  ksnap_buf_reset(&val);
  if (ksnap__xml_text(xml, len, &pos, "IsTruncated", &val))
    *truncated = !strcmp((char *)val.data, "true");
  pos = 0;
  ksnap_buf_reset(token);
  if (*truncated &&
      !ksnap__xml_text(xml, len, &pos, "NextContinuationToken", token))
    rc = -1;
  pos = 0;
  while (rc == 0) {
    const char *c = find(xml + pos, len - pos, "<Contents>");
    const char *ce;
    char *key;
    size_t kpos, spos;
    if (!c)
      break;
    ce = find(c, len - (size_t)(c - xml), "</Contents>");
    if (!ce) {
      rc = -1;
      break;
    }
    end = (size_t)(ce - xml);
    kpos = spos = (size_t)(c - xml);
    ksnap_buf_reset(&val);
    if (!ksnap__xml_text(xml, end, &kpos, "Key", &val)) {
      rc = -1;
      break;
    }
    key = strdup((char *)val.data);
    if (key && url_encoded)
      url_decode(key);
    ksnap_buf_reset(&val);
    ksnap__xml_text(xml, end, &spos, "Size", &val);
    if (!key)
      rc = -1;
    else if (cb(opaque, key, val.len ? strtoull((char *)val.data, NULL, 10)
                                     : 0))
      rc = 1;
    free(key);
    pos = end + strlen("</Contents>");
  }
  ksnap_buf_cleanup(&val);
  return rc;
}
