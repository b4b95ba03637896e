/* The job's checkpoint storage from its properties (task_storage.h). */
#include "task_storage.h"

ksnap_err_t ksnap__task_storage_open(const ksnap_conf_t *conf,
                                     ksnap_storage_t **stp,
                                     ksnap_error_t *error) {
  ksnap_storage_opts_t opts;
  const char *url = NULL;
  int64_t v;
  int b;

  ksnap_storage_opts_init(&opts);
  if (ksnap_conf_get_str(conf, "state.checkpoints.dir", &url) || !url)
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "state.checkpoints.dir is not set");
  ksnap_conf_get_str(conf, "s3.endpoint", &opts.endpoint);
  ksnap_conf_get_str(conf, "s3.region", &opts.region);
  ksnap_conf_get_str(conf, "s3.access-key", &opts.access_key);
  ksnap_conf_get_str(conf, "s3.secret-key", &opts.secret_key);
  ksnap_conf_get_str(conf, "s3.session-token", &opts.session_token);
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
