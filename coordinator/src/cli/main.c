/*
 * `ksnap`: entry point and subcommand dispatch. Each subcommand lives in
 * its own cmd_*.c file; this table is the only place that lists them.
 */
#include <string.h>

#include "cli.h"
#include "ksnap/ksnap.h"

static const cli_command_t commands[] = {
    /* running a job */
    {"run", "Run a whole job in one process (coordinator and all tasks)",
     cmd_run},
    {"worker", "Run tasks of a job (all by default) until SIGINT/SIGTERM",
     cmd_worker},
    {"coordinator", "Run a job's checkpoint coordinator", cmd_coordinator},
    {"verify", "Check that a job is exactly-once: a run with kill -9s "
               "against one without", cmd_verify},
    {"topics", "Create a job's source and sink topics", cmd_topics},
    /* checkpoints */
    {"checkpoint", "Ask a running coordinator for a checkpoint now",
     cmd_checkpoint},
    {"savepoint", "Take a savepoint (optionally stopping the job)",
     cmd_savepoint},
    {"checkpoints", "List a job's checkpoints and their statistics",
     cmd_checkpoints},
    {"inspect", "Print a checkpoint's metadata and, with --state, its state",
     cmd_inspect},
    {"storage", "List, put, get, cat and remove checkpoint storage objects",
     cmd_storage},
    /* job files and tools */
    {"config", "Check a job file; list and document properties", cmd_config},
    {"job", "Describe a job's stages, tasks, channels and topics", cmd_job},
    {"record", "Decode a ksnap record (barrier, control, ack, _metadata)",
     cmd_record},
    {"dev-broker", "Run librdkafka's mock Kafka cluster (demos only)",
     cmd_dev_broker},
    {"version", "Print the versions of ksnap and its libraries", cmd_version},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap COMMAND [ARGS...]\n"
          "\n"
          "Exactly-once, checkpointed stream processing on Kafka.\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun 'ksnap COMMAND --help' for a command's options.\n");
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--"))
      return 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
      return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
      !strcmp(argv[1], "help")) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  for (size_t i = 0; i < NCOMMANDS; i++) {
    if (!strcmp(argv[1], commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "ksnap: unknown command \"%s\" (see 'ksnap --help')\n",
          argv[1]);
  return KSNAP_EXIT_USAGE;
}
