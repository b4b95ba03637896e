/* The job graph (ksnap/job.h): building, topological order, partition
 * assignment, channel sets, and every validation error, asserted
 * exactly. Jobs are loaded from text named "job.properties", so errors
 * carry job.properties:LINE. */
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

/* Loads "job.name=j\n" + @p text and builds the job. */
static ksnap_err_t build(const char *text) {
  char full[4096];

  snprintf(full, sizeof(full), "job.name=j\n%s", text);
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job.properties", full,
                                          collect, NULL),
                   KSNAP_ERR_OK);
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

static const char *stage_name(size_t i) {
  return ksnap_job_stage_name(ksnap_job_stage(job, i));
}

static const char *topic_name(size_t i) {
  return ksnap_job_topic_name(ksnap_job_topic(job, i));
}

START_TEST(linear_job) {
  const ksnap_job_stage_t *split, *count;
  const ksnap_job_topic_t *ex;

  BUILD_OK("stage.count.operator=libwc.so:count\n"
           "stage.count.parallelism=3\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:counts\n"
           "stage.split.operator=split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:lines\n");
  ck_assert_str_eq(ksnap_job_name(job), "j");
  ck_assert_uint_eq(ksnap_job_stage_cnt(job), 2);
  ck_assert_str_eq(stage_name(0), "split"); /* topological, not declared */
  ck_assert_str_eq(stage_name(1), "count");
  ck_assert_ptr_null(ksnap_job_stage(job, 2));
  split = ksnap_job_stage_find(job, "split");
  count = ksnap_job_stage_find(job, "count");
  ck_assert_ptr_null(ksnap_job_stage_find(job, "nope"));
  ck_assert_uint_eq(ksnap_job_stage_index(count), 1);
  ck_assert_int_eq(ksnap_job_stage_parallelism(split), 2);
  ck_assert_str_eq(ksnap_job_stage_operator(split), "split");
  ck_assert_str_eq(ksnap_job_stage_operator(count), "libwc.so:count");
  ck_assert(ksnap_job_stage_is_source(split));
  ck_assert(!ksnap_job_stage_is_sink(split));
  ck_assert(!ksnap_job_stage_is_source(count));
  ck_assert(ksnap_job_stage_is_sink(count));

  ck_assert_uint_eq(ksnap_job_topic_cnt(job), 3);
  ck_assert_str_eq(topic_name(0), "lines");
  ck_assert_str_eq(topic_name(1), "j.split");
  ck_assert_str_eq(topic_name(2), "counts");
  ck_assert_int_eq(ksnap_job_topic_kind(ksnap_job_topic(job, 0)),
                   KSNAP_JOB_TOPIC_SOURCE);
  ck_assert_int_eq(ksnap_job_topic_kind(ksnap_job_topic(job, 2)),
                   KSNAP_JOB_TOPIC_SINK);
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_topic(job, 0)), -1);
  ex = ksnap_job_topic(job, 1);
  ck_assert_int_eq(ksnap_job_topic_kind(ex), KSNAP_JOB_TOPIC_EXCHANGE);
  ck_assert_int_eq(ksnap_job_topic_partitions(ex), 3); /* reader's P */
  ck_assert_ptr_eq(ksnap_job_topic_writer(ex), split);
  ck_assert_ptr_null(ksnap_job_topic_writer(ksnap_job_topic(job, 0)));

  ck_assert_uint_eq(ksnap_job_stage_input_cnt(split), 1);
  ck_assert_ptr_eq(ksnap_job_stage_input(split, 0), ksnap_job_topic(job, 0));
  ck_assert_uint_eq(ksnap_job_stage_output_cnt(split), 1);
  ck_assert_ptr_eq(ksnap_job_stage_output(split, 0), ex);
  ck_assert_ptr_eq(ksnap_job_stage_input(count, 0), ex);
  ck_assert_uint_eq(ksnap_job_stage_output_cnt(count), 1);
  ck_assert_ptr_eq(ksnap_job_stage_output(count, 0), ksnap_job_topic(job, 2));
  ck_assert_ptr_null(ksnap_job_stage_output(count, 1));
  ck_assert_str_eq(ksnap_job_topic_kind_name(KSNAP_JOB_TOPIC_EXCHANGE),
                   "exchange");
}
END_TEST

START_TEST(dag_topological_order_and_shared_topics) {
  const ksnap_job_stage_t *join;

  /* Declared backwards: join reads left and right, both read src. */
  BUILD_OK("stage.join.operator=join\n"
           "stage.join.input=stage:right, stage:left\n"
           "stage.join.output=sink:out\n"
           "stage.right.operator=r\n"
           "stage.right.input=stage:src\n"
           "stage.right.output=sink:out,sink:audit\n"
           "stage.left.operator=l\n"
           "stage.left.parallelism=4\n"
           "stage.left.input=stage:src\n"
           "stage.src.operator=s\n"
           "stage.src.input=source:in, source:extra\n");
  ck_assert_str_eq(stage_name(0), "src");
  ck_assert_str_eq(stage_name(1), "right"); /* ties: declaration order */
  ck_assert_str_eq(stage_name(2), "left");
  ck_assert_str_eq(stage_name(3), "join");
  /* sources, exchanges, sinks; each in order of first use */
  ck_assert_uint_eq(ksnap_job_topic_cnt(job), 8);
  ck_assert_str_eq(topic_name(0), "in");
  ck_assert_str_eq(topic_name(1), "extra");
  ck_assert_str_eq(topic_name(2), "j.src");    /* for right (P 1) */
  ck_assert_str_eq(topic_name(3), "j.src.p4"); /* for left (P 4) */
  ck_assert_str_eq(topic_name(4), "j.right");
  ck_assert_str_eq(topic_name(5), "j.left");
  ck_assert_str_eq(topic_name(6), "out"); /* two writers, one topic */
  ck_assert_str_eq(topic_name(7), "audit");
  /* src's exchanges: one per reader parallelism, partitioned for it */
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_topic(job, 2)), 1);
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_topic(job, 3)), 4);
  ck_assert_int_eq(
      ksnap_job_topic_reader_parallelism(ksnap_job_topic(job, 3)), 4);
  ck_assert_ptr_eq(ksnap_job_stage_input(ksnap_job_stage_find(job, "right"),
                                         0), ksnap_job_topic(job, 2));
  ck_assert_ptr_eq(ksnap_job_stage_input(ksnap_job_stage_find(job, "left"),
                                         0), ksnap_job_topic(job, 3));
  ck_assert_uint_eq(ksnap_job_stage_output_cnt(ksnap_job_stage(job, 0)), 2);
  join = ksnap_job_stage_find(job, "join");
  ck_assert_uint_eq(ksnap_job_stage_input_cnt(join), 2); /* as written */
  ck_assert_str_eq(ksnap_job_topic_name(ksnap_job_stage_input(join, 0)),
                   "j.right");
  ck_assert_str_eq(ksnap_job_topic_name(ksnap_job_stage_input(join, 1)),
                   "j.left");
  ck_assert(!ksnap_job_stage_is_source(join)); /* fan-in: aligns barriers */
  /* join[0]'s channels: j.right[0] from right[0], j.left[0] from left[0..3] */
  ksnap_job_channel_t *ch;
  size_t n;
  ck_assert_int_eq(ksnap_job_task_channels(join, 0, &ch, &n), KSNAP_ERR_OK);
  ck_assert_uint_eq(n, 5);
  ck_assert_str_eq(ksnap_job_topic_name(ch[0].topic), "j.right");
  ck_assert_int_eq(ch[0].writer, 0);
  for (int w = 0; w < 4; w++) {
    ck_assert_str_eq(ksnap_job_topic_name(ch[1 + w].topic), "j.left");
    ck_assert_int_eq(ch[1 + w].partition, 0);
    ck_assert_int_eq(ch[1 + w].writer, w);
  }
  free(ch);
  ck_assert_uint_eq(ksnap_job_stage_output_cnt(
                        ksnap_job_stage_find(job, "right")), 3);
}
END_TEST

/* Fan-out to readers of parallelisms 2, 3 and 2: one exchange topic per
 * parallelism (the first reader's keeps JOB.W), each reader reads the one
 * of its parallelism, the writer writes both; stage.W.partitions sets
 * the partitions of each and is checked against every reader. */
START_TEST(fan_out_one_exchange_per_reader_parallelism) {
  const ksnap_job_stage_t *w, *a, *b, *c;

  BUILD_OK("stage.w.operator=x\nstage.w.input=source:in\n"
           "stage.a.operator=x\nstage.a.parallelism=2\n"
           "stage.a.input=stage:w\nstage.a.output=sink:oa\n"
           "stage.b.operator=x\nstage.b.parallelism=3\n"
           "stage.b.input=stage:w\nstage.b.output=sink:ob\n"
           "stage.c.operator=x\nstage.c.parallelism=2\n"
           "stage.c.input=stage:w\nstage.c.output=sink:oc\n");
  w = ksnap_job_stage_find(job, "w");
  a = ksnap_job_stage_find(job, "a");
  b = ksnap_job_stage_find(job, "b");
  c = ksnap_job_stage_find(job, "c");
  ck_assert_uint_eq(ksnap_job_stage_output_cnt(w), 2);
  ck_assert_str_eq(ksnap_job_topic_name(ksnap_job_stage_output(w, 0)), "j.w");
  ck_assert_str_eq(ksnap_job_topic_name(ksnap_job_stage_output(w, 1)),
                   "j.w.p3");
  ck_assert_ptr_eq(ksnap_job_stage_input(a, 0), ksnap_job_stage_output(w, 0));
  ck_assert_ptr_eq(ksnap_job_stage_input(c, 0), ksnap_job_stage_output(w, 0));
  ck_assert_ptr_eq(ksnap_job_stage_input(b, 0), ksnap_job_stage_output(w, 1));
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_stage_input(a, 0)), 2);
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_stage_input(b, 0)), 3);
  ck_assert_int_eq(ksnap_job_topic_reader_parallelism(
                       ksnap_job_stage_input(b, 0)), 3);
  ck_assert_int_eq(ksnap_job_topic_reader_parallelism(
                       ksnap_job_stage_input(a, 0)), 2);
  ck_assert_int_eq(ksnap_job_topic_writer(ksnap_job_stage_input(b, 0)) == w,
                   1);
  ck_assert_uint_eq(ksnap_job_topic_cnt(job), 6);
  teardown(); /* a fresh configuration */
  setup();

  BUILD_OK("stage.w.operator=x\nstage.w.input=source:in\n"
           "stage.w.partitions=6\n"
           "stage.a.operator=x\nstage.a.parallelism=2\n"
           "stage.a.input=stage:w\nstage.a.output=sink:oa\n"
           "stage.b.operator=x\nstage.b.parallelism=3\n"
           "stage.b.input=stage:w\nstage.b.output=sink:ob\n");
  w = ksnap_job_stage_find(job, "w");
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_stage_output(w, 0)),
                   6);
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_stage_output(w, 1)),
                   6);
  teardown(); /* a fresh configuration */
  setup();

  BUILD_BAD("stage.w.operator=x\nstage.w.input=source:in\n"
            "stage.w.partitions=2\n"
            "stage.a.operator=x\nstage.a.parallelism=2\n"
            "stage.a.input=stage:w\nstage.a.output=sink:oa\n"
            "stage.b.operator=x\nstage.b.parallelism=3\n"
            "stage.b.input=stage:w\nstage.b.output=sink:ob\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.w.partitions: 2 partitions are fewer than the 3 tasks of "
            "stage b, which reads them\n");
}
END_TEST

/* Source topics and stages in one stage's input: refused when the job is
 * built (a task could not read both), naming the key and a way out. */
START_TEST(mixed_source_and_stage_input_refused) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=source:in\n"
            "stage.b.operator=x\nstage.b.input=stage:a, source:other\n"
            "stage.b.output=sink:out\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:5: stage.b.input: reads both source topics "
            "(source:other) and stages (stage:a), which is not supported "
            "yet: read source:other in a stage of its own and list that "
            "stage here\n");
}
END_TEST

START_TEST(partition_assignment_is_p_mod_P) {
  int32_t parts[8];

  BUILD_OK("stage.a.operator=x\nstage.a.parallelism=3\n"
           "stage.a.input=source:in\nstage.a.output=sink:out\n");
  const ksnap_job_stage_t *a = ksnap_job_stage(job, 0);
  ck_assert_int_eq(ksnap_job_partition_task(0, 3), 0);
  ck_assert_int_eq(ksnap_job_partition_task(7, 3), 1);
  ck_assert_int_eq(ksnap_job_partition_task(5, 1), 0);
  /* 8 partitions over 3 tasks: 0 3 6 | 1 4 7 | 2 5 */
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 0, 8, parts, 8), 3);
  ck_assert_int_eq(parts[0], 0);
  ck_assert_int_eq(parts[1], 3);
  ck_assert_int_eq(parts[2], 6);
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 2, 8, parts, 8), 2);
  ck_assert_int_eq(parts[0], 2);
  ck_assert_int_eq(parts[1], 5);
  /* fewer partitions than tasks: task 2 reads nothing */
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 2, 2, parts, 8), 0);
  /* the count even when the buffer is smaller */
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 0, 100, parts, 2), 34);
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 0, 100, NULL, 0), 34);
  ck_assert_uint_eq(ksnap_job_task_partitions(a, 3, 8, parts, 8), 0);
  char id[KSNAP_JOB_TASK_ID_SIZE];
  ksnap_job_task_id(a, 2, id, sizeof(id));
  ck_assert_str_eq(id, "a[2]");
}
END_TEST

/* Asserts the channel set of @p stage's task @p task: "partition/writer"
 * pairs of topic @p topic, space-separated. */
static void assert_channels(const char *stage, int32_t task,
                            const char *topic, const char *expect) {
  const ksnap_job_stage_t *st = ksnap_job_stage_find(job, stage);
  ksnap_job_channel_t *ch;
  size_t n;
  char got[1024] = "";

  ck_assert_int_eq(ksnap_job_task_channels(st, task, &ch, &n), KSNAP_ERR_OK);
  for (size_t i = 0; i < n; i++) {
    ck_assert_str_eq(ksnap_job_topic_name(ch[i].topic), topic);
    snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d/%d",
             i ? " " : "", (int)ch[i].partition, (int)ch[i].writer);
  }
  free(ch);
  ck_assert_str_eq(got, expect);
}

START_TEST(channels_of_three_stage_job) {
  ksnap_job_channel_t *ch;
  size_t n;

  /* source P=2 -> keyed P=3 (6 exchange partitions) -> keyed P=2 */
  BUILD_OK("stage.src.operator=s\nstage.src.parallelism=2\n"
           "stage.src.input=source:in\nstage.src.partitions=6\n"
           "stage.mid.operator=m\nstage.mid.parallelism=3\n"
           "stage.mid.input=stage:src\n"
           "stage.last.operator=l\nstage.last.parallelism=2\n"
           "stage.last.input=stage:mid\nstage.last.output=sink:out\n");
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_topic(job, 1)), 6);
  ck_assert_int_eq(ksnap_job_topic_partitions(ksnap_job_topic(job, 2)), 2);
  /* source tasks: no channels (source topics carry no barriers) */
  ck_assert_int_eq(ksnap_job_task_channels(ksnap_job_stage(job, 0), 1, &ch,
                                           &n), KSNAP_ERR_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_null(ch);
  /* mid[i]: partitions i and i+3 of j.src, each from src[0] and src[1] */
  assert_channels("mid", 0, "j.src", "0/0 0/1 3/0 3/1");
  assert_channels("mid", 1, "j.src", "1/0 1/1 4/0 4/1");
  assert_channels("mid", 2, "j.src", "2/0 2/1 5/0 5/1");
  /* last[j]: partition j of j.mid from mid[0..2] */
  assert_channels("last", 0, "j.mid", "0/0 0/1 0/2");
  assert_channels("last", 1, "j.mid", "1/0 1/1 1/2");
  ck_assert_int_eq(ksnap_job_task_channels(ksnap_job_stage(job, 2), 2, &ch,
                                           &n), KSNAP_ERR_INVALID_ARG);
  ck_assert(ksnap_job_stage_is_source(ksnap_job_stage(job, 0)));
  ck_assert(!ksnap_job_stage_is_source(ksnap_job_stage(job, 1)));
  ck_assert(!ksnap_job_stage_is_sink(ksnap_job_stage(job, 1)));
  ck_assert(ksnap_job_stage_is_sink(ksnap_job_stage(job, 2)));
}
END_TEST

START_TEST(cycle_of_two) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=stage:b\n"
            "stage.b.operator=x\nstage.b.input=stage:a\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:3: stage.a.input: cycle a -> b -> a\n");
}
END_TEST

START_TEST(cycle_of_one_and_downstream) {
  /* c is downstream of the cycle but not on it; s feeds the cycle */
  BUILD_BAD("stage.s.operator=x\nstage.s.input=source:in\n"
            "stage.c.operator=x\nstage.c.input=stage:b\n"
            "stage.c.output=sink:out\n"
            "stage.a.operator=x\nstage.a.input=stage:s,stage:c\n"
            "stage.b.operator=x\nstage.b.input=stage:a\n"
            "stage.self.operator=x\nstage.self.input=stage:self\n"
            "stage.self.output=sink:o2\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:5: stage.c.input: cycle c -> a -> b -> c\n"
            "job.properties:12: stage.self.input: cycle self -> self\n");
}
END_TEST

START_TEST(unknown_stage) {
  BUILD_BAD("stage.count.operator=x\nstage.count.input=stage:splitt\n"
            "stage.count.output=sink:out\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:3: stage.count.input: unknown stage \"splitt\"\n");
}
END_TEST

START_TEST(missing_input_and_operator) {
  BUILD_BAD("stage.a.parallelism=2\nstage.a.output=sink:out\n",
            KSNAP_ERR_CONF_MISSING,
            "job.properties: missing required property "
            "\"stage.a.operator\"\n"
            "job.properties: missing required property \"stage.a.input\"\n");
}
END_TEST

START_TEST(no_stages_and_no_name) {
  ck_assert_int_eq(ksnap_job_new(conf, &job, collect, NULL),
                   KSNAP_ERR_CONF_MISSING);
  ck_assert_ptr_null(job);
  ck_assert_str_eq(errors,
                   "missing required property \"job.name\"\n"
                   "missing required property \"stage.NAME.input\" (the job "
                   "has no stages; see stage.* in CONFIGURATION.md)\n");
}
END_TEST

START_TEST(parallelism_above_max) {
  /* ksnap_conf_finalize() reports it too; the job checks on its own */
  BUILD_BAD("pipeline.max-parallelism=4\n"
            "stage.a.operator=x\nstage.a.parallelism=5\n"
            "stage.a.input=source:in\nstage.a.output=sink:out\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.a.parallelism: 5 exceeds "
            "pipeline.max-parallelism (4)\n");
}
END_TEST

START_TEST(partitions_below_one_refused_by_conf) {
  char errstr[256];

  ck_assert_int_eq(ksnap_conf_set(conf, "stage.a.partitions", "0", errstr,
                                  sizeof(errstr)),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errstr,
                   "stage.a.partitions: value 0 is outside allowed range "
                   "1..100000");
}
END_TEST

START_TEST(partitions_fewer_than_reader_tasks) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=source:in\n"
            "stage.a.partitions=2\n"
            "stage.b.operator=x\nstage.b.parallelism=3\n"
            "stage.b.input=stage:a\nstage.b.output=sink:out\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.a.partitions: 2 partitions are fewer "
            "than the 3 tasks of stage b, which reads them\n");
}
END_TEST

START_TEST(partitions_without_reader_and_stage_without_output) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=source:in\n"
            "stage.a.partitions=2\nstage.a.output=sink:out\n"
            "stage.b.operator=x\nstage.b.input=source:in\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.a.partitions: no stage reads stage:a, "
            "so it has no exchange topic\n"
            "job.properties: missing required property \"stage.b.output\" "
            "(stage b has no sink:TOPIC and no stage reads stage:b)\n");
}
END_TEST

START_TEST(bad_entries) {
  BUILD_BAD("stage.a.operator=x\n"
            "stage.a.input=lines,source:in,source:in,source:a b,,stage:\n"
            "stage.a.output=stage:b,counts,sink:out,sink:out,sink:..\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:3: stage.a.input: invalid entry \"lines\" "
            "(expected source:TOPIC or stage:NAME)\n"
            "job.properties:3: stage.a.input: \"source:in\" is listed twice\n"
            "job.properties:3: stage.a.input: invalid topic name \"a b\" "
            "(1 to 249 characters of A-Z a-z 0-9 . _ -)\n"
            "job.properties:3: stage.a.input: invalid entry \"\" (expected "
            "source:TOPIC or stage:NAME)\n"
            "job.properties:4: stage.a.output: invalid entry \"stage:b\" "
            "(expected sink:TOPIC; the reader declares an edge: "
            "stage.b.input=stage:a)\n"
            "job.properties:4: stage.a.output: invalid entry \"counts\" "
            "(expected sink:TOPIC)\n"
            "job.properties:4: stage.a.output: \"sink:out\" is listed twice\n"
            "job.properties:4: stage.a.output: invalid topic name \"..\" (1 "
            "to 249 characters of A-Z a-z 0-9 . _ -)\n"
            "job.properties:3: stage.a.input: unknown stage \"\"\n");
}
END_TEST

START_TEST(bad_operator_specs) {
  BUILD_BAD("stage.a.operator=libwc.so\nstage.a.input=source:in\n"
            "stage.a.output=sink:out\n"
            "stage.b.operator=libwc.so:\nstage.b.input=source:in\n"
            "stage.b.output=sink:out\n"
            "stage.c.operator=libwc.so:1x\nstage.c.input=source:in\n"
            "stage.c.output=sink:out\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:2: stage.a.operator: invalid operator "
            "\"libwc.so\" (a library needs the operator's name: "
            "LIB.so:NAME)\n"
            "job.properties:5: stage.b.operator: invalid operator "
            "\"libwc.so:\" (expected LIB.so:NAME, NAME a C identifier, or a "
            "built-in name)\n"
            "job.properties:8: stage.c.operator: invalid operator "
            "\"libwc.so:1x\" (expected LIB.so:NAME, NAME a C identifier, or "
            "a built-in name)\n");
}
END_TEST

START_TEST(topic_clashes) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=source:in\n"
            "stage.a.output=sink:in\n"
            "stage.b.operator=x\nstage.b.input=source:j.c\n"
            "stage.b.output=sink:out\n"
            "stage.c.operator=x\nstage.c.input=source:in2\n"
            "stage.d.operator=x\nstage.d.input=stage:c\n"
            "stage.d.output=sink:j.c\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:4: stage.a.output: topic \"in\" cannot be both "
            "a source and a sink of the job\n"
            "job.properties:6: stage.b.input: topic \"j.c\" is the exchange "
            "topic of stage c\n"
            "job.properties:12: stage.d.output: topic \"j.c\" is the "
            "exchange topic of stage c\n");
}
END_TEST

/* errors.*: the stage's keys over the job's; a dead-letter topic only
 * with tolerance all; an empty stage key switches the job's off; the
 * stages with one (or a sink) are transactional. */
START_TEST(errors_tolerance_and_dead_letter_topics) {
  const ksnap_job_stage_t *split, *count, *tail;

  BUILD_OK("errors.tolerance=all\n"
           "errors.deadletterqueue.topic.name=dlq\n"
           "stage.split.operator=x\nstage.split.input=source:lines\n"
           "stage.split.errors.deadletterqueue.context.headers.enable=true\n"
           "stage.count.operator=x\nstage.count.input=stage:split\n"
           "stage.count.errors.deadletterqueue.topic.name=count-dlq\n"
           "stage.tail.operator=x\nstage.tail.input=stage:count\n"
           "stage.tail.output=sink:out\n"
           "stage.tail.errors.deadletterqueue.topic.name=\n");
  split = ksnap_job_stage_find(job, "split");
  count = ksnap_job_stage_find(job, "count");
  tail = ksnap_job_stage_find(job, "tail");
  ck_assert_int_eq(ksnap_job_stage_tolerance(split), KSNAP_JOB_TOLERANCE_ALL);
  ck_assert_str_eq(ksnap_job_stage_dlq_topic(split), "dlq");
  ck_assert(ksnap_job_stage_dlq_headers(split));
  ck_assert_str_eq(ksnap_job_stage_dlq_topic(count), "count-dlq");
  ck_assert(!ksnap_job_stage_dlq_headers(count));
  ck_assert_ptr_null(ksnap_job_stage_dlq_topic(tail));
  ck_assert_int_eq(ksnap_job_stage_tolerance(tail), KSNAP_JOB_TOLERANCE_ALL);
  ck_assert(!ksnap_job_stage_is_sink(split));
  ck_assert(ksnap_job_stage_is_transactional(split));
  ck_assert(ksnap_job_stage_is_transactional(count));
  ck_assert(ksnap_job_stage_is_transactional(tail)); /* its sink */
  ck_assert_uint_eq(ksnap_job_topic_cnt(job), 4); /* no dead-letter topic */
  teardown();
  setup();
  /* tolerance none (the default, or the stage's): no dead-letter topic */
  BUILD_OK("errors.deadletterqueue.topic.name=dlq\n"
           "stage.a.operator=x\nstage.a.input=source:in\n"
           "stage.b.operator=x\nstage.b.input=stage:a\n"
           "stage.b.errors.tolerance=all\nstage.b.output=sink:out\n");
  ck_assert_int_eq(ksnap_job_stage_tolerance(ksnap_job_stage_find(job, "a")),
                   KSNAP_JOB_TOLERANCE_NONE);
  ck_assert_ptr_null(ksnap_job_stage_dlq_topic(ksnap_job_stage_find(job, "a")));
  ck_assert(!ksnap_job_stage_is_transactional(ksnap_job_stage_find(job, "a")));
  ck_assert_str_eq(ksnap_job_stage_dlq_topic(ksnap_job_stage_find(job, "b")),
                   "dlq");
}
END_TEST

START_TEST(dead_letter_topic_clashes) {
  BUILD_BAD("errors.tolerance=all\n"
            "stage.a.operator=x\nstage.a.input=source:in\n"
            "stage.a.errors.deadletterqueue.topic.name=in\n"
            "stage.b.operator=x\nstage.b.input=stage:a\n"
            "stage.b.output=sink:out\n"
            "stage.b.errors.deadletterqueue.topic.name=out\n"
            "stage.c.operator=x\nstage.c.input=stage:a\n"
            "stage.c.errors.deadletterqueue.topic.name=j.a\n"
            "stage.c.output=sink:out2\n"
            "stage.d.operator=x\nstage.d.input=source:in\n"
            "stage.d.output=sink:out3\n"
            "stage.d.errors.deadletterqueue.topic.name=j.ksnap.dlq\n"
            "stage.e.operator=x\nstage.e.input=source:in\n"
            "stage.e.output=sink:out4\n"
            "stage.e.errors.deadletterqueue.topic.name=bad/name\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:21: stage.e.errors.deadletterqueue.topic.name: "
            "invalid topic name \"bad/name\" (1 to 249 characters of A-Z a-z "
            "0-9 . _ -)\n"
            "job.properties:5: stage.a.errors.deadletterqueue.topic.name: "
            "dead-letter topic \"in\" of stage a is a source topic of the "
            "job\n"
            "job.properties:9: stage.b.errors.deadletterqueue.topic.name: "
            "dead-letter topic \"out\" of stage b is a sink topic of the "
            "job\n"
            "job.properties:12: stage.c.errors.deadletterqueue.topic.name: "
            "dead-letter topic \"j.a\" of stage c is an exchange topic of "
            "the job\n"
            "job.properties:17: stage.d.errors.deadletterqueue.topic.name: "
            "topic \"j.ksnap.dlq\" is reserved for ksnap's control topics "
            "(j.ksnap.*)\n");
}
END_TEST

START_TEST(control_topics_reserved) {
  BUILD_BAD("stage.a.operator=x\nstage.a.input=source:j.ksnap.control\n"
            "stage.a.output=sink:j.ksnap\n",
            KSNAP_ERR_CONF_VALUE,
            "job.properties:3: stage.a.input: topic \"j.ksnap.control\" is "
            "reserved for ksnap's control topics (j.ksnap.*)\n");
}
END_TEST

START_TEST(exchange_topic_name_too_long) {
  char text[1024], name[201];

  memset(name, 'n', 200);
  name[200] = '\0';
  snprintf(text, sizeof(text),
           "job.name=%s\n"
           "stage.a.operator=x\nstage.a.input=source:in\n"
           "stage.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.operator=x\n"
           "stage.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.input="
           "stage:a\n"
           "stage.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.output="
           "sink:out\n"
           "stage.cccccccccccccccccccccccccccccccccccccccccccccccccc.operator=x\n"
           "stage.cccccccccccccccccccccccccccccccccccccccccccccccccc.input="
           "stage:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n",
           name);
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job.properties", text,
                                          collect, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  /* j.a is 202 characters: fine; j.bbb... is 251 */
  char expect[1024];
  snprintf(expect, sizeof(expect),
           "job.properties:1: job.name: exchange topic name \"%s.%s\" is "
           "longer than 249 characters\n"
           "job.properties: missing required property "
           "\"stage.cccccccccccccccccccccccccccccccccccccccccccccccccc."
           "output\" (stage cccccccccccccccccccccccccccccccccccccccccccccccccc "
           "has no sink:TOPIC and no stage reads "
           "stage:cccccccccccccccccccccccccccccccccccccccccccccccccc)\n",
           name, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  ck_assert_str_eq(errors, expect);
}
END_TEST

START_TEST(errors_without_file_have_no_location) {
  char errstr[256];

  ck_assert_int_eq(ksnap_conf_set(conf, "job.name", "j", errstr,
                                  sizeof(errstr)), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_set(conf, "stage.a.input", "stage:a", errstr,
                                  sizeof(errstr)), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_set(conf, "stage.a.operator", "x", errstr,
                                  sizeof(errstr)), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errors, "stage.a.input: cycle a -> a\n");
  ck_assert_ptr_null(ksnap_conf_where(conf, "stage.a.input"));
  ck_assert_ptr_null(ksnap_conf_origin(conf));
}
END_TEST

int main(void) {
  Suite *s = suite_create("job");
  TCase *tc = tcase_create("job");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, linear_job);
  tcase_add_test(tc, dag_topological_order_and_shared_topics);
  tcase_add_test(tc, fan_out_one_exchange_per_reader_parallelism);
  tcase_add_test(tc, mixed_source_and_stage_input_refused);
  tcase_add_test(tc, partition_assignment_is_p_mod_P);
  tcase_add_test(tc, channels_of_three_stage_job);
  tcase_add_test(tc, cycle_of_two);
  tcase_add_test(tc, cycle_of_one_and_downstream);
  tcase_add_test(tc, unknown_stage);
  tcase_add_test(tc, missing_input_and_operator);
  tcase_add_test(tc, no_stages_and_no_name);
  tcase_add_test(tc, parallelism_above_max);
  tcase_add_test(tc, partitions_below_one_refused_by_conf);
  tcase_add_test(tc, partitions_fewer_than_reader_tasks);
  tcase_add_test(tc, partitions_without_reader_and_stage_without_output);
  tcase_add_test(tc, bad_entries);
  tcase_add_test(tc, bad_operator_specs);
  tcase_add_test(tc, topic_clashes);
  tcase_add_test(tc, errors_tolerance_and_dead_letter_topics);
  tcase_add_test(tc, dead_letter_topic_clashes);
  tcase_add_test(tc, control_topics_reserved);
  tcase_add_test(tc, exchange_topic_name_too_long);
  tcase_add_test(tc, errors_without_file_have_no_location);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
