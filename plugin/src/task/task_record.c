/*
 * One record through a task's operator (task_record.h), by the stage's
 * errors.tolerance.
 *
 * none: the operator's error fails the task, as it always did.
 *
 * all: the record runs in a scope. Its state writes are in a record
 * scope of the state (state/state_scope.h), its emits are held
 * (task_ctx.c), the timers it registers are marked (task_timer.c). If the
 * operator returns OK, the scope is committed and the held emits are
 * produced in their order. If it fails, everything it did is undone:
 * state writes rolled back, held emits dropped, its timers forgotten (a
 * keyed timer's state entry goes with the rollback). Then the record is
 * counted, logged (at most one line per LOG_EVERY_MS per task, with the
 * number of failures not logged) and, with a dead-letter topic, written
 * there: its key, value, headers and timestamp, plus the context headers
 * when enabled, produced by the task's transactional producer into the open
 * epoch transaction (the same one as the task's sink output, if any).
 * The dead-letter record is thus committed with the epoch, or replayed
 * with it by the epoch replay, which runs records through this same
 * function: exactly once, as a sink's output (plugin/PROTOCOL.md section
 * 8.3). Its content depends only on the record and the operator's error,
 * not on the run, so a replay writes the same record.
 *
 * Not tolerated in either mode: out of memory (also a state write whose
 * undo could not be saved), a failed rollback, and any error producing
 * the held emits or the dead-letter record; the task fails.
 *
 * The counts are state: saved into KSNAP__ERRORS_STATE at each snapshot,
 * loaded on restore. The count at checkpoint N's cut is then the number
 * of the task's dead-letter records in its transactions up to N.
 */
#include "task_record.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "state/state_scope.h"
#include "task_int.h"
#include "base/util.h"

#define LOG_EVERY_MS 10000
#define MAX_HEADERS 16

static int tolerates(const ksnap_task_t *task) {
  return ksnap_job_stage_tolerance(task->stage) == KSNAP_JOB_TOLERANCE_ALL;
}

/* The task fails with @p err: says which operator, record and where. */
static ksnap_err_t fail_record(const ksnap_task_t *task,
                               const ksnap_record_t *rec, ksnap_err_t err,
                               ksnap_error_t *error) {
  ksnap_error_prefix(error, "%s: operator %s failed on %s[%d]@%lld",
                     task->id, ksnap__task_op_name(task), rec->topic,
                     (int)rec->partition, (long long)rec->offset);
  return err;
}

/* The context headers (text) of a dead-letter record. */
typedef struct ctx_hdrs_s {
  char task[16], part[16], off[24];
} ctx_hdrs_t;

static size_t add_context(const ksnap_task_t *task, const ksnap_record_t *rec,
                          const ksnap_error_t *cause, ctx_hdrs_t *t,
                          ksnap_kafka_header_t *h) {
  const char *stage = ksnap_job_stage_name(task->stage),
             *code = ksnap_err2name(cause->code);
  size_t n = 0;

  snprintf(t->task, sizeof(t->task), "%d", (int)task->index);
  snprintf(t->part, sizeof(t->part), "%d", (int)rec->partition);
  snprintf(t->off, sizeof(t->off), "%lld", (long long)rec->offset);
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.stage", stage, strlen(stage)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.task", t->task,
                                  strlen(t->task)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.topic", rec->topic,
                                  strlen(rec->topic)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.partition", t->part,
                                  strlen(t->part)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.offset", t->off,
                                  strlen(t->off)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.code", code, strlen(code)};
  h[n++] = (ksnap_kafka_header_t){"ksnap.errors.message", cause->msg,
                                  strlen(cause->msg)};
  return n;
}

/* The failed record to the dead-letter topic, in the open transaction. */
static ksnap_err_t dead_letter(ksnap_task_t *task, const char *dlq,
                               const ksnap_record_t *rec,
                               const ksnap_error_t *cause,
                               ksnap_error_t *error) {
  ksnap_kafka_header_t stack[MAX_HEADERS + 7], *h = stack;
  ctx_hdrs_t text;
  size_t n = 0;
  int64_t deadline = 0;
  ksnap_err_t err;

  /* every header of the failed record, as it was read */
  if (rec->header_cnt > MAX_HEADERS &&
      !(h = malloc((rec->header_cnt + 7) * sizeof(*h))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < rec->header_cnt; i++)
    h[n++] = (ksnap_kafka_header_t){rec->headers[i].name,
                                    rec->headers[i].value,
                                    rec->headers[i].value_len};
  if (ksnap_job_stage_dlq_headers(task->stage))
    n += add_context(task, rec, cause, &text, &h[n]);
  while ((err = ksnap_2pc_produce(task->sink, dlq, -1, rec->key, rec->key_len,
                                  rec->value, rec->value_len,
                                  rec->timestamp_ms, h, n, error)) &&
         ksnap__task_emit_retry(error, &deadline))
    ;
  if (err)
    ksnap_error_prefix(error, "%s: writing a failed record to dead-letter "
                       "topic %s", task->id, dlq);
  return err;
}

static void log_failure(ksnap_task_t *task, const ksnap_record_t *rec,
                        const ksnap_error_t *cause, const char *dlq) {
  ksnap__task_errs_t *e = &task->errs;
  int64_t now = ksnap__wallclock_ms();
  char since[96] = "";

  if (e->log_ms && now - e->log_ms < LOG_EVERY_MS) {
    e->log_quiet++;
    return;
  }
  if (e->log_quiet)
    snprintf(since, sizeof(since), "; %" PRId64 " more failed since the "
             "last such line", e->log_quiet);
  KSNAP_WARN("task", "%s: record %s[%d]@%lld failed (%s: %s) and was %s%s "
             "(errors.tolerance=all)%s", task->id, rec->topic,
             (int)rec->partition, (long long)rec->offset,
             ksnap_err2name(cause->code), cause->msg,
             dlq ? "sent to dead-letter topic " : "skipped", dlq ? dlq : "",
             since);
  e->log_ms = now;
  e->log_quiet = 0;
}

/* A record of a tolerant stage failed and its effects are undone. */
static ksnap_err_t tolerate(ksnap_task_t *task, const ksnap_record_t *rec,
                            const ksnap_error_t *cause,
                            ksnap_error_t *error) {
  const char *dlq = ksnap_job_stage_dlq_topic(task->stage);
  ksnap_err_t err;

  if (dlq && !task->sink)
    return ksnap_error_set(error, KSNAP_ERR_STATE, "%s: dead-letter topic "
                           "%s without a transactional producer", task->id,
                           dlq);
  if (dlq && (err = dead_letter(task, dlq, rec, cause, error)))
    return err;
  atomic_fetch_add(&task->errs.failed, 1);
  if (dlq)
    atomic_fetch_add(&task->errs.dead_lettered, 1);
  log_failure(task, rec, cause, dlq);
  return KSNAP_ERR_OK;
}

/* errors.tolerance=all: the record in a scope of state, emits, timers. */
static ksnap_err_t process_scoped(ksnap_task_t *task,
                                  const ksnap_record_t *rec,
                                  ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  size_t mark = ksnap__task_timers_mark(task);
  ksnap_error_t cause;
  ksnap_err_t err;

  if ((err = ksnap__state_scope_begin(st, error)) ||
      (err = ksnap__task_emits_hold(task, error))) {
    ksnap__state_scope_commit(st);
    return err;
  }
  ksnap_error_clear(&cause);
  err = ksnap__task_op_process(task, rec, &cause);
  if (ksnap__task_op_misused(task, NULL)) { /* not the record's fault */
    const ksnap_error_t *m;
    ksnap__task_emits_release(task, 0, NULL);
    ksnap__task_timers_drop(task, mark);
    ksnap__state_scope_commit(st);
    ksnap__task_op_misused(task, &m);
    *error = *m;
    return fail_record(task, rec, m->code, error);
  }
  if (!err) {
    ksnap__state_scope_commit(st);
    return ksnap__task_emits_release(task, 1, error);
  }
  ksnap__task_emits_release(task, 0, NULL);
  ksnap__task_timers_drop(task, mark);
  if (ksnap__state_scope_rollback(st, error))
    return fail_record(task, rec, error->code, error);
  if (err == KSNAP_ERR_NOMEM) { /* not the record's fault */
    *error = cause;
    return fail_record(task, rec, err, error);
  }
  if (!cause.msg[0]) /* an operator that returned an error but set none */
    snprintf(cause.msg, sizeof(cause.msg), "%s", ksnap_err2str(err));
  cause.code = err; /* what the operator returned decides */
  return tolerate(task, rec, &cause, error);
}

static ksnap_err_t process(ksnap_task_t *task, const ksnap_record_t *rec,
                           ksnap_error_t *error) {
  const ksnap_error_t *m;
  ksnap_err_t err;

  if (tolerates(task))
    return process_scoped(task, rec, error);
  err = ksnap__task_op_process(task, rec, error);
  if (ksnap__task_op_misused(task, &m)) { /* even if the operator ignored
                                           * the emit's error */
    *error = *m;
    return fail_record(task, rec, m->code, error);
  }
  if (err)
    return fail_record(task, rec, err, error);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__task_process(ksnap_task_t *task, int32_t chan,
                                const ksnap_record_t *rec,
                                ksnap_error_t *error) {
  ksnap_err_t err;

  if (ksnap__task_wm_take(task, chan, rec))
    return KSNAP_ERR_OK; /* a watermark record: no operator */
  ksnap__task_wm_before(task, chan);
  err = process(task, rec, error);
  ksnap__task_wm_after(task, chan, ksnap__task_op_event_time(task));
  return err;
}

const ksnap_header_t *ksnap__task_in_headers(const ksnap_kafka_header_t *h,
                                             size_t n, ksnap_header_t *stack,
                                             size_t cap,
                                             ksnap_header_t **heapp) {
  ksnap_header_t *v = stack;

  *heapp = NULL;
  if (!n)
    return NULL;
  if (n > cap && !(v = *heapp = malloc(n * sizeof(*v))))
    return NULL;
  for (size_t i = 0; i < n; i++)
    v[i] = (ksnap_header_t){h[i].name, h[i].value, h[i].len};
  return v;
}

/* ---- the counts in the state ---- */

#define BLOB_SIZE 16 /* failed, dead-lettered: 8 bytes big-endian each */

ksnap_err_t ksnap__task_errors_save(ksnap_task_t *task, int64_t *failedp,
                                    int64_t *dead_letteredp,
                                    ksnap_error_t *error) {
  ksnap_state_t *st = ksnap__task_state(task);
  uint8_t blob[BLOB_SIZE];
  int id;
  ksnap_err_t err;

  *failedp = atomic_load(&task->errs.failed);
  *dead_letteredp = atomic_load(&task->errs.dead_lettered);
  if (!tolerates(task))
    return KSNAP_ERR_OK;
  if ((err = ksnap_state_register(st, KSNAP__ERRORS_STATE,
                                  KSNAP_STATE_OP_SPLIT, 0, &id, error)))
    return err;
  ksnap__put_be64(blob, *failedp);
  ksnap__put_be64(blob + 8, *dead_letteredp);
  ksnap_state_op_clear(st, id);
  return ksnap_state_op_add(st, id, blob, sizeof(blob), error);
}

void ksnap__task_errors_load(ksnap_task_t *task) {
  ksnap_state_t *st = ksnap__task_state(task);
  int64_t failed = 0, dead = 0;
  ksnap_error_t error;
  int id;

  if (tolerates(task) &&
      !ksnap_state_register(st, KSNAP__ERRORS_STATE, KSNAP_STATE_OP_SPLIT, 0,
                            &id, &error))
    for (size_t i = 0; i < ksnap_state_op_count(st, id); i++) {
      const void *b;
      size_t len;
      if (ksnap_state_op_get(st, id, i, &b, &len) || len != BLOB_SIZE)
        continue;
      failed += ksnap__get_be64(b);
      dead += ksnap__get_be64((const uint8_t *)b + 8);
    }
  atomic_store(&task->errs.failed, failed);
  atomic_store(&task->errs.dead_lettered, dead);
}

int64_t ksnap_task_records_failed(const ksnap_task_t *task) {
  return atomic_load(&task->errs.failed);
}

int64_t ksnap_task_records_dead_lettered(const ksnap_task_t *task) {
  return atomic_load(&task->errs.dead_lettered);
}
