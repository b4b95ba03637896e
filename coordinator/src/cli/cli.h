/*
 * The `ksnap` command line: each subcommand is a function with main()'s
 * signature (argv[0] is the subcommand's name) returning an exit code:
 * 0 success, 1 failure, 2 usage error.
 */
#ifndef KSNAP_CLI_H
#define KSNAP_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "ksnap/storage.h"

#include "ksnap/conf.h"
#include "ksnap/job.h"
#include "ksnap/run.h"
#include "kafka/topics.h"

#define KSNAP_EXIT_OK 0
#define KSNAP_EXIT_FAIL 1
#define KSNAP_EXIT_USAGE 2

typedef int(cli_command_fn_t)(int argc, char **argv);

typedef struct cli_command_s {
  const char *name;
  const char *summary;
  cli_command_fn_t *run;
} cli_command_t;

/** @returns 1 if argv holds -h or --help (before any "--"). */
int cli_wants_help(int argc, char **argv);

/**
 * Loads and finalizes the job file @p path, printing every problem on
 * stderr as one line (FILE:LINE: MESSAGE). @returns KSNAP_EXIT_OK with
 * *confp set, or KSNAP_EXIT_FAIL (cli_conf.c). For the tools that read
 * a job file (its name, its storage); the commands that run or describe
 * the job use cli_conf_read() and cli_job_check() instead.
 */
int cli_conf_load(const char *path, ksnap_conf_t **confp);

/**
 * Loads the job file @p path without finalizing it. A file with problems
 * is refused with every problem printed (finalize's too).
 * @returns KSNAP_EXIT_OK with *confp set, or KSNAP_EXIT_FAIL (cli_conf.c).
 */
int cli_conf_read(const char *path, ksnap_conf_t **confp);

/** `--from-savepoint URL`, `--allow-non-restored-state` (cli_restore_opts.c). */
typedef struct cli_restore_opts_s {
  const char *from; /* NULL: none */
  int allow_non_restored;
} cli_restore_opts_t;
#define CLI_RESTORE_OPTS_HELP                                                 \
  "  --from-savepoint URL  start from this savepoint (the URL `ksnap\n"      \
  "                   savepoint` printed; a copied directory too) or\n"      \
  "                   retained checkpoint (.../JOB/chk-N), in a new\n"       \
  "                   generation, at the job file's parallelisms; once the\n" \
  "                   job started from it, a restart with the same URL\n"   \
  "                   restores as usual (execution.savepoint.path)\n"       \
  "  --allow-non-restored-state  drop the state of stages the job no\n"     \
  "                   longer has instead of failing the job\n"
/** 1 if argv[*@p i] is one of them (*@p i moved past its value), 0 if
 *  not, -1 (printed) if its value is missing. */
int cli_restore_opt(int argc, char **argv, int *i, cli_restore_opts_t *o);
/** Sets them into the job's @p conf (before cli_job_check()).
 *  @returns KSNAP_EXIT_OK, or an exit code (printed). */
int cli_restore_apply(const cli_restore_opts_t *o, ksnap_conf_t *conf);

/**
 * Parses a duration in the configuration's syntax ("500ms", "30s",
 * "2min") into *@p ms. @returns 0, or -1 if it is not one (cli_conf.c).
 */
int cli_parse_duration(const char *s, int64_t *ms);

/**
 * A NUL-terminated copy of the @p len bytes at @p p (a record's key or
 * value), or NULL if out of memory (cmd_run_out.c).
 */
char *cli_dup_bytes(const void *p, size_t len);

/** @returns 1 if @p conf has kafka.bootstrap.servers=embedded. */
int cli_is_embedded(const ksnap_conf_t *conf);

/* cli_job_check() flags: what an embedded job (kafka.bootstrap.servers=
 * embedded, which only `ksnap run` runs) means for the command. */
#define CLI_JOB_EMBEDDED_RUN 0x1 /* checked with ksnap run's defaults */
#define CLI_JOB_NO_EMBEDDED 0x2  /* refused: a separate process */

/**
 * The checks before a command runs or describes the job of @p conf, read
 * from @p path (cli_conf_read()): an embedded job is refused or given
 * `ksnap run`'s defaults (@p flags), then ksnap_job_preflight() with the
 * job file's directory for the operator libraries, as the worker gets
 * it. Every problem is printed on stderr, one line each (cli_job.c).
 * @returns KSNAP_EXIT_OK, with *jobp set if @p jobp is not NULL, or
 * KSNAP_EXIT_FAIL.
 */
int cli_job_check(ksnap_conf_t *conf, const char *path, int flags,
                  ksnap_job_t **jobp);

/**
 * The job's external topics (its sources and sinks, which ksnap does not
 * create), each once, with the largest parallelism of the stages that
 * read or write it as its partition count; names owned by @p job.
 * @returns how many (at most @p max written to @p specs; cli_job.c).
 */
size_t cli_job_external_topics(const ksnap_job_t *job,
                               ksnap_topic_spec_t *specs, size_t max);

/**
 * @returns the name of the job's one source topic (owned by @p job), or
 * NULL when it has none or several, with the reason printed on stderr as
 * "ksnap CMD: ..." (cli_job.c).
 */
const char *cli_job_single_source(const ksnap_job_t *job, const char *cmd);

/**
 * Applies log.level and log.debug of @p conf to the process logger.
 * @returns KSNAP_EXIT_OK or KSNAP_EXIT_FAIL (printed).
 */
int cli_log_from_conf(const ksnap_conf_t *conf);

/**
 * Set to 1 by SIGINT or SIGTERM once cli_stop_on_signals() has run; the
 * long-running subcommands poll it (or hand it to the library) and stop
 * cleanly (cli_signal.c).
 */
extern volatile sig_atomic_t cli_stop_requested;

/** Installs the SIGINT and SIGTERM handlers that set cli_stop_requested. */
void cli_stop_on_signals(void);

/**
 * From now on SIGINT and SIGTERM also stop @p run (ksnap_run_stop(), from
 * the handler), at once if one came before; NULL forgets it (call that
 * before ksnap_run_destroy()). Needs cli_stop_on_signals().
 */
void cli_stop_run_on_signals(ksnap_run_t *run);

/**
 * Runs @p parts of the job of @p conf (checked with cli_job_check())
 * with the public API until it ends: a signal, the coordinator's end or
 * the tasks' replacement (cli_run_parts.c). @p cmd names the command in
 * the error line. @returns KSNAP_EXIT_OK or KSNAP_EXIT_FAIL.
 */
int cli_run_parts(ksnap_conf_t *conf, int parts, const char *tasks,
                  const char *cmd);

/** A ksnap_conf_error_cb_t printing @p msg as one line on stderr. */
void cli_print_error(void *opaque, const char *msg);

/**
 * Consumes one storage option at argv[*ip] (--endpoint URL, --region R,
 * --path-style, --virtual-host) into @p opts, advancing *ip past its
 * value. @returns 1 if it was one, 0 otherwise.
 */
int cli_storage_option(int argc, char **argv, int *ip,
                       ksnap_storage_opts_t *opts);

#define CLI_STORAGE_OPTIONS_HELP                                          \
  "  --endpoint URL   S3 endpoint (default $AWS_ENDPOINT_URL, AWS)\n"     \
  "  --region NAME    S3 region (default $AWS_REGION, us-east-1)\n"       \
  "  --path-style     path-style addressing (default with --endpoint)\n"  \
  "  --virtual-host   virtual-host addressing\n"

/* Subcommands, one per file cmd_<name>.c. */
int cmd_config(int argc, char **argv);
int cmd_job(int argc, char **argv);
/** `ksnap job status`: members and their tasks (cmd_job_status.c). */
int cli_job_status(const ksnap_conf_t *conf, const ksnap_job_t *job);
int cmd_version(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_topics(int argc, char **argv);
int cmd_dev_broker(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_storage(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_coordinator(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_savepoint(int argc, char **argv);
int cmd_checkpoints(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif /* KSNAP_CLI_H */
