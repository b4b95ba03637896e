/* Named outputs in the job graph (ksnap/job.h): stage.S.output.NAME,
 * readers of stage:S.NAME, their exchange topics, the output of each
 * stage output, and every validation error, asserted exactly. Jobs are
 * loaded from text named "job.properties", so errors carry
 * job.properties:LINE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "testutil.h"

static char errors[8192];
static ksnap_conf_t *conf;
static ksnap_job_t *job;

static void collect(void *opaque, const char *msg) {
  (void)opaque;
  strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
  strcat(errors, "\n");
}

static void setup(void) {
  conf = ksnap_conf_new();
  job = NULL;
  errors[0] = '\0';
}

static void teardown(void) {
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
}

/* Loads "job.name=j\n" + @p text and builds the job; @returns the
 * configuration's code when it refuses the text, else the job's. */
static ksnap_err_t build(const char *text) {
  char full[4096];
  ksnap_err_t err;

  snprintf(full, sizeof(full), "job.name=j\n%s", text);
  if ((err = ksnap_conf_load_string(conf, "job.properties", full, collect,
                                    NULL)))
    return err;
  return ksnap_job_new(conf, &job, collect, NULL);
}

#define BUILD_OK(text)                                                     \
  do {                                                                     \
    ck_assert_msg(build(text) == KSNAP_ERR_OK, "errors: %s", errors);      \
    ck_assert_ptr_nonnull(job);                                            \
  } while (0)

#define BUILD_BAD(text, code, msgs)                                        \
  do {                                                                     \
    ck_assert_int_eq(build(text), (code));                                 \
    ck_assert_ptr_null(job);                                               \
    ck_assert_str_eq(errors, msgs);                                        \
  } while (0)

/* "TOPIC[NAME]" of each output of @p stage, space-separated. */
static const char *outputs(const char *stage, char *buf, size_t size) {
  const ksnap_job_stage_t *s = ksnap_job_stage_find(job, stage);
  size_t off = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < ksnap_job_stage_output_cnt(s) && off < size; i++) {
    const char *o = ksnap_job_stage_output_name(s, i);
    off += (size_t)snprintf(buf + off, size - off, "%s%s%s%s%s",
                            i ? " " : "",
                            ksnap_job_topic_name(ksnap_job_stage_output(s, i)),
                            o ? "[" : "", o ? o : "", o ? "]" : "");
  }
  return buf;
}

START_TEST(named_outputs_and_their_topics) {
  char buf[512];
  const ksnap_job_stage_t *route, *audit;
  const ksnap_job_topic_t *t;

  BUILD_OK("stage.route.operator=x\n"
           "stage.route.parallelism=2\n"
           "stage.route.input=source:in\n"
           "stage.route.output=sink:small\n"
           "stage.route.output.large=\n"
           "stage.route.output.bad=sink:bad, sink:bad2\n"
           "stage.total.operator=x\n"
           "stage.total.parallelism=2\n"
           "stage.total.input=stage:route.large\n"
           "stage.total.output=sink:totals\n"
           "stage.audit.operator=x\n"
           "stage.audit.parallelism=3\n"
           "stage.audit.input=stage:route.large, stage:route\n"
           "stage.audit.output=sink:audited\n");
  route = ksnap_job_stage_find(job, "route");
  audit = ksnap_job_stage_find(job, "audit");
  ck_assert_str_eq(outputs("route", buf, sizeof(buf)),
                   "j.route j.route.large[large] j.route.large.p3[large] "
                   "small bad[bad] bad2[bad]");
  ck_assert_uint_eq(ksnap_job_stage_named_output_cnt(route), 2);
  ck_assert_str_eq(ksnap_job_stage_named_output(route, 0), "large");
  ck_assert_str_eq(ksnap_job_stage_named_output(route, 1), "bad");
  ck_assert_ptr_eq(ksnap_job_stage_output_find(route, "bad"),
                   ksnap_job_stage_named_output(route, 1));
  ck_assert_ptr_null(ksnap_job_stage_output_find(route, "nope"));
  ck_assert_int_eq(ksnap_job_stage_has_default_output(route), 1);
  /* audit reads the named output (its parallelism's topic) and the
   * default output, in the order written, with the names as written */
  t = ksnap_job_stage_input(audit, 0);
  ck_assert_str_eq(ksnap_job_topic_name(t), "j.route.large.p3");
  ck_assert_str_eq(ksnap_job_topic_output(t), "large");
  ck_assert_int_eq(ksnap_job_topic_reader_parallelism(t), 3);
  ck_assert_str_eq(ksnap_job_stage_input_name(audit, 0), "stage:route.large");
  t = ksnap_job_stage_input(audit, 1);
  ck_assert_str_eq(ksnap_job_topic_name(t), "j.route");
  ck_assert_ptr_null(ksnap_job_topic_output(t));
  ck_assert_str_eq(ksnap_job_topic_name(ksnap_job_stage_input(
                       ksnap_job_stage_find(job, "total"), 0)),
                   "j.route.large");
}
END_TEST

START_TEST(named_outputs_only) {
  char buf[256];

  BUILD_OK("stage.a.operator=x\n"
           "stage.a.input=source:in\n"
           "stage.a.output.even=sink:evens\n"
           "stage.a.output.odd=sink:odds\n");
  ck_assert_str_eq(outputs("a", buf, sizeof(buf)), "evens[even] odds[odd]");
  ck_assert_int_eq(
      ksnap_job_stage_has_default_output(ksnap_job_stage_find(job, "a")), 0);
  ck_assert_int_eq(ksnap_job_stage_is_sink(ksnap_job_stage_find(job, "a")),
                   1);
}
END_TEST

START_TEST(undeclared_and_nowhere_outputs) {
  BUILD_BAD("stage.a.operator=x\n"
            "stage.a.input=source:in\n"
            "stage.a.output=sink:out\n"
            "stage.a.output.side=\n"
            "stage.b.operator=x\n"
            "stage.b.input=stage:a.sied\n"
            "stage.b.output=sink:out2\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:7: stage.b.input: stage:a.sied: stage a has no "
            "output \"sied\" (declare it: stage.a.output.sied=, with its "
            "sink:TOPIC entries if any)\n"
            "job.properties:5: stage.a.output.side: output side of stage a "
            "goes nowhere: it has no sink:TOPIC and no stage reads "
            "stage:a.side\n");
}
END_TEST

START_TEST(bad_named_output_entries) {
  BUILD_BAD("stage.a.operator=x\n"
            "stage.a.input=source:in\n"
            "stage.a.output.p3=sink:x\n"
            "stage.a.output.side=stage:b, sink:out, sink:out\n"
            "stage.b.operator=x\n"
            "stage.b.input=stage:a., stage:a.side.x\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.a.output.p3: output name \"p3\" is "
            "reserved (p and digits name the exchange topics of other "
            "parallelisms)\n"
            "job.properties:5: stage.a.output.side: invalid entry "
            "\"stage:b\" (expected sink:TOPIC; the reader declares an edge: "
            "stage.b.input=stage:a.side)\n"
            "job.properties:5: stage.a.output.side: \"sink:out\" is listed "
            "twice\n"
            "job.properties:7: stage.b.input: invalid entry \"stage:a.\" "
            "(expected stage:NAME or stage:NAME.OUTPUT)\n"
            "job.properties:7: stage.b.input: invalid entry "
            "\"stage:a.side.x\" (expected stage:NAME or stage:NAME.OUTPUT)\n"
            "job.properties: missing required property \"stage.b.output\" "
            "(stage b has no sink:TOPIC and no stage reads stage:b)\n");
}
END_TEST

START_TEST(invalid_output_name_refused_by_conf) {
  ck_assert_int_eq(build("stage.a.output.bad.name=sink:x\n"),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_msg(strstr(errors, "stage.a.output.bad.name: invalid output "
                               "name \"bad.name\""),
                "errors: %s", errors);
}
END_TEST

START_TEST(exchange_of_named_output_clashes_with_sink) {
  BUILD_BAD("stage.a.operator=x\n"
            "stage.a.input=source:in\n"
            "stage.a.output.x=\n"
            "stage.b.operator=x\n"
            "stage.b.input=stage:a.x\n"
            "stage.b.output=sink:j.a.x\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:7: stage.b.output: topic \"j.a.x\" is the "
            "exchange topic of stage a\n");
}
END_TEST

int main(void) {
  Suite *s = suite_create("job_outputs");
  TCase *tc = tcase_create("job_outputs");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, named_outputs_and_their_topics);
  tcase_add_test(tc, named_outputs_only);
  tcase_add_test(tc, undeclared_and_nowhere_outputs);
  tcase_add_test(tc, bad_named_output_entries);
  tcase_add_test(tc, invalid_output_name_refused_by_conf);
  tcase_add_test(tc, exchange_of_named_output_clashes_with_sink);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
