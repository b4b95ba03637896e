/* Running the built `ksnap` binary from a Check suite, and the job files
 * it reads (the integration suites' jobs on the real servers). */
#ifndef KSNAP_CLITEST_H
#define KSNAP_CLITEST_H

#include <stddef.h>
#include <sys/types.h>

#define KSNAP_TEST_BIN KSNAP_BINARY_DIR "/bin/ksnap"

/** The environment for ksnap_test_cli() that finds the wordcount operators. */
#define KSNAP_TEST_WORDCOUNT_OPS                                               \
  "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/examples/wordcount"

/**
 * Runs `env ENV ksnap ARGS` (@p env: "VAR=value ..." or ""), collecting
 * stdout and stderr apart into malloc'd strings. Fails the test if the
 * binary does not exit normally. @returns its exit code.
 */
int ksnap_test_cli(const char *env, const char *args, char **outp,
                   char **errp);

/**
 * A job's properties into @p out (@p size bytes, or the test fails):
 * job.name=@p job, kafka.bootstrap.servers=$KSNAP_TEST_BOOTSTRAP,
 * state.checkpoints.dir=@p ckpt unless NULL (an s3:// url adds the s3.*
 * keys of the KSNAP_TEST_S3_* server), then @p body (more properties, one
 * per line, or NULL).
 */
void ksnap_test_job_text(char *out, size_t size, const char *job,
                         const char *ckpt, const char *body);

/** Writes ksnap_test_job_text()'s text to the job file @p path. */
void ksnap_test_job_file(const char *path, const char *job, const char *ckpt,
                         const char *body);

/**
 * The word-count job's stages (examples/wordcount, libwordcount.so) into
 * @p out, a body for ksnap_test_job_file(): split (P=2) reads source topic
 * @p src; count (P=2, keyed) reads split and writes sink topic @p sink, or
 * with @p single split writes @p sink itself. Checkpoints every 1 s
 * (timeout 30 s), transactions time out after 60 s; then @p extra (more
 * lines, or NULL).
 */
void ksnap_test_wordcount_props(char *out, size_t size, const char *src,
                                const char *sink, int single,
                                const char *extra);

/**
 * Starts `ksnap run --duration @p duration JOB` (the word count's
 * operators on the library path) in the background, its stdout and stderr
 * into the file @p log; the duration bounds the run should the test fail
 * before it stops it. @returns the child's pid.
 */
pid_t ksnap_test_run_background(const char *job, const char *log,
                                const char *duration);

/**
 * Starts `ksnap ARGV[1] ...` (@p argv as execv's, argv[0] "ksnap") in the
 * background with KSNAP_OPERATOR_PATH=@p ops_dir, its stderr appended to
 * the file @p errfile, its stdout to /dev/null. @returns the child's pid.
 */
pid_t ksnap_test_spawnv(const char *ops_dir, const char *errfile,
                        char *const argv[]);

/** ksnap_test_spawnv() of `ksnap @p a1 @p a2` (a command and its job). */
pid_t ksnap_test_spawn(const char *ops_dir, const char *errfile,
                       const char *a1, const char *a2);

/**
 * Waits up to @p secs for @p pid: @returns its exit code (128 + signal if
 * killed). After @p secs it is killed -9; then the test fails if
 * @p must_exit, else -1 is returned.
 */
int ksnap_test_wait_exit(pid_t pid, int secs, int must_exit);

/** SIGTERM, then ksnap_test_wait_exit() for 30 s (the test fails after). */
int ksnap_test_stop(pid_t pid);

/** The file @p path whole (malloc'd), "" if it does not exist yet. */
char *ksnap_test_slurp(const char *path);

/** The end of a log (its last 1500 bytes), short enough for a failure
 * message. */
const char *ksnap_test_tail(const char *s);

#endif /* KSNAP_CLITEST_H */
