/* Records whose Avro body is the union field "body" (see codec.h,
 * ksnap__codec_union_t): the encode and decode steps around the branch,
 * shared by codec_ack.c and codec_control.c. */
#include "codec.h"

ksnap_err_t ksnap__codec_union_encode(const ksnap__codec_union_t *u, int disc,
                                      const void *rec, ksnap_buf_t *out,
                                      ksnap_error_t *error) {
  avro_value_t value, body;
  ksnap_err_t err;
  int rc;

  if ((err = ksnap__codec_value_new(u->type, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_branch(&value, "body", disc, &body));
  KSNAP__AV(u->set_body(&body, rec));
  err = ksnap__codec_write(u->type, &value, out, error);
  avro_value_decref(&value);
  return err;
fail:
  avro_value_decref(&value);
  return ksnap__codec_encode_error(error, rc, u->branch_name(disc));
}

ksnap_err_t ksnap__codec_union_decode(const ksnap__codec_union_t *u,
                                      const void *buf, size_t len, void *rec,
                                      ksnap_error_t *error) {
  avro_value_t value, body;
  ksnap_err_t err;
  const char *what;
  int disc = -1;
  int rc;

  if ((err = ksnap__codec_read(u->type, buf, len, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_get_branch(&value, "body", &disc, &body));
  KSNAP__AV(u->get_body(&body, disc, rec));
  avro_value_decref(&value);
  return KSNAP_ERR_OK;
fail:
  avro_value_decref(&value);
  what = disc >= 0 ? u->branch_name(disc) : u->label;
  u->cleanup(rec);
  return ksnap__codec_decode_error(error, rc, what);
}
