/*
 * The coordinator's storage worker (see coord_store.h): one thread, one
 * FIFO of operations, one FIFO of results.
 */
#include "coord_store.h"
#include "coord_savepoint.h"
#include "base/fault.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/buf.h"
#include "ksnap/log.h"

typedef struct op_s {
  struct op_s *next;
  ksnap__store_op_t op;
  int64_t id;
  uint8_t *data;
  size_t len;
  ksnap__coord_savepoint_t *sp; /* PUT_META of a savepoint: copied first */
  char *errmsg; /* result */
} op_t;

typedef struct queue_s {
  op_t *head, *tail;
} queue_t;

struct ksnap__coord_store_s {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  queue_t todo, done;
  int busy, stop;
  ksnap_storage_t *st;
  ksnap_storage_t *sp_st; /* savepoints (coord_savepoint.h) */
  char *job;
};

static void push(queue_t *q, op_t *op) {
  op->next = NULL;
  if (q->tail)
    q->tail->next = op;
  else
    q->head = op;
  q->tail = op;
}

static op_t *pop(queue_t *q) {
  op_t *op = q->head;
  if (op && !(q->head = op->next))
    q->tail = NULL;
  return op;
}

static ksnap_err_t conf_int(const ksnap_conf_t *conf, const char *key,
                            int64_t *v) {
  return ksnap_conf_get_int(conf, key, v);
}

ksnap_err_t ksnap__coord_storage_open(const ksnap_conf_t *conf,
                                      ksnap_storage_t **stp,
                                      ksnap_error_t *error) {
  const char *dir = NULL;

  *stp = NULL;
  if (ksnap_conf_get_str(conf, "state.checkpoints.dir", &dir) || !dir)
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "state.checkpoints.dir is not set (the "
                           "coordinator writes checkpoint metadata there)");
  return ksnap__coord_storage_open_dir(conf, dir, stp, error);
}

ksnap_err_t ksnap__coord_storage_probe(const ksnap_conf_t *conf,
                                       const char *job, ksnap_error_t *error) {
  ksnap_storage_t *st = NULL;
  char key[512];
  ksnap_err_t err;

  if ((err = ksnap__coord_storage_open(conf, &st, error)))
    return err;
  snprintf(key, sizeof(key), "%s/chk-", job);
  err = ksnap_storage_probe(st, key, error);
  ksnap_storage_destroy(st);
  return err;
}

ksnap_err_t ksnap__coord_storage_open_dir(const ksnap_conf_t *conf,
                                          const char *dir,
                                          ksnap_storage_t **stp,
                                          ksnap_error_t *error) {
  ksnap_storage_opts_t o;
  int64_t v;
  int b;

  *stp = NULL;
  ksnap_storage_opts_init(&o);
  ksnap_conf_get_str(conf, "s3.endpoint", &o.endpoint);
  ksnap_conf_get_str(conf, "s3.region", &o.region);
  ksnap_conf_get_str(conf, "s3.access-key", &o.access_key);
  ksnap_conf_get_str(conf, "s3.secret-key", &o.secret_key);
  ksnap_conf_get_str(conf, "s3.session-token", &o.session_token);
  ksnap_conf_get_str(conf, "s3.ca-file", &o.ca_file);
  if (!ksnap_conf_get_bool(conf, "s3.tls.skip-verify", &b))
    o.tls_skip_verify = b;
  if (!ksnap_conf_get_bool(conf, "s3.path-style", &b))
    o.path_style = b;
  if (!ksnap_conf_get_size(conf, "s3.part-size", &v))
    o.part_size = (size_t)v;
  if (!conf_int(conf, "s3.max-retries", &v))
    o.max_retries = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.connect-timeout", &v))
    o.connect_timeout_ms = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.request-timeout", &v))
    o.request_timeout_ms = (int)v;
  if (!ksnap_conf_get_duration_ms(conf, "s3.retry-deadline", &v))
    o.retry_deadline_ms = (int)v;
  if (!conf_int(conf, "s3.max-parallel", &v))
    o.max_parallel = (int)v;
  ksnap_storage_opts_from_env(&o);
  return ksnap_storage_open(dir, &o, stp, error);
}

void ksnap__coord_meta_key(char *buf, size_t size, const char *job,
                           int64_t id) {
  snprintf(buf, size, "%s/chk-%" PRId64 "/_metadata", job, id);
}

char *ksnap__coord_meta_url(const ksnap_conf_t *conf, const char *job,
                            int64_t id) {
  const char *dir = NULL;
  char key[400];
  ksnap_buf_t b;

  if (ksnap_conf_get_str(conf, "state.checkpoints.dir", &dir) || !dir)
    return NULL;
  ksnap__coord_meta_key(key, sizeof(key), job, id);
  ksnap_buf_init(&b);
  if (ksnap_buf_appendf(&b, "%s%s%s", dir,
                        dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
                        key)) {
    ksnap_buf_cleanup(&b);
    return NULL;
  }
  return (char *)ksnap_buf_detach(&b, NULL);
}

ksnap_err_t ksnap__coord_meta_load(ksnap_storage_t *st, const char *job,
                                   int64_t id, ksnap_checkpoint_meta_t *meta,
                                   ksnap_error_t *error) {
  char key[400];
  ksnap_buf_t b;
  ksnap_err_t err;

  memset(meta, 0, sizeof(*meta));
  ksnap__coord_meta_key(key, sizeof(key), job, id);
  ksnap_buf_init(&b);
  err = ksnap_storage_get(st, key, &b, error);
  if (!err)
    err = ksnap_codec_meta_decode(b.data, b.len, meta, error);
  if (err)
    ksnap_error_prefix(error, "checkpoint %" PRId64 " metadata", id);
  ksnap_buf_cleanup(&b);
  return err;
}

/* One state handle: present, with the size and CRC its ACK recorded. */
static ksnap_err_t verify_handle(ksnap_storage_t *st,
                                 const ksnap_state_handle_t *h,
                                 ksnap_error_t *error) {
  ksnap_storage_stat_t stat;
  unsigned long crc;
  char *end;
  ksnap_err_t err;

  if ((err = ksnap_storage_head(st, h->path, &stat, error)))
    return err;
  if (h->size >= 0 && (uint64_t)h->size != stat.size)
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "%s: %" PRIu64 " bytes, the checkpoint recorded %"
                           PRId64, h->path, stat.size, h->size);
  if (h->checksum && !strncmp(h->checksum, "crc32c:", 7)) {
    crc = strtoul(h->checksum + 7, &end, 16);
    if (!*end && crc != stat.crc32c)
      return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                             "%s: crc32c %08x, the checkpoint recorded %s",
                             h->path, stat.crc32c, h->checksum);
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_meta_verify(ksnap_storage_t *st,
                                     const ksnap_checkpoint_meta_t *meta,
                                     ksnap_error_t *error) {
  ksnap_err_t err;

  for (size_t t = 0; t < meta->task_cnt; t++) {
    const ksnap_task_snapshot_t *ts = &meta->tasks[t];
    for (size_t i = 0; i < ts->handle_cnt; i++) {
      if ((err = verify_handle(st, &ts->handles[i], error))) {
        ksnap_error_prefix(error, "checkpoint %" PRId64 " task %s[%d]",
                           meta->checkpoint_id, ts->task.stage,
                           (int)ts->task.index);
        return err;
      }
    }
  }
  return KSNAP_ERR_OK;
}

typedef struct del_ctx_s {
  char **keys;
  size_t n, cap;
} del_ctx_t;

static int collect(void *opaque, const char *key, uint64_t size) {
  del_ctx_t *d = opaque;
  char **k;

  (void)size;
  if (d->n == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 16;
    if (!(k = realloc(d->keys, d->cap * sizeof(*k))))
      return 1;
    d->keys = k;
  }
  d->keys[d->n] = strdup(key);
  return !d->keys[d->n++];
}

static ksnap_err_t retire(ksnap__coord_store_t *s, int64_t id,
                          ksnap_error_t *error) {
  del_ctx_t d = {NULL, 0, 0};
  char prefix[400];
  ksnap_err_t err;

  snprintf(prefix, sizeof(prefix), "%s/chk-%" PRId64 "/", s->job, id);
  err = ksnap_storage_list(s->st, prefix, collect, &d, error);
  /* _metadata last: a half-retired checkpoint is never restorable */
  for (size_t i = d.n; !err && i > 0; i--) {
    err = ksnap_storage_delete(s->st, d.keys[i - 1], error);
    if (err == KSNAP_ERR_NOT_FOUND)
      err = KSNAP_ERR_OK; /* idempotent */
  }
  for (size_t i = 0; i < d.n; i++)
    free(d.keys[i]);
  free(d.keys);
  return err == KSNAP_ERR_NOT_FOUND ? KSNAP_ERR_OK : err;
}

typedef struct copy_s {
  ksnap_storage_writer_t *w;
  ksnap_error_t *error;
  ksnap_err_t err;
} copy_t;

static int copy_chunk(void *opaque, const uint8_t *data, size_t len) {
  copy_t *c = opaque;

  c->err = ksnap_storage_writer_write(c->w, data, len, c->error);
  return c->err != KSNAP_ERR_OK;
}

/* Streams @p src of @p from into @p dst of @p to (one part in memory at
 * a time); committed only once the source's checksum verified. */
static ksnap_err_t copy_object(ksnap_storage_t *from, const char *src,
                               ksnap_storage_t *to, const char *dst,
                               ksnap_error_t *error) {
  copy_t c = {NULL, error, KSNAP_ERR_OK};
  ksnap_err_t err;

  if ((err = ksnap_storage_writer_open(to, dst, &c.w, error)))
    return err;
  err = ksnap_storage_get_stream(from, src, copy_chunk, &c, error);
  if (c.err)
    err = c.err; /* the writer's error, not "interrupted" */
  if (err) {
    ksnap_storage_writer_abort(c.w);
    return err;
  }
  return ksnap_storage_writer_commit(c.w, error);
}

/* Copies a savepoint's task files into its directory, then writes its
 * relocated `_metadata` there, last (as a checkpoint's). */
static ksnap_err_t copy_savepoint(ksnap__coord_store_t *s,
                                  const ksnap__coord_savepoint_t *sp,
                                  ksnap_error_t *error) {
  ksnap_storage_t *dst = s->sp_st;
  char key[600];
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t i = 0; !err && i < sp->n; i++) {
    err = copy_object(s->st, sp->src[i], dst, sp->dst[i], error);
    if (!err && i == 0)
      ksnap__fault("coord.savepoint-copy"); /* one file copied of n */
  }
  snprintf(key, sizeof(key), "%s/_metadata", sp->prefix);
  if (!err)
    err = ksnap_storage_put(dst, key, sp->meta, sp->meta_len, error);
  if (err)
    ksnap_error_prefix(error, "savepoint %s", sp->url);
  return err;
}

static void run_op(ksnap__coord_store_t *s, op_t *op) {
  ksnap_error_t error;
  char key[400];
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_error_clear(&error);
  if (op->op == KSNAP__STORE_PUT_META) {
    if (op->sp)
      err = copy_savepoint(s, op->sp, &error);
    ksnap__coord_meta_key(key, sizeof(key), s->job, op->id);
    if (!err)
      err = ksnap_storage_put(s->st, key, op->data, op->len, &error);
  } else {
    err = retire(s, op->id, &error);
  }
  if (err)
    op->errmsg = strdup(error.msg[0] ? error.msg : ksnap_err2str(err));
  free(op->data);
  op->data = NULL;
  ksnap__coord_savepoint_free(op->sp);
  op->sp = NULL;
}

static void *worker(void *arg) {
  ksnap__coord_store_t *s = arg;
  op_t *op;

  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->todo.head && !s->stop)
      pthread_cond_wait(&s->cond, &s->lock);
    if (!(op = pop(&s->todo)))
      break; /* stop, queue drained */
    pthread_mutex_unlock(&s->lock);
    run_op(s, op);
    pthread_mutex_lock(&s->lock);
    push(&s->done, op);
    s->busy--;
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

ksnap__coord_store_t *ksnap__coord_store_new(const ksnap_conf_t *conf,
                                             const char *job,
                                             ksnap_error_t *error) {
  ksnap__coord_store_t *s = calloc(1, sizeof(*s));

  if (!s || !(s->job = strdup(job))) {
    free(s);
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (ksnap__coord_storage_open(conf, &s->st, error) ||
      ksnap__coord_savepoint_storage_open(conf, &s->sp_st, error))
    goto fail;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->thread, NULL, worker, s)) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot start storage thread");
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    goto fail;
  }
  return s;
fail:
  ksnap_storage_destroy(s->st);
  ksnap_storage_destroy(s->sp_st);
  free(s->job);
  free(s);
  return NULL;
}

void ksnap__coord_store_destroy(ksnap__coord_store_t *s) {
  op_t *op;

  if (!s)
    return;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  while ((op = pop(&s->done))) {
    free(op->errmsg);
    free(op);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  ksnap_storage_destroy(s->st);
  ksnap_storage_destroy(s->sp_st);
  free(s->job);
  free(s);
}

static ksnap_err_t enqueue(ksnap__coord_store_t *s, ksnap__store_op_t kind,
                           int64_t id, uint8_t *data, size_t len,
                           ksnap__coord_savepoint_t *sp) {
  op_t *op = calloc(1, sizeof(*op));

  if (!op)
    return KSNAP_ERR_NOMEM;
  op->op = kind;
  op->id = id;
  op->data = data;
  op->len = len;
  op->sp = sp;
  pthread_mutex_lock(&s->lock);
  push(&s->todo, op);
  s->busy++;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_store_put_meta(ksnap__coord_store_t *s, int64_t id,
                                        uint8_t *data, size_t len,
                                        ksnap__coord_savepoint_t *sp) {
  return enqueue(s, KSNAP__STORE_PUT_META, id, data, len, sp);
}

ksnap_err_t ksnap__coord_store_retire(ksnap__coord_store_t *s, int64_t id) {
  return enqueue(s, KSNAP__STORE_RETIRE, id, NULL, 0, NULL);
}

int ksnap__coord_store_result(ksnap__coord_store_t *s, ksnap__store_op_t *kind,
                              int64_t *id, char **errmsg) {
  op_t *op;

  pthread_mutex_lock(&s->lock);
  op = pop(&s->done);
  pthread_mutex_unlock(&s->lock);
  if (!op)
    return 0;
  *kind = op->op;
  *id = op->id;
  *errmsg = op->errmsg;
  free(op);
  return 1;
}

int ksnap__coord_store_busy(ksnap__coord_store_t *s) {
  int n;

  pthread_mutex_lock(&s->lock);
  n = s->busy;
  pthread_mutex_unlock(&s->lock);
  return n;
}
