/*
 * Commit repair (DESIGN.md section 5 "Commit-phase failure" and "Sink
 * transactions and aborted checkpoints"; shared/model/model.py repair
 * variant chain=completed, repair_gen=epoch).
 *
 * The failure: a sink task pre-committed (flushed) its transaction of
 * epoch N, the coordinator wrote _metadata and committed COMPLETE(N) (the
 * decision), and the task died before commit_transaction. The restored
 * instance's init_transactions aborts that transaction, and librdkafka
 * cannot resume it, so the epoch's output is produced again by replay.
 *
 * Steps, each mapped to the design text:
 *  1. "FIRST calls init_transactions on every slot id": done by
 *     ksnap_sink_new() before this is called (task_io.c open_outputs).
 *  2. "THEN reads its last committed transaction C from the progress topic
 *     with read_committed up to the end": ksnap_progress_read_last(), the
 *     record decoded with ksnap_codec_progress_decode(). C >= N: done.
 *  3. "loads its own snapshot at C": the stage's state of chk-C/_metadata
 *     (ksnap__task_restore_state, so a rescale redistributes key groups
 *     as in a normal restore) into a separate state; no C (the task never
 *     committed): empty state and the channels from offset 0.
 *     IMPLEMENTED CHOICE: the DESIGN variant (start at C's own snapshot),
     not the model's alternative. A completed C: its _metadata (on N's
     chain). An aborted C (its transaction stayed pending and was
     committed with a later checkpoint, then the task died before the
     next commit): there is no _metadata, so the task's own ACK(C) is
     read from <job>.ksnap.acks (ksnap__coord_read_history) for its
     snapshot handles and channel positions / source offsets at C; the
     chain from N is followed down past C and replayed from C's cut to the
     first completed checkpoint after C, then on along the chain. Its
     objects exist: the coordinator only deletes completed checkpoints it
     retires (coord_retain.c keeps the newest completed one at or below
     the slowest sink's commit and everything after it). A missing ACK
     fails with KSNAP_ERR_RETENTION. The sink stage's parallelism must be
     unchanged since N (a repair across a rescale: KSNAP_ERR_UNSUPPORTED).
  4. "replays exactly the input between C's cut and N's, segment by
 *     segment along the chain of completed checkpoints, each segment under
 *     the acceptance rule of its generation": the chain is N, parent(N),
 *     ... back to C (parent_id in _metadata). Segment P -> Q reads every
 *     input partition of the task from P's off_c (accept.h restore with
 *     G := g(Q), base P of g(P): repair_gen=epoch) and processes a record
 *     of channel c iff the rule says PROCESS and its offset is below Q's
 *     off_c (Q's cut: exactly the records in Q's state). Barriers only
 *     mark passed_c; nothing aligns. Records go through the task's
 *     operator (ksnap__task_process) with the repair state; its emits go
 *     to the sink's repair transaction only (the exchange writer, if the
 *     stage has one, is detached: downstream already has that output).
 *     A partition whose log start is above the needed offset fails with
 *     KSNAP_ERR_RETENTION ("fails loudly").
 *  5. "commits that output with progress record N": one transaction,
 *     sink epoch N, pre-committed and committed with progress
 *     {sink task, N, G}.
 *  6. "and then loads chk-N": the caller (task_io.c) restores chk-N's
 *     state after this returns and begins epoch N+1.
 * A sink stage that reads source topics (a source task that is also a
 * sink) replays its assigned source partitions from C's offsets to N's in
 * one range (source records carry no generations, so the chain's
 * segments need no separate rules); a logical start position (nothing
 * read before C) starts at the log start and cannot be checked against
 * retention. Not covered: timers registered during the replay are
 * dropped (not fired).
 * Test-only switch: KSNAP_FAULT=sink.skip-repair skips the repair (fault.h).
 */
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "coord_io.h"
#include "fault.h"
#include "ksnap/log.h"
#include "progress.h"
#include "sink_repair.h"
#include "task_int.h"
#include "util.h"

#define PROGRESS_TIMEOUT_MS 120000
#define REPLAY_TIMEOUT_MS 300000
#define COMMIT_TIMEOUT_MS 60000
#define MAX_CHAIN 4096

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

/* Replays segment @p from -> @p to (from NULL: from the beginning). */
static ksnap_err_t replay_segment(ksnap_task_t *task,
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
  KSNAP_INFO("task", "%s: repair: replaying checkpoint %lld -> %lld "
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
          "%s: repair needs %s[%d] from offset %lld (checkpoint %lld -> "
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
          "%s: repair needs %s[%d] up to offset %lld (checkpoint %lld) but "
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
                            "%s: repair replay of checkpoint %lld did not "
                            "reach its cut in %d ms", task->id,
                            (long long)to->checkpoint_id, REPLAY_TIMEOUT_MS);
      goto out;
    }
  }
  KSNAP_INFO("task", "%s: repair: checkpoint %lld replayed: %lld records "
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
static ksnap_err_t replay_source(ksnap_task_t *task,
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
          "%s: repair needs source %s[%d] from offset %lld (checkpoint "
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
  KSNAP_INFO("task", "%s: repair: replaying source input of checkpoints "
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
                            "%s: repair replay of checkpoint %lld did not "
                            "reach its cut in %d ms", task->id,
                            (long long)to->checkpoint_id, REPLAY_TIMEOUT_MS);
      goto out;
    }
  }
  KSNAP_INFO("task", "%s: repair: source input up to checkpoint %lld "
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

/* Step 3 for a C without _metadata (an aborted checkpoint whose
 * transaction was committed with a later one): the task's own ACK(C) on
 * the acks topic holds its snapshot's handles and positions at C. */
#define MAX_ACKS 1024

typedef struct ack_find_s {
  ksnap_task_t *task;
  int64_t id;
  ksnap_ack_record_t recs[MAX_ACKS]; /* by task index of the stage */
  int have[MAX_ACKS];
  int found; /* this task's own ACK is among them */
} ack_find_t;

static int on_ack(void *opaque, const void *buf, size_t len, int64_t ts) {
  ack_find_t *af = opaque;
  ksnap_ack_record_t rec;
  ksnap_error_t e;
  int32_t idx;

  (void)ts;
  if (ksnap_codec_ack_decode(buf, len, &rec, &e))
    return 0;
  idx = rec.type == KSNAP_ACKT_ACK ? rec.u.ack.snapshot.task.index : -1;
  if (idx >= 0 && idx < MAX_ACKS && rec.u.ack.checkpoint_id == af->id &&
      !strcmp(rec.u.ack.snapshot.task.stage,
              ksnap_job_stage_name(af->task->stage))) {
    if (af->have[idx])
      ksnap_ack_record_cleanup(&af->recs[idx]);
    af->recs[idx] = rec;
    af->have[idx] = 1;
    if (idx == af->task->index)
      af->found = 1;
    return 0;
  }
  ksnap_ack_record_cleanup(&rec);
  return 0;
}

static ksnap_err_t find_own_ack(ksnap_task_t *task, int64_t id,
                                ack_find_t *af, ksnap_error_t *error) {
  char topic[512];
  ksnap_err_t err;

  af->task = task;
  af->id = id;
  snprintf(topic, sizeof(topic), "%s%s", ksnap_job_name(task->job),
           KSNAP_COORD_ACKS_SUFFIX);
  if ((err = ksnap__coord_read_history(task->conf, topic, PROGRESS_TIMEOUT_MS,
                                       on_ack, af, error)))
    return ksnap_error_prefix(error, "%s: reading its ACK(%lld) from %s",
                              task->id, (long long)id, topic);
  if (!af->found)
    return ksnap_error_set(
        error, KSNAP_ERR_RETENTION,
        "%s: the last committed transaction %lld belongs to a checkpoint "
        "without _metadata (aborted) and the task's ACK(%lld) with its "
        "snapshot positions is not on %s (deleted by retention?): the "
        "repair cannot start from its snapshot", task->id, (long long)id,
        (long long)id, topic);
  return KSNAP_ERR_OK;
}

/* Step 2: C, 0 if this task never committed. */
static ksnap_err_t last_committed(ksnap_task_t *task, int64_t *cp,
                                  ksnap_error_t *error) {
  ksnap_sink_progress_t pr;
  ksnap_buf_t buf;
  int found = 0;
  ksnap_err_t err;

  *cp = 0;
  ksnap_buf_init(&buf);
  err = ksnap_progress_read_last(task->conf, ksnap_sink_task_id(task->sink),
                                 PROGRESS_TIMEOUT_MS, &buf, &found, error);
  if (err == KSNAP_ERR_NOT_FOUND) { /* no progress topic: nothing committed */
    err = KSNAP_ERR_OK;
    found = 0;
  }
  if (!err && found &&
      !(err = ksnap_codec_progress_decode(buf.data, buf.len, &pr, error))) {
    *cp = pr.transaction_id > 0 ? pr.transaction_id : 0;
    ksnap_sink_progress_cleanup(&pr);
  }
  ksnap_buf_cleanup(&buf);
  if (err)
    ksnap_error_prefix(error, "%s: reading the last committed transaction",
                       task->id);
  return err;
}

/* Steps 3-5 with the chain @p chain[0..n-1] (oldest first) after @p base
 * (C's metadata, NULL: no C). */
static ksnap_err_t replay_and_commit(ksnap_task_t *task, ksnap_storage_t *st,
                                     const ksnap_checkpoint_meta_t *base,
                                     const ksnap_checkpoint_meta_t *chain,
                                     size_t n, ksnap_error_t *error) {
  ksnap_state_t *live = task->state, *rs = NULL;
  ksnap_exchange_t *writer = task->writer;
  ksnap_state_conf_t sc;
  int64_t id = task->base_id;
  void *inst = NULL;
  int opened = 0;
  ksnap_err_t err;

  ksnap_state_conf_init(&sc);
  sc.max_parallelism = task->max_par;
  sc.parallelism = task->parallelism;
  sc.task_index = task->index;
  if ((err = ksnap_state_new(&sc, &rs, error)))
    return err;
  task->state = rs;
  task->writer = NULL;
  if (base && (err = ksnap__task_restore_state(task, base, st, error)))
    goto out;
  task->inst = NULL;
  if (task->ops->open && (err = task->ops->open(&task->ctx, &inst, error)))
    goto out;
  task->inst = inst;
  opened = 1;
  if ((err = ksnap_sink_begin(task->sink, id, error)))
    goto out;
  if (task->is_source)
    err = replay_source(task, base, &chain[n - 1], error);
  for (size_t i = 0; !task->is_source && i < n && !err; i++)
    err = replay_segment(task, i ? &chain[i - 1] : base, &chain[i], error);
  if (!err &&
      !(err = ksnap_sink_precommit(task->sink, id, COMMIT_TIMEOUT_MS, error))) {
    ksnap_sink_progress_t pr = {
        {(char *)ksnap_job_stage_name(task->stage), task->index}, id,
        atomic_load(&task->gen)};
    ksnap_buf_t buf;
    ksnap_buf_init(&buf);
    if (!(err = ksnap_codec_progress_encode(&pr, &buf, error)))
      err = ksnap_sink_commit(task->sink, id, buf.data, buf.len,
                              COMMIT_TIMEOUT_MS, error);
    ksnap_buf_cleanup(&buf);
  }
out:
  if (opened && task->ops->close)
    task->ops->close(&task->ctx, inst);
  task->inst = NULL;
  ksnap__task_free_timers(task);
  task->writer = writer;
  task->state = live;
  ksnap_state_destroy(rs);
  return err;
}

ksnap_err_t ksnap__sink_repair(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t base, ackmeta, *chain = NULL;
  ack_find_t *af = NULL;
  ksnap_storage_t *st = NULL;
  int64_t c = 0, id, t0 = ksnap__wallclock_ms();
  size_t n = 0;
  int have_base = 0;
  ksnap_err_t err;

  memset(&base, 0, sizeof(base));
  memset(&ackmeta, 0, sizeof(ackmeta));
  if (!task->sink || task->base_id <= 0)
    return KSNAP_ERR_OK;
  if ((err = last_committed(task, &c, error)))
    return err;
  if (c >= task->base_id) {
    KSNAP_DBG(TASK, "task", "%s: last committed transaction %lld, restored "
              "from %lld: no repair", task->id, (long long)c,
              (long long)task->base_id);
    return KSNAP_ERR_OK;
  }
  if (ksnap__fault_on("sink.skip-repair")) {
    KSNAP_WARN("task", "%s: KSNAP_FAULT=sink.skip-repair: NOT repairing "
               "transactions %lld..%lld (their output is lost)", task->id,
               (long long)c + 1, (long long)task->base_id);
    return KSNAP_ERR_OK;
  }
  KSNAP_WARN("task", "%s: last committed transaction is %lld but checkpoint "
             "%lld completed: repairing its output by replay", task->id,
             (long long)c, (long long)task->base_id);
  if ((err = ksnap__task_storage_open(task->conf, &st, error)))
    return err;
  if (!(chain = calloc(MAX_CHAIN, sizeof(*chain)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  /* the chain N, parent(N), ... down to C, stored oldest first at the end */
  for (id = task->base_id; id > c; n++) {
    ksnap_checkpoint_meta_t *m;
    if (n == MAX_CHAIN) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE, "%s: repair chain longer "
                            "than %d checkpoints", task->id, MAX_CHAIN);
      goto out;
    }
    m = &chain[MAX_CHAIN - 1 - n];
    if ((err = ksnap__task_load_meta(task, id, st, m, error))) {
      ksnap_error_prefix(error, "%s: repair needs checkpoint %lld of the "
                         "chain %lld..%lld", task->id, (long long)id,
                         (long long)c, (long long)task->base_id);
      goto out;
    }
    id = m->parent_id > 0 ? m->parent_id : 0;
  }
  for (size_t i = 0; i < chain[MAX_CHAIN - 1].task_cnt; i++)
    if (!strcmp(chain[MAX_CHAIN - 1].tasks[i].task.stage,
                ksnap_job_stage_name(task->stage)) &&
        chain[MAX_CHAIN - 1].tasks[i].task.index >= task->parallelism) {
      err = ksnap_error_set(
          error, KSNAP_ERR_UNSUPPORTED,
          "%s: checkpoint %lld has task %d of this stage, now of "
          "parallelism %d: a commit repair across a rescale is not "
          "supported", task->id, (long long)task->base_id,
          (int)chain[MAX_CHAIN - 1].tasks[i].task.index,
          (int)task->parallelism);
      goto out;
    }
  if (id != c) { /* C has no _metadata: an aborted checkpoint */
    ksnap_checkpoint_meta_t *q = &chain[MAX_CHAIN - n];
    if (id > c || !n) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: the chain of checkpoint %lld does not pass "
                            "%lld", task->id, (long long)task->base_id,
                            (long long)c);
      goto out;
    }
    if (!(af = calloc(1, sizeof(*af)))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    if ((err = find_own_ack(task, c, af, error)))
      goto out;
    if (af->recs[task->index].u.ack.generation > q->generation) {
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: ACK(%lld) of generation %lld is newer than "
                            "checkpoint %lld's", task->id, (long long)c,
                            (long long)af->recs[task->index].u.ack.generation,
                            (long long)q->checkpoint_id);
      goto out;
    }
    KSNAP_WARN("task", "%s: repair starts from the snapshot of aborted "
               "checkpoint %lld (its ACK), replaying to %lld through the "
               "completed checkpoints after it", task->id, (long long)c,
               (long long)task->base_id);
    ackmeta.job = (char *)ksnap_job_name(task->job);
    ackmeta.checkpoint_id = c;
    ackmeta.generation = af->recs[task->index].u.ack.generation;
    ackmeta.parent_id = KSNAP_CHECKPOINT_NONE;
    /* every task of the stage that ACKed C: keyed state needs only this
     * task's key groups (one of them); operator list state is divided
     * over all of them, which is exact only if all ACKed */
    if (!(ackmeta.tasks = calloc(MAX_ACKS, sizeof(*ackmeta.tasks)))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      goto out;
    }
    for (int i = 0; i < MAX_ACKS; i++)
      if (af->have[i])
        ackmeta.tasks[ackmeta.task_cnt++] = af->recs[i].u.ack.snapshot;
    if ((int32_t)ackmeta.task_cnt < task->parallelism)
      KSNAP_WARN("task", "%s: only %zu of %d tasks of the stage acknowledged "
                 "aborted checkpoint %lld: operator list state (if any) is "
                 "restored from those only", task->id, ackmeta.task_cnt,
                 (int)task->parallelism, (long long)c);
    err = replay_and_commit(task, st, &ackmeta, &chain[MAX_CHAIN - n], n,
                            error);
    goto done;
  }
  if (c > 0) {
    if ((err = ksnap__task_load_meta(task, c, st, &base, error))) {
      ksnap_error_prefix(error, "%s: repair needs checkpoint %lld (the last "
                         "committed transaction's snapshot)", task->id,
                         (long long)c);
      goto out;
    }
    have_base = 1;
  }
  err = replay_and_commit(task, st, have_base ? &base : NULL,
                          &chain[MAX_CHAIN - n], n, error);
done:
  if (!err) {
    ksnap_ack_record_t rec = {.type = KSNAP_ACKT_COMMITTED};
    ksnap_error_t e;
    KSNAP_WARN("task", "%s: repaired: transaction %lld committed with the "
               "replayed output of checkpoints %lld..%lld in %lld ms",
               task->id, (long long)task->base_id, (long long)c + 1,
               (long long)task->base_id,
               (long long)(ksnap__wallclock_ms() - t0));
    /* the coordinator's retention keeps chk-C until it hears of this */
    rec.u.committed = (ksnap_committed_t){
        task->base_id,
        {(char *)ksnap_job_stage_name(task->stage), task->index},
        atomic_load(&task->gen)};
    if (ksnap_control_client_send(task->cc, &rec, &e))
      KSNAP_WARN("task", "%s: cannot send COMMITTED(%lld) after the repair: "
                 "%s", task->id, (long long)task->base_id, e.msg);
  }
out:
  if (err)
    ksnap_error_prefix(error, "commit repair");
  for (size_t i = 0; chain && i < n; i++)
    ksnap_checkpoint_meta_cleanup(&chain[MAX_CHAIN - 1 - i]);
  free(chain);
  ksnap_checkpoint_meta_cleanup(&base);
  for (int i = 0; af && i < MAX_ACKS; i++)
    if (af->have[i])
      ksnap_ack_record_cleanup(&af->recs[i]);
  free(af);
  free(ackmeta.tasks);
  ksnap_storage_destroy(st);
  return err;
}
