/*
 * Opening and closing a task's inputs, outputs and state, fresh or
 * restored from a completed checkpoint (issue 5 item 9). Runs on the
 * task's processing thread (at start and on RESTORE).
 *
 * Restore from checkpoint N (generation G): the task reads
 * <job>/chk-N/_metadata (the coordinator writes it; COMPLETE(N) makes it
 * valid), restores its state from the snapshot files of every task of its
 * stage (so a changed parallelism redistributes key groups), starts its
 * source partitions at the offsets of the stage's snapshots, and for an
 * exchange reader sets off_c / passed_c per channel into the acceptance
 * rule (accept.h), which also gives each partition's start offset.
 */
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "ksnap/storage.h"
#include "replay.h"
#include "task_int.h"
#include "base/util.h"

#define KAFKA_TIMEOUT_MS 30000

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

/* Loads and decodes <job>/chk-<id>/_metadata. */
ksnap_err_t ksnap__task_load_meta(ksnap_task_t *task, int64_t id,
                                  ksnap_storage_t *st,
                                  ksnap_checkpoint_meta_t *meta,
                                  ksnap_error_t *error) {
  char key[512];
  ksnap_buf_t buf;
  ksnap_err_t err;

  snprintf(key, sizeof(key), "%s/chk-%lld/_metadata", ksnap_job_name(task->job),
           (long long)id);
  ksnap_buf_init(&buf);
  if (!(err = ksnap_storage_get(st, key, &buf, error)))
    err = ksnap_codec_meta_decode(buf.data, buf.len, meta, error);
  ksnap_buf_cleanup(&buf);
  if (err)
    ksnap_error_prefix(error, "restoring %s from checkpoint %lld", task->id,
                       (long long)id);
  return err;
}

static int is_mine(const ksnap_task_t *task, const ksnap_task_snapshot_t *ts) {
  return !strcmp(ts->task.stage, ksnap_job_stage_name(task->stage));
}

/* A keyed timer in a restored file (chains in order: a delta's tombstone
 * removes what an older file added). */
static int restore_timer(void *opaque, const ksnap_state_entry_t *e) {
  ksnap_task_t *task = opaque;
  int lo, hi;
  int64_t t = 0;

  ksnap_state_key_group_range(task->max_par, task->parallelism, task->index,
                              &lo, &hi);
  if (strcmp(e->state, KSNAP__TIMER_STATE) || e->key_group < lo ||
      e->key_group >= hi || !e->has_user_key || e->uklen != 8)
    return 0;
  for (int i = 0; i < 8; i++)
    t = (int64_t)((uint64_t)t << 8 | e->user_key[i]);
  for (size_t i = 0; i < task->ntimers; i++)
    if (task->timers[i].key && task->timers[i].time_ms == t &&
        task->timers[i].klen == e->klen &&
        !memcmp(task->timers[i].key, e->key, e->klen)) {
      free(task->timers[i].key);
      task->timers[i] = task->timers[--task->ntimers];
      break;
    }
  if (!e->tombstone && ksnap__task_add_timer(task, t, e->key, e->klen, NULL))
    return 1;
  return 0;
}

/* State: one chain per old task of the stage (old task order). */
ksnap_err_t ksnap__task_restore_state(ksnap_task_t *task,
                                      const ksnap_checkpoint_meta_t *meta,
                                      ksnap_storage_t *st,
                                      ksnap_error_t *error) {
  size_t n = 0, nf = 0;
  int32_t maxidx = -1;
  ksnap_state_chain_t *chains = calloc(meta->task_cnt + 1, sizeof(*chains));
  ksnap_state_file_t *files;
  ksnap_buf_t *bufs;
  ksnap_err_t err = KSNAP_ERR_OK;

  for (size_t i = 0; i < meta->task_cnt; i++)
    nf += meta->tasks[i].handle_cnt;
  files = calloc(nf + 1, sizeof(*files));
  bufs = calloc(nf + 1, sizeof(*bufs));
  if (!chains || !files || !bufs) {
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  nf = 0;
  /* old task order; a gap (a repair from an aborted checkpoint's ACKs,
   * where a task of the stage did not ACK) is skipped */
  for (size_t i = 0; i < meta->task_cnt; i++)
    if (is_mine(task, &meta->tasks[i]) && meta->tasks[i].task.index > maxidx)
      maxidx = meta->tasks[i].task.index;
  for (int32_t idx = 0; idx <= maxidx && !err; idx++) {
    const ksnap_task_snapshot_t *ts = NULL;
    for (size_t i = 0; i < meta->task_cnt; i++)
      if (is_mine(task, &meta->tasks[i]) && meta->tasks[i].task.index == idx)
        ts = &meta->tasks[i];
    if (!ts)
      continue;
    chains[n].files = &files[nf];
    for (size_t h = 0; h < ts->handle_cnt && !err; h++, nf++) {
      ksnap_buf_init(&bufs[nf]);
      err = ksnap_storage_get(st, ts->handles[h].path, &bufs[nf], error);
      files[nf].data = bufs[nf].data;
      files[nf].len = bufs[nf].len;
      chains[n].nfiles++;
    }
    n++;
  }
  if (!err && n)
    err = ksnap_state_restore(task->state, chains, n, error);
  for (size_t i = 0; !err && i < nf; i++)
    err = ksnap_state_file_decode(files[i].data, files[i].len, NULL,
                                  restore_timer, task, error);
out:
  for (size_t i = 0; bufs && i < nf; i++)
    ksnap_buf_cleanup(&bufs[i]);
  free(bufs);
  free(files);
  free(chains);
  return err;
}

static ksnap_err_t open_source(ksnap_task_t *task,
                               const ksnap_checkpoint_meta_t *meta,
                               ksnap_error_t *error) {
  size_t nin = ksnap_job_stage_input_cnt(task->stage), nstart = 0;
  const char **topics = calloc(nin + 1, sizeof(*topics));
  ksnap_kafka_pos_t *start = NULL;
  size_t cap = 0;

  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    if (is_mine(task, &meta->tasks[i]))
      cap += meta->tasks[i].offset_cnt;
  start = calloc(cap + 1, sizeof(*start));
  if (!topics || !start) {
    free(topics);
    free(start);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; meta && i < meta->task_cnt; i++)
    for (size_t k = 0; is_mine(task, &meta->tasks[i]) &&
                       k < meta->tasks[i].offset_cnt; k++) {
      const ksnap_source_offset_t *o = &meta->tasks[i].offsets[k];
      start[nstart++] = (ksnap_kafka_pos_t){o->topic, o->partition, o->offset};
    }
  for (size_t i = 0; i < nin; i++)
    topics[i] = ksnap_job_topic_name(ksnap_job_stage_input(task->stage, i));
  task->source = ksnap_source_new(task->conf, topics, nin, task->index,
                                  task->parallelism, start, nstart,
                                  KAFKA_TIMEOUT_MS, error);
  free(topics);
  free(start);
  return task->source ? KSNAP_ERR_OK : error->code;
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
    for (size_t k = 0; is_mine(task, &meta->tasks[i]) &&
                       k < meta->tasks[i].channel_cnt; k++) {
      const ksnap_channel_pos_t *c = &meta->tasks[i].channels[k];
      int32_t chan;
      if (ksnap_gate_find_partition(gate, c->topic, c->partition) < 0 ||
          ksnap_gate_find(gate, c->topic, c->partition, c->writer.index,
                          &chan, NULL) || n >= nch)
        continue;
      pos[n++] = (ksnap_chan_pos_t){chan, c->off_c, c->passed, 0};
    }
  *posp = pos;
  *np = n;
  return KSNAP_ERR_OK;
}

static ksnap_err_t restore_channels(ksnap_task_t *task,
                                    const ksnap_checkpoint_meta_t *meta,
                                    ksnap_accept_t *acc, ksnap_error_t *error) {
  ksnap_chan_pos_t *pos;
  int32_t n;
  ksnap_err_t err;

  if ((err = ksnap__task_chan_positions(task, task->gate, meta, &pos, &n,
                                        error)))
    return err;
  err = ksnap_accept_restore(acc, task->gate, atomic_load(&task->gen),
                             task->base_id, task->base_gen, pos, n, error);
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

static ksnap_err_t open_reader(ksnap_task_t *task,
                               const ksnap_checkpoint_meta_t *meta,
                               ksnap_error_t *error) {
  ksnap_accept_t acc;
  ksnap_aligner_conf_t alc = {0};
  ksnap_kafka_pos_t *pos;
  ksnap_err_t err;

  if ((err = ksnap__task_new_gate(task, &task->gate, error)))
    return err;
  ksnap_accept_init(&acc, task->gate, atomic_load(&task->gen));
  if (meta && (err = restore_channels(task, meta, &acc, error)))
    return err;
  alc.mode = align_mode(task->conf, &alc.timeout_ms);
  alc.free_rec = free_rec;
  if (!(task->al = ksnap_aligner_new(task->gate, &acc, &alc)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  pos = calloc((size_t)ksnap_gate_nparts(task->gate) + 1, sizeof(*pos));
  if (!pos)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < ksnap_gate_nparts(task->gate); i++) {
    const ksnap_gate_part_t *p = ksnap_gate_part_c(task->gate, i);
    pos[i] = (ksnap_kafka_pos_t){p->topic, p->partition, p->pos};
  }
  task->reader = ksnap_exchange_reader_new(
      task->conf, pos, (size_t)ksnap_gate_nparts(task->gate), error);
  free(pos);
  return task->reader ? KSNAP_ERR_OK : error->code;
}

static ksnap_err_t open_outputs(ksnap_task_t *task, ksnap_error_t *error) {
  ksnap_err_t err;

  for (size_t i = 0; i < ksnap_job_stage_output_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_EXCHANGE)
      continue;
    task->ex_topic = ksnap_job_topic_name(t);
    task->ex_parts = ksnap_job_topic_partitions(t);
    task->ex_reader_p = 1;
    for (size_t s = ksnap_job_stage_cnt(task->job); s-- > 0;) {
      const ksnap_job_stage_t *r = ksnap_job_stage(task->job, s);
      for (size_t k = 0; k < ksnap_job_stage_input_cnt(r); k++)
        if (ksnap_job_stage_input(r, k) == t)
          task->ex_reader_p = ksnap_job_stage_parallelism(r);
    }
    if (!(task->writer = ksnap_exchange_new(task->conf, task->id,
                                            atomic_load(&task->gen),
                                            &task->ex_topic, 1,
                                            KAFKA_TIMEOUT_MS, error)))
      return error->code;
  }
  if (!task->is_sink)
    return KSNAP_ERR_OK;
  if (!(task->sink = ksnap_sink_new(task->conf,
                                    ksnap_job_stage_name(task->stage),
                                    task->index, KAFKA_TIMEOUT_MS, error)))
    return error->code;
  for (size_t i = 0; i < ksnap_job_stage_output_cnt(task->stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_output(task->stage, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_SINK)
      ksnap_sink_warm_topic(task->sink, ksnap_job_topic_name(t), 5000);
  }
  /* Epoch replay (replay.h): every slot id is fenced now
   * (ksnap_sink_new); if the last committed transaction is older than
   * base_id, replay and commit the missing output first. */
  if ((err = ksnap__replay_epoch(task, error)))
    return err;
  task->txn_epoch = (task->base_id > 0 ? task->base_id : 0) + 1;
  if ((err = ksnap_sink_begin(task->sink, task->txn_epoch, error)))
    return err;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_open_io(ksnap_task_t *task, int64_t gen,
                                int64_t base_id, ksnap_error_t *error) {
  ksnap_checkpoint_meta_t meta, *mp = NULL;
  ksnap_storage_t *st = NULL;
  ksnap_state_conf_t sc;
  ksnap_err_t err;

  memset(&meta, 0, sizeof(meta));
  atomic_store(&task->gen, gen);
  task->base_id = base_id > 0 ? base_id : 0;
  task->base_gen = -1;
  task->last_trigger = task->base_id;
  ksnap_state_conf_init(&sc);
  sc.max_parallelism = task->max_par;
  sc.parallelism = task->parallelism;
  sc.task_index = task->index;
  ksnap_conf_get_bool(task->conf, "state.backend.incremental",
                      &sc.incremental);
  if ((err = ksnap_state_new(&sc, &task->state, error)))
    return err;
  if ((err = ksnap_state_register(task->state, KSNAP__TIMER_STATE,
                                  KSNAP_STATE_MAP, 0, &task->timer_state,
                                  error)))
    return err;
  if (task->base_id) {
    if ((err = ksnap__task_storage_open(task->conf, &st, error)) ||
        (err = ksnap__task_load_meta(task, task->base_id, st, &meta, error)))
      goto out;
    mp = &meta;
    task->base_gen = meta.generation;
  }
  /* outputs first: a sink fences, then replays a lost commit (replay.c),
   * and only then is chk-N's state loaded */
  if ((err = open_outputs(task, error)))
    goto out;
  if (mp && (err = ksnap__task_restore_state(task, &meta, st, error)))
    goto out;
  err = task->is_source ? open_source(task, mp, error)
                        : open_reader(task, mp, error);
  if (!err)
    KSNAP_INFO("task", "%s: running in generation %lld%s%lld", task->id,
               (long long)gen, task->base_id ? ", restored from checkpoint "
                                             : ", fresh start, checkpoint ",
               (long long)task->base_id);
out:
  ksnap_checkpoint_meta_cleanup(&meta);
  ksnap_storage_destroy(st);
  return err;
}

void ksnap__task_close_io(ksnap_task_t *task) {
  ksnap__task_wait_async(task);
  ksnap_source_destroy(task->source);
  ksnap_exchange_reader_destroy(task->reader);
  ksnap_aligner_destroy(task->al);
  ksnap_gate_destroy(task->gate);
  ksnap_exchange_destroy(task->writer);
  ksnap_sink_destroy(task->sink);
  ksnap_state_destroy(task->state);
  for (size_t i = 0; i < task->nsrcpos; i++)
    ksnap_kafka_pos_free(task->srcpos[i].pos, task->srcpos[i].n);
  task->nsrcpos = 0;
  pthread_mutex_lock(&task->mu);
  task->ntxns = 0;
  pthread_mutex_unlock(&task->mu);
  ksnap__task_free_timers(task);
  task->source = NULL;
  task->reader = NULL;
  task->al = NULL;
  task->gate = NULL;
  task->writer = NULL;
  task->sink = NULL;
  task->state = NULL;
  task->ex_topic = NULL;
}
