/*
 * A task's input side (task_input.h): task->in is this file's and
 * task_poll.c's. Here: opening and closing the inputs on the processing
 * thread, and what the rest of the task needs of them. A source task
 * reads a Kafka source, started at the offsets of the stage's snapshots;
 * otherwise the gate of its exchange input channels (job graph order),
 * the acceptance rule restored from the checkpoint's channel positions
 * (off_c / passed_c per channel, accept.h, which also give each
 * partition's start offset), the aligner and the exchange reader. The
 * epoch replay (replay_segment.c) opens its own source, gate and reader
 * with the same functions, and decodes exchange records (their channel and
 * kind) as the live loop (task_poll.c) does. The snapshot reads the
 * source's positions and names the SNAPSHOT action's channels here; the
 * source's offsets are committed to the group here.
 */
#include <stdlib.h>
#include <string.h>

#include "restore.h"
#include "task_input.h"
#include "restore_fit.h"
#include "task_int.h"

#define KAFKA_TIMEOUT_MS 30000

ksnap_source_t *ksnap__task_new_source(ksnap_task_t *task,
                                       const ksnap_checkpoint_meta_t *meta,
                                       ksnap_error_t *error) {
  size_t nin = ksnap_job_stage_input_cnt(task->stage), nstart = 0;
  const char **topics = calloc(nin + 1, sizeof(*topics));
  ksnap_kafka_pos_t *start = NULL;
  ksnap_source_t *src = NULL;
  size_t cap = 0;

  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    if (ksnap__restore_is_mine(task, &meta->tasks[i]))
      cap += meta->tasks[i].offset_cnt;
  start = calloc(cap + 1, sizeof(*start));
  if (!topics || !start) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    for (size_t k = 0; ksnap__restore_is_mine(task, &meta->tasks[i]) &&
                       k < meta->tasks[i].offset_cnt; k++) {
      const ksnap_source_offset_t *o = &meta->tasks[i].offsets[k];
      start[nstart++] = (ksnap_kafka_pos_t){o->topic, o->partition, o->offset};
    }
  for (size_t i = 0; i < nin; i++)
    topics[i] = ksnap_job_topic_name(ksnap_job_stage_input(task->stage, i));
  src = ksnap_source_new(task->conf, topics, nin, task->index,
                         task->parallelism, start, nstart, KAFKA_TIMEOUT_MS,
                         error);
out:
  free(topics);
  free(start);
  return src;
}

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

int ksnap__task_record_chan(ksnap_gate_t *gate, const ksnap_exchange_msg_t *m,
                            int32_t *chanp) {
  int32_t p = ksnap_gate_find_partition(gate, m->topic, m->partition);
  int32_t w = writer_index(m->writer);

  /* a writer the upstream stage had before a restore at a lower
   * parallelism: its records are old, and skipped without a log line */
  if (p >= 0 && w >= ksnap_gate_part_c(gate, p)->nwriters)
    return -1;
  return ksnap_gate_find(gate, m->topic, m->partition, w, chanp, NULL);
}

ksnap_err_t ksnap__task_record_kind(const ksnap_exchange_msg_t *m,
                                    ksnap_in_t *in,
                                    ksnap_ckpt_options_t *opts,
                                    ksnap_error_t *error) {
  ksnap_barrier_t b;
  ksnap_err_t err;

  in->kind = KSNAP_REC_DATA;
  if (!m->is_control)
    return KSNAP_ERR_OK;
  if (!strcmp(m->ctl, "end")) {
    in->kind = KSNAP_REC_END;
    return KSNAP_ERR_OK;
  }
  if (ksnap__task_wm_is_msg(m))
    return KSNAP_ERR_OK; /* a watermark: in channel order, as data */
  if ((err = ksnap_codec_barrier_decode(m->value, m->value_len, &b, error)))
    return err;
  in->kind = b.kind == KSNAP_BARRIER_KIND_CANCEL ? KSNAP_REC_CANCEL
                                                 : KSNAP_REC_BARRIER;
  in->id = b.checkpoint_id;
  in->trigger_ts_ms = b.timestamp_ms;
  in->must_align = b.options.is_savepoint;
  if (opts)
    *opts = b.options;
  ksnap_barrier_cleanup(&b);
  return KSNAP_ERR_OK;
}

/* Does any of the task's snapshots in @p meta name a channel of @p topic? */
static int topic_in_point(ksnap_task_t *task,
                          const ksnap_checkpoint_meta_t *meta,
                          const char *topic) {
  for (size_t i = 0; i < meta->task_cnt; i++)
    for (size_t k = 0; ksnap__restore_is_mine(task, &meta->tasks[i]) &&
                       k < meta->tasks[i].channel_cnt; k++)
      if (!strcmp(meta->tasks[i].channels[k].topic, topic))
        return 1;
  return 0;
}

/* Channel positions of the stage's snapshots that name @p gate's channels
 * (malloc'd into *posp, *np of them). */
ksnap_err_t ksnap__task_chan_positions(ksnap_task_t *task, ksnap_gate_t *gate,
                                       const ksnap_checkpoint_meta_t *meta,
                                       ksnap_chan_pos_t **posp, int32_t *np,
                                       ksnap_error_t *error) {
  int32_t nch = ksnap_gate_nchans(gate), n = 0;
  ksnap_chan_pos_t *pos = calloc((size_t)nch + 1, sizeof(*pos));

  *posp = NULL;
  *np = 0;
  if (!pos)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < meta->task_cnt; i++)
    for (size_t k = 0; ksnap__restore_is_mine(task, &meta->tasks[i]) &&
                       k < meta->tasks[i].channel_cnt; k++) {
      const ksnap_channel_pos_t *c = &meta->tasks[i].channels[k];
      int32_t chan;
      if (ksnap_gate_find_partition(gate, c->topic, c->partition) < 0 ||
          ksnap_gate_find(gate, c->topic, c->partition, c->writer.index,
                          &chan, NULL) || n >= nch)
        continue;
      pos[n++] = (ksnap_chan_pos_t){chan, c->off_c, c->passed, 0};
    }
  /* a writer the checkpoint's stage did not have (its parallelism grew
   * since): nothing of it is in the state and it wrote nothing in the
   * checkpoint's generation; or a reading stage the checkpoint does not
   * have (new in the job graph, it starts empty); or a topic the point
   * does not name (the exchange topic of a fan-out reader is named by its
   * parallelism, JOB.W.pP, so a rescale reads a new one; or the point is
   * another job's): only the records of the new generation count, as on
   * a fresh start (offset 0, passed). ksnap__restore_fit_inputs() has
   * refused a point with records in flight for a changed stage, so
   * nothing of the point's epoch is left unread in the old topic. */
  int fresh = !ksnap__restore_fit_old_p(meta, ksnap_job_stage_name(task->stage));
  for (int32_t ch = 0; ch < nch; ch++) {
    const ksnap_chan_t *c = ksnap_gate_chan_c(gate, ch);
    const ksnap_gate_part_t *p = ksnap_gate_part_c(gate, c->part);
    int covered = 0;
    for (int32_t k = 0; k < n && !covered; k++)
      covered = pos[k].chan == ch;
    if (!covered && n < nch &&
        (fresh || c->writer >= ksnap__restore_fit_old_p(meta, p->stage) ||
         !topic_in_point(task, meta, p->topic)))
      pos[n++] = (ksnap_chan_pos_t){ch, 0, 1, 0};
  }
  *posp = pos;
  *np = n;
  return KSNAP_ERR_OK;
}

/* The acceptance rule restored from checkpoint @p base_id (@p meta). */
static ksnap_err_t restore_channels(ksnap_task_t *task, int64_t base_id,
                                    const ksnap_checkpoint_meta_t *meta,
                                    ksnap_accept_t *acc, ksnap_error_t *error) {
  ksnap_chan_pos_t *pos;
  int32_t n;
  ksnap_err_t err;

  if ((err = ksnap__task_chan_positions(task, task->in.gate, meta, &pos, &n,
                                        error)))
    return err;
  err = ksnap_accept_restore(acc, task->in.gate, atomic_load(&task->gen),
                             base_id, meta->generation, pos, n, error);
  free(pos);
  return err;
}

static ksnap_align_mode_t align_mode(const ksnap_conf_t *conf,
                                     int64_t *timeout_ms) {
  const char *mode = "EXACTLY_ONCE";
  int unaligned = 0;

  *timeout_ms = 0;
  ksnap_conf_get_str(conf, "execution.checkpointing.mode", &mode);
  ksnap_conf_get_bool(conf, "execution.checkpointing.unaligned.enabled",
                      &unaligned);
  ksnap_conf_get_duration_ms(
      conf, "execution.checkpointing.aligned-checkpoint-timeout", timeout_ms);
  if (mode && !strcmp(mode, "AT_LEAST_ONCE"))
    return KSNAP_ALIGN_AT_LEAST_ONCE;
  if (!unaligned)
    return KSNAP_ALIGN_ALIGNED;
  return *timeout_ms > 0 ? KSNAP_ALIGN_ALIGNED_TIMEOUT : KSNAP_ALIGN_UNALIGNED;
}

/* Bytes an alignment may buffer (the key is always valued: default). */
static size_t align_limit(const ksnap_conf_t *conf) {
  int64_t max = 0;

  ksnap_conf_get_size(
      conf, "execution.checkpointing.alignment.max-buffered-bytes", &max);
  return max > 0 ? (size_t)max : 0;
}

static void free_rec(void *rec, void *opaque) {
  (void)opaque;
  free(rec);
}

/* The gate of the task's exchange input channels (job graph order). */
ksnap_err_t ksnap__task_new_gate(ksnap_task_t *task, ksnap_gate_t **gatep,
                                 ksnap_error_t *error) {
  ksnap_gate_t *gate;
  int32_t parts[1024];
  ksnap_err_t err;

  if (!(*gatep = gate = ksnap_gate_new()))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < ksnap_job_stage_input_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_input(task->stage, i);
    const ksnap_job_stage_t *w = ksnap_job_topic_writer(t);
    size_t n;
    if (!w)
      return ksnap_error_set(error, KSNAP_ERR_UNSUPPORTED,
                             "%s: a stage reading both source topics and "
                             "stages is not supported yet", task->id);
    n = ksnap_job_task_partitions(task->stage, task->index,
                                  ksnap_job_topic_partitions(t), parts, 1024);
    for (size_t k = 0; k < n && k < 1024; k++)
      if ((err = ksnap_gate_add_partition(
               gate, ksnap_job_topic_name(t), parts[k],
               ksnap_job_stage_name(w), ksnap_job_stage_parallelism(w), NULL,
               error)))
        return err;
  }
  return KSNAP_ERR_OK;
}

static ksnap_err_t open_reader(ksnap_task_t *task, int64_t base_id,
                               const ksnap_checkpoint_meta_t *meta,
                               ksnap_error_t *error) {
  ksnap__task_in_t *in = &task->in;
  ksnap_accept_t acc;
  ksnap_aligner_conf_t alc = {0};
  ksnap_kafka_pos_t *pos;
  ksnap_err_t err;

  if ((err = ksnap__task_new_gate(task, &in->gate, error)))
    return err;
  ksnap_accept_init(&acc, in->gate, atomic_load(&task->gen));
  if (meta && (err = restore_channels(task, base_id, meta, &acc, error)))
    return err;
  alc.mode = align_mode(task->conf, &alc.timeout_ms);
  alc.max_buffered_bytes = align_limit(task->conf);
  ksnap_conf_get_bool(task->conf,
                      "execution.checkpointing.unaligned.snapshot-on-trigger",
                      &alc.snapshot_on_trigger);
  alc.free_rec = free_rec;
  if (!(in->al = ksnap_aligner_new(in->gate, &acc, &alc)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  pos = calloc((size_t)ksnap_gate_nparts(in->gate) + 1, sizeof(*pos));
  if (!pos)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < ksnap_gate_nparts(in->gate); i++) {
    const ksnap_gate_part_t *p = ksnap_gate_part_c(in->gate, i);
    pos[i] = (ksnap_kafka_pos_t){p->topic, p->partition, p->pos};
  }
  in->reader = ksnap_exchange_reader_new(
      task->conf, pos, (size_t)ksnap_gate_nparts(in->gate), error);
  free(pos);
  return in->reader ? KSNAP_ERR_OK : error->code;
}

/* The processed positions per input channel (task_input.h), from where
 * the run starts: @p meta's positions (NULL: 0), as if the records before
 * them were processed in this run (an epoch replay that spans a restore
 * runs them before the run's first firing). */
static ksnap_err_t open_processed(ksnap_task_t *task,
                                  const ksnap_checkpoint_meta_t *meta,
                                  ksnap_error_t *error) {
  ksnap__task_in_t *in = &task->in;
  ksnap_chan_pos_t *pos = NULL;
  int32_t npos = 0;
  size_t n = 0;
  ksnap_err_t err;

  if (in->source) {
    if ((err = ksnap_source_positions(in->source, &in->src_parts, &n, error)))
      return err;
  } else {
    n = (size_t)ksnap_gate_nchans(in->gate);
    if (meta && (err = ksnap__task_chan_positions(task, in->gate, meta, &pos,
                                                  &npos, error)))
      return err;
  }
  in->nprocessed = (int32_t)n;
  if (!(in->processed = calloc(n + 1, sizeof(*in->processed)))) {
    free(pos);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; in->source && i < n; i++)
    in->processed[i] = in->src_parts[i].offset > 0 ? in->src_parts[i].offset
                                                   : 0;
  for (int32_t i = 0; i < npos; i++)
    if (pos[i].chan >= 0 && pos[i].chan < in->nprocessed)
      in->processed[pos[i].chan] = pos[i].off;
  free(pos);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_open_inputs(ksnap_task_t *task, int64_t base_id,
                                    const ksnap_checkpoint_meta_t *meta,
                                    ksnap_error_t *error) {
  ksnap_err_t err;

  task->in.last_trigger = base_id;
  if (!task->is_source)
    err = open_reader(task, base_id, meta, error);
  else if (!(task->in.source = ksnap__task_new_source(task, meta, error)))
    err = error->code;
  else
    err = KSNAP_ERR_OK;
  if (!err)
    err = open_processed(task, meta, error);
  return err ? err : ksnap__task_bounded_open(task, error);
}

void ksnap__task_close_inputs(ksnap_task_t *task) {
  ksnap__task_in_t *in = &task->in;

  ksnap_source_destroy(in->source);
  ksnap_exchange_reader_destroy(in->reader);
  ksnap_aligner_destroy(in->al);
  ksnap_gate_destroy(in->gate);
  ksnap__task_bounded_close(task);
  if (in->src_parts)
    ksnap_kafka_pos_free(in->src_parts, (size_t)in->nprocessed);
  free(in->processed);
  in->processed = NULL;
  in->src_parts = NULL;
  in->nprocessed = 0;
  in->source = NULL;
  in->reader = NULL;
  in->al = NULL;
  in->gate = NULL;
}

ksnap_err_t ksnap__task_source_positions(ksnap_task_t *task,
                                         ksnap_kafka_pos_t **posp, size_t *np,
                                         ksnap_error_t *error) {
  ksnap_err_t err = ksnap_source_positions(task->in.source, posp, np, error);

  if (!err) /* records past the end were skipped: never past it */
    ksnap__task_bounded_clamp(task, *posp, *np);
  return err;
}

ksnap_err_t ksnap__task_commit_offsets(ksnap_task_t *task,
                                       const ksnap_kafka_pos_t *pos, size_t n,
                                       ksnap_error_t *error) {
  return ksnap_source_commit(task->in.source, pos, n, error);
}

ksnap_err_t ksnap__task_cut_channels(ksnap_task_t *task,
                                     const ksnap_action_t *act,
                                     ksnap_channel_pos_t **chansp,
                                     size_t *np, ksnap_error_t *error) {
  ksnap_gate_t *gate = task->in.gate;
  ksnap_channel_pos_t *chans;

  if (!(*chansp = chans = calloc((size_t)act->npos + 1, sizeof(*chans))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < act->npos; i++, (*np)++) {
    const ksnap_chan_t *c = ksnap_gate_chan_c(gate, act->pos[i].chan);
    const ksnap_gate_part_t *p = ksnap_gate_part_c(gate, c->part);
    chans[i] = (ksnap_channel_pos_t){
        strdup(p->topic), p->partition, {strdup(p->stage), c->writer},
        act->pos[i].off, act->pos[i].passed != 0};
  }
  return KSNAP_ERR_OK;
}
