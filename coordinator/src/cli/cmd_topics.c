/*
 * `ksnap topics create JOB.properties NAME:PARTITIONS...`: creates a job's
 * external topics (its sources and sinks, which ksnap never creates by
 * itself) on the job's Kafka cluster, idempotently, with the job file's
 * kafka.* settings.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/conf.h"
#include "kafka/topics.h"

#define TOPICS_TIMEOUT_MS 60000

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap topics create JOB.properties NAME:PARTITIONS...\n"
          "\n"
          "Creates the given topics on the job's Kafka cluster\n"
          "(kafka.bootstrap.servers and the other kafka.* keys of the job\n"
          "file), with the broker's default replication factor. A topic that\n"
          "already exists is left as it is. Use it for a job's source and\n"
          "sink topics: ksnap creates only its own exchange and control\n"
          "topics.\n");
}

/* Parses "NAME:PARTITIONS" into @p spec (name points into @p arg). */
static int parse_spec(char *arg, ksnap_topic_spec_t *spec) {
  char *colon = strrchr(arg, ':'), *end;
  long n;

  if (!colon || colon == arg)
    return -1;
  n = strtol(colon + 1, &end, 10);
  if (*end || end == colon + 1 || n < 1 || n > 100000)
    return -1;
  *colon = '\0';
  spec->name = arg;
  spec->partitions = (int)n;
  spec->compact = 0;
  return 0;
}

int cmd_topics(int argc, char **argv) {
  ksnap_topic_spec_t *specs;
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
  if (!(specs = calloc((size_t)n, sizeof(*specs))))
    return KSNAP_EXIT_FAIL;
  for (int i = 0; i < n; i++) {
    if (parse_spec(argv[i + 3], &specs[i])) {
      fprintf(stderr, "ksnap topics create: \"%s\": expected NAME:PARTITIONS\n",
              argv[i + 3]);
      free(specs);
      return KSNAP_EXIT_USAGE;
    }
  }
  if ((rc = cli_conf_load(argv[2], &conf)) != KSNAP_EXIT_OK) {
    free(specs);
    return rc;
  }
  ksnap_error_clear(&error);
  rc = KSNAP_EXIT_OK;
  if (ksnap_topics_ensure(conf, specs, (size_t)n, TOPICS_TIMEOUT_MS, &error)) {
    fprintf(stderr, "ksnap topics create: %s\n", error.msg);
    rc = KSNAP_EXIT_FAIL;
  } else {
    for (int i = 0; i < n; i++)
      printf("%s: %d partitions\n", specs[i].name, specs[i].partitions);
  }
  ksnap_conf_destroy(conf);
  free(specs);
  return rc;
}
