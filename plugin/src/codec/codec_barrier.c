/* Barrier codec: the ksnap.ctl record on exchange topics (barrier_v1). */
#include <string.h>

#include "codec.h"

ksnap_err_t ksnap_codec_barrier_encode(const ksnap_barrier_t *barrier,
                                       ksnap_buf_t *out,
                                       ksnap_error_t *error) {
  avro_value_t value;
  ksnap_err_t err;
  int rc;

  if ((err = ksnap__codec_value_new(KSNAP_RECORD_BARRIER, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_set_enum(&value, "kind", (int)barrier->kind, 2));
  KSNAP__AV(ksnap__av_set_long(&value, "checkpoint_id",
                               barrier->checkpoint_id));
  KSNAP__AV(ksnap__av_set_long(&value, "timestamp_ms", barrier->timestamp_ms));
  KSNAP__AV(ksnap__av_set_options(&value, "options", &barrier->options));
  KSNAP__AV(ksnap__av_set_task(&value, "writer", &barrier->writer));
  KSNAP__AV(ksnap__av_set_long(&value, "generation", barrier->generation));
  err = ksnap__codec_write(KSNAP_RECORD_BARRIER, &value, out, error);
  avro_value_decref(&value);
  return err;
fail:
  avro_value_decref(&value);
  return ksnap__codec_encode_error(error, rc, "BARRIER");
}

ksnap_err_t ksnap_codec_barrier_decode(const void *buf, size_t len,
                                       ksnap_barrier_t *out,
                                       ksnap_error_t *error) {
  avro_value_t value;
  ksnap_err_t err;
  int kind = 0;
  int rc;

  memset(out, 0, sizeof(*out));
  if ((err = ksnap__codec_read(KSNAP_RECORD_BARRIER, buf, len, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_get_enum(&value, "kind", &kind));
  KSNAP__AV(ksnap__av_get_long(&value, "checkpoint_id", &out->checkpoint_id));
  KSNAP__AV(ksnap__av_get_long(&value, "timestamp_ms", &out->timestamp_ms));
  KSNAP__AV(ksnap__av_get_options(&value, "options", &out->options));
  KSNAP__AV(ksnap__av_get_task(&value, "writer", &out->writer));
  KSNAP__AV(ksnap__av_get_long(&value, "generation", &out->generation));
  out->kind = (ksnap_barrier_kind_t)kind;
  avro_value_decref(&value);
  return KSNAP_ERR_OK;
fail:
  avro_value_decref(&value);
  ksnap_barrier_cleanup(out);
  return ksnap__codec_decode_error(error, rc, "BARRIER");
}

void ksnap_barrier_cleanup(ksnap_barrier_t *barrier) {
  if (!barrier)
    return;
  ksnap_task_id_cleanup(&barrier->writer);
  memset(barrier, 0, sizeof(*barrier));
}
