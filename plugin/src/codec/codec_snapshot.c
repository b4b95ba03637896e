/* Sub-records shared by several schemas: TaskId, CheckpointOptions and
 * TaskSnapshot (state handles, source offsets, channel positions,
 * timings), their cleanups, and the display names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "base/util.h"

int ksnap__checksum_valid(const char *checksum) {
  static const char *const prefixes[] = {"crc32c:", "sha256:"};

  if (!checksum)
    return 0;
  for (size_t i = 0; i < KSNAP_ARRAY_SIZE(prefixes); i++) {
    size_t n = strlen(prefixes[i]);
    if (strncmp(checksum, prefixes[i], n) == 0 && checksum[n] != '\0')
      return 1;
  }
  return 0;
}

const char *ksnap_ckpt_mode_name(ksnap_ckpt_mode_t mode) {
  static const char *const names[] = {"ALIGNED", "UNALIGNED", "AT_LEAST_ONCE"};
  return (unsigned)mode < KSNAP_ARRAY_SIZE(names) ? names[mode] : "UNKNOWN";
}

int ksnap__av_set_task(avro_value_t *rec, const char *name,
                       const ksnap_task_id_t *task) {
  avro_value_t f;
  int rc;

  KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_set_string(&f, "stage", task->stage));
  KSNAP__AV(ksnap__av_set_int(&f, "index", task->index));
fail:
  return rc;
}

int ksnap__av_get_task(const avro_value_t *rec, const char *name,
                       ksnap_task_id_t *task) {
  avro_value_t f;
  int rc;

  KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_get_string(&f, "stage", &task->stage));
  KSNAP__AV(ksnap__av_get_int(&f, "index", &task->index));
fail:
  return rc;
}

int ksnap__av_set_options(avro_value_t *rec, const char *name,
                          const ksnap_ckpt_options_t *options) {
  avro_value_t f;
  int rc;

  KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_set_enum(&f, "mode", (int)options->mode, 3));
  KSNAP__AV(ksnap__av_set_bool(&f, "is_savepoint", options->is_savepoint));
fail:
  return rc;
}

int ksnap__av_get_options(const avro_value_t *rec, const char *name,
                          ksnap_ckpt_options_t *options) {
  avro_value_t f;
  int mode = 0;
  int rc;

  KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_get_enum(&f, "mode", &mode));
  KSNAP__AV(ksnap__av_get_bool(&f, "is_savepoint", &options->is_savepoint));
  options->mode = (ksnap_ckpt_mode_t)mode;
fail:
  return rc;
}

static int set_handle(avro_value_t *v, const void *item) {
  const ksnap_state_handle_t *h = item;
  int rc;

  if (!ksnap__checksum_valid(h->checksum))
    return ksnap__codec_fail(EINVAL,
                             "state handle %s: checksum \"%s\" is not "
                             "crc32c:... or sha256:...",
                             h->path ? h->path : "(null)",
                             h->checksum ? h->checksum : "(null)");
  KSNAP__AV(ksnap__av_set_string(v, "path", h->path));
  KSNAP__AV(ksnap__av_set_long(v, "size", h->size));
  KSNAP__AV(ksnap__av_set_string(v, "checksum", h->checksum));
  KSNAP__AV(ksnap__av_set_int(v, "key_group_start", h->key_group_start));
  KSNAP__AV(ksnap__av_set_int(v, "key_group_end", h->key_group_end));
fail:
  return rc;
}

static int get_handle(const avro_value_t *v, void *item) {
  ksnap_state_handle_t *h = item;
  int rc;

  KSNAP__AV(ksnap__av_get_string(v, "path", &h->path));
  KSNAP__AV(ksnap__av_get_long(v, "size", &h->size));
  KSNAP__AV(ksnap__av_get_string(v, "checksum", &h->checksum));
  KSNAP__AV(ksnap__av_get_int(v, "key_group_start", &h->key_group_start));
  KSNAP__AV(ksnap__av_get_int(v, "key_group_end", &h->key_group_end));
  if (!ksnap__checksum_valid(h->checksum))
    return ksnap__codec_fail(EINVAL, "state handle %s: bad checksum \"%s\"",
                             h->path, h->checksum);
fail:
  return rc;
}

static int set_offset(avro_value_t *v, const void *item) {
  const ksnap_source_offset_t *o = item;
  int rc;

  KSNAP__AV(ksnap__av_set_string(v, "topic", o->topic));
  KSNAP__AV(ksnap__av_set_int(v, "partition", o->partition));
  KSNAP__AV(ksnap__av_set_long(v, "offset", o->offset));
fail:
  return rc;
}

static int get_offset(const avro_value_t *v, void *item) {
  ksnap_source_offset_t *o = item;
  int rc;

  KSNAP__AV(ksnap__av_get_string(v, "topic", &o->topic));
  KSNAP__AV(ksnap__av_get_int(v, "partition", &o->partition));
  KSNAP__AV(ksnap__av_get_long(v, "offset", &o->offset));
fail:
  return rc;
}

static int set_channel(avro_value_t *v, const void *item) {
  const ksnap_channel_pos_t *c = item;
  int rc;

  KSNAP__AV(ksnap__av_set_string(v, "topic", c->topic));
  KSNAP__AV(ksnap__av_set_int(v, "partition", c->partition));
  KSNAP__AV(ksnap__av_set_task(v, "writer", &c->writer));
  KSNAP__AV(ksnap__av_set_long(v, "off_c", c->off_c));
  KSNAP__AV(ksnap__av_set_bool(v, "passed", c->passed));
fail:
  return rc;
}

static int get_channel(const avro_value_t *v, void *item) {
  ksnap_channel_pos_t *c = item;
  int rc;

  KSNAP__AV(ksnap__av_get_string(v, "topic", &c->topic));
  KSNAP__AV(ksnap__av_get_int(v, "partition", &c->partition));
  KSNAP__AV(ksnap__av_get_task(v, "writer", &c->writer));
  KSNAP__AV(ksnap__av_get_long(v, "off_c", &c->off_c));
  KSNAP__AV(ksnap__av_get_bool(v, "passed", &c->passed));
fail:
  return rc;
}

int ksnap__av_set_array(avro_value_t *rec, const char *name,
                        const void *items, size_t cnt, size_t item_size,
                        ksnap__av_set_item_fn set) {
  avro_value_t arr, v;
  int rc;

  if (cnt && !items)
    return ksnap__codec_fail(EINVAL, "%s: %zu items but no array", name, cnt);
  KSNAP__AV(avro_value_get_by_name(rec, name, &arr, NULL));
  for (size_t i = 0; i < cnt; i++) {
    KSNAP__AV(avro_value_append(&arr, &v, NULL));
    KSNAP__AV(set(&v, (const char *)items + i * item_size));
  }
fail:
  return rc;
}

int ksnap__av_get_array(const avro_value_t *rec, const char *name,
                        void **itemsp, size_t *cntp, size_t item_size,
                        ksnap__av_get_item_fn get) {
  avro_value_t arr, v;
  size_t cnt = 0;
  int rc;

  KSNAP__AV(avro_value_get_by_name(rec, name, &arr, NULL));
  KSNAP__AV(avro_value_get_size(&arr, &cnt));
  if (!cnt)
    return 0;
  /* cnt is bounded by the validated buffer length. */
  *itemsp = calloc(cnt, item_size);
  if (!*itemsp)
    return ksnap__codec_fail(ENOMEM, "cannot allocate %zu array items", cnt);
  *cntp = cnt;
  for (size_t i = 0; i < cnt; i++) {
    KSNAP__AV(avro_value_get_by_index(&arr, i, &v, NULL));
    KSNAP__AV(get(&v, (char *)*itemsp + i * item_size));
  }
fail:
  return rc;
}

int ksnap__av_set_snapshot(avro_value_t *rec, const char *name,
                           const ksnap_task_snapshot_t *s) {
  const ksnap_timings_t *t = &s->timings;
  avro_value_t f, tv;
  int rc;

  if (!name)
    f = *rec;
  else
    KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_set_task(&f, "task", &s->task));
  KSNAP__AV(ksnap__av_set_array(&f, "state_handles", s->handles,
                                s->handle_cnt, sizeof(*s->handles),
                                set_handle));
  KSNAP__AV(ksnap__av_set_array(&f, "source_offsets", s->offsets,
                                s->offset_cnt, sizeof(*s->offsets),
                                set_offset));
  KSNAP__AV(ksnap__av_set_array(&f, "channel_positions", s->channels,
                                s->channel_cnt, sizeof(*s->channels),
                                set_channel));
  KSNAP__AV(avro_value_get_by_name(&f, "timings", &tv, NULL));
  KSNAP__AV(ksnap__av_set_long(&tv, "sync_us", t->sync_us));
  KSNAP__AV(ksnap__av_set_long(&tv, "async_us", t->async_us));
  KSNAP__AV(ksnap__av_set_long(&tv, "alignment_us", t->alignment_us));
  KSNAP__AV(ksnap__av_set_long(&tv, "start_delay_us", t->start_delay_us));
  KSNAP__AV(ksnap__av_set_long(&tv, "bytes_buffered", t->bytes_buffered));
fail:
  return rc;
}

int ksnap__av_get_snapshot(const avro_value_t *rec, const char *name,
                           ksnap_task_snapshot_t *s) {
  ksnap_timings_t *t = &s->timings;
  avro_value_t f, tv;
  int rc;

  if (!name)
    f = *rec;
  else
    KSNAP__AV(avro_value_get_by_name(rec, name, &f, NULL));
  KSNAP__AV(ksnap__av_get_task(&f, "task", &s->task));
  KSNAP__AV(ksnap__av_get_array(&f, "state_handles", (void **)&s->handles,
                                &s->handle_cnt, sizeof(*s->handles),
                                get_handle));
  KSNAP__AV(ksnap__av_get_array(&f, "source_offsets", (void **)&s->offsets,
                                &s->offset_cnt, sizeof(*s->offsets),
                                get_offset));
  KSNAP__AV(ksnap__av_get_array(&f, "channel_positions",
                                (void **)&s->channels, &s->channel_cnt,
                                sizeof(*s->channels), get_channel));
  KSNAP__AV(avro_value_get_by_name(&f, "timings", &tv, NULL));
  KSNAP__AV(ksnap__av_get_long(&tv, "sync_us", &t->sync_us));
  KSNAP__AV(ksnap__av_get_long(&tv, "async_us", &t->async_us));
  KSNAP__AV(ksnap__av_get_long(&tv, "alignment_us", &t->alignment_us));
  KSNAP__AV(ksnap__av_get_long(&tv, "start_delay_us", &t->start_delay_us));
  KSNAP__AV(ksnap__av_get_long(&tv, "bytes_buffered", &t->bytes_buffered));
fail:
  return rc;
}

void ksnap_task_id_cleanup(ksnap_task_id_t *task) {
  if (!task)
    return;
  free(task->stage);
  task->stage = NULL;
}

void ksnap_task_snapshot_cleanup(ksnap_task_snapshot_t *s) {
  if (!s)
    return;
  ksnap_task_id_cleanup(&s->task);
  for (size_t i = 0; i < s->handle_cnt; i++) {
    free(s->handles[i].path);
    free(s->handles[i].checksum);
  }
  for (size_t i = 0; i < s->offset_cnt; i++)
    free(s->offsets[i].topic);
  for (size_t i = 0; i < s->channel_cnt; i++) {
    free(s->channels[i].topic);
    ksnap_task_id_cleanup(&s->channels[i].writer);
  }
  free(s->handles);
  free(s->offsets);
  free(s->channels);
  memset(s, 0, sizeof(*s));
}
