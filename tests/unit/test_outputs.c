/*
 * Named outputs and headers through a job on the embedded mock cluster
 * (no server; the real broker's round trip with kills: e2e_dag_router).
 * Stage "a" (errors.tolerance=all, so its emits in process are held)
 * reads "line I" records produced with headers h1=I and h2=x, and by
 * I mod 4 emits: 0 to its default output (sink "def"), forwarding the
 * input headers; 1 to named output "side" (sink "side") with a header of
 * its own only; 2 to named output "ex", read by stage "b" through its
 * exchange topic, forwarding the headers plus route=ex; 3 nothing, and
 * fails: the record goes to the dead-letter topic with its own headers.
 * "b" forwards what it read (the headers after the exchange hop) to sink
 * "bout". Each sink must hold exactly its records with exactly those
 * headers, and no output another's records. Then a job whose operator
 * emits to an output its stage does not have (ignoring the error) must
 * FAIL at once, naming the stage and the output, instead of restoring.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/embedded.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define NLINES 40

static ksnap_err_t a_process(ksnap_operator_ctx_t *ctx, void *inst,
                             const ksnap_record_t *rec,
                             ksnap_error_t *error) {
  ksnap_header_t h[8];
  size_t n = 0;
  int i = -1;

  (void)inst;
  if (!rec->value || sscanf((const char *)rec->value, "line %d", &i) != 1)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE, "not a line");
  for (size_t k = 0; k < rec->header_cnt && n < 6; k++)
    h[n++] = rec->headers[k];
  switch (i % 4) {
  case 0:
    return ksnap_ctx_emit(ctx, NULL, 0, rec->value, rec->value_len, h, n,
                          error);
  case 1:
    h[0] = (ksnap_header_t){"own", "1", 1};
    return ksnap_ctx_emit_to(ctx, "side", NULL, 0, rec->value,
                             rec->value_len, h, 1, error);
  case 2:
    h[n++] = (ksnap_header_t){"route", "ex", 2};
    return ksnap_ctx_emit_to(ctx, "ex", NULL, 0, rec->value, rec->value_len,
                             h, n, error);
  }
  /* an emit, then a failure: the emit is undone with the record */
  ksnap_ctx_emit(ctx, NULL, 0, "undone", 6, NULL, 0, error);
  return ksnap_error_set(error, KSNAP_ERR_OPERATOR, "every fourth fails");
}

static ksnap_err_t b_process(ksnap_operator_ctx_t *ctx, void *inst,
                             const ksnap_record_t *rec,
                             ksnap_error_t *error) {
  (void)inst;
  return ksnap_ctx_emit(ctx, NULL, 0, rec->value, rec->value_len,
                        rec->headers, rec->header_cnt, error);
}

/* Emits to "nope", which its stage lacks, and ignores the error. */
static ksnap_err_t typo_process(ksnap_operator_ctx_t *ctx, void *inst,
                                const ksnap_record_t *rec,
                                ksnap_error_t *error) {
  (void)inst;
  ksnap_ctx_emit_to(ctx, "nope", NULL, 0, rec->value, rec->value_len, NULL,
                    0, error);
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t a_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "outputs_a",
    .process = a_process,
};
static const ksnap_operator_t b_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "outputs_b",
    .process = b_process,
};
static const ksnap_operator_t typo_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "outputs_typo",
    .process = typo_process,
};

/* A topic's records as "VALUE|name=value|..." lines, sorted. */
typedef struct out_s {
  char v[NLINES][160];
  int n;
} out_t;

static int cmp(const void *a, const void *b) { return strcmp(a, b); }

/* Reads @p topic (1 partition) to its end into @p o. */
static void read_topic(const char *bootstraps, const char *topic, out_t *o) {
  char errstr[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_t *rk;
  rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
  int idle = 0;

  rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, errstr,
                    sizeof(errstr));
  rd_kafka_conf_set(c, "group.id", "outputs-test", errstr, sizeof(errstr));
  ck_assert_ptr_nonnull(rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr,
                                          sizeof(errstr)));
  rd_kafka_topic_partition_list_add(tp, topic, 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, tp), 0);
  rd_kafka_topic_partition_list_destroy(tp);
  o->n = 0;
  while (idle < 10 && o->n < NLINES) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    rd_kafka_headers_t *h = NULL;
    const char *name;
    const void *val;
    size_t len;
    int off;
    if (!m) {
      idle++;
      continue;
    }
    idle = 0;
    if (!m->err) {
      off = snprintf(o->v[o->n], sizeof(o->v[0]), "%.*s", (int)m->len,
                     (const char *)m->payload);
      if (!rd_kafka_message_headers(m, &h))
        for (size_t i = 0;
             !rd_kafka_header_get_all(h, i, &name, &val, &len); i++)
          off += snprintf(o->v[o->n] + off, sizeof(o->v[0]) - (size_t)off,
                          "|%s=%.*s", name, (int)len, (const char *)val);
      o->n++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  qsort(o->v, (size_t)o->n, sizeof(o->v[0]), cmp);
}

/* Produces NLINES "line I" records with headers h1=I, h2=x, ksnap.x=y
 * (ksnap's own names: never shown to the operator). */
static void produce(const char *bootstraps) {
  char errstr[256], v[32], idx[16];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_t *rk;

  rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, errstr,
                    sizeof(errstr));
  ck_assert_ptr_nonnull(rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr,
                                          sizeof(errstr)));
  for (int i = 0; i < NLINES; i++) {
    int n = snprintf(v, sizeof(v), "line %02d", i);
    snprintf(idx, sizeof(idx), "%d", i);
    ck_assert_int_eq(
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("in"), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_VALUE(v, (size_t)n),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_HEADER("h1", idx, -1),
                          RD_KAFKA_V_HEADER("ksnap.x", "y", 1),
                          RD_KAFKA_V_HEADER("h2", "x", 1), RD_KAFKA_V_END),
        0);
  }
  ck_assert_int_eq(rd_kafka_flush(rk, 30000), 0);
  rd_kafka_destroy(rk);
}

/* The records sink @p which ("def", "side", "bout", "dlq") must hold:
 * every fourth line from its route, with exactly these headers. */
static void expected(const char *which, out_t *o) {
  int r = !strcmp(which, "def")    ? 0
          : !strcmp(which, "side") ? 1
          : !strcmp(which, "bout") ? 2
                                   : 3;

  o->n = 0;
  for (int i = r; i < NLINES; i += 4) {
    if (r == 1)
      snprintf(o->v[o->n++], sizeof(o->v[0]), "line %02d|own=1", i);
    else
      snprintf(o->v[o->n++], sizeof(o->v[0]), "line %02d|h1=%d|h2=x%s", i, i,
               r == 2 ? "|route=ex" : "");
  }
  qsort(o->v, (size_t)o->n, sizeof(o->v[0]), cmp);
}

static ksnap_conf_t *job_conf(const char *bootstraps, const char *dir,
                              const char *stages) {
  char text[4096];
  ksnap_conf_t *conf = ksnap_conf_new();

  snprintf(text, sizeof(text),
           "job.name=outputs-test\n"
           "kafka.bootstrap.servers=%s\n"
           "state.checkpoints.dir=file://%s\n"
           "execution.checkpointing.interval=200ms\n"
           "execution.checkpointing.timeout=5s\n"
           "kafka.transaction.timeout.ms=60000\n%s",
           bootstraps, dir, stages);
  ck_assert_ptr_nonnull(conf);
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job", text, NULL, NULL), 0);
  return conf;
}

START_TEST(emit_to_routes_each_record_with_its_headers) {
  const char *sinks[] = {"def", "side", "bout", "dlq"};
  ksnap_embedded_t *emb;
  ksnap_conf_t *conf;
  ksnap_run_t *run;
  ksnap_run_stats_t st;
  ksnap_error_t error;
  char *dir = ksnap_test_tmpdir("outputs");
  static out_t got, want;

  ck_assert_int_eq(ksnap_operator_register("outputs_a", &a_op, &error), 0);
  ck_assert_int_eq(ksnap_operator_register("outputs_b", &b_op, &error), 0);
  ck_assert_ptr_nonnull(emb = ksnap_embedded_start(&error));
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "in", 1, 1, &error), 0);
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(
        ksnap_embedded_create_topic(emb, sinks[i], 1, 1, &error), 0);
  conf = job_conf(ksnap_embedded_bootstraps(emb), dir,
                  "stage.a.operator=outputs_a\n"
                  "stage.a.input=source:in\n"
                  "stage.a.output=sink:def\n"
                  "stage.a.output.side=sink:side\n"
                  "stage.a.output.ex=\n"
                  "stage.a.errors.tolerance=all\n"
                  "stage.a.errors.deadletterqueue.topic.name=dlq\n"
                  "stage.b.operator=outputs_b\n"
                  "stage.b.input=stage:a.ex\n"
                  "stage.b.output=sink:bout\n");
  produce(ksnap_embedded_bootstraps(emb));
  ck_assert_int_eq(ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &run, &error),
                   KSNAP_ERR_OK);
  for (int i = 0; i < 600; i++) {
    ck_assert_int_eq(ksnap_run_wait(run, 100), 0);
    ksnap_run_stats(run, &st, sizeof(st));
    if (st.records_out >= NLINES / 4 * 4 && st.checkpoints_completed >= 2)
      break;
  }
  for (int s = 0; s < 4; s++) {
    read_topic(ksnap_embedded_bootstraps(emb), sinks[s], &got);
    expected(sinks[s], &want);
    ck_assert_msg(got.n == want.n, "sink %s: %d records, want %d (first "
                  "\"%s\")", sinks[s], got.n, want.n, got.n ? got.v[0] : "");
    for (int i = 0; i < got.n; i++)
      ck_assert_msg(!strcmp(got.v[i], want.v[i]),
                    "sink %s: record \"%s\", want \"%s\"", sinks[s],
                    got.v[i], want.v[i]);
  }
  ksnap_run_stop(run);
  ck_assert_int_eq(ksnap_run_wait(run, 30000), 1);
  ksnap_run_destroy(run);
  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(emit_to_an_unknown_output_fails_the_job) {
  ksnap_embedded_t *emb;
  ksnap_conf_t *conf;
  ksnap_run_t *run;
  ksnap_run_stats_t st;
  ksnap_error_t error;
  char *dir = ksnap_test_tmpdir("outputs-typo");
  int ended = 0;

  ck_assert_int_eq(ksnap_operator_register("outputs_typo", &typo_op, &error),
                   0);
  ck_assert_ptr_nonnull(emb = ksnap_embedded_start(&error));
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "in", 1, 1, &error), 0);
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "def", 1, 1, &error), 0);
  conf = job_conf(ksnap_embedded_bootstraps(emb), dir,
                  "stage.a.operator=outputs_typo\n"
                  "stage.a.input=source:in\n"
                  "stage.a.output=sink:def\n"
                  "stage.a.output.side=sink:def\n");
  produce(ksnap_embedded_bootstraps(emb));
  ck_assert_int_eq(ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &run, &error),
                   KSNAP_ERR_OK);
  for (int i = 0; i < 300 && !ended; i++)
    ended = ksnap_run_wait(run, 100);
  ck_assert_msg(ended, "the job did not end on an emit to an unknown output");
  ck_assert_int_eq(ksnap_run_result(run, &error), KSNAP_ERR_JOB_FAILED);
  ck_assert_msg(strstr(error.msg, "stage a has no output \"nope\" (its named "
                                  "outputs: side;"),
                "result: %s", error.msg);
  ksnap_run_stats(run, &st, sizeof(st));
  ck_assert_int_eq(st.records_out, 0);
  ksnap_run_destroy(run);
  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("outputs");
  TCase *tc = tcase_create("outputs");

  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, emit_to_routes_each_record_with_its_headers);
  tcase_add_test(tc, emit_to_an_unknown_output_fails_the_job);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
