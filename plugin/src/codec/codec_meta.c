/* Checkpoint metadata (metadata_v1: the _metadata object) and sink
 * progress (progress_v1: the progress topic) codecs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

ksnap_err_t ksnap_codec_meta_encode(const ksnap_checkpoint_meta_t *meta,
                                    ksnap_buf_t *out, ksnap_error_t *error) {
  avro_value_t value, tasks, item;
  ksnap_err_t err;
  int rc;

  if (meta->task_cnt && !meta->tasks)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "checkpoint metadata: %zu tasks but no array",
                           meta->task_cnt);
  if ((err = ksnap__codec_value_new(KSNAP_RECORD_METADATA, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_set_string(&value, "job", meta->job));
  KSNAP__AV(ksnap__av_set_long(&value, "checkpoint_id", meta->checkpoint_id));
  KSNAP__AV(ksnap__av_set_long(&value, "generation", meta->generation));
  KSNAP__AV(ksnap__av_set_opt_id(&value, "parent_id", meta->parent_id));
  KSNAP__AV(ksnap__av_set_long(&value, "timestamp_ms", meta->timestamp_ms));
  KSNAP__AV(ksnap__av_set_bool(&value, "is_savepoint", meta->is_savepoint));
  KSNAP__AV(avro_value_get_by_name(&value, "tasks", &tasks, NULL));
  for (size_t i = 0; i < meta->task_cnt; i++) {
    KSNAP__AV(avro_value_append(&tasks, &item, NULL));
    KSNAP__AV(ksnap__av_set_snapshot(&item, NULL, &meta->tasks[i]));
  }
  err = ksnap__codec_write(KSNAP_RECORD_METADATA, &value, out, error);
  avro_value_decref(&value);
  return err;
fail:
  avro_value_decref(&value);
  return ksnap__codec_encode_error(error, rc, "CHECKPOINT_METADATA");
}

ksnap_err_t ksnap_codec_meta_decode(const void *buf, size_t len,
                                    ksnap_checkpoint_meta_t *out,
                                    ksnap_error_t *error) {
  avro_value_t value, tasks, item;
  ksnap_err_t err;
  size_t cnt = 0;
  int rc;

  memset(out, 0, sizeof(*out));
  if ((err = ksnap__codec_read(KSNAP_RECORD_METADATA, buf, len, &value,
                               error)))
    return err;
  KSNAP__AV(ksnap__av_get_string(&value, "job", &out->job));
  KSNAP__AV(ksnap__av_get_long(&value, "checkpoint_id", &out->checkpoint_id));
  KSNAP__AV(ksnap__av_get_long(&value, "generation", &out->generation));
  KSNAP__AV(ksnap__av_get_opt_id(&value, "parent_id", &out->parent_id));
  KSNAP__AV(ksnap__av_get_long(&value, "timestamp_ms", &out->timestamp_ms));
  KSNAP__AV(ksnap__av_get_bool(&value, "is_savepoint", &out->is_savepoint));
  KSNAP__AV(avro_value_get_by_name(&value, "tasks", &tasks, NULL));
  KSNAP__AV(avro_value_get_size(&tasks, &cnt));
  if (cnt) {
    /* cnt is bounded by the validated buffer length. */
    out->tasks = calloc(cnt, sizeof(*out->tasks));
    KSNAP__AV(out->tasks ? 0 : ENOMEM);
    out->task_cnt = cnt;
  }
  for (size_t i = 0; i < cnt; i++) {
    KSNAP__AV(avro_value_get_by_index(&tasks, i, &item, NULL));
    KSNAP__AV(ksnap__av_get_snapshot(&item, NULL, &out->tasks[i]));
  }
  avro_value_decref(&value);
  return KSNAP_ERR_OK;
fail:
  avro_value_decref(&value);
  ksnap_checkpoint_meta_cleanup(out);
  return ksnap__codec_decode_error(error, rc, "CHECKPOINT_METADATA");
}

void ksnap_checkpoint_meta_cleanup(ksnap_checkpoint_meta_t *meta) {
  if (!meta)
    return;
  free(meta->job);
  for (size_t i = 0; i < meta->task_cnt; i++)
    ksnap_task_snapshot_cleanup(&meta->tasks[i]);
  free(meta->tasks);
  memset(meta, 0, sizeof(*meta));
}

ksnap_err_t ksnap_codec_progress_encode(const ksnap_sink_progress_t *progress,
                                        ksnap_buf_t *out,
                                        ksnap_error_t *error) {
  avro_value_t value;
  ksnap_err_t err;
  int rc;

  if ((err = ksnap__codec_value_new(KSNAP_RECORD_PROGRESS, &value, error)))
    return err;
  KSNAP__AV(ksnap__av_set_task(&value, "sink_task", &progress->sink_task));
  KSNAP__AV(ksnap__av_set_long(&value, "transaction_id",
                               progress->transaction_id));
  KSNAP__AV(ksnap__av_set_long(&value, "generation", progress->generation));
  err = ksnap__codec_write(KSNAP_RECORD_PROGRESS, &value, out, error);
  avro_value_decref(&value);
  return err;
fail:
  avro_value_decref(&value);
  return ksnap__codec_encode_error(error, rc, "SINK_PROGRESS");
}

ksnap_err_t ksnap_codec_progress_decode(const void *buf, size_t len,
                                        ksnap_sink_progress_t *out,
                                        ksnap_error_t *error) {
  avro_value_t value;
  ksnap_err_t err;
  int rc;

  memset(out, 0, sizeof(*out));
  if ((err = ksnap__codec_read(KSNAP_RECORD_PROGRESS, buf, len, &value,
                               error)))
    return err;
  KSNAP__AV(ksnap__av_get_task(&value, "sink_task", &out->sink_task));
  KSNAP__AV(ksnap__av_get_long(&value, "transaction_id",
                               &out->transaction_id));
  KSNAP__AV(ksnap__av_get_long(&value, "generation", &out->generation));
  avro_value_decref(&value);
  return KSNAP_ERR_OK;
fail:
  avro_value_decref(&value);
  ksnap_sink_progress_cleanup(out);
  return ksnap__codec_decode_error(error, rc, "SINK_PROGRESS");
}

void ksnap_sink_progress_cleanup(ksnap_sink_progress_t *progress) {
  if (!progress)
    return;
  ksnap_task_id_cleanup(&progress->sink_task);
  memset(progress, 0, sizeof(*progress));
}
