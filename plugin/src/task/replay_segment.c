/*
 * One segment of an epoch replay (replay.c step 4): the input of one sink
 * task between two cuts, through its operator (ksnap__task_process),
 * whose output goes to the sink's replay transaction.
 *  - exchange input: one segment P -> Q of the chain of completed
 *    checkpoints. Every input partition of the task is read from P's
 *    off_c; a record of channel c is processed iff the acceptance rule of
 *    the segment's generation says PROCESS (accept.h restored with
 *    G := g(Q) from base P of g(P)) and its offset is below Q's off_c (Q's
 *    cut: exactly the records in Q's state). Barriers only mark passed_c;
 *    nothing aligns. The segment ends at the cut Q recorded, never at a
 *    point re-derived from the barriers in the log.
 *  - source input: the task's partitions from C's offsets to N's.
 * Both fail with KSNAP_ERR_RETENTION when a partition's log starts above
 * the first offset needed.
 */
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "ksnap/log.h"
#include "replay_int.h"
#include "task_input.h"
#include "task_int.h"
#include "base/util.h"

#define REPLAY_TIMEOUT_MS 300000

typedef struct seg_s {
  ksnap_task_t *task;
  ksnap_gate_t *gate;
  ksnap_accept_t acc;
  int64_t *chan_end; /* Q's off_c per channel */
  int64_t *part_end; /* max chan_end per partition */
  int64_t processed, skipped;
  ksnap_error_t *error;
  ksnap_err_t err;
} seg_t;

/* "stage[7]" -> 7; -1 if malformed. */
static int32_t writer_index(const char *w) {
  const char *b = strrchr(w, '[');
  char *end;
  long v;

  if (!b)
    return -1;
  v = strtol(b + 1, &end, 10);
  return (*end == ']' && v >= 0) ? (int32_t)v : -1;
}

static int on_record(void *opaque, const ksnap_exchange_msg_t *m) {
  seg_t *sg = opaque;
  int32_t part = ksnap_gate_find_partition(sg->gate, m->topic, m->partition);
  ksnap_rec_kind_t kind = KSNAP_REC_DATA;
  ksnap_accept_verdict_t v;
  int64_t id = 0;
  int32_t chan;

  if (part < 0)
    return 0;
  if (m->offset + 1 > ksnap_gate_part(sg->gate, part)->pos)
    ksnap_gate_part(sg->gate, part)->pos = m->offset + 1;
  if (m->offset >= sg->part_end[part] ||
      ksnap_gate_find(sg->gate, m->topic, m->partition,
                      writer_index(m->writer), &chan, NULL) ||
      m->offset >= sg->chan_end[chan])
    return 0;
  if (m->is_control) {
    ksnap_barrier_t b;
    ksnap_error_t e;
    if (!strcmp(m->ctl, "end"))
      kind = KSNAP_REC_END;
    else if (ksnap_codec_barrier_decode(m->value, m->value_len, &b, &e))
      return 0;
    else {
      kind = b.kind == KSNAP_BARRIER_KIND_CANCEL ? KSNAP_REC_CANCEL
                                                 : KSNAP_REC_BARRIER;
      id = b.checkpoint_id;
      ksnap_barrier_cleanup(&b);
    }
  }
  v = ksnap_accept_check(&sg->acc, ksnap_gate_chan(sg->gate, chan), m->offset,
                         m->generation, kind, id);
  if (v == KSNAP_ACCEPT_PROCESS && kind == KSNAP_REC_DATA) {
    ksnap_record_t r = {m->key, m->key_len, m->value, m->value_len, NULL, 0,
                        m->timestamp_ms, m->topic, m->partition, m->offset};
    sg->processed++;
    if ((sg->err = ksnap__task_process(sg->task, &r, sg->error)))
      return 1;
  } else if (kind == KSNAP_REC_DATA) {
    sg->skipped++;
  }
  return 0;
}

/* 1 when every partition was read up to its end. */
static int seg_done(seg_t *sg) {
  for (int32_t p = 0; p < ksnap_gate_nparts(sg->gate); p++)
    if (ksnap_gate_part_c(sg->gate, p)->pos < sg->part_end[p])
      return 0;
  return 1;
}

ksnap_err_t ksnap__replay_exchange_segment(ksnap_task_t *task,
                                           const ksnap_checkpoint_meta_t *from,
                                           const ksnap_checkpoint_meta_t *to,
                                           ksnap_error_t *error) {
  seg_t sg = {.task = task, .error = error};
  ksnap_chan_pos_t *pos = NULL;
  ksnap_kafka_pos_t *start = NULL;
  ksnap_exchange_reader_t *rd = NULL;
  int32_t n = 0, nparts, nch;
  size_t nstart = 0;
  int64_t deadline;
  ksnap_err_t err;

  if ((err = ksnap__task_new_gate(task, &sg.gate, error)))
    goto out;
  nparts = ksnap_gate_nparts(sg.gate);
  nch = ksnap_gate_nchans(sg.gate);
  ksnap_accept_init(&sg.acc, sg.gate, to->generation);
  if (from) {
    if ((err = ksnap__task_chan_positions(task, sg.gate, from, &pos, &n,
                                          error)) ||
        (err = ksnap_accept_restore(&sg.acc, sg.gate, to->generation,
                                    from->checkpoint_id, from->generation,
                                    pos, n, error)))
      goto out;
    free(pos);
    pos = NULL;
  }
  sg.chan_end = calloc((size_t)nch + 1, sizeof(*sg.chan_end));
  sg.part_end = calloc((size_t)nparts + 1, sizeof(*sg.part_end));
  start = calloc((size_t)nparts + 1, sizeof(*start));
  if (!sg.chan_end || !sg.part_end || !start) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (int32_t c = 0; c < nch; c++)
    sg.chan_end[c] = -1;
  if ((err = ksnap__task_chan_positions(task, sg.gate, to, &pos, &n, error)))
    goto out;
  for (int32_t i = 0; i < n; i++)
    sg.chan_end[pos[i].chan] = pos[i].off;
  for (int32_t c = 0; c < nch; c++) {
    const ksnap_chan_t *ch = ksnap_gate_chan_c(sg.gate, c);
    char name[256];
    if (sg.chan_end[c] < 0) {
      ksnap_gate_chan_name(sg.gate, c, name, sizeof(name));
      err = ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                            "checkpoint %lld has no position for channel %s",
                            (long long)to->checkpoint_id, name);
      goto out;
    }
    if (sg.chan_end[c] > sg.part_end[ch->part])
      sg.part_end[ch->part] = sg.chan_end[c];
  }
  for (int32_t p = 0; p < nparts; p++) {
    const ksnap_gate_part_t *gp = ksnap_gate_part_c(sg.gate, p);
    if (gp->pos < sg.part_end[p])
      start[nstart++] = (ksnap_kafka_pos_t){gp->topic, gp->partition, gp->pos};
  }
  KSNAP_INFO("task", "%s: epoch replay: checkpoint %lld -> %lld "
             "(generation %lld), %zu of %d partitions", task->id,
             (long long)(from ? from->checkpoint_id : 0),
             (long long)to->checkpoint_id, (long long)to->generation, nstart,
             (int)nparts);
  if (!nstart)
    goto out;
  if (!(rd = ksnap_exchange_reader_new(task->conf, start, nstart, error))) {
    err = error->code;
    goto out;
  }
  for (size_t i = 0; i < nstart; i++) {
    int64_t low = 0, high = 0;
    int32_t p = ksnap_gate_find_partition(sg.gate, start[i].topic,
                                          start[i].partition);
    if ((err = ksnap__consumer_watermarks(ksnap_exchange_reader_consumer(rd),
                                          start[i].topic, start[i].partition,
                                          &low, &high, 30000, error)))
      goto out;
    if (low > start[i].offset) {
      err = ksnap_error_set(
          error, KSNAP_ERR_RETENTION,
          "%s: the replay needs %s[%d] from offset %lld (checkpoint %lld -> "
          "%lld) but the log starts at %lld: the data was deleted by "
          "retention; the lost epoch cannot be repaired",
          task->id, start[i].topic, (int)start[i].partition,
          (long long)start[i].offset,
          (long long)(from ? from->checkpoint_id : 0),
          (long long)to->checkpoint_id, (long long)low);
      goto out;
    }
    if (high < sg.part_end[p]) {
      err = ksnap_error_set(
          error, KSNAP_ERR_STATE,
          "%s: the replay needs %s[%d] up to offset %lld (checkpoint %lld) but "
          "the log ends at %lld", task->id, start[i].topic,
          (int)start[i].partition, (long long)sg.part_end[p],
          (long long)to->checkpoint_id, (long long)high);
      goto out;
    }
  }
  deadline = ksnap__wallclock_ms() + REPLAY_TIMEOUT_MS;
  while (!seg_done(&sg)) {
    if (ksnap_exchange_reader_poll(rd, 100, on_record, &sg, error) < 0) {
      err = error->code;
      goto out;
    }
    if ((err = sg.err))
      goto out;
    if (ksnap__wallclock_ms() > deadline) {
      err = ksnap_error_set(error, KSNAP_ERR_TIMEOUT,
                            "%s: epoch replay of checkpoint %lld did not "
                            "reach its cut in %d ms", task->id,
                            (long long)to->checkpoint_id, REPLAY_TIMEOUT_MS);
      goto out;
    }
  }
  KSNAP_INFO("task", "%s: epoch replay: checkpoint %lld replayed: %lld records "
             "processed, %lld skipped by the acceptance rule", task->id,
             (long long)to->checkpoint_id, (long long)sg.processed,
             (long long)sg.skipped);
out:
  ksnap_exchange_reader_destroy(rd);
  ksnap_gate_destroy(sg.gate);
  free(pos);
  free(start);
  free(sg.chan_end);
  free(sg.part_end);
  return err;
}

/* ---- sink stages reading source topics ---- */

typedef struct src_seg_s {
  ksnap_task_t *task;
  ksnap_kafka_pos_t *pos; /* assigned partitions: next offset to read */
  int64_t *end;           /* per entry of pos: end offset, -1: nothing */
  size_t n;
  int64_t processed;
  ksnap_error_t *error;
  ksnap_err_t err;
} src_seg_t;

/* The offset of @p topic / @p partition in @p meta's snapshots of the
 * task's stage; -1 if none (or a logical position: nothing read yet). */
static int64_t meta_offset(ksnap_task_t *task,
                           const ksnap_checkpoint_meta_t *meta,
                           const char *topic, int32_t partition) {
  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    for (size_t k = 0; !strcmp(meta->tasks[i].task.stage,
                               ksnap_job_stage_name(task->stage)) &&
                       k < meta->tasks[i].offset_cnt; k++) {
      const ksnap_source_offset_t *o = &meta->tasks[i].offsets[k];
      if (o->partition == partition && !strcmp(o->topic, topic))
        return o->offset >= 0 ? o->offset : -1;
    }
  return -1;
}

static int on_source_record(void *opaque, const ksnap_source_msg_t *m) {
  src_seg_t *sg = opaque;

  for (size_t i = 0; i < sg->n; i++) {
    ksnap_record_t r = {m->key, m->key_len, m->value, m->value_len, NULL, 0,
                        m->timestamp_ms, m->topic, m->partition, m->offset};
    if (sg->pos[i].partition != m->partition ||
        strcmp(sg->pos[i].topic, m->topic))
      continue;
    if (m->offset + 1 > sg->pos[i].offset)
      sg->pos[i].offset = m->offset + 1;
    if (m->offset >= sg->end[i])
      return 0;
    sg->processed++;
    if ((sg->err = ksnap__task_process(sg->task, &r, sg->error)))
      return 1;
    return 0;
  }
  return 0;
}

/* Replays the source records between @p from's offsets (NULL: the
 * beginning) and @p to's. Source records carry no generations, so the
 * whole range is one segment. */
ksnap_err_t ksnap__replay_source_segment(ksnap_task_t *task,
                                         const ksnap_checkpoint_meta_t *from,
                                         const ksnap_checkpoint_meta_t *to,
                                         ksnap_error_t *error) {
  size_t nin = ksnap_job_stage_input_cnt(task->stage), nstart = 0, cap = 0;
  const char **topics = calloc(nin + 1, sizeof(*topics));
  src_seg_t sg = {.task = task, .error = error};
  ksnap_kafka_pos_t *start = NULL;
  ksnap_source_t *src = NULL;
  int64_t deadline;
  ksnap_err_t err = KSNAP_ERR_OK;
  int done;

  for (size_t i = 0; from && i < from->task_cnt; i++)
    cap += from->tasks[i].offset_cnt;
  if (!topics || !(start = calloc(cap + 1, sizeof(*start)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; from && i < from->task_cnt; i++)
    for (size_t k = 0; !strcmp(from->tasks[i].task.stage,
                               ksnap_job_stage_name(task->stage)) &&
                       k < from->tasks[i].offset_cnt; k++) {
      const ksnap_source_offset_t *o = &from->tasks[i].offsets[k];
      start[nstart++] = (ksnap_kafka_pos_t){o->topic, o->partition, o->offset};
    }
  for (size_t i = 0; i < nin; i++)
    topics[i] = ksnap_job_topic_name(ksnap_job_stage_input(task->stage, i));
  if (!(src = ksnap_source_new(task->conf, topics, nin, task->index,
                               task->parallelism, start, nstart, 30000,
                               error))) {
    err = error->code;
    goto out;
  }
  if ((err = ksnap_source_positions(src, &sg.pos, &sg.n, error)))
    goto out;
  if (!(sg.end = calloc(sg.n + 1, sizeof(*sg.end)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < sg.n; i++) {
    int64_t low = 0, high = 0;
    sg.end[i] = meta_offset(task, to, sg.pos[i].topic, sg.pos[i].partition);
    if (sg.end[i] < 0)
      continue;
    if ((err = ksnap__consumer_watermarks(ksnap_source_consumer(src),
                                          sg.pos[i].topic,
                                          sg.pos[i].partition, &low, &high,
                                          30000, error)))
      goto out;
    /* a logical start (nothing read before C) cannot be checked: the
     * original run read from the log start of its time */
    if (sg.pos[i].offset >= 0 && low > sg.pos[i].offset &&
        sg.pos[i].offset < sg.end[i]) {
      err = ksnap_error_set(
          error, KSNAP_ERR_RETENTION,
          "%s: the replay needs source %s[%d] from offset %lld (checkpoint "
          "%lld -> %lld) but the log starts at %lld: the data was deleted "
          "by retention; the lost epoch cannot be repaired", task->id,
          sg.pos[i].topic, (int)sg.pos[i].partition,
          (long long)sg.pos[i].offset,
          (long long)(from ? from->checkpoint_id : 0),
          (long long)to->checkpoint_id, (long long)low);
      goto out;
    }
    if (sg.pos[i].offset < 0)
      sg.pos[i].offset = low;
  }
  KSNAP_INFO("task", "%s: epoch replay: source input of checkpoints "
             "%lld -> %lld, %zu partitions", task->id,
             (long long)(from ? from->checkpoint_id : 0),
             (long long)to->checkpoint_id, sg.n);
  deadline = ksnap__wallclock_ms() + REPLAY_TIMEOUT_MS;
  for (;;) {
    done = 1;
    for (size_t i = 0; i < sg.n; i++)
      if (sg.pos[i].offset < sg.end[i])
        done = 0;
    if (done)
      break;
    if (ksnap_source_poll(src, 100, on_source_record, &sg, error) < 0) {
      err = error->code;
      goto out;
    }
    if ((err = sg.err))
      goto out;
    if (ksnap__wallclock_ms() > deadline) {
      err = ksnap_error_set(error, KSNAP_ERR_TIMEOUT,
                            "%s: epoch replay of checkpoint %lld did not "
                            "reach its cut in %d ms", task->id,
                            (long long)to->checkpoint_id, REPLAY_TIMEOUT_MS);
      goto out;
    }
  }
  KSNAP_INFO("task", "%s: epoch replay: source input up to checkpoint %lld "
             "replayed: %lld records processed", task->id,
             (long long)to->checkpoint_id, (long long)sg.processed);
out:
  ksnap_source_destroy(src);
  if (sg.pos)
    ksnap_kafka_pos_free(sg.pos, sg.n);
  free(sg.end);
  free(start);
  free(topics);
  return err;
}

