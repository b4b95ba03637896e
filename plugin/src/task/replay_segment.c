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
 * Both fire the timers the run fired in the segment (Q's firing log, from
 * replay.c) through a plan (fired.h): a record read past the next
 * firing's position on its channel is held in memory, in arrival order,
 * until that firing fired; the consumer is never paused, so the only wait
 * is the segment's read, bounded by REPLAY_TIMEOUT_MS. No timer fires by
 * the clock.
 */
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "ksnap/log.h"
#include "replay_int.h"
#include "restore.h"
#include "task_input.h"
#include "task_int.h"
#include "base/util.h"
#include "fired.h"

#define REPLAY_TIMEOUT_MS 300000
#define POLL_MS 100
#define WATERMARKS_TIMEOUT_MS 30000

/* ---- the loop both kinds of segment share ---- */

/* One poll of a segment's input: records handled, or -1 (error set). */
typedef int(seg_poll_t)(void *seg, ksnap_error_t *error);
/* 1 once every partition of the segment was read up to its cut. */
typedef int(seg_done_t)(const void *seg);

/* Polls @p seg until @p done, at most REPLAY_TIMEOUT_MS; @p rec_err is
 * the error a record of the segment stopped the poll with. */
static ksnap_err_t poll_until_cut(ksnap_task_t *task, int64_t to_id,
                                  seg_poll_t *poll, seg_done_t *done,
                                  void *seg, const ksnap_err_t *rec_err,
                                  ksnap_error_t *error) {
  int64_t deadline = ksnap__wallclock_ms() + REPLAY_TIMEOUT_MS;

  while (!done(seg)) {
    if (poll(seg, error) < 0)
      return error->code;
    if (*rec_err)
      return *rec_err;
    if (ksnap__wallclock_ms() > deadline)
      return ksnap_error_set(error, KSNAP_ERR_TIMEOUT,
                             "%s: epoch replay of checkpoint %lld did not "
                             "reach its cut in %d ms", task->id,
                             (long long)to_id, REPLAY_TIMEOUT_MS);
  }
  return KSNAP_ERR_OK;
}

/* ---- the plan's callbacks, and a record through it ---- */

static ksnap_err_t plan_run(void *opaque, int32_t chan, void *rec,
                            ksnap_error_t *error) {
  return ksnap__task_process(opaque, chan, rec, error);
}

static ksnap_err_t plan_fire(void *opaque, const ksnap__fired_t *f,
                             ksnap_error_t *error) {
  return ksnap__task_fire_recorded(opaque, f, error);
}

static ksnap_err_t plan_start(ksnap_task_t *task, ksnap__plan_t *plan,
                              const ksnap__fired_list_t *log, int32_t nchan,
                              const int64_t *start, ksnap_error_t *error) {
  ksnap_err_t err = ksnap__plan_init(plan, log, nchan, start, error);

  plan->run = plan_run;
  plan->fire = plan_fire;
  plan->drop = free;
  plan->opaque = task;
  if (err)
    return ksnap_error_prefix(error, "%s", task->id);
  return ksnap__plan_advance(plan, error);
}

/* Record @p r of @p chan: run now, or held (copied) for the next firing. */
static ksnap_err_t plan_take(ksnap__plan_t *plan, int32_t chan,
                             const ksnap_record_t *r, ksnap_error_t *error) {
  ksnap_record_t *copy;

  if (!ksnap__plan_must_hold(plan, chan, r->offset))
    return ksnap__plan_record(plan, chan, r->offset, (void *)r, error);
  if (!(copy = ksnap__plan_copy_record(r)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (ksnap__plan_hold(plan, chan, r->offset, copy, error)) {
    free(copy);
    return error->code;
  }
  return KSNAP_ERR_OK;
}

/* ---- exchange input ---- */

typedef struct seg_s {
  ksnap_task_t *task;
  ksnap_gate_t *gate;
  ksnap_accept_t acc;
  ksnap_exchange_reader_t *rd;
  int64_t *chan_end; /* Q's off_c per channel */
  int64_t *part_end; /* max chan_end per partition */
  int64_t processed, skipped;
  ksnap__plan_t plan; /* the run's timer firings in the segment */
  ksnap_error_t *error;
  ksnap_err_t err;
} seg_t;

static int on_record(void *opaque, const ksnap_exchange_msg_t *m) {
  seg_t *sg = opaque;
  int32_t part = ksnap_gate_find_partition(sg->gate, m->topic, m->partition);
  ksnap_accept_verdict_t v;
  ksnap_in_t in = {0};
  ksnap_error_t e;
  int32_t chan;

  if (part < 0)
    return 0;
  if (m->offset + 1 > ksnap_gate_part(sg->gate, part)->pos)
    ksnap_gate_part(sg->gate, part)->pos = m->offset + 1;
  if (m->offset >= sg->part_end[part] ||
      ksnap__task_record_chan(sg->gate, m, &chan) ||
      m->offset >= sg->chan_end[chan] ||
      ksnap__task_record_kind(m, &in, NULL, &e))
    return 0;
  v = ksnap_accept_check(&sg->acc, ksnap_gate_chan(sg->gate, chan), m->offset,
                         m->generation, in.kind, in.id);
  if (v == KSNAP_ACCEPT_PROCESS && in.kind == KSNAP_REC_DATA) {
    ksnap_header_t stack[16], *heap;
    const ksnap_header_t *h = ksnap__task_in_headers(m->headers, m->header_cnt,
                                                     stack, 16, &heap);
    ksnap_record_t r = {m->key, m->key_len, m->value, m->value_len, h,
                        m->header_cnt, m->timestamp_ms, m->topic,
                        m->partition, m->offset, NULL, 0};
    if (ksnap__task_wm_is_msg(m))
      r.input_index = KSNAP__WM_RECORD;
    sg->processed++;
    if (m->header_cnt && !h)
      sg->err = ksnap_error_set(sg->error, KSNAP_ERR_NOMEM, "out of memory");
    else
      sg->err = plan_take(&sg->plan, chan, &r, sg->error);
    free(heap);
    if (sg->err)
      return 1;
  } else if (in.kind == KSNAP_REC_DATA) {
    sg->skipped++;
  }
  return 0;
}

static int seg_poll(void *arg, ksnap_error_t *error) {
  seg_t *sg = arg;

  return ksnap_exchange_reader_poll(sg->rd, POLL_MS, on_record, sg, error);
}

static int seg_done(const void *arg) {
  const seg_t *sg = arg;

  for (int32_t p = 0; p < ksnap_gate_nparts(sg->gate); p++)
    if (ksnap_gate_part_c(sg->gate, p)->pos < sg->part_end[p])
      return 0;
  return 1;
}

/* The segment's end: @p to's off_c per channel, their maximum per
 * partition. Every channel must have a position in @p to. */
static ksnap_err_t seg_ends(seg_t *sg, const ksnap_checkpoint_meta_t *to,
                            ksnap_error_t *error) {
  int32_t nch = ksnap_gate_nchans(sg->gate), n = 0;
  ksnap_chan_pos_t *pos = NULL;
  ksnap_err_t err;

  for (int32_t c = 0; c < nch; c++)
    sg->chan_end[c] = -1;
  if ((err = ksnap__task_chan_positions(sg->task, sg->gate, to, &pos, &n,
                                        error)))
    return err;
  for (int32_t i = 0; i < n; i++)
    sg->chan_end[pos[i].chan] = pos[i].off;
  free(pos);
  for (int32_t c = 0; c < nch; c++) {
    const ksnap_chan_t *ch = ksnap_gate_chan_c(sg->gate, c);
    char name[256];
    if (sg->chan_end[c] < 0) {
      ksnap_gate_chan_name(sg->gate, c, name, sizeof(name));
      return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                             "checkpoint %lld has no position for channel %s",
                             (long long)to->checkpoint_id, name);
    }
    if (sg->chan_end[c] > sg->part_end[ch->part])
      sg->part_end[ch->part] = sg->chan_end[c];
  }
  return KSNAP_ERR_OK;
}

/* Every partition to read must still hold the segment: from its start
 * (else retention deleted it) to its end. */
static ksnap_err_t seg_check_log(seg_t *sg, const ksnap_kafka_pos_t *start,
                                 size_t nstart,
                                 const ksnap_checkpoint_meta_t *from,
                                 const ksnap_checkpoint_meta_t *to,
                                 ksnap_error_t *error) {
  ksnap_task_t *task = sg->task;
  ksnap_err_t err;

  for (size_t i = 0; i < nstart; i++) {
    int64_t low = 0, high = 0;
    int32_t p = ksnap_gate_find_partition(sg->gate, start[i].topic,
                                          start[i].partition);
    if ((err = ksnap__consumer_watermarks(
             ksnap_exchange_reader_consumer(sg->rd), start[i].topic,
             start[i].partition, &low, &high, WATERMARKS_TIMEOUT_MS, error)))
      return err;
    if (low > start[i].offset)
      return ksnap_error_set(
          error, KSNAP_ERR_RETENTION,
          "%s: the replay needs %s[%d] from offset %lld (checkpoint %lld -> "
          "%lld) but the log starts at %lld: the data was deleted by "
          "retention; the lost epoch cannot be repaired",
          task->id, start[i].topic, (int)start[i].partition,
          (long long)start[i].offset,
          (long long)(from ? from->checkpoint_id : 0),
          (long long)to->checkpoint_id, (long long)low);
    if (high < sg->part_end[p])
      return ksnap_error_set(
          error, KSNAP_ERR_STATE,
          "%s: the replay needs %s[%d] up to offset %lld (checkpoint %lld) "
          "but the log ends at %lld", task->id, start[i].topic,
          (int)start[i].partition, (long long)sg->part_end[p],
          (long long)to->checkpoint_id, (long long)high);
  }
  return KSNAP_ERR_OK;
}

/* The plan of the segment: each channel starts at @p pos (from's). */
static ksnap_err_t seg_plan(seg_t *sg, const ksnap__fired_list_t *log,
                            const ksnap_chan_pos_t *pos, int32_t n,
                            ksnap_error_t *error) {
  int32_t nch = ksnap_gate_nchans(sg->gate);
  int64_t *start = calloc((size_t)nch + 1, sizeof(*start));
  ksnap_err_t err;

  if (!start)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++)
    if (pos[i].chan >= 0 && pos[i].chan < nch)
      start[pos[i].chan] = pos[i].off;
  err = plan_start(sg->task, &sg->plan, log, nch, start, error);
  free(start);
  return err;
}

ksnap_err_t ksnap__replay_exchange_segment(ksnap_task_t *task,
                                           const ksnap_checkpoint_meta_t *from,
                                           const ksnap_checkpoint_meta_t *to,
                                           const ksnap__fired_list_t *log,
                                           ksnap_error_t *error) {
  seg_t sg = {.task = task, .error = error};
  ksnap_chan_pos_t *pos = NULL;
  ksnap_kafka_pos_t *start = NULL;
  int32_t n = 0, nparts;
  size_t nstart = 0;
  ksnap_err_t err;

  if ((err = ksnap__task_new_gate(task, &sg.gate, error)))
    goto out;
  nparts = ksnap_gate_nparts(sg.gate);
  ksnap_accept_init(&sg.acc, sg.gate, to->generation);
  if (from &&
      ((err = ksnap__task_chan_positions(task, sg.gate, from, &pos, &n,
                                         error)) ||
       (err = ksnap_accept_restore(&sg.acc, sg.gate, to->generation,
                                   from->checkpoint_id, from->generation, pos,
                                   n, error))))
    goto out;
  sg.chan_end = calloc((size_t)ksnap_gate_nchans(sg.gate) + 1,
                       sizeof(*sg.chan_end));
  sg.part_end = calloc((size_t)nparts + 1, sizeof(*sg.part_end));
  start = calloc((size_t)nparts + 1, sizeof(*start));
  if (!sg.chan_end || !sg.part_end || !start) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((err = ksnap__task_wm_segment_begin(task, sg.gate, NULL, 0, error)) ||
      (err = seg_ends(&sg, to, error)) ||
      (err = seg_plan(&sg, log, pos, n, error)))
    goto out;
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
  if (!nstart) {
    err = ksnap__plan_finish(&sg.plan, error);
    goto out;
  }
  if (!(sg.rd = ksnap_exchange_reader_new(task->conf, start, nstart, error))) {
    err = error->code;
    goto out;
  }
  if ((err = seg_check_log(&sg, start, nstart, from, to, error)) ||
      (err = poll_until_cut(task, to->checkpoint_id, seg_poll, seg_done, &sg,
                            &sg.err, error)) ||
      (err = ksnap__plan_finish(&sg.plan, error)))
    goto out;
  KSNAP_INFO("task", "%s: epoch replay: checkpoint %lld replayed: %lld "
             "records processed, %lld skipped by the acceptance rule, "
             "%lld timers fired as in the run", task->id,
             (long long)to->checkpoint_id, (long long)sg.processed,
             (long long)sg.skipped, (long long)sg.plan.fired);
out:
  if (err)
    ksnap__task_wm_close(task);
  else
    err = ksnap__task_wm_segment_end(task, error);
  ksnap__plan_cleanup(&sg.plan);
  ksnap_exchange_reader_destroy(sg.rd);
  ksnap_gate_destroy(sg.gate);
  free(pos);
  free(start);
  free(sg.chan_end);
  free(sg.part_end);
  return err;
}

/* ---- source input (sink stages reading source topics) ---- */

typedef struct src_seg_s {
  ksnap_task_t *task;
  ksnap_source_t *src;
  ksnap_kafka_pos_t *pos; /* assigned partitions: next offset to read */
  int64_t *end;           /* per entry of pos: end offset, -1: nothing */
  size_t n;
  int64_t processed;
  ksnap__plan_t plan; /* the run's timer firings; channel: index in pos */
  ksnap_error_t *error;
  ksnap_err_t err;
} src_seg_t;

/* The offset of @p topic / @p partition in @p meta's snapshots of the
 * task's stage; -1 if none (or a logical position: nothing read yet). */
static int64_t meta_offset(ksnap_task_t *task,
                           const ksnap_checkpoint_meta_t *meta,
                           const char *topic, int32_t partition) {
  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    for (size_t k = 0; ksnap__restore_is_mine(task, &meta->tasks[i]) &&
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
    ksnap_header_t stack[16], *heap;
    const ksnap_header_t *h;
    if (sg->pos[i].partition != m->partition ||
        strcmp(sg->pos[i].topic, m->topic))
      continue;
    if (m->offset + 1 > sg->pos[i].offset)
      sg->pos[i].offset = m->offset + 1;
    if (m->offset >= sg->end[i])
      return 0;
    sg->processed++;
    h = ksnap__task_in_headers(m->headers, m->header_cnt, stack, 16, &heap);
    ksnap_record_t r = {m->key, m->key_len, m->value, m->value_len, h,
                        m->header_cnt, m->timestamp_ms, m->topic,
                        m->partition, m->offset, NULL, 0};
    if (m->header_cnt && !h)
      sg->err = ksnap_error_set(sg->error, KSNAP_ERR_NOMEM, "out of memory");
    else
      sg->err = plan_take(&sg->plan, (int32_t)i, &r, sg->error);
    free(heap);
    return sg->err ? 1 : 0;
  }
  return 0;
}

static int src_seg_poll(void *arg, ksnap_error_t *error) {
  src_seg_t *sg = arg;

  return ksnap_source_poll(sg->src, POLL_MS, on_source_record, sg, error);
}

static int src_seg_done(const void *arg) {
  const src_seg_t *sg = arg;

  for (size_t i = 0; i < sg->n; i++)
    if (sg->pos[i].offset < sg->end[i])
      return 0;
  return 1;
}

/* Each partition's end (@p to's offset) and a check that the log still
 * starts at or below the first offset to read. */
static ksnap_err_t src_seg_ends(src_seg_t *sg,
                                const ksnap_checkpoint_meta_t *from,
                                const ksnap_checkpoint_meta_t *to,
                                ksnap_error_t *error) {
  ksnap_task_t *task = sg->task;
  ksnap_err_t err;

  for (size_t i = 0; i < sg->n; i++) {
    int64_t low = 0, high = 0;
    sg->end[i] = meta_offset(task, to, sg->pos[i].topic, sg->pos[i].partition);
    if (sg->end[i] < 0)
      continue;
    if ((err = ksnap__consumer_watermarks(
             ksnap_source_consumer(sg->src), sg->pos[i].topic,
             sg->pos[i].partition, &low, &high, WATERMARKS_TIMEOUT_MS, error)))
      return err;
    /* a logical start (nothing read before C) cannot be checked: the
     * original run read from the log start of its time */
    if (sg->pos[i].offset >= 0 && low > sg->pos[i].offset &&
        sg->pos[i].offset < sg->end[i])
      return ksnap_error_set(
          error, KSNAP_ERR_RETENTION,
          "%s: the replay needs source %s[%d] from offset %lld (checkpoint "
          "%lld -> %lld) but the log starts at %lld: the data was deleted "
          "by retention; the lost epoch cannot be repaired", task->id,
          sg->pos[i].topic, (int)sg->pos[i].partition,
          (long long)sg->pos[i].offset,
          (long long)(from ? from->checkpoint_id : 0),
          (long long)to->checkpoint_id, (long long)low);
    if (sg->pos[i].offset < 0)
      sg->pos[i].offset = low;
  }
  return KSNAP_ERR_OK;
}

/* The plan of the segment: each partition starts at its first offset. */
static ksnap_err_t src_seg_plan(src_seg_t *sg, const ksnap__fired_list_t *log,
                                ksnap_error_t *error) {
  int64_t *start = calloc(sg->n + 1, sizeof(*start));
  ksnap_err_t err;

  if (!start)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < sg->n; i++)
    start[i] = sg->pos[i].offset;
  err = plan_start(sg->task, &sg->plan, log, (int32_t)sg->n, start, error);
  free(start);
  return err;
}

/* Source records carry no generations, so the whole range from @p from's
 * offsets (NULL: the beginning) to @p to's is one segment. */
ksnap_err_t ksnap__replay_source_segment(ksnap_task_t *task,
                                         const ksnap_checkpoint_meta_t *from,
                                         const ksnap_checkpoint_meta_t *to,
                                         const ksnap__fired_list_t *log,
                                         ksnap_error_t *error) {
  src_seg_t sg = {.task = task, .error = error};
  ksnap_err_t err;

  if (!(sg.src = ksnap__task_new_source(task, from, error))) {
    err = error->code;
    goto out;
  }
  if ((err = ksnap_source_positions(sg.src, &sg.pos, &sg.n, error)))
    goto out;
  if (!(sg.end = calloc(sg.n + 1, sizeof(*sg.end)))) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((err = ksnap__task_wm_segment_begin(task, NULL, sg.pos, sg.n,
                                          error)) ||
      (err = src_seg_ends(&sg, from, to, error)) ||
      (err = src_seg_plan(&sg, log, error)))
    goto out;
  KSNAP_INFO("task", "%s: epoch replay: source input of checkpoints "
             "%lld -> %lld, %zu partitions", task->id,
             (long long)(from ? from->checkpoint_id : 0),
             (long long)to->checkpoint_id, sg.n);
  if ((err = poll_until_cut(task, to->checkpoint_id, src_seg_poll,
                            src_seg_done, &sg, &sg.err, error)) ||
      (err = ksnap__plan_finish(&sg.plan, error)))
    goto out;
  KSNAP_INFO("task", "%s: epoch replay: source input up to checkpoint %lld "
             "replayed: %lld records processed, %lld timers fired as in the "
             "run", task->id, (long long)to->checkpoint_id,
             (long long)sg.processed, (long long)sg.plan.fired);
out:
  if (err)
    ksnap__task_wm_close(task);
  else
    err = ksnap__task_wm_segment_end(task, error);
  ksnap__plan_cleanup(&sg.plan);
  ksnap_source_destroy(sg.src);
  if (sg.pos)
    ksnap_kafka_pos_free(sg.pos, sg.n);
  free(sg.end);
  return err;
}
