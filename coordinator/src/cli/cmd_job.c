/* `ksnap job describe FILE`: the job graph of a job file, as ksnap will
 * run it: stages in topological order, each task's inputs (partitions and
 * channels) and outputs, the graph's edges, and the topics ksnap
 * creates. `ksnap job status FILE`: cmd_job_status.c. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/job.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap job describe [--check-operators] FILE\n"
          "       ksnap job status FILE\n"
          "\n"
          "describe  Builds the job graph of the job file FILE and prints\n"
          "          the stages in topological order, every task with the\n"
          "          partitions and channels it reads, the graph (every\n"
          "          edge with its topic), the topics ksnap creates and\n"
          "          the topics that must exist. The job file\n"
          "          gets the checks of `ksnap config check` first, every\n"
          "          stage's operator loaded included; problems are printed\n"
          "          on stderr, one per line (FILE:LINE: MESSAGE), and the\n"
          "          exit code is 1.\n"
          "          --check-operators is accepted for compatibility: the\n"
          "          operators are always checked.\n"
          "status    Reads the job's control topic and prints its members\n"
          "          (workers started with `ksnap worker --join`): each\n"
          "          one's instance, host, slots and tasks; the tasks\n"
          "          without an owner (the job waits for slots), those\n"
          "          owned by workers that are no members (--tasks), and\n"
          "          the members removed and why. No coordinator needed.\n");
}

/* "lines partitions p mod 2 = 0" or "x.s partitions 0, 2 x writers
 * s[0..1] = 4 channels" for each input of task @p task. */
static int print_task(const ksnap_job_stage_t *stage, int32_t task) {
  int32_t p = ksnap_job_stage_parallelism(stage), parts[64];
  ksnap_job_channel_t *channels;
  size_t nchannels;
  char id[KSNAP_JOB_TASK_ID_SIZE];

  if (ksnap_job_task_channels(stage, task, &channels, &nchannels))
    return -1;
  ksnap_job_task_id(stage, task, id, sizeof(id));
  printf("  task %s:", id);
  for (size_t i = 0; i < ksnap_job_stage_input_cnt(stage); i++) {
    const ksnap_job_topic_t *t = ksnap_job_stage_input(stage, i);
    const ksnap_job_stage_t *w = ksnap_job_topic_writer(t);
    printf("%s %s partitions", i ? ";" : "", ksnap_job_topic_name(t));
    if (!w) {
      printf(" p mod %d = %d", (int)p, (int)task);
      continue;
    }
    size_t n = ksnap_job_task_partitions(stage, task,
                                         ksnap_job_topic_partitions(t), parts,
                                         64);
    for (size_t k = 0; k < n && k < 64; k++)
      printf("%s %d", k ? "," : "", (int)parts[k]);
    printf("%s x writers %s[0..%d]", n > 64 ? ", ..." : "",
           ksnap_job_stage_name(w), (int)ksnap_job_stage_parallelism(w) - 1);
  }
  if (nchannels)
    printf(" = %zu channel%s", nchannels, nchannels == 1 ? "" : "s");
  printf("\n");
  free(channels);
  return 0;
}

/* "read by a, b" for an exchange topic. */
static void print_readers(const ksnap_job_t *job, const ksnap_job_topic_t *t) {
  const char *sep = ", read by ";

  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const ksnap_job_stage_t *s = ksnap_job_stage(job, i);
    for (size_t k = 0; k < ksnap_job_stage_input_cnt(s); k++)
      if (ksnap_job_stage_input(s, k) == t) {
        printf("%s%s", sep, ksnap_job_stage_name(s));
        sep = ", ";
      }
  }
}

static void print_topic(const ksnap_job_t *job, const ksnap_job_topic_t *t) {
  ksnap_job_topic_kind_t kind = ksnap_job_topic_kind(t);

  printf("%s topic %s", ksnap_job_topic_kind_name(kind),
         ksnap_job_topic_name(t));
  if (kind == KSNAP_JOB_TOPIC_EXCHANGE) {
    const char *o = ksnap_job_topic_output(t);
    printf(" (%d partitions, written by %s%s%s",
           (int)ksnap_job_topic_partitions(t),
           ksnap_job_stage_name(ksnap_job_topic_writer(t)),
           o ? " as output " : "", o ? o : "");
    print_readers(job, t);
    printf(")");
  }
}

/* "  errors: tolerance all, dead letters to dlq (with context headers)"
 * for a stage that tolerates failed records. */
static void print_errors(const ksnap_job_stage_t *s) {
  const char *dlq = ksnap_job_stage_dlq_topic(s);

  if (ksnap_job_stage_tolerance(s) != KSNAP_JOB_TOLERANCE_ALL)
    return;
  if (!dlq) {
    printf("  errors: tolerance all, failed records skipped\n");
    return;
  }
  printf("  errors: tolerance all, failed records to dead-letter topic %s%s"
         "\n", dlq,
         ksnap_job_stage_dlq_headers(s) ? " (with context headers)" : "");
}

/* The dead-letter topics, once each. */
static void print_dlq_topics(const ksnap_job_t *job) {
  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const char *dlq = ksnap_job_stage_dlq_topic(ksnap_job_stage(job, i));
    int seen = 0;
    for (size_t k = 0; dlq && k < i && !seen; k++) {
      const char *o = ksnap_job_stage_dlq_topic(ksnap_job_stage(job, k));
      seen = o && !strcmp(o, dlq);
    }
    if (dlq && !seen)
      printf("  %s (dead-letter)\n", dlq);
  }
}

/* The graph, one edge a line, in topological order of the stage each
 * edge enters (a sink edge: of the stage it leaves):
 *   source lines --> split
 *   split --> exchange j.split (2 partitions) --> count
 *   count --> sink counts */
static void print_graph(const ksnap_job_t *job) {
  printf("\ngraph (every edge, data flowing left to right):\n");
  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const ksnap_job_stage_t *s = ksnap_job_stage(job, i);
    for (size_t k = 0; k < ksnap_job_stage_input_cnt(s); k++) {
      const ksnap_job_topic_t *t = ksnap_job_stage_input(s, k);
      const ksnap_job_stage_t *w = ksnap_job_topic_writer(t);
      const char *o = ksnap_job_topic_output(t);
      if (w)
        printf("  %s%s%s%s --> exchange %s (%d partitions) --> %s\n",
               ksnap_job_stage_name(w), o ? " [" : "", o ? o : "",
               o ? "]" : "",
               ksnap_job_topic_name(t), (int)ksnap_job_topic_partitions(t),
               ksnap_job_stage_name(s));
      else
        printf("  source %s --> %s\n", ksnap_job_topic_name(t),
               ksnap_job_stage_name(s));
    }
    for (size_t k = 0; k < ksnap_job_stage_output_cnt(s); k++) {
      const ksnap_job_topic_t *t = ksnap_job_stage_output(s, k);
      const char *o = ksnap_job_stage_output_name(s, k);
      if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_SINK)
        printf("  %s%s%s%s --> sink %s\n", ksnap_job_stage_name(s),
               o ? " [" : "", o ? o : "", o ? "]" : "",
               ksnap_job_topic_name(t));
    }
    if (ksnap_job_stage_dlq_topic(s))
      printf("  %s --> dead-letter %s\n", ksnap_job_stage_name(s),
             ksnap_job_stage_dlq_topic(s));
  }
}

static int describe(const ksnap_job_t *job) {
  size_t ntasks = 0;

  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++)
    ntasks += (size_t)ksnap_job_stage_parallelism(ksnap_job_stage(job, i));
  printf("job %s: %zu stage%s, %zu task%s\n", ksnap_job_name(job),
         ksnap_job_stage_cnt(job), ksnap_job_stage_cnt(job) == 1 ? "" : "s",
         ntasks, ntasks == 1 ? "" : "s");
  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const ksnap_job_stage_t *s = ksnap_job_stage(job, i);
    int src = ksnap_job_stage_is_source(s), sink = ksnap_job_stage_is_sink(s);
    printf("\nstage %s: parallelism %d, operator %s%s%s%s\n",
           ksnap_job_stage_name(s), (int)ksnap_job_stage_parallelism(s),
           ksnap_job_stage_operator(s), src ? ", source" : "",
           sink ? ", sink" : "", src || sink ? " stage" : "");
    for (size_t k = 0; k < ksnap_job_stage_input_cnt(s); k++) {
      printf("  in:  ");
      print_topic(job, ksnap_job_stage_input(s, k));
      printf("\n");
    }
    for (size_t k = 0; k < ksnap_job_stage_output_cnt(s); k++) {
      const char *o = ksnap_job_stage_output_name(s, k);
      printf("  out%s%s: ", o ? " " : "", o ? o : "");
      print_topic(job, ksnap_job_stage_output(s, k));
      printf("\n");
    }
    print_errors(s);
    for (int32_t t = 0; t < ksnap_job_stage_parallelism(s); t++)
      if (print_task(s, t))
        return KSNAP_EXIT_FAIL;
  }
  print_graph(job);
  printf("\ntopics ksnap creates:\n");
  for (size_t i = 0; i < ksnap_job_topic_cnt(job); i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(job, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_EXCHANGE)
      printf("  %s: %d partitions (exchange)\n", ksnap_job_topic_name(t),
             (int)ksnap_job_topic_partitions(t));
  }
  printf("  %s.ksnap.control, %s.ksnap.acks, %s.ksnap.progress "
         "(control plane)\n", ksnap_job_name(job), ksnap_job_name(job),
         ksnap_job_name(job));
  printf("topics that must exist:\n");
  for (size_t i = 0; i < ksnap_job_topic_cnt(job); i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(job, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_EXCHANGE)
      printf("  %s (%s)\n", ksnap_job_topic_name(t),
             ksnap_job_topic_kind_name(ksnap_job_topic_kind(t)));
  }
  print_dlq_topics(job);
  return KSNAP_EXIT_OK;
}

int cmd_job(int argc, char **argv) {
  int check_ops = argc == 4 && !strcmp(argv[2], "--check-operators"), rc;
  const char *path = argv[argc - 1];
  ksnap_conf_t *conf;
  ksnap_job_t *job = NULL;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  int status = argc == 3 && !strcmp(argv[1], "status");

  if ((argc != 3 && !check_ops) ||
      (strcmp(argv[1], "describe") && !status) || !strncmp(path, "--", 2)) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if ((rc = cli_conf_read(path, &conf)))
    return rc;
  if (!(rc = cli_job_check(conf, path,
                           status ? CLI_JOB_NO_EMBEDDED : CLI_JOB_EMBEDDED_RUN,
                           &job)))
    rc = status ? cli_job_status(conf, job) : describe(job);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
  return rc;
}
