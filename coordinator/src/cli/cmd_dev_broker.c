/*
 * `ksnap dev-broker`: hosts librdkafka's mock cluster in the foreground for
 * demos and plumbing, the same embedded cluster as `ksnap run` with
 * kafka.bootstrap.servers=embedded (kafka/embedded.h). It is NOT a real
 * broker: it does not enforce read_committed, fencing or transactional
 * offsets (see --help).
 *
 * Threading: the mock cluster runs on librdkafka's own threads; this file's
 * main thread only waits for SIGINT/SIGTERM (the handler sets a flag).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kafka/embedded.h"

#define DEV_BROKER_MAX_TOPICS 64
#define DEV_BROKER_MAX_BROKERS 16

typedef struct dev_broker_topic_s {
  const char *name; /* points into argv */
  int partitions;
} dev_broker_topic_t;

typedef struct dev_broker_opts_s {
  int brokers;
  const char *bootstrap_file;
  dev_broker_topic_t topics[DEV_BROKER_MAX_TOPICS];
  int topic_cnt;
} dev_broker_opts_t;

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap dev-broker [--brokers N] [--topic NAME:PARTITIONS]...\n"
          "                        [--bootstrap-file PATH]\n"
          "\n"
          "Runs librdkafka's in-process mock Kafka cluster in the foreground,\n"
          "prints its bootstrap address (one line) on stdout, and runs until\n"
          "SIGINT or SIGTERM.\n"
          "\n"
          "FOR DEMOS AND PLUMBING ONLY. The mock cluster does NOT enforce\n"
          "read_committed (aborted and open transactional records are\n"
          "visible), does NOT fence a producer when another one with the same\n"
          "transactional.id starts, and DISCARDS offsets sent with\n"
          "send_offsets_to_transaction; every transactional call just\n"
          "succeeds. Exactly-once results need a real Apache Kafka broker\n"
          "(tests/servers/kafka.sh starts one). It also listens on random\n"
          "ports on 127.0.0.1, keeps only about 5 MB per partition (older data\n"
          "is dropped silently) and does not create topics through the Admin\n"
          "API: create them here with --topic.\n"
          "\n"
          "Options:\n"
          "  --brokers N              number of mock brokers (1..%d, default 1)\n"
          "  --topic NAME:PARTITIONS  create a topic (repeatable)\n"
          "  --bootstrap-file PATH    also write the bootstrap address to PATH\n"
          "  -h, --help               show this help\n",
          DEV_BROKER_MAX_BROKERS);
}

/* Parses a whole decimal int in [min, max]; returns 0 on success. */
static int parse_int(const char *s, int min, int max, int *out) {
  char *end;
  long v;

  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max)
    return -1;
  *out = (int)v;
  return 0;
}

static int parse_topic(char *arg, dev_broker_topic_t *topic) {
  char *colon = strrchr(arg, ':');

  if (!colon || colon == arg ||
      parse_int(colon + 1, 1, 100000, &topic->partitions))
    return -1;
  *colon = '\0'; /* the name ends here (argv is ours to modify) */
  topic->name = arg;
  return 0;
}

/* Returns KSNAP_EXIT_OK or KSNAP_EXIT_USAGE (message printed). */
static int parse_args(int argc, char **argv, dev_broker_opts_t *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->brokers = 1;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;

    if (strcmp(arg, "--brokers") && strcmp(arg, "--topic") &&
        strcmp(arg, "--bootstrap-file")) {
      fprintf(stderr, "ksnap dev-broker: unknown argument \"%s\"\n", arg);
      return KSNAP_EXIT_USAGE;
    }
    if (!value) {
      fprintf(stderr, "ksnap dev-broker: %s needs a value\n", arg);
      return KSNAP_EXIT_USAGE;
    }
    i++;
    if (!strcmp(arg, "--brokers")) {
      if (parse_int(value, 1, DEV_BROKER_MAX_BROKERS, &opts->brokers)) {
        fprintf(stderr, "ksnap dev-broker: --brokers: \"%s\" is not 1..%d\n",
                value, DEV_BROKER_MAX_BROKERS);
        return KSNAP_EXIT_USAGE;
      }
    } else if (!strcmp(arg, "--bootstrap-file")) {
      opts->bootstrap_file = value;
    } else if (opts->topic_cnt == DEV_BROKER_MAX_TOPICS) {
      fprintf(stderr, "ksnap dev-broker: at most %d --topic options\n",
              DEV_BROKER_MAX_TOPICS);
      return KSNAP_EXIT_USAGE;
    } else if (parse_topic(argv[i], &opts->topics[opts->topic_cnt++])) {
      fprintf(stderr,
              "ksnap dev-broker: --topic: \"%s\" is not NAME:PARTITIONS\n",
              value);
      return KSNAP_EXIT_USAGE;
    }
  }
  return KSNAP_EXIT_OK;
}

static int write_bootstrap_file(const char *path, const char *bootstraps) {
  FILE *f = fopen(path, "w");

  if (!f || fprintf(f, "%s\n", bootstraps) < 0 || fclose(f)) {
    fprintf(stderr, "ksnap dev-broker: cannot write %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* Creates the topics; returns 0 or -1 (message printed). */
static int create_topics(ksnap_embedded_t *emb, const dev_broker_opts_t *opts) {
  ksnap_error_t error;

  ksnap_error_clear(&error);
  for (int i = 0; i < opts->topic_cnt; i++) {
    const dev_broker_topic_t *t = &opts->topics[i];

    if (ksnap_embedded_create_topic(emb, t->name, t->partitions,
                                    opts->brokers < 3 ? opts->brokers : 3,
                                    &error)) {
      fprintf(stderr, "ksnap dev-broker: %s\n", error.msg);
      return -1;
    }
  }
  return 0;
}

static int serve(const dev_broker_opts_t *opts) {
  ksnap_embedded_t *emb;
  ksnap_error_t error;
  const char *bootstraps;
  int status = KSNAP_EXIT_FAIL;
  const struct timespec tick = {0, 100 * 1000 * 1000};

  ksnap_error_clear(&error);
  if (!(emb = ksnap_embedded_start_brokers(opts->brokers, &error))) {
    fprintf(stderr, "ksnap dev-broker: %s\n", error.msg);
    return KSNAP_EXIT_FAIL;
  }
  if (create_topics(emb, opts))
    goto out;

  bootstraps = ksnap_embedded_bootstraps(emb);
  if (opts->bootstrap_file && write_bootstrap_file(opts->bootstrap_file,
                                                   bootstraps))
    goto out;
  printf("%s\n", bootstraps);
  fflush(stdout);
  fprintf(stderr,
          "ksnap dev-broker: mock cluster with %d broker(s) at %s; "
          "Ctrl-C stops it. NOT for exactly-once tests (see --help).\n",
          opts->brokers, bootstraps);

  while (!cli_stop_requested)
    nanosleep(&tick, NULL);
  fprintf(stderr, "ksnap dev-broker: stopping\n");
  status = KSNAP_EXIT_OK;
out:
  ksnap_embedded_stop(emb);
  return status;
}

int cmd_dev_broker(int argc, char **argv) {
  dev_broker_opts_t opts;
  int rc;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  rc = parse_args(argc, argv, &opts);
  if (rc != KSNAP_EXIT_OK) {
    fprintf(stderr, "Run 'ksnap dev-broker --help' for usage.\n");
    return rc;
  }
  cli_stop_on_signals();
  return serve(&opts);
}
