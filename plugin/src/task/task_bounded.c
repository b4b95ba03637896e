/*
 * Bounded inputs and drains (plugin/PROTOCOL.md sections 5.9 and 5.11):
 * the end of a task's input, on its processing thread; task->in.bounded
 * is this file's.
 *
 * A source task of a job with source.stop-at=latest reads each of its
 * partitions up to an end offset fixed once for the job: at a fresh start
 * it asks the broker for each partition's last stable offset; the ends go
 * into the operator state KSNAP__END_STATE (union: every task of the stage
 * gets them all back, so a restore at any parallelism finds its
 * partitions' ends), so every snapshot carries them and a restore keeps
 * the same end. A record at or past its partition's end is skipped and the
 * partition paused. When every partition reached its end, the task sends
 * its end of input (ksnap.ctl "end") on its exchange output.
 *
 * A drain (a TRIGGER with drain, ksnap__task_bounded_drain()) gives a
 * source task of any job ends at its current positions, before its
 * snapshot; a restored KSNAP__END_STATE that is not empty makes a source
 * bounded again (a partition it does not name ends at its restored
 * position).
 *
 * A task that reads exchange topics sends its own end of input once every
 * input channel delivered one (ksnap_aligner_ended()). Both then own no
 * barrier any more: later checkpoints are taken on the TRIGGER (a reader's
 * aligner does it, transition T12 in aligner.c), no barrier goes
 * downstream, and their delivery wait covers every record written.
 *
 * A restore does not carry "ended": a restored task reaches its end again
 * (at once, when its restored positions are there) and sends its end of
 * input again in the new generation, where the readers need it.
 *
 * Finish (ksnap_operator_t.finish, FLIP-147): when a task's input ended it
 * calls its operator's finish first (whose emits go before the end
 * marker), once per job: it then records "finished" in the operator state
 * KSNAP__FINISHED_STATE (registered by every task; union; one entry
 * "INDEX/PARALLELISM" per finished task), so a snapshot taken after it carries it and a restore from that
 * snapshot does not call finish again. A restore at another parallelism
 * counts the stage finished only when every old task was (the old tasks'
 * state is spread over the new ones); otherwise finish runs again there.
 * Then task->ended_gen says so to the heartbeats and the ACKs (ack_v6
 * input_ended), from which the coordinator takes the final checkpoint.
 */
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "ksnap/log.h"
#include "task_input.h"
#include "task_int.h"

#define KSNAP__END_STATE "ksnap.source-end"
#define KSNAP__FINISHED_STATE "ksnap.finished"
#define KAFKA_TIMEOUT_MS 30000
#define NTRIG 16

typedef struct end_s {
  char topic[256];
  int32_t partition;
  int64_t end;
  int reached;
} end_t;

/* A TRIGGER's timestamp and options, for a snapshot taken on it. */
typedef struct trig_s {
  int64_t id, ts;
  ksnap_ckpt_options_t opts;
} trig_t;

struct ksnap__bounded_s {
  end_t *ends;
  size_t nends;
  int bounded; /* a source whose partitions have ends */
  int end_id; /* KSNAP__END_STATE's id (a source) */
  int ended; /* every partition reached its end */
  int fin_id; /* KSNAP__FINISHED_STATE's id */
  int finished; /* finish ran (here, or before the restore point) */
  trig_t trig[NTRIG];
};

static int stop_at_latest(const ksnap_task_t *task) {
  const char *v = NULL;

  return !ksnap_conf_get_str(task->conf, "source.stop-at", &v) && v &&
         !strcmp(v, "latest");
}

/* Blob: partition (4 bytes), end (8 bytes), big-endian, then the topic. */
static size_t end_encode(const end_t *e, uint8_t *b, size_t cap) {
  size_t tl = strlen(e->topic);

  if (12 + tl > cap)
    return 0;
  for (int i = 0; i < 4; i++)
    b[i] = (uint8_t)((uint32_t)e->partition >> (24 - 8 * i));
  for (int i = 0; i < 8; i++)
    b[4 + i] = (uint8_t)((uint64_t)e->end >> (56 - 8 * i));
  memcpy(b + 12, e->topic, tl);
  return 12 + tl;
}

static int end_decode(const uint8_t *b, size_t len, end_t *e) {
  uint32_t p = 0;
  uint64_t v = 0;

  if (len < 12 || len - 12 >= sizeof(e->topic))
    return -1;
  for (int i = 0; i < 4; i++)
    p = p << 8 | b[i];
  for (int i = 0; i < 8; i++)
    v = v << 8 | b[4 + i];
  memset(e, 0, sizeof(*e));
  e->partition = (int32_t)p;
  e->end = (int64_t)v;
  memcpy(e->topic, b + 12, len - 12);
  return 0;
}

/* The restored end of @p e's partition, from the union state. */
static int restored_end(ksnap_state_t *st, int id, end_t *e) {
  for (size_t i = 0; i < ksnap_state_op_count(st, id); i++) {
    const void *b;
    size_t len;
    end_t r;
    if (!ksnap_state_op_get(st, id, i, &b, &len) &&
        !end_decode(b, len, &r) && r.partition == e->partition &&
        !strcmp(r.topic, e->topic)) {
      e->end = r.end;
      return 1;
    }
  }
  return 0;
}

static end_t *find_end(struct ksnap__bounded_s *b, const char *topic,
                       int32_t partition) {
  for (size_t i = 0; b && i < b->nends; i++)
    if (b->ends[i].partition == partition && !strcmp(b->ends[i].topic, topic))
      return &b->ends[i];
  return NULL;
}

/* The state holds exactly this task's ends. */
static ksnap_err_t store_ends(ksnap_task_t *task, struct ksnap__bounded_s *b,
                              ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  ksnap_err_t err = KSNAP_ERR_OK;

  ksnap_state_op_clear(st, b->end_id);
  for (size_t i = 0; i < b->nends && !err; i++) {
    uint8_t blob[12 + sizeof(b->ends[i].topic)];
    size_t len = end_encode(&b->ends[i], blob, sizeof(blob));
    err = ksnap_state_op_add(st, b->end_id, blob, len, error);
  }
  return err;
}

/* The ends of the task's partitions: restored, or asked of the broker
 * (source.stop-at=latest); a drained job's partition without one (none
 * of its tasks had it) ends at its restored position. */
static ksnap_err_t load_ends(ksnap_task_t *task, struct ksnap__bounded_s *b,
                             ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  ksnap_kafka_pos_t *pos = NULL;
  size_t n = 0;
  int id = b->end_id;
  ksnap_err_t err;

  if ((err = ksnap_source_positions(task->in.source, &pos, &n, error)))
    return err;
  if (!(b->ends = calloc(n + 1, sizeof(*b->ends)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n && !err; i++) {
    end_t *e = &b->ends[b->nends++];
    snprintf(e->topic, sizeof(e->topic), "%s", pos[i].topic);
    e->partition = pos[i].partition;
    if (!restored_end(st, id, e)) {
      if (stop_at_latest(task))
        err = ksnap_source_end_offset(task->in.source, e->topic,
                                      e->partition, &e->end, KAFKA_TIMEOUT_MS,
                                      error);
      else
        e->end = pos[i].offset;
    }
    KSNAP_INFO("task", "%s: input %s[%d] ends at offset %lld", task->id,
               e->topic, (int)e->partition, (long long)e->end);
  }
  b->bounded = 1;
  if (!err)
    err = store_ends(task, b, error);
out:
  ksnap_kafka_pos_free(pos, n);
  return err;
}

ksnap_err_t ksnap__task_bounded_was_finished(ksnap_task_t *task, int *idp,
                                             int *finishedp,
                                             ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  size_t n;
  int old_par = 0, mine = 0;
  char own[32];
  ksnap_err_t err;

  *finishedp = 0;
  if ((err = ksnap_state_register(st, KSNAP__FINISHED_STATE,
                                  KSNAP_STATE_OP_UNION, 0, idp, error)))
    return err;
  snprintf(own, sizeof(own), "%d/%d", (int)task->index,
           (int)task->parallelism);
  n = ksnap_state_op_count(st, *idp);
  for (size_t i = 0; i < n; i++) {
    const void *v;
    size_t len;
    char e[32];
    int idx, par;
    if (ksnap_state_op_get(st, *idp, i, &v, &len) || len >= sizeof(e))
      continue;
    memcpy(e, v, len);
    e[len] = '\0';
    if (sscanf(e, "%d/%d", &idx, &par) != 2)
      continue;
    old_par = par;
    mine |= !strcmp(e, own);
  }
  /* at another parallelism: finished only if every old task was */
  *finishedp = mine || (old_par && old_par != task->parallelism &&
                        n == (size_t)old_par);
  return KSNAP_ERR_OK;
}

/* Whether the restored KSNAP__FINISHED_STATE says this task finished;
 * then the state holds exactly this task's entry. */
static ksnap_err_t load_finished(ksnap_task_t *task,
                                 struct ksnap__bounded_s *b,
                                 ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  char own[32];
  ksnap_err_t err;

  if ((err = ksnap__task_bounded_was_finished(task, &b->fin_id, &b->finished,
                                              error)))
    return err;
  snprintf(own, sizeof(own), "%d/%d", (int)task->index,
           (int)task->parallelism);
  ksnap_state_op_clear(st, b->fin_id);
  if (b->finished) {
    KSNAP_INFO("task", "%s: restored finished: finish does not run again",
               task->id);
    return ksnap_state_op_add(st, b->fin_id, own, strlen(own), error);
  }
  return KSNAP_ERR_OK;
}

/* Finish once per job, recorded in the state, before the end marker. */
static ksnap_err_t finish(ksnap_task_t *task, ksnap_error_t *error) {
  struct ksnap__bounded_s *b = task->in.bounded;
  char own[32];
  ksnap_err_t err;

  if (!b->finished) {
    if ((err = ksnap__task_op_finish(task, error)))
      return err;
    snprintf(own, sizeof(own), "%d/%d", (int)task->index,
             (int)task->parallelism);
    if ((err = ksnap_state_op_add(ksnap__task_state(task), b->fin_id, own,
                                  strlen(own), error)))
      return err;
    b->finished = 1;
    KSNAP_INFO("task", "%s: finish ran", task->id);
  }
  atomic_store(&task->ended_gen, atomic_load(&task->gen));
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_bounded_open(ksnap_task_t *task,
                                     ksnap_error_t *error) {
  struct ksnap__bounded_s *b;
  ksnap_err_t err;

  atomic_store(&task->ended_gen, -1);
  if (!(b = calloc(1, sizeof(*b))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  task->in.bounded = b;
  if ((err = load_finished(task, b, error)) || !task->is_source)
    return err;
  if ((err = ksnap_state_register(ksnap__task_state(task), KSNAP__END_STATE,
                                  KSNAP_STATE_OP_UNION, 0, &b->end_id,
                                  error)))
    return err;
  if (stop_at_latest(task) ||
      ksnap_state_op_count(ksnap__task_state(task), b->end_id) > 0)
    return load_ends(task, b, error); /* bounded, or restored drained */
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_bounded_drain(ksnap_task_t *task,
                                      ksnap_error_t *error) {
  struct ksnap__bounded_s *b = task->in.bounded;
  ksnap_kafka_pos_t *pos = NULL;
  size_t n = 0;
  end_t *ends;
  ksnap_err_t err;

  if (!b || !task->is_source || ksnap__task_exchange_ended(task))
    return KSNAP_ERR_OK;
  if ((err = ksnap_source_positions(task->in.source, &pos, &n, error)))
    return err;
  if (!(ends = realloc(b->ends, (b->nends + n + 1) * sizeof(*ends)))) {
    ksnap_kafka_pos_free(pos, n);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  b->ends = ends;
  for (size_t i = 0; i < n; i++) {
    end_t *e = find_end(b, pos[i].topic, pos[i].partition);
    if (!e) {
      e = &b->ends[b->nends++];
      memset(e, 0, sizeof(*e));
      snprintf(e->topic, sizeof(e->topic), "%s", pos[i].topic);
      e->partition = pos[i].partition;
      e->end = pos[i].offset;
    } else if (pos[i].offset < e->end) {
      e->end = pos[i].offset;
    } else {
      continue; /* at or before its end already */
    }
    KSNAP_INFO("task", "%s: drain: input %s[%d] ends at offset %lld",
               task->id, e->topic, (int)e->partition, (long long)e->end);
  }
  ksnap_kafka_pos_free(pos, n);
  b->bounded = 1;
  return store_ends(task, b, error);
}

void ksnap__task_bounded_close(ksnap_task_t *task) {
  if (!task->in.bounded)
    return;
  free(task->in.bounded->ends);
  free(task->in.bounded);
  task->in.bounded = NULL;
}


int ksnap__task_bounded_skip(ksnap_task_t *task, const char *topic,
                             int32_t partition, int64_t offset) {
  end_t *e = find_end(task->in.bounded, topic, partition);

  return e && offset >= e->end;
}

void ksnap__task_bounded_clamp(ksnap_task_t *task, ksnap_kafka_pos_t *pos,
                               size_t n) {
  for (size_t i = 0; i < n; i++) {
    end_t *e = find_end(task->in.bounded, pos[i].topic, pos[i].partition);
    if (e && pos[i].offset > e->end)
      pos[i].offset = e->end;
  }
}

/* Finishes, then sends the end of input downstream, once per
 * generation. */
static ksnap_err_t send_end(ksnap_task_t *task, ksnap_error_t *error) {
  int sent = 0;
  ksnap_err_t err;

  /* event time ends first: every event-time timer fires */
  if ((err = ksnap__task_wm_finish(task, error)) ||
      (err = finish(task, error)))
    return err;
  err = ksnap__task_exchange_end(task, &sent, error);

  KSNAP_INFO("task", "%s: end of input%s", task->id,
             sent ? ", sent downstream" : "");
  return err;
}

ksnap_err_t ksnap__task_bounded_check(ksnap_task_t *task,
                                      ksnap_error_t *error) {
  struct ksnap__bounded_s *b = task->in.bounded;
  ksnap_kafka_consumer_t *c;
  ksnap_kafka_pos_t *pos = NULL;
  size_t n = 0, left = 0;
  ksnap_err_t err;

  if (!b || ksnap__task_exchange_ended(task))
    return KSNAP_ERR_OK;
  if (!task->is_source)
    return task->in.al && ksnap_aligner_ended(task->in.al)
               ? send_end(task, error)
               : KSNAP_ERR_OK;
  if (!b->bounded)
    return KSNAP_ERR_OK;
  if ((err = ksnap_source_positions(task->in.source, &pos, &n, error)))
    return err;
  c = ksnap_source_consumer(task->in.source);
  for (size_t i = 0; i < n && !err; i++) {
    end_t *e = find_end(b, pos[i].topic, pos[i].partition);
    if (!e || e->reached)
      continue;
    if (!ksnap_source_reached(task->in.source, e->topic, e->partition,
                              pos[i].offset, e->end)) {
      left++;
      continue;
    }
    e->reached = 1;
    ksnap__task_wm_input_ended(task, e->topic, e->partition);
    err = ksnap_kafka_consumer_pause(c, e->topic, e->partition, 1, error);
  }
  ksnap_kafka_pos_free(pos, n);
  if (err || left)
    return err;
  return send_end(task, error);
}

void ksnap__task_bounded_trigger(ksnap_task_t *task,
                                 const ksnap_trigger_t *t) {
  struct ksnap__bounded_s *b = task->in.bounded;

  if (b)
    b->trig[t->checkpoint_id % NTRIG] =
        (trig_t){t->checkpoint_id, t->timestamp_ms, t->options};
}

int ksnap__task_bounded_trigger_of(ksnap_task_t *task, int64_t id,
                                   int64_t *tsp, ksnap_ckpt_options_t *optsp) {
  struct ksnap__bounded_s *b = task->in.bounded;
  const trig_t *t = b ? &b->trig[id % NTRIG] : NULL;

  if (!t || t->id != id || id <= 0)
    return 0;
  *tsp = t->ts;
  *optsp = t->opts;
  return 1;
}
