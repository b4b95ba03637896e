/*
 * The rules on the configuration of a job that runs, beyond
 * ksnap_conf_finalize()'s (which hold for any configuration, also one a
 * tool such as `ksnap inspect` loads): what the coordinator, the workers
 * and their tasks need at start. Run by the job's preflight
 * (ksnap_job_preflight()); the transaction timeout rule also by each sink
 * at start, so that a program that skips the preflight is still refused,
 * in the same words.
 */
#ifndef KSNAP_CONF_JOB_H
#define KSNAP_CONF_JOB_H

#include <stddef.h>

#include "ksnap/conf.h"

/*
 * The sink's rule: kafka.transaction.timeout.ms (librdkafka's default
 * 60000 when unset) must exceed the longest life of a sink transaction,
 * execution.checkpointing.interval * sink.producer-pool-size +
 * execution.checkpointing.timeout (K epochs may be pending, the last one
 * waits at most for the checkpoint timeout). @returns 0 if it holds,
 * else -1 with the message (naming every key and value involved, no
 * "FILE:LINE: ") in @p errstr.
 */
int ksnap__conf_check_txn_timeout(const ksnap_conf_t *conf, char *errstr,
                                  size_t errstr_size);

/*
 * Runs every rule of this file, in this order: kafka.bootstrap.servers
 * and state.checkpoints.dir set, credentials for an s3:// directory
 * (s3.access-key and s3.secret-key, or AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY in the environment, as the storage reads them),
 * the transaction timeout rule, rest.address an IPv4 address when
 * rest.port is set. Each problem goes to @p error_cb as one line, "FILE:LINE: ..."
 * naming the setting that makes it wrong, or "FILE: missing required
 * property ..." for an unset key. @returns KSNAP_ERR_OK,
 * KSNAP_ERR_CONF_MISSING or KSNAP_ERR_CONF_VALUE (the first problem's).
 */
ksnap_err_t ksnap__conf_check_job(const ksnap_conf_t *conf,
                                  ksnap_conf_error_cb_t *error_cb,
                                  void *opaque);

#endif /* KSNAP_CONF_JOB_H */
