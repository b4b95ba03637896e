/*
 * A task's live input loop on its processing thread (task_input.h; owns
 * task->in with task_input.c): records of a source task go straight to
 * the operator; exchange records are decoded (ksnap.w, ksnap.g, ksnap.ctl
 * headers, barrier payloads) and pushed through the aligner (acceptance
 * rule + alignment), whose actions are executed in order (aligner.h's
 * wiring sketch): PROCESS -> operator, PAUSE/RESUME -> the consumer,
 * SNAPSHOT -> the sync phase (task_snap.c), ABORT -> DECLINE and a
 * cancellation marker downstream, FORWARD_CANCEL -> the marker (once),
 * DROP -> freed (a savepoint's wait reads it again), SEEK -> the consumer
 * reads that partition again from the offset. A
 * source task's barrier is the TRIGGER record (ksnap__task_trigger()); a
 * source task that cannot take its snapshot declines and sends the
 * marker too.
 */
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "ksnap/log.h"
#include "task_input.h"
#include "task_int.h"
#include "base/util.h"

#define SEEK_TIMEOUT_MS 10000

/* A consumed exchange record, copied (the aligner may buffer it). */
typedef struct in_rec_s {
  ksnap_record_t r;
  char topic[256];
  /* the headers (r.headers points here), then key, value and the
   * headers' names and values */
  ksnap_header_t data[];
} in_rec_t;

/* The bytes of a copy of @p m after in_rec_t's fixed part. */
static size_t copy_size(const ksnap_exchange_msg_t *m) {
  size_t n = m->header_cnt * sizeof(ksnap_header_t) + m->key_len +
             m->value_len + 1;

  for (size_t i = 0; i < m->header_cnt; i++)
    n += strlen(m->headers[i].name) + 1 + m->headers[i].len;
  return n;
}

/* Copies @p m's key, value and headers into @p rec (of copy_size()). */
static void copy_msg(in_rec_t *rec, const ksnap_exchange_msg_t *m) {
  ksnap_header_t *h = rec->data;
  uint8_t *p = (uint8_t *)(h + m->header_cnt), *key = p, *value;

  if (m->key_len)
    memcpy(p, m->key, m->key_len);
  p += m->key_len;
  value = p;
  if (m->value_len)
    memcpy(p, m->value, m->value_len);
  p += m->value_len;
  for (size_t i = 0; i < m->header_cnt; i++) {
    size_t nl = strlen(m->headers[i].name) + 1;
    memcpy(p, m->headers[i].name, nl);
    h[i].name = (const char *)p;
    p += nl;
    h[i].value = m->headers[i].value ? p : NULL;
    h[i].value_len = m->headers[i].len;
    if (m->headers[i].len)
      memcpy(p, m->headers[i].value, m->headers[i].len);
    p += m->headers[i].len;
  }
  rec->r = (ksnap_record_t){m->key ? key : NULL,
                            m->key_len,
                            m->value ? value : NULL,
                            m->value_len,
                            m->header_cnt ? h : NULL,
                            m->header_cnt,
                            m->timestamp_ms,
                            rec->topic,
                            m->partition,
                            m->offset,
                            NULL,
                            0};
}

typedef struct poll_ctx_s {
  ksnap_task_t *task;
  ksnap_error_t *error;
  ksnap_err_t err;
} poll_ctx_t;

/* A processed record's position (task->in.processed). */
static void processed(ksnap_task_t *task, int32_t chan, int64_t offset) {
  if (chan >= 0 && chan < task->in.nprocessed &&
      offset + 1 > task->in.processed[chan])
    task->in.processed[chan] = offset + 1;
}

/* The input index of a source record's partition, -1: none. */
static int32_t source_chan(const ksnap_task_t *task,
                           const ksnap_source_msg_t *m) {
  for (int32_t i = 0; task->in.src_parts && i < task->in.nprocessed; i++)
    if (task->in.src_parts[i].partition == m->partition &&
        !strcmp(task->in.src_parts[i].topic, m->topic))
      return i;
  return -1;
}

const int64_t *ksnap__task_in_processed(const ksnap_task_t *task,
                                        int32_t *np) {
  *np = task->in.nprocessed;
  return task->in.processed;
}

static int on_source(void *opaque, const ksnap_source_msg_t *m) {
  poll_ctx_t *pc = opaque;
  ksnap_header_t stack[16], *heap;
  const ksnap_header_t *h;
  int32_t chan;

  if (ksnap__task_bounded_skip(pc->task, m->topic, m->partition, m->offset))
    return 0; /* past the end of the input (source.stop-at) */
  h = ksnap__task_in_headers(m->headers, m->header_cnt, stack, 16, &heap);
  ksnap_record_t r = {m->key,  m->key_len,      m->value,
                      m->value_len, h, m->header_cnt, m->timestamp_ms,
                      m->topic, m->partition,   m->offset,
                      NULL, 0};
  chan = source_chan(pc->task, m);
  if (m->header_cnt && !h)
    pc->err = ksnap_error_set(pc->error, KSNAP_ERR_NOMEM, "out of memory");
  else
    pc->err = ksnap__task_process(pc->task, chan, &r, pc->error);
  free(heap);
  if (!pc->err)
    processed(pc->task, chan, m->offset);
  return pc->err != KSNAP_ERR_OK;
}

static ksnap_err_t run_action(ksnap_task_t *task, ksnap_action_t *act,
                              ksnap_error_t *error) {
  const ksnap_gate_part_t *p;
  ksnap_err_t err = KSNAP_ERR_OK;

  switch (act->kind) {
  case KSNAP_ACT_PROCESS:
    err = ksnap__task_process(task, act->in.chan,
                              &((in_rec_t *)act->in.rec)->r, error);
    if (!err)
      processed(task, act->in.chan, act->in.offset);
    free(act->in.rec);
    break;
  case KSNAP_ACT_SKIP:
  case KSNAP_ACT_CONSUMED:
  case KSNAP_ACT_DROP:
    free(act->in.rec);
    break;
  case KSNAP_ACT_SEEK:
    p = ksnap_gate_part_c(task->in.gate, act->part);
    err = ksnap_kafka_consumer_seek(
        ksnap_exchange_reader_consumer(task->in.reader), p->topic,
        p->partition, act->seek_off, SEEK_TIMEOUT_MS, error);
    break;
  case KSNAP_ACT_BUFFER:
    break;
  case KSNAP_ACT_PAUSE:
  case KSNAP_ACT_RESUME:
    p = ksnap_gate_part_c(task->in.gate, act->part);
    err = ksnap_kafka_consumer_pause(
        ksnap_exchange_reader_consumer(task->in.reader), p->topic,
        p->partition, act->kind == KSNAP_ACT_PAUSE, error);
    break;
  case KSNAP_ACT_SNAPSHOT: {
    /* every input ended: the snapshot may be the TRIGGER's (T12) */
    int64_t ts = task->in.barrier_ts;
    ksnap_ckpt_options_t opts = task->in.barrier_opts;
    if (ksnap_aligner_ended(task->in.al))
      ksnap__task_bounded_trigger_of(task, act->id, &ts, &opts);
    err = ksnap__task_snapshot(task, act->id, ts, &opts, act, error);
    break;
  }
  case KSNAP_ACT_ABORT: /* declined before its barrier went out: the
                          * readers downstream stop aligning it at once */
    ksnap__task_decline(task, act->id, act->reason, false);
    err = ksnap__task_exchange_cancel(task, act->id, error);
    break;
  case KSNAP_ACT_FORWARD_CANCEL: /* once, if ABORT did not send it */
    err = ksnap__task_exchange_cancel(task, act->id, error);
    break;
  }
  return err;
}

static ksnap_err_t drain(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_action_t act;
  ksnap_err_t err = KSNAP_ERR_OK, e;

  while (ksnap_aligner_pop(task->in.al, &act))
    if ((e = run_action(task, &act, error)) && !err)
      err = e;
  return err;
}

/* The kind of @p m into @p in; a barrier of this generation newer than
 * every checkpoint started here gives the aligning checkpoint's trigger
 * timestamp and options. -1: undecodable, skipped. */
static int decode_kind(ksnap_task_t *task, const ksnap_exchange_msg_t *m,
                       ksnap_in_t *in) {
  ksnap_ckpt_options_t opts = {0};
  ksnap_error_t error;

  if (ksnap__task_record_kind(m, in, &opts, &error)) {
    KSNAP_WARN("task", "%s: undecodable %s record at %s[%d]@%lld: %s",
               task->id, m->ctl, m->topic, (int)m->partition,
               (long long)m->offset, error.msg);
    return -1;
  }
  if (in->kind == KSNAP_REC_BARRIER &&
      m->generation == atomic_load(&task->gen) &&
      in->id > task->in.last_trigger) {
    task->in.last_trigger = in->id;
    task->in.barrier_ts = in->trigger_ts_ms;
    task->in.barrier_opts = opts;
  }
  return 0;
}

static int on_exchange(void *opaque, const ksnap_exchange_msg_t *m) {
  poll_ctx_t *pc = opaque;
  ksnap_task_t *task = pc->task;
  ksnap_in_t in;
  in_rec_t *rec;
  size_t tlen = strlen(m->topic);

  memset(&in, 0, sizeof(in));
  if (tlen >= sizeof(rec->topic) || decode_kind(task, m, &in))
    return 0;
  if (ksnap__task_record_chan(task->in.gate, m, &in.chan))
    return 0; /* logged by the gate: not a channel of the job graph */
  if (!(rec = malloc(sizeof(*rec) + copy_size(m)))) {
    pc->err = ksnap_error_set(pc->error, KSNAP_ERR_NOMEM, "out of memory");
    return 1;
  }
  memcpy(rec->topic, m->topic, tlen + 1);
  copy_msg(rec, m);
  if (ksnap__task_wm_is_msg(m))
    rec->r.input_index = KSNAP__WM_RECORD;
  in.offset = m->offset;
  in.gen = m->generation;
  /* what buffering it costs: the copy and the aligner's queue entry */
  in.size = sizeof(*rec) + copy_size(m) + sizeof(in);
  in.rec = rec;
  if (ksnap_aligner_push(task->in.al, &in, ksnap__wallclock_ms(), NULL)) {
    free(rec); /* refused (logged): not taken */
    return 0;
  }
  pc->err = drain(task, pc->error);
  return pc->err != KSNAP_ERR_OK;
}

int ksnap__task_poll_input(ksnap_task_t *task, int timeout_ms,
                           ksnap_error_t *error) {
  poll_ctx_t pc = {task, error, KSNAP_ERR_OK};
  int n;

  if (task->in.source)
    n = ksnap_source_poll(task->in.source, timeout_ms, on_source, &pc, error);
  else {
    n = ksnap_exchange_reader_poll(task->in.reader, timeout_ms, on_exchange,
                                   &pc, error);
    if (n >= 0 && !pc.err &&
        !ksnap_aligner_tick(task->in.al, ksnap__wallclock_ms(), error))
      pc.err = drain(task, error);
  }
  if (n >= 0 && !pc.err)
    pc.err = ksnap__task_bounded_check(task, error);
  return pc.err ? -1 : n;
}

/* A reader's TRIGGER: the aligner decides (snapshot on TRIGGER, T13, or
 * every input ended, T12); the barrier's timestamp and options are the
 * TRIGGER's when it comes first. */
static ksnap_err_t reader_trigger(ksnap_task_t *task,
                                  const ksnap_trigger_t *t,
                                  ksnap_error_t *error) {
  if (t->checkpoint_id > task->in.last_trigger) {
    task->in.last_trigger = t->checkpoint_id;
    task->in.barrier_ts = t->timestamp_ms;
    task->in.barrier_opts = t->options;
  }
  if (ksnap_aligner_trigger_opt(task->in.al, t->checkpoint_id,
                                t->timestamp_ms, t->options.is_savepoint,
                                ksnap__wallclock_ms(), error))
    return error->code;
  return drain(task, error);
}

ksnap_err_t ksnap__task_trigger(ksnap_task_t *task, const ksnap_trigger_t *t,
                                ksnap_error_t *error) {
  ksnap_err_t err;

  if (!task->is_source && task->in.al) { /* counts once every input ended */
    ksnap__task_bounded_trigger(task, t);
    return reader_trigger(task, t, error);
  }
  if (!task->is_source || t->checkpoint_id <= task->in.last_trigger)
    return KSNAP_ERR_OK;
  task->in.last_trigger = t->checkpoint_id;
  task->in.barrier_opts = t->options;
  if ((t->options.drain && (err = ksnap__task_bounded_drain(task, error))) ||
      (err = ksnap__task_snapshot(task, t->checkpoint_id, t->timestamp_ms,
                                  &t->options, NULL, error))) {
    ksnap_error_t e;
    ksnap__task_decline(task, t->checkpoint_id, error->msg, true);
    if (ksnap__task_exchange_cancel(task, t->checkpoint_id, &e))
      KSNAP_WARN("task", "%s: cancellation marker of checkpoint %lld: %s",
                 task->id, (long long)t->checkpoint_id, e.msg);
  }
  return err;
}

void ksnap__task_abort_alignment(ksnap_task_t *task, int64_t id,
                                 const char *reason) {
  ksnap_error_t error;

  if (task->in.al &&
      (ksnap_aligner_abort(task->in.al, id, reason, ksnap__wallclock_ms(),
                           &error) ||
       drain(task, &error)))
    KSNAP_WARN("task", "%s: aborting checkpoint %lld: %s", task->id,
               (long long)id, error.msg);
}
