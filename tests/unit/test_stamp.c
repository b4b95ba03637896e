/*
 * Record timestamps through a job on the embedded mock cluster (no
 * server): stage "a" (errors.tolerance=all, so its emits in process are
 * held) emits with the default timestamp, with one set by
 * ksnap_ctx_set_timestamp(), with two set in turn for two emits of one
 * record, and from a timer; stage "b" reads a's exchange topic and emits
 * with the default timestamp, putting the record timestamp it saw in the
 * value. Each sink record's Kafka timestamp must equal both that value
 * and what stage "a" meant (the real broker's round trip, with kills:
 * e2e_stamp). The lines "bad I" fail in a and go to its dead-letter
 * topic with their input record's timestamp.
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/devio.h"
#include "kafka/embedded.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

#define NLINES 60
#define NOUT (NLINES / 3 * 5) /* i%3: 0 -> 1, 1 -> 1, 2 -> 2 + a timer's */
#define NBAD 5
#define MAXREC (NLINES + NBAD + 8 > NOUT + 8 ? NLINES + NBAD + 8 : NOUT + 8)

/* a: "line I" -> by I mod 3: (0) "I src=S", S the input's timestamp, with
 * the default one; (1) "I set" at 1000000+I; (2) "I first" at 2000000+I,
 * "I second" at 3000000+I, and a timer at 5000+I (long past) whose
 * on_timer emits "timer T" with the default, the timer's time. */
static ksnap_err_t a_process(ksnap_operator_ctx_t *ctx, void *inst,
                             const ksnap_record_t *rec,
                             ksnap_error_t *error) {
  char v[64];
  int i = 0, n;
  ksnap_err_t err;

  (void)inst;
  if (!rec->value || sscanf((const char *)rec->value, "line %d", &i) != 1)
    return ksnap_error_set(error, KSNAP_ERR_UNDECODABLE, "not a line");
  if (i % 3 == 0) {
    n = snprintf(v, sizeof(v), "%d src=%" PRId64, i, rec->timestamp_ms);
    return ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error);
  }
  if (i % 3 == 1) {
    ksnap_ctx_set_timestamp(ctx, 1000000 + i);
    n = snprintf(v, sizeof(v), "%d set", i);
    return ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error);
  }
  ksnap_ctx_set_timestamp(ctx, 2000000 + i);
  n = snprintf(v, sizeof(v), "%d first", i);
  if ((err = ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error)))
    return err;
  ksnap_ctx_set_timestamp(ctx, 3000000 + i);
  n = snprintf(v, sizeof(v), "%d second", i);
  if ((err = ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error)))
    return err;
  return ksnap_ctx_timer_register(ctx, 5000 + i, error);
}

static ksnap_err_t a_on_timer(ksnap_operator_ctx_t *ctx, void *inst,
                              const void *key, size_t klen, int64_t t,
                              ksnap_error_t *error) {
  char v[64];
  int n = snprintf(v, sizeof(v), "timer %" PRId64, t);

  (void)inst, (void)key, (void)klen;
  return ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error);
}

/* b: "VALUE" -> "VALUE|seen=TS", TS its record timestamp, default. */
static ksnap_err_t b_process(ksnap_operator_ctx_t *ctx, void *inst,
                             const ksnap_record_t *rec,
                             ksnap_error_t *error) {
  char v[128];
  int n = snprintf(v, sizeof(v), "%.*s|seen=%" PRId64,
                   (int)(rec->value_len < 64 ? rec->value_len : 64),
                   (const char *)rec->value, rec->timestamp_ms);

  (void)inst;
  return ksnap_ctx_emit(ctx, NULL, 0, v, (size_t)n, NULL, 0, error);
}

static const ksnap_operator_t a_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "stamp_a",
    .process = a_process,
    .on_timer = a_on_timer,
};
static const ksnap_operator_t b_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "stamp_b",
    .process = b_process,
};

/* A topic's records: value and Kafka timestamp. */
typedef struct out_s {
  char v[MAXREC][128];
  int64_t ts[MAXREC];
  int n;
} out_t;

/* Reads @p want records of @p topic (2 partitions) into @p o. */
static void read_topic(const char *bootstraps, const char *topic, int want,
                       out_t *o) {
  char errstr[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_t *rk;
  rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(2);

  rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, errstr,
                    sizeof(errstr));
  rd_kafka_conf_set(c, "group.id", "stamp-test", errstr, sizeof(errstr));
  ck_assert_ptr_nonnull(rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr,
                                          sizeof(errstr)));
  for (int p = 0; p < 2; p++)
    rd_kafka_topic_partition_list_add(tp, topic, p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, tp), 0);
  rd_kafka_topic_partition_list_destroy(tp);
  for (int i = 0; i < 300 && o->n < MAXREC; i++) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (!m)
      continue;
    if (!m->err) {
      snprintf(o->v[o->n], sizeof(o->v[0]), "%.*s", (int)m->len,
               (const char *)m->payload);
      o->ts[o->n++] = rd_kafka_message_timestamp(m, NULL);
    }
    rd_kafka_message_destroy(m);
    if (o->n == want)
      break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

/* The timestamp stage a meant for sink value @p v, -1 if unknown. */
static int64_t meant(const char *v) {
  int i;
  long long s;
  char word[16];

  if (sscanf(v, "timer %lld", &s) == 1)
    return s;
  if (sscanf(v, "%d src=%lld", &i, &s) == 2)
    return s;
  if (sscanf(v, "%d %15[a-z]", &i, word) != 2)
    return -1;
  return !strcmp(word, "set")     ? 1000000 + i
         : !strcmp(word, "first") ? 2000000 + i
         : !strcmp(word, "second") ? 3000000 + i
                                   : -1;
}

START_TEST(timestamps_reach_the_sink) {
  ksnap_embedded_t *emb;
  ksnap_conf_t *conf;
  ksnap_run_t *run;
  ksnap_run_stats_t st;
  ksnap_error_t error;
  ksnap_devio_producer_t *prod;
  char *dir = ksnap_test_tmpdir("stamp");
  char text[2048], line[32];
  static out_t o, in, dlq;

  ck_assert_int_eq(ksnap_operator_register("stamp_a", &a_op, &error), 0);
  ck_assert_int_eq(ksnap_operator_register("stamp_b", &b_op, &error), 0);
  ck_assert_ptr_nonnull(emb = ksnap_embedded_start(&error));
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "in", 2, 1, &error), 0);
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "out", 2, 1, &error), 0);
  ck_assert_int_eq(ksnap_embedded_create_topic(emb, "dlq", 2, 1, &error), 0);
  snprintf(text, sizeof(text),
           "job.name=stamp-test\n"
           "kafka.bootstrap.servers=%s\n"
           "state.checkpoints.dir=file://%s\n"
           "execution.checkpointing.interval=200ms\n"
           "execution.checkpointing.timeout=5s\n"
           "kafka.transaction.timeout.ms=60000\n"
           "stage.a.operator=stamp_a\n"
           "stage.a.input=source:in\n"
           "stage.a.errors.tolerance=all\n"
           "stage.a.errors.deadletterqueue.topic.name=dlq\n"
           "stage.b.operator=stamp_b\n"
           "stage.b.input=stage:a\n"
           "stage.b.output=sink:out\n",
           ksnap_embedded_bootstraps(emb), dir);
  ck_assert_ptr_nonnull(conf = ksnap_conf_new());
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job", text, NULL, NULL), 0);
  ck_assert_ptr_nonnull(prod = ksnap_devio_producer_new(conf, &error));
  for (int i = 0; i < NLINES + NBAD; i++) {
    int n = i < NLINES ? snprintf(line, sizeof(line), "line %d", i)
                       : snprintf(line, sizeof(line), "bad %d", i);
    ck_assert_int_eq(ksnap_devio_produce(prod, "in", line, (size_t)n,
                                         &error), 0);
  }
  ck_assert_int_eq(ksnap_devio_producer_flush(prod, 30000, &error), 0);
  ksnap_devio_producer_destroy(prod);
  ck_assert_int_eq(ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &run, &error),
                   KSNAP_ERR_OK);
  for (int i = 0; i < 600; i++) {
    ck_assert_int_eq(ksnap_run_wait(run, 100), 0);
    ksnap_run_stats(run, &st, sizeof(st));
    if (st.records_out >= NOUT) /* b's emits */
      break;
  }
  read_topic(ksnap_embedded_bootstraps(emb), "out", NOUT, &o);
  read_topic(ksnap_embedded_bootstraps(emb), "in", NLINES + NBAD, &in);
  read_topic(ksnap_embedded_bootstraps(emb), "dlq", NBAD, &dlq);
  ksnap_run_stop(run);
  ck_assert_int_eq(ksnap_run_wait(run, 30000), 1);
  ksnap_run_destroy(run);
  ck_assert_int_eq(o.n, NOUT);
  for (int i = 0; i < o.n; i++) {
    const char *seen = strstr(o.v[i], "|seen=");
    int64_t want = meant(o.v[i]);
    ck_assert_msg(seen && want > 0, "unexpected sink record \"%s\"", o.v[i]);
    ck_assert_msg(o.ts[i] == want && strtoll(seen + 6, NULL, 10) == want,
                  "sink record \"%s\": timestamp %" PRId64 ", want %" PRId64,
                  o.v[i], o.ts[i], want);
  }
  ck_assert_int_eq(dlq.n, NBAD);
  for (int i = 0; i < dlq.n; i++) {
    int k = 0;
    while (k < in.n && strcmp(in.v[k], dlq.v[i]))
      k++;
    ck_assert_msg(k < in.n && in.ts[k] > 0 && dlq.ts[i] == in.ts[k],
                  "dead-letter record \"%s\": timestamp %" PRId64
                  ", its input's %" PRId64, dlq.v[i], dlq.ts[i],
                  k < in.n ? in.ts[k] : -1);
  }
  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stamp");
  TCase *tc = tcase_create("stamp");

  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, timestamps_reach_the_sink);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
