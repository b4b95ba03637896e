/* The job's checkpoint storage from its properties, and the streamed
 * upload of a snapshot (task_storage.h). */
#include "task_storage.h"

#include <stdio.h>

ksnap_err_t ksnap__task_storage_open(const ksnap_conf_t *conf,
                                     ksnap_storage_t **stp,
                                     ksnap_error_t *error) {
  const char *url = NULL;

  if (ksnap_conf_get_str(conf, "state.checkpoints.dir", &url) || !url)
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "state.checkpoints.dir is not set");
  return ksnap__task_storage_open_url(conf, url, stp, error);
}

ksnap_err_t ksnap__task_storage_open_url(const ksnap_conf_t *conf,
                                         const char *url,
                                         ksnap_storage_t **stp,
                                         ksnap_error_t *error) {
  ksnap_storage_opts_t opts;
  int64_t v;
  int b;

  ksnap_storage_opts_init(&opts);
  ksnap_conf_get_str(conf, "s3.endpoint", &opts.endpoint);
  ksnap_conf_get_str(conf, "s3.region", &opts.region);
  ksnap_conf_get_str(conf, "s3.access-key", &opts.access_key);
  ksnap_conf_get_str(conf, "s3.secret-key", &opts.secret_key);
  ksnap_conf_get_str(conf, "s3.session-token", &opts.session_token);
  ksnap_conf_get_str(conf, "s3.ca-file", &opts.ca_file);
  if (!ksnap_conf_get_bool(conf, "s3.tls.skip-verify", &b))
    opts.tls_skip_verify = b;
  if (!ksnap_conf_get_bool(conf, "s3.path-style", &b))
    opts.path_style = b;
  if (!ksnap_conf_get_size(conf, "s3.part-size", &v))
    opts.part_size = (size_t)v;
  if (!ksnap_conf_get_int(conf, "s3.max-retries", &v))
    opts.max_retries = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.connect-timeout", &v))
    opts.connect_timeout_ms = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.request-timeout", &v))
    opts.request_timeout_ms = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.retry-deadline", &v))
    opts.retry_deadline_ms = (int)v;
  if (!ksnap_conf_get_int(conf, "s3.max-parallel", &v))
    opts.max_parallel = (int)v;
  ksnap_storage_opts_from_env(&opts);
  return ksnap_storage_open(url, &opts, stp, error);
}

ksnap_err_t ksnap__task_storage_probe(const ksnap_conf_t *conf,
                                      const char *job, ksnap_error_t *error) {
  ksnap_storage_t *st = NULL;
  char key[512];
  ksnap_err_t err;

  if ((err = ksnap__task_storage_open(conf, &st, error)))
    return err;
  snprintf(key, sizeof(key), "%s/chk-", job);
  err = ksnap_storage_probe(st, key, error);
  ksnap_storage_destroy(st);
  /* the directory, bucket included, is the job's (the coordinator's probe
   * refuses a missing one); credentials and trust may be each host's */
  if (err == KSNAP_ERR_NO_SUCH_BUCKET) {
    ksnap_error_clear(error);
    err = KSNAP_ERR_OK;
  }
  return err;
}

/* ksnap_state_out_t -> a storage writer opened at begin (the header's
 * length is known then). */
typedef struct upload_s {
  ksnap_storage_t *st;
  const char *key;
  size_t buffer_size;
  ksnap_storage_writer_t *w;
} upload_t;

static ksnap_err_t up_begin(void *opaque, size_t head_len,
                            ksnap_error_t *error) {
  upload_t *u = opaque;
  ksnap_storage_writer_opts_t opts = {head_len, u->buffer_size};

  return ksnap_storage_writer_open_opts(u->st, u->key, &opts, &u->w, error);
}

static ksnap_err_t up_write(void *opaque, const void *data, size_t len,
                            ksnap_error_t *error) {
  return ksnap_storage_writer_write(((upload_t *)opaque)->w, data, len,
                                    error);
}

static ksnap_err_t up_head(void *opaque, const void *data, size_t len,
                           ksnap_error_t *error) {
  return ksnap_storage_writer_set_head(((upload_t *)opaque)->w, data, len,
                                       error);
}

ksnap_err_t ksnap__task_storage_put_snapshot(ksnap_storage_t *st,
                                             const char *key,
                                             ksnap_state_snapshot_t *snap,
                                             size_t buffer_size,
                                             ksnap_storage_stat_t *stat,
                                             ksnap_error_t *error) {
  upload_t u = {st, key, buffer_size, NULL};
  ksnap_state_out_t out = {up_begin, up_write, up_head, &u};
  ksnap_err_t err = ksnap_state_snapshot_stream(snap, &out, error);

  if (err) {
    ksnap_storage_writer_abort(u.w);
    return err;
  }
  ksnap_storage_writer_stat(u.w, stat);
  return ksnap_storage_writer_commit(u.w, error);
}
