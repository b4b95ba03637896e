/*
 * S3 multipart upload: initiate (POST ?uploads=), parts (PUT
 * ?partNumber=N&uploadId=ID, run in parallel on the multi handle), complete
 * (POST ?uploadId=ID with the part list), abort (DELETE ?uploadId=ID) on
 * any failure so no orphaned parts are left behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "s3.h"
#include "base/util.h"

typedef struct part_s {
  int number;
  char etag[128];
} part_t;

struct ksnap__s3_mpu_s {
  ksnap__s3_t *s3;
  char *key;
  char *upload_id;
  part_t *parts; /* the parts done, in upload order */
  int nparts, cap;
};

static char *part_query(const char *upload_id, int part) {
  char num[16];
  const char *pairs[4] = {"partNumber", num, "uploadId", upload_id};
  snprintf(num, sizeof(num), "%d", part);
  return part ? ksnap__s3_query(pairs, 2) : ksnap__s3_query(pairs + 2, 1);
}

ksnap_err_t ksnap__s3_mpu_begin(ksnap__s3_t *s3, const char *key,
                                ksnap__s3_mpu_t **out, ksnap_error_t *error) {
  static const char *const pairs[] = {"uploads", NULL};
  ksnap__s3_req_t req = {.method = "POST", .key = key};
  struct iovec none = {NULL, 0};
  ksnap__s3_mpu_t *mpu = calloc(1, sizeof(*mpu));
  char *query = ksnap__s3_query(pairs, 1);
  ksnap_buf_t id;
  size_t pos = 0;
  ksnap_err_t err;

  *out = NULL;
  ksnap_buf_init(&id);
  if (!mpu || !query || !(mpu->key = strdup(key))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto done;
  }
  mpu->s3 = s3;
  req.query = query;
  req.iov = &none;
  req.iovcnt = 1;
  err = ksnap__s3_run1(s3, &req, error);
  if (!err && !ksnap__xml_text((char *)req.body.data, req.body.len, &pos,
                               "UploadId", &id)) {
    char what[1200];
    ksnap__s3_what(s3, "POST", key, what, sizeof(what));
    err = ksnap__s3_error_from_body((char *)req.body.data, req.body.len,
                                    req.status, what, error);
  }
  if (!err) {
    mpu->upload_id = (char *)ksnap_buf_detach(&id, NULL);
    *out = mpu;
    mpu = NULL;
  }
done:
  ksnap__s3_req_cleanup(&req);
  ksnap_buf_cleanup(&id);
  free(query);
  if (mpu) {
    free(mpu->key);
    free(mpu);
  }
  return err;
}

static ksnap_err_t add_part(ksnap__s3_mpu_t *mpu, int number,
                            const char *etag) {
  if (mpu->nparts == mpu->cap) {
    int cap = mpu->cap ? mpu->cap * 2 : 16;
    part_t *p = realloc(mpu->parts, (size_t)cap * sizeof(*p));
    if (!p)
      return KSNAP_ERR_NOMEM;
    mpu->parts = p;
    mpu->cap = cap;
  }
  mpu->parts[mpu->nparts].number = number;
  snprintf(mpu->parts[mpu->nparts].etag, sizeof(mpu->parts->etag), "%s",
           etag);
  mpu->nparts++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__s3_mpu_part(ksnap__s3_mpu_t *mpu, int number,
                               const struct iovec *iov, int iovcnt,
                               ksnap_error_t *error) {
  ksnap__s3_req_t req = {.method = "PUT", .key = mpu->key};
  char *query = part_query(mpu->upload_id, number);
  ksnap_err_t err;

  if (!query)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  req.query = query;
  req.iov = iov;
  req.iovcnt = iovcnt;
  err = ksnap__s3_run1(mpu->s3, &req, error);
  if (!err && add_part(mpu, number, req.etag))
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  ksnap__s3_req_cleanup(&req);
  free(query);
  return err;
}

static void mpu_free(ksnap__s3_mpu_t *mpu) {
  free(mpu->parts);
  free(mpu->upload_id);
  free(mpu->key);
  free(mpu);
}

void ksnap__s3_mpu_abort(ksnap__s3_mpu_t *mpu) {
  ksnap__s3_req_t req = {.method = "DELETE"};
  char *query;
  ksnap_error_t error;

  if (!mpu)
    return;
  query = part_query(mpu->upload_id, 0);
  req.key = mpu->key;
  req.query = query;
  if (query && ksnap__s3_run1(mpu->s3, &req, &error)) {
    if (strstr(error.msg, "MethodNotAllowed") ||
        strstr(error.msg, "NotImplemented")) /* e.g. s3rver */
      KSNAP_DBG(STORAGE, "S3", "server cannot abort multipart uploads: %s",
                error.msg);
    else
      KSNAP_WARN("S3", "could not abort multipart upload: %s", error.msg);
  }
  ksnap__s3_req_cleanup(&req);
  free(query);
  mpu_free(mpu);
}

static int cmp_part(const void *a, const void *b) {
  return ((const part_t *)a)->number - ((const part_t *)b)->number;
}

/* The part list, ascending as S3 requires (parts may be uploaded in any
 * order: a streamed writer's first part goes last). */
static ksnap_err_t complete_xml(ksnap__s3_mpu_t *mpu, ksnap_buf_t *xml) {
  ksnap_err_t err = ksnap_buf_appendf(xml, "<CompleteMultipartUpload>");

  qsort(mpu->parts, (size_t)mpu->nparts, sizeof(*mpu->parts), cmp_part);
  for (int i = 0; i < mpu->nparts && !err; i++)
    err = ksnap_buf_appendf(xml,
                            "<Part><PartNumber>%d</PartNumber><ETag>%s"
                            "</ETag></Part>",
                            mpu->parts[i].number, mpu->parts[i].etag);
  return err ? err : ksnap_buf_appendf(xml, "</CompleteMultipartUpload>");
}

ksnap_err_t ksnap__s3_mpu_complete(ksnap__s3_mpu_t *mpu,
                                   ksnap_error_t *error) {
  ksnap__s3_req_t req = {.method = "POST", .key = mpu->key};
  ksnap_buf_t xml;
  struct iovec iov;
  char *query = part_query(mpu->upload_id, 0);
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_buf_init(&xml);
  if (!query || complete_xml(mpu, &xml))
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (!err) {
    iov.iov_base = xml.data;
    iov.iov_len = xml.len;
    req.query = query;
    req.iov = &iov;
    req.iovcnt = 1;
    req.content_type = "application/xml";
    err = ksnap__s3_run1(mpu->s3, &req, error);
    /* S3 may answer 200 with an <Error> body */
    if (!err && req.body.data && strstr((char *)req.body.data, "<Error>")) {
      char what[1200];
      ksnap__s3_what(mpu->s3, "POST", mpu->key, what, sizeof(what));
      err = ksnap__s3_error_from_body((char *)req.body.data, req.body.len,
                                      500, what, error);
    }
  }
  ksnap__s3_req_cleanup(&req);
  ksnap_buf_cleanup(&xml);
  free(query);
  if (err)
    ksnap__s3_mpu_abort(mpu);
  else
    mpu_free(mpu);
  return err;
}

/* Copies the [off, off+len) slice of @p iov into @p out (<= 3 entries). */
static int slice(const struct iovec *iov, int iovcnt, uint64_t off,
                 uint64_t len, struct iovec *out) {
  int n = 0;
  for (int i = 0; i < iovcnt && len; i++) {
    if (off >= iov[i].iov_len) {
      off -= iov[i].iov_len;
      continue;
    }
    out[n].iov_base = (char *)iov[i].iov_base + off;
    out[n].iov_len = (size_t)KSNAP_MIN(len, iov[i].iov_len - off);
    len -= out[n].iov_len;
    off = 0;
    n++;
  }
  return n;
}

ksnap_err_t ksnap__s3_multipart_put(ksnap__s3_t *s3, const char *key,
                                    const struct iovec *iov, int iovcnt,
                                    uint64_t total, ksnap_error_t *error) {
  size_t nparts = (size_t)((total + s3->part_size - 1) / s3->part_size);
  ksnap__s3_req_t *reqs = calloc(nparts, sizeof(*reqs));
  ksnap__s3_req_t **ptrs = calloc(nparts, sizeof(*ptrs));
  struct iovec *slices = calloc(nparts * (size_t)iovcnt, sizeof(*slices));
  char **queries = calloc(nparts, sizeof(*queries));
  ksnap__s3_mpu_t *mpu = NULL;
  ksnap_err_t err;

  if (!reqs || !ptrs || !slices || !queries) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto done;
  }
  if ((err = ksnap__s3_mpu_begin(s3, key, &mpu, error)))
    goto done;
  for (size_t i = 0; i < nparts && !err; i++) {
    uint64_t off = (uint64_t)i * s3->part_size;
    ksnap__s3_req_t *req = &reqs[i];
    if (!(queries[i] = part_query(mpu->upload_id, (int)i + 1))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      break;
    }
    req->method = "PUT";
    req->key = key;
    req->query = queries[i];
    req->iov = slices + i * (size_t)iovcnt;
    req->iovcnt = slice(iov, iovcnt, off,
                        KSNAP_MIN((uint64_t)s3->part_size, total - off),
                        slices + i * (size_t)iovcnt);
    ptrs[i] = req;
  }
  if (!err)
    err = ksnap__s3_run(s3, ptrs, nparts, error);
  for (size_t i = 0; i < nparts && !err; i++)
    if (add_part(mpu, (int)i + 1, reqs[i].etag))
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (err)
    ksnap__s3_mpu_abort(mpu);
  else
    err = ksnap__s3_mpu_complete(mpu, error);
done:
  for (size_t i = 0; reqs && i < nparts; i++) {
    ksnap__s3_req_cleanup(&reqs[i]);
    free(queries ? queries[i] : NULL);
  }
  free(reqs);
  free(ptrs);
  free(slices);
  free(queries);
  return err;
}
