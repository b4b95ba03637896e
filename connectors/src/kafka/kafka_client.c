/*
 * librdkafka handles from a ksnap_conf_t, log routing and error mapping
 * (see kafka_client.h), and librdkafka's version (kafka_version.h).
 * Owner: the thread that creates the handle; the log callback runs on
 * librdkafka's threads.
 */
#include "kafka_client.h"
#include "kafka_version.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "base/util.h"

#define MASK "********"
#define MAX_SECRETS 16

/* Per-handle context, the handle's librdkafka opaque. */
typedef struct client_ctx_s {
  void *opaque;
  size_t nsecrets;
  char *secrets[MAX_SECRETS]; /* kafka.* secret values, masked in logs */
} client_ctx_t;

typedef struct build_s {
  rd_kafka_conf_t *rkconf;
  client_ctx_t *ctx;
  ksnap_error_t *error;
} build_t;

static void ctx_free(client_ctx_t *ctx) {
  if (!ctx)
    return;
  for (size_t i = 0; i < ctx->nsecrets; i++)
    free(ctx->secrets[i]);
  free(ctx);
}

/* Copies @p in to @p out with every secret value replaced by MASK. */
static void mask_secrets(const client_ctx_t *ctx, const char *in, char *out,
                         size_t size) {
  size_t o = 0;

  while (*in && o + 1 < size) {
    size_t hit = 0;

    for (size_t i = 0; i < ctx->nsecrets && !hit; i++) {
      size_t n = strlen(ctx->secrets[i]);
      if (n && !strncmp(in, ctx->secrets[i], n))
        hit = n;
    }
    if (hit) {
      o += (size_t)snprintf(out + o, size - o, "%s", MASK);
      o = o < size ? o : size - 1;
      in += hit;
    } else {
      out[o++] = *in++;
    }
  }
  out[o] = '\0';
}

/* The latest failure to log in to or to trust a broker in this process:
 * librdkafka only logs it (and reports it to the error callback, served
 * by a poll the admin client never makes) and keeps retrying, so the
 * calls waiting on the broker would time out and be retried forever.
 * Every client of a process has the same kafka.* settings, hence one slot
 * for the process. Guarded by sec_lock. */
#define SEC_RECENT_US (60 * 1000000LL)
static pthread_mutex_t sec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  ksnap_err_t code; /* AUTH or TLS; OK: none */
  int64_t at_us;
  char msg[400];
} sec_failure;

/* Records @p line (already masked) if it is the broker's verdict on this
 * client's login or this client's verdict on the broker's certificate. A
 * connection lost during the handshake (e.g. a client destroyed while it
 * logs in) reads otherwise and is retried as any transport error. */
static void note_sec_failure(const char *line) {
  ksnap_err_t code;

  if (strstr(line, "SASL authentication error: Authentication failed") ||
      strstr(line, "due to invalid credentials"))
    code = KSNAP_ERR_AUTH;
  else if (strstr(line, "certificate verify failed"))
    code = KSNAP_ERR_TLS;
  else
    return;
  if (strstr(line, "]: ")) /* without "rdkafka#producer-1: FAIL: [thrd:..]" */
    line = strstr(line, "]: ") + 3;
  pthread_mutex_lock(&sec_lock);
  sec_failure.code = code;
  sec_failure.at_us = ksnap__now_us();
  snprintf(sec_failure.msg, sizeof(sec_failure.msg), "%.390s", line);
  pthread_mutex_unlock(&sec_lock);
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf) {
  const client_ctx_t *ctx = rd_kafka_opaque(rk);
  char raw[1024], line[1024];

  if (level > KSNAP_LOG_DEBUG)
    level = KSNAP_LOG_DEBUG;
  if (level < KSNAP_LOG_ERR)
    level = KSNAP_LOG_ERR;
  /* kafka.* properties go to producers and consumers alike: the warning
   * that one does not apply to this client type is expected noise. */
  if (!strcmp(fac, "CONFWARN") && strstr(buf, "will be ignored by this"))
    level = KSNAP_LOG_DEBUG;
  if (!ksnap_log_enabled(level, KSNAP_DBG_KAFKA) && strcmp(fac, "FAIL"))
    return;
  /* the whole line is masked: client.id may carry a secret too */
  snprintf(raw, sizeof(raw), "%s: %s: %s", rd_kafka_name(rk), fac, buf);
  if (ctx)
    mask_secrets(ctx, raw, line, sizeof(line));
  else
    snprintf(line, sizeof(line), "%s", raw);
  if (!strcmp(fac, "FAIL"))
    note_sec_failure(line);
  if (!ksnap_log_enabled(level, KSNAP_DBG_KAFKA))
    return;
  ksnap_log(level, "KAFKA", "%s", line);
}

/* A recent AUTH or TLS failure of this process, copied to @p msg. */
static ksnap_err_t recent_sec_failure(char *msg, size_t size) {
  ksnap_err_t code = KSNAP_ERR_OK;

  pthread_mutex_lock(&sec_lock);
  if (sec_failure.code && ksnap__now_us() - sec_failure.at_us < SEC_RECENT_US) {
    code = sec_failure.code;
    snprintf(msg, size, "%s", sec_failure.msg);
  }
  pthread_mutex_unlock(&sec_lock);
  return code;
}

static ksnap_err_t set_sec_failure(ksnap_error_t *error, ksnap_err_t kcode,
                                   const char *what, const char *msg) {
  ksnap_error_set(error, kcode, "%s: %s: %s", what,
                  kcode == KSNAP_ERR_AUTH
                      ? "Kafka authentication failed (kafka.sasl.* settings)"
                      : "TLS to the Kafka broker failed (kafka.ssl.* "
                        "settings: is its certificate's CA trusted?)",
                  msg);
  if (error)
    error->fatal = 1;
  return kcode;
}

ksnap_err_t ksnap__kafka_security_failure(ksnap_error_t *error,
                                          const char *what) {
  char msg[400];
  ksnap_err_t kcode = recent_sec_failure(msg, sizeof(msg));

  return kcode ? set_sec_failure(error, kcode, what, msg) : KSNAP_ERR_OK;
}

static int is_denied(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
         code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
         code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED ||
         code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
}

/* Errors no retry and no restore can fix: a missing ACL, a rejected login,
 * an untrusted broker certificate (the last two surface as timeouts or
 * transport errors of the calls while the error callback saw the cause).
 * @returns the code set, or OK if @p code is none of these. */
static ksnap_err_t classify_security(ksnap_error_t *error,
                                     rd_kafka_resp_err_t code,
                                     const char *name, const char *str,
                                     const char *what) {
  ksnap_err_t kcode;
  char msg[400];

  if (is_denied(code)) {
    ksnap_error_set(error, KSNAP_ERR_ACCESS_DENIED,
                    "%s: %s: %s (the job's Kafka user lacks an ACL: see "
                    "\"Security\" in README.md)", what, name, str);
    return KSNAP_ERR_ACCESS_DENIED;
  }
  if (code == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
      code == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
    ksnap_error_set(error, KSNAP_ERR_AUTH, "%s: Kafka authentication "
                    "failed: %s: %s", what, name, str);
    return KSNAP_ERR_AUTH;
  }
  if (code != RD_KAFKA_RESP_ERR__TIMED_OUT &&
      code != RD_KAFKA_RESP_ERR__TRANSPORT &&
      code != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN &&
      code != RD_KAFKA_RESP_ERR__SSL &&
      code != RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT)
    return KSNAP_ERR_OK;
  if (!(kcode = recent_sec_failure(msg, sizeof(msg))))
    return KSNAP_ERR_OK;
  return set_sec_failure(error, kcode, what, msg);
}

static int set_one(build_t *b, const char *name, const char *value,
                   int user) {
  char errstr[512];
  char key[256];

  if (rd_kafka_conf_set(b->rkconf, name, value, errstr, sizeof(errstr)) ==
      RD_KAFKA_CONF_OK)
    return 0;
  /* librdkafka's message may quote the value: never show a secret. */
  snprintf(key, sizeof(key), "kafka.%s", name);
  if (ksnap_conf_is_secret(key))
    snprintf(errstr, sizeof(errstr), "invalid value");
  ksnap_error_set(b->error, KSNAP_ERR_CONF_VALUE, "%s%s: %s",
                  user ? "kafka." : "", name, errstr);
  return -1;
}

static int set_user(void *opaque, const char *name, const char *value) {
  build_t *b = opaque;
  char key[256];

  snprintf(key, sizeof(key), "kafka.%s", name);
  if (ksnap_conf_is_secret(key) && b->ctx->nsecrets < MAX_SECRETS && *value)
    b->ctx->secrets[b->ctx->nsecrets++] = strdup(value);
  return set_one(b, name, value, 1);
}

static int set_list(build_t *b, const char *const *kv) {
  for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
    if (set_one(b, kv[i], kv[i + 1], 0))
      return -1;
  return 0;
}

rd_kafka_t *ksnap__kafka_new(const ksnap_conf_t *conf,
                             const ksnap__kafka_opts_t *opts,
                             ksnap_error_t *error) {
  build_t b = {rd_kafka_conf_new(), calloc(1, sizeof(client_ctx_t)), error};
  char errstr[512];
  rd_kafka_t *rk = NULL;

  if (!b.rkconf || !b.ctx) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto fail;
  }
  b.ctx->opaque = opts->opaque;
  if (set_list(&b, opts->defaults) ||
      (conf && ksnap_conf_foreach_kafka(conf, set_user, &b)) ||
      set_list(&b, opts->forced))
    goto fail;
  rd_kafka_conf_set_log_cb(b.rkconf, log_cb);
  rd_kafka_conf_set_opaque(b.rkconf, b.ctx);
  if (opts->dr_msg_cb)
    rd_kafka_conf_set_dr_msg_cb(b.rkconf, opts->dr_msg_cb);
  rk = rd_kafka_new(opts->type, b.rkconf, errstr, sizeof(errstr));
  if (!rk) {
    ksnap_error_set(error, KSNAP_ERR_KAFKA, "cannot create Kafka client: %s",
                    errstr);
    goto fail;
  }
  return rk; /* rk owns rkconf and, through ksnap__kafka_destroy, ctx */

fail:
  if (b.rkconf)
    rd_kafka_conf_destroy(b.rkconf);
  ctx_free(b.ctx);
  return NULL;
}

void ksnap__kafka_destroy(rd_kafka_t *rk) {
  client_ctx_t *ctx;

  if (!rk)
    return;
  ctx = rd_kafka_opaque(rk);
  rd_kafka_destroy(rk);
  ctx_free(ctx);
}

void *ksnap__kafka_opaque(rd_kafka_t *rk) {
  client_ctx_t *ctx = rd_kafka_opaque(rk);
  return ctx ? ctx->opaque : NULL;
}

static int is_fenced(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR__FENCED ||
         code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

/* The one classification; every Kafka error of the connectors ends here. */
static ksnap_err_t classify(ksnap_error_t *error, rd_kafka_resp_err_t code,
                            const char *name, const char *str, int fatal,
                            int abortable, int retriable, const char *what) {
  ksnap_err_t kcode = KSNAP_ERR_KAFKA;

  if ((kcode = classify_security(error, code, name, str, what))) {
    if (error)
      error->fatal = 1;
    return kcode;
  }
  kcode = KSNAP_ERR_KAFKA;
  if (fatal || is_fenced(code)) {
    kcode = is_fenced(code) ? KSNAP_ERR_FENCED : KSNAP_ERR_KAFKA;
    ksnap_error_set(error, kcode, "%s: %s%s: %s", what,
                    fatal ? "fatal error: " : "", name, str);
    if (error)
      error->fatal = 1;
    return kcode;
  }
  if (abortable)
    return ksnap_error_set(error, KSNAP_ERR_TXN_ABORTABLE,
                           "%s: transaction must be aborted: %s: %s", what,
                           name, str);
  if (code == RD_KAFKA_RESP_ERR__TIMED_OUT ||
      code == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT)
    return ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT, "%s: %s: %s",
                                     what, name, str);
  if (code == RD_KAFKA_RESP_ERR__TRANSPORT ||
      code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
      code == RD_KAFKA_RESP_ERR__RESOLVE)
    return ksnap_error_set_retriable(error, KSNAP_ERR_CONNECT,
                                     "%s: broker unreachable: %s: %s", what,
                                     name, str);
  if (code == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      code == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
      code == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
    kcode = KSNAP_ERR_NOT_FOUND;
  if (retriable)
    return ksnap_error_set_retriable(error, kcode, "%s: %s: %s", what, name,
                                     str);
  return ksnap_error_set(error, kcode, "%s: %s: %s", what, name, str);
}

ksnap_err_t ksnap__kafka_error(ksnap_error_t *error, rd_kafka_error_t *kerr,
                               const char *what) {
  ksnap_err_t code;

  if (!kerr)
    return KSNAP_ERR_OK;
  code = classify(error, rd_kafka_error_code(kerr), rd_kafka_error_name(kerr),
                  rd_kafka_error_string(kerr), rd_kafka_error_is_fatal(kerr),
                  rd_kafka_error_txn_requires_abort(kerr),
                  rd_kafka_error_is_retriable(kerr), what);
  rd_kafka_error_destroy(kerr);
  return code;
}

static int resp_retriable(rd_kafka_resp_err_t err) {
  switch (err) {
  case RD_KAFKA_RESP_ERR__TRANSPORT:
  case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
  case RD_KAFKA_RESP_ERR__QUEUE_FULL:
  case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
  case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
  case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
  case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    return 1;
  default:
    return 0;
  }
}

ksnap_err_t ksnap__kafka_resp_error(ksnap_error_t *error, rd_kafka_t *rk,
                                    rd_kafka_resp_err_t err,
                                    const char *what) {
  char str[512];

  if (!err)
    return KSNAP_ERR_OK;
  if (err == RD_KAFKA_RESP_ERR__FATAL && rk) {
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, str, sizeof(str));
    return classify(error, orig, rd_kafka_err2name(orig), str, 1, 0, 0, what);
  }
  return classify(error, err, rd_kafka_err2name(err), rd_kafka_err2str(err),
                  0, 0, resp_retriable(err), what);
}

int ksnap__kafka_partition_count(rd_kafka_t *rk, const char *topic,
                                 int timeout_ms, ksnap_error_t *error) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t err;
  int cnt = -1;

  if (!rkt) {
    ksnap__kafka_resp_error(error, rk, rd_kafka_last_error(), topic);
    return -1;
  }
  err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
  if (err) {
    ksnap__kafka_resp_error(error, rk, err, "metadata");
    ksnap_error_prefix(error, "topic %s", topic);
  } else if (md->topic_cnt != 1 || md->topics[0].err) {
    rd_kafka_resp_err_t terr =
        md->topic_cnt == 1 ? md->topics[0].err
                           : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    ksnap__kafka_resp_error(error, rk, terr, "metadata");
    ksnap_error_prefix(error, "topic %s", topic);
  } else {
    cnt = md->topics[0].partition_cnt;
  }
  if (md)
    rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  return cnt;
}

void ksnap__kafka_task_id(char *buf, size_t size, const char *stage,
                          int task) {
  snprintf(buf, size, "%s[%d]", stage, task);
}

const char *ksnap__kafka_lib_version(void) {
  return rd_kafka_version_str();
}
