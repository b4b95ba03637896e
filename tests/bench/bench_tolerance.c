/* bench_tolerance: what errors.tolerance=all costs per record, on the
 * task's processing path alone (no Kafka: the stage's outputs are not
 * opened, so an emit reaches no producer).
 *
 *   build/tests/bench_tolerance [N]     default N = 2000000 records
 *
 * The operator is a keyed count (value state get + put of the record's
 * key, one emit of (key, count) per record), over 10000 distinct 16-byte
 * keys. Each mode has its task; rounds of N records through
 * ksnap__task_process() alternate between them (9 rounds each), and the
 * best round of each counts, in thread CPU time (the machine is shared:
 * wall time would count the preemptions):
 *   none      errors.tolerance=none: the operator is called directly
 *   all       errors.tolerance=all, no record fails: each record in a
 *             state scope (undo log of its one write), its emit held and
 *             produced after it returned
 *   all-fail  the same with 1% of the records failing after their write
 *             and emit: rollback, emit dropped, counted (no dead-letter
 *             topic: writing one needs the broker)
 * Prints ns per record and the difference to none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ksnap/context.h"
#include "ksnap/job.h"
#include "ksnap/log.h"
#include "task/task_int.h"

#define NKEYS 10000

#define ROUNDS 9

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct bcount_s {
  int id;
} bcount_t;

static ksnap_err_t b_open(ksnap_operator_ctx_t *ctx, void **instp,
                          ksnap_error_t *error) {
  bcount_t *c = calloc(1, sizeof(*c));
  ksnap_state_t *st;
  ksnap_err_t err;

  if (!c)
    return KSNAP_ERR_NOMEM;
  if ((err = ksnap_ctx_state(ctx, &st, error)) ||
      (err = ksnap_state_register(st, "count", KSNAP_STATE_VALUE, 0, &c->id,
                                  error))) {
    free(c);
    return err;
  }
  *instp = c;
  return KSNAP_ERR_OK;
}

static ksnap_err_t b_process(ksnap_operator_ctx_t *ctx, void *inst,
                             const ksnap_record_t *rec,
                             ksnap_error_t *error) {
  bcount_t *c = inst;
  ksnap_state_t *st;
  const void *v;
  size_t len;
  int64_t n = 0;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &st, error)))
    return err;
  if (!ksnap_state_value_get(st, c->id, &v, &len) && len == sizeof(n))
    memcpy(&n, v, sizeof(n));
  n++;
  if ((err = ksnap_state_value_put(st, c->id, &n, sizeof(n), error)) ||
      (err = ksnap_ctx_emit(ctx, rec->key, rec->key_len, &n, sizeof(n), NULL,
                            0, error)))
    return err;
  if (rec->offset % 100 == 99 && rec->value_len) /* all-fail: 1 in 100 */
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR, "bench failure");
  return KSNAP_ERR_OK;
}

static void b_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t b_count = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "b_count",
    .open = b_open,
    .process = b_process,
    .close = b_close,
};

static void die(const char *what, const ksnap_error_t *e) {
  fprintf(stderr, "bench_tolerance: %s: %s\n", what, e ? e->msg : "");
  exit(1);
}

typedef struct mode_s {
  const char *tolerance;
  int fail;
  ksnap_conf_t *conf;
  ksnap_job_t *job;
  ksnap_task_t *task;
  double best; /* ns per record */
} bmode_t;

static void mode_open(bmode_t *m) {
  ksnap_conf_t *conf = m->conf = ksnap_conf_new();
  ksnap_error_t e;
  char errstr[256];

  if (ksnap_conf_set(conf, "job.name", "bench", errstr, sizeof(errstr)) ||
      ksnap_conf_set(conf, "stage.c.operator", "b_count", errstr,
                     sizeof(errstr)) ||
      ksnap_conf_set(conf, "stage.c.input", "source:in", errstr,
                     sizeof(errstr)) ||
      ksnap_conf_set(conf, "stage.c.output", "sink:out", errstr,
                     sizeof(errstr)) ||
      ksnap_conf_set(conf, "errors.tolerance", m->tolerance, errstr,
                     sizeof(errstr)) ||
      ksnap_job_new(conf, &m->job, NULL, NULL))
    die("job", NULL);
  if (ksnap_task_new(conf, m->job, ksnap_job_stage(m->job, 0), 0, NULL, NULL,
                     NULL, &m->task, &e) ||
      ksnap__task_state_open(m->task, &e) || ksnap__task_op_open(m->task, &e))
    die("task", &e);
  m->best = 1e18;
}

/* One round of @p n records through @p m's task. */
static void mode_round(bmode_t *m, uint64_t n) {
  uint8_t key[16];
  ksnap_error_t e;
  double t0 = now_s(), t;

  for (uint64_t i = 0; i < n; i++) {
    uint64_t k = (i * 2654435761u) % NKEYS;
    ksnap_record_t rec = {key, sizeof(key), "x", m->fail ? 1u : 0u, NULL, 0,
                          0, "in", 0, (int64_t)i, NULL, 0};
    memcpy(key, &k, sizeof(k));
    memcpy(key + 8, &k, sizeof(k));
    if (ksnap__task_process(m->task, 0, &rec, &e))
      die("process", &e);
  }
  t = (now_s() - t0) * 1e9 / (double)n;
  if (t < m->best)
    m->best = t;
}

static void mode_close(bmode_t *m) {
  ksnap__task_op_close(m->task);
  ksnap__task_state_close(m->task);
  ksnap_task_destroy(m->task);
  ksnap_job_destroy(m->job);
  ksnap_conf_destroy(m->conf);
}

int main(int argc, char **argv) {
  uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
  bmode_t modes[3] = {{.tolerance = "none"}, {.tolerance = "all"},
                      {.tolerance = "all", .fail = 1}};
  ksnap_error_t e;
  double none, all, fail;

  ksnap_log_set_level(KSNAP_LOG_ERR); /* the failures' log lines */
  if (ksnap_operator_register("b_count", &b_count, &e))
    die("register", &e);
  for (int i = 0; i < 3; i++)
    mode_open(&modes[i]);
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < 3; i++)
      mode_round(&modes[i], n);
  none = modes[0].best;
  all = modes[1].best;
  fail = modes[2].best;
  for (int i = 0; i < 3; i++)
    mode_close(&modes[i]);
  printf("records %llu, keyed count with one state write and one emit per "
         "record (%d keys)\n", (unsigned long long)n, NKEYS);
  printf("  none      %7.1f ns/record\n", none);
  printf("  all       %7.1f ns/record  (+%.1f ns, %.2fx)\n", all, all - none,
         all / none);
  printf("  all-fail  %7.1f ns/record  (+%.1f ns, %.2fx; 1%% of the "
         "records fail and are rolled back)\n", fail, fail - none,
         fail / none);
  return 0;
}
