/*
 * `ksnap verify`: one run (see cmd_verify.h). One loop, every 50 ms:
 * reap and restart processes, produce the input lines that are due
 * (evenly over --duration), carry out the kills that are due, and, once
 * the input is produced, the kill plan is done and every process runs,
 * follow the job to the end of its work:
 *
 *   INPUT --(all produced, plan done)--> CAUGHT_UP --(the job's group has
 *   no lag on the source topic: a completed checkpoint covers every
 *   line; M = the last COMPLETE now)--> COMMITTED --(COMPLETE of M+2: the
 *   sinks committed M's transactions)--> read the outputs --> SETTLED
 *   --(one more COMPLETE, the outputs read again and equal)--> done
 *
 * The source tasks commit a checkpoint's offsets to the job's consumer
 * group once it completed, so a lag of 0 means that the job has read
 * every line in a completed checkpoint; two more completed checkpoints
 * leave the sinks time to commit it (a sink commits on COMPLETE, before
 * it acknowledges later barriers). An output that still changes after
 * that is read again, up to SETTLE_TRIES times.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "cli.h"
#include "cmd_verify.h"
#include "kafka/devio.h"
#include "ksnap/records.h"

#define TICK_MS 50
#define CHECK_EVERY_MS 500
#define IO_TIMEOUT_MS 5000
#define SETTLE_TRIES 5

typedef enum phase_e {
  PHASE_INPUT,
  PHASE_CAUGHT_UP,
  PHASE_COMMITTED,
  PHASE_SETTLED,
  PHASE_DONE,
} phase_t;

typedef struct follow_s {
  phase_t phase;
  int64_t target; /* the COMPLETE awaited */
  int64_t last_complete, lag;
  uint64_t digest;
  int tries;
} follow_t;

static void on_control(void *opaque, const void *key, size_t key_len,
                       const void *value, size_t value_len) {
  int64_t *max = opaque;
  ksnap_control_record_t cr;
  ksnap_error_t error;

  (void)key;
  (void)key_len;
  if (!value || ksnap_codec_control_decode(value, value_len, &cr, &error))
    return;
  if (cr.type == KSNAP_CONTROL_COMPLETE && cr.u.complete.checkpoint_id > *max)
    *max = cr.u.complete.checkpoint_id;
  ksnap_control_record_cleanup(&cr);
}

/* @returns the id of the last COMPLETE on the control topic, 0 if none,
 * -1 if it cannot be read now (e.g. a killed coordinator's transaction
 * holds read_committed readers back until its successor aborts it). */
static int64_t last_complete(const verify_run_t *run) {
  char topic[300];
  ksnap_error_t error;
  int64_t max = 0;

  snprintf(topic, sizeof(topic), "%s.ksnap.control", run->job);
  if (ksnap_devio_read_topic(run->conf, topic, IO_TIMEOUT_MS, on_control,
                             &max, &error))
    return -1;
  return max;
}

/* One step of the follow-up; @returns 0, or -1 (printed). */
static int follow(verify_run_t *run, follow_t *f) {
  ksnap_error_t error;
  int64_t lag = -1;

  f->last_complete = last_complete(run);
  if (f->phase == PHASE_CAUGHT_UP) {
    if (f->last_complete < 0 ||
        ksnap_devio_group_lag(run->conf, run->job, run->source,
                              IO_TIMEOUT_MS, &lag, &error))
      return 0; /* not readable now: next time */
    if ((f->lag = lag) > 0)
      return 0;
    f->phase = PHASE_COMMITTED;
    f->target = f->last_complete + 2;
    verify_event(run, "the job read every line in a completed checkpoint "
                 "(its group has no lag; last completed %" PRId64 "); "
                 "awaiting checkpoint %" PRId64, f->last_complete, f->target);
    return 0;
  }
  if (f->last_complete < f->target)
    return 0;
  if (verify_out_read(run))
    return -1;
  if (f->phase == PHASE_SETTLED && verify_out_digest(run) == f->digest) {
    f->phase = PHASE_DONE;
    verify_event(run, "output settled (unchanged after checkpoint "
                 "%" PRId64 ")", f->last_complete);
    return 0;
  }
  if (f->phase == PHASE_SETTLED && ++f->tries >= SETTLE_TRIES) {
    fprintf(stderr, "ksnap verify: the %s run's output still changes after "
                    "%d more checkpoints\n", run->label, SETTLE_TRIES);
    return -1;
  }
  f->phase = PHASE_SETTLED;
  f->digest = verify_out_digest(run);
  f->target = f->last_complete + 1;
  return 0;
}

/* Produces the lines due at the run clock's @p now_ms. */
static int produce_due(verify_run_t *run, const verify_opts_t *o,
                       ksnap_devio_producer_t *p, char **lines,
                       size_t nlines, size_t *next, int64_t now_ms) {
  size_t due = nlines;
  ksnap_error_t error;

  if (o->duration_ms > 0 && now_ms < o->duration_ms)
    due = (size_t)((double)nlines * (double)now_ms / (double)o->duration_ms);
  for (; *next < due; (*next)++)
    if (ksnap_devio_produce(p, run->source, lines[*next],
                            strlen(lines[*next]), &error)) {
      fprintf(stderr, "ksnap verify: producing to %s: %s\n", run->source,
              error.msg);
      return -1;
    }
  return 0;
}

static void kills_due(verify_run_t *run, size_t *next, int64_t now_ms) {
  for (; *next < run->nplan && run->plan[*next].at_ms <= now_ms; (*next)++) {
    const verify_kill_t *k = &run->plan[*next];
    verify_proc_t *p = &run->procs[k->proc];
    if (!verify_proc_kill(run, k->proc)) {
      verify_event(run, "kill -9 %s: not running", p->name);
      continue;
    }
    p->restart_ms = now_ms + k->restart_after_ms;
  }
}

static void why_not_done(const verify_run_t *run, const follow_t *f,
                         const verify_opts_t *o) {
  fprintf(stderr, "ksnap verify: the %s run did not finish within %.0f s: ",
          run->label, (double)o->timeout_ms / 1000);
  if (f->phase == PHASE_INPUT)
    fprintf(stderr, "its input was still being produced\n");
  else if (f->last_complete < 0)
    fprintf(stderr, "its control topic could not be read (is the cluster "
                    "up?)\n");
  else if (f->phase == PHASE_CAUGHT_UP)
    fprintf(stderr, "the job's consumer group still lags %" PRId64 " "
                    "records behind %s (last completed checkpoint %" PRId64
                    ")\n", f->lag, run->source, f->last_complete);
  else
    fprintf(stderr, "checkpoint %" PRId64 " awaited, the last completed is "
                    "%" PRId64 "\n", f->target, f->last_complete);
  fprintf(stderr, "ksnap verify: its processes' logs are in %s\n", run->dir);
}

int verify_run_execute(verify_run_t *run, const verify_opts_t *o,
                       char **lines, size_t nlines) {
  const struct timespec tick = {0, TICK_MS * 1000 * 1000};
  ksnap_devio_producer_t *p = NULL;
  follow_t f = {PHASE_INPUT, 0, -1, -1, 0, 0};
  size_t next_line = 0, next_kill = 0;
  int64_t next_check = 0, now;
  ksnap_error_t error;
  int rc = -1;

  ksnap_error_clear(&error);
  if (verify_job_topics_create(run, o))
    return -1;
  if (!(p = ksnap_devio_producer_new(run->conf, &error))) {
    fprintf(stderr, "ksnap verify: %s\n", error.msg);
    return -1;
  }
  run->t0_us = ksnap__now_us();
  while (f.phase != PHASE_DONE) {
    if (cli_stop_requested) {
      fprintf(stderr, "ksnap verify: interrupted\n");
      goto out;
    }
    if (verify_procs_poll(run))
      goto out;
    if ((now = verify_run_ms(run)) > o->timeout_ms) {
      why_not_done(run, &f, o);
      goto out;
    }
    if (f.phase == PHASE_INPUT &&
        produce_due(run, o, p, lines, nlines, &next_line, now))
      goto out;
    kills_due(run, &next_kill, now);
    if (f.phase == PHASE_INPUT && next_line == nlines &&
        next_kill == run->nplan) {
      if (ksnap_devio_producer_flush(p, 30000, &error)) {
        fprintf(stderr, "ksnap verify: %s: %s\n", run->source, error.msg);
        goto out;
      }
      verify_event(run, "produced %zu lines to %s", nlines, run->source);
      f.phase = PHASE_CAUGHT_UP;
    }
    if (f.phase != PHASE_INPUT && now >= next_check &&
        verify_procs_all_up(run)) {
      if (follow(run, &f))
        goto out;
      next_check = now + CHECK_EVERY_MS;
    }
    if (f.phase != PHASE_DONE)
      nanosleep(&tick, NULL);
  }
  rc = 0;
  if (verify_out_save(run))
    fprintf(stderr, "ksnap verify: cannot write the %s run's output files "
                    "in %s\n", run->label, run->dir);
out:
  ksnap_devio_producer_destroy(p);
  verify_procs_stop(run);
  return rc;
}
