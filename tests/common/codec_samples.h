/* Realistic sample records for the codec suites (tests only).
 *
 * The builders fill a struct with borrowed static strings: encode it, never
 * _cleanup() it. The sample table wraps every record kind as an
 * encode/decode pair so the truncation and corruption loops run over all of
 * them. */
#ifndef KSNAP_CODEC_SAMPLES_H
#define KSNAP_CODEC_SAMPLES_H

#include "ksnap/records.h"

/** A unicode topic name used in the samples. */
#define KSNAP_TEST_UNICODE_TOPIC "заказы.事件-🚀"

void ksnap_test_sample_barrier(ksnap_barrier_t *barrier);
void ksnap_test_sample_trigger(ksnap_control_record_t *rec);
/** @p with_chk: from checkpoint 41, with a two-entry owner table. */
void ksnap_test_sample_restore(ksnap_control_record_t *rec, int with_chk);
void ksnap_test_sample_assign(ksnap_control_record_t *rec);
void ksnap_test_sample_job_failed(ksnap_control_record_t *rec);
void ksnap_test_sample_register(ksnap_ack_record_t *rec);
void ksnap_test_sample_heartbeat(ksnap_ack_record_t *rec);
/** An ACK with 2 handles, 3 offsets, 2 channels; @p empty: no arrays. */
void ksnap_test_sample_ack(ksnap_ack_record_t *rec, int empty);
void ksnap_test_sample_decline(ksnap_ack_record_t *rec);
void ksnap_test_sample_committed(ksnap_ack_record_t *rec);
void ksnap_test_sample_request(ksnap_ack_record_t *rec);
void ksnap_test_sample_failure(ksnap_ack_record_t *rec);
void ksnap_test_sample_progress(ksnap_sink_progress_t *progress);
/** Metadata with @p task_cnt (<= 3) task snapshots. */
void ksnap_test_sample_meta(ksnap_checkpoint_meta_t *meta, size_t task_cnt);

typedef struct ksnap_test_codec_sample_s {
  const char *name;
  /** Builds the sample and encodes it into @p out. */
  ksnap_err_t (*encode)(ksnap_buf_t *out, ksnap_error_t *error);
  /** Decodes (and frees the result). */
  ksnap_err_t (*decode)(const void *buf, size_t len, ksnap_error_t *error);
} ksnap_test_codec_sample_t;

extern const ksnap_test_codec_sample_t ksnap_test_codec_samples[];
extern const size_t ksnap_test_codec_sample_cnt;

#endif /* KSNAP_CODEC_SAMPLES_H */
