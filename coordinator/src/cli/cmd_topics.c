/*
 * `ksnap topics create JOB.properties NAME:PARTITIONS[:compact]...`:
 * creates a job's external topics (its sources and sinks, which ksnap
 * never creates by itself; :compact with cleanup.policy=compact) on the
 * job's Kafka cluster, idempotently, with the job file's kafka.* settings.
 * It reports each topic as created or existing with the partition count
 * the cluster really has, and fails when an existing topic has fewer
 * partitions than asked.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/conf.h"
#include "kafka/topics.h"

#define TOPICS_TIMEOUT_MS 60000

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap topics create JOB.properties NAME:PARTITIONS[:compact]...\n"
          "\n"
          "Creates the given topics on the job's Kafka cluster\n"
          "(kafka.bootstrap.servers and the other kafka.* keys of the job\n"
          "file), with the broker's default replication factor, and prints\n"
          "one line per topic with the partition count the cluster has:\n"
          "  NAME: created, N partitions\n"
          "  NAME: exists, N partitions\n"
          "Use it for a job's source and sink topics: ksnap creates only its\n"
          "own exchange and control topics. NAME:PARTITIONS:compact creates\n"
          "the topic with cleanup.policy=compact (a reference table read by a\n"
          "join keeps the last value per key); an existing topic's policy is\n"
          "not changed.\n"
          "\n"
          "Unlike kafka-topics.sh --create, a topic that already exists is not\n"
          "an error, so the command can run before every start of a job. An\n"
          "existing topic is never changed; its partition count decides:\n"
          "  - as many as asked, or more: reported (e.g. \"lines: exists, 6\n"
          "    partitions (4 asked)\"). Kafka cannot remove partitions, and a\n"
          "    job's source tasks share whatever partitions a topic has.\n"
          "  - fewer than asked: an error. Add partitions with\n"
          "    kafka-topics.sh --alter --topic NAME --partitions N (keys then\n"
          "    map to other partitions), or ask for fewer.\n"
          "\n"
          "Exit status: 0 every topic exists with at least the partitions\n"
          "asked; 1 a topic has fewer (the others are still created), or the\n"
          "cluster refused or did not answer; 2 usage error.\n");
}

/* Parses "NAME:PARTITIONS[:compact]" into @p spec (name points into
 * @p arg, which is left as it was when it does not parse). */
static int parse_spec(char *arg, ksnap_topic_spec_t *spec) {
  size_t len = strlen(arg), sfx = strlen(":compact");
  int compact = len > sfx && !strcmp(arg + len - sfx, ":compact");
  char *colon, *end = NULL;
  long n = 0;

  if (compact)
    arg[len - sfx] = '\0';
  colon = strrchr(arg, ':');
  if (colon && colon != arg)
    n = strtol(colon + 1, &end, 10);
  if (n < 1 || *end || end == colon + 1 || n > 100000) {
    if (compact)
      arg[len - sfx] = ':';
    return -1;
  }
  *colon = '\0';
  spec->name = arg;
  spec->partitions = (int)n;
  spec->compact = compact;
  return 0;
}

/* Prints what happened to @p spec (stdout, or stderr when the existing
 * topic has fewer partitions than asked). @returns a KSNAP_EXIT_* code. */
static int report(const ksnap_topic_spec_t *spec,
                  const ksnap_topic_result_t *result) {
  const char *plural = result->partitions == 1 ? "" : "s";

  if (!result->existed) {
    printf("%s: created, %d partition%s%s\n", spec->name, result->partitions,
           plural, spec->compact ? ", cleanup.policy=compact" : "");
  } else if (result->partitions == spec->partitions) {
    printf("%s: exists, %d partition%s\n", spec->name, result->partitions,
           plural);
  } else if (result->partitions > spec->partitions) {
    printf("%s: exists, %d partitions (%d asked)\n", spec->name,
           result->partitions, spec->partitions);
  } else {
    fprintf(stderr,
            "ksnap topics create: %s exists with %d partitions, fewer than "
            "the %d asked: add partitions (kafka-topics.sh --alter --topic "
            "%s --partitions %d) or ask for %d\n",
            spec->name, result->partitions, spec->partitions, spec->name,
            spec->partitions, result->partitions);
    return KSNAP_EXIT_FAIL;
  }
  return KSNAP_EXIT_OK;
}

int cmd_topics(int argc, char **argv) {
  ksnap_topic_spec_t *specs;
  ksnap_topic_result_t *results;
  ksnap_conf_t *conf = NULL;
  ksnap_error_t error;
  int rc, n = argc - 3;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  if (argc < 4 || strcmp(argv[1], "create")) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  specs = calloc((size_t)n, sizeof(*specs));
  results = calloc((size_t)n, sizeof(*results));
  rc = specs && results ? KSNAP_EXIT_OK : KSNAP_EXIT_FAIL;
  for (int i = 0; i < n && !rc; i++) {
    if (parse_spec(argv[i + 3], &specs[i])) {
      fprintf(stderr, "ksnap topics create: \"%s\": expected "
              "NAME:PARTITIONS[:compact]\n",
              argv[i + 3]);
      rc = KSNAP_EXIT_USAGE;
    }
  }
  if (!rc)
    rc = cli_conf_load(argv[2], &conf);
  if (rc)
    goto done;
  ksnap_error_clear(&error);
  if (ksnap_topics_ensure_report(conf, specs, (size_t)n, TOPICS_TIMEOUT_MS,
                                 results, &error)) {
    fprintf(stderr, "ksnap topics create: %s\n", error.msg);
    rc = KSNAP_EXIT_FAIL;
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (report(&specs[i], &results[i]))
      rc = KSNAP_EXIT_FAIL;
done:
  ksnap_conf_destroy(conf);
  free(results);
  free(specs);
  return rc;
}
