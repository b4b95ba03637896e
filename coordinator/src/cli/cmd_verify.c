/*
 * `ksnap verify [OPTIONS] --input FILE JOB.properties`: checks that the
 * user's job is exactly-once on a real cluster: the read_committed output
 * of a run with kill -9s equals that of a run without faults (see
 * cmd_verify.h for the files and usage() for the contract).
 */
#define _XOPEN_SOURCE 700 /* nftw() */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_verify.h"

static void usage(FILE *out) {
  fprintf(out,
"Usage: ksnap verify [OPTIONS] --input FILE JOB.properties\n"
"\n"
"Checks that a job is exactly-once on its real Kafka cluster and checkpoint\n"
"storage. It runs the job twice, each run under its own names (job.name and\n"
"the source and sink topics get a suffix such as -verify-1a2b3c-ref; verify\n"
"creates the topics and deletes them afterwards, with the checkpoints):\n"
"  1. the reference run, without faults;\n"
"  2. the crash run, with kill -9s of its processes at random moments drawn\n"
"     from the seed; a killed process is restarted after a random delay.\n"
"Both runs start `ksnap coordinator` and `ksnap worker --tasks ...` as child\n"
"processes, produce FILE's lines to the job's source topic evenly over\n"
"--duration, and wait until the job read every line in a completed\n"
"checkpoint (its consumer group has no lag), two more checkpoints completed\n"
"and the output no longer changes. Then verify compares the read_committed\n"
"content of every output topic (every sink topic) of the two runs, as\n"
"multisets of (key, value) records. It prints the verdict with the seed\n"
"and, when the runs differ, the first differing record: its topic, key\n"
"and value and how often each run has it.\n"
"\n"
"The job's operators must be deterministic: the same input must give the\n"
"same records whatever the timing. The order of the records is not\n"
"compared, not even one key's: a sink task's consecutive checkpoints are\n"
"transactions on different producers, open at the same time, so their\n"
"records may interleave in a partition even without faults.\n"
"\n"
"Options:\n"
"  --input FILE       the input: one record (value, no key) per line, for\n"
"                     the job's one source topic (required)\n"
"  --seed N           seed of the crash run's kills (default: from the clock;\n"
"                     printed, to run the same plan again)\n"
"  --kills N          kill -9s in the crash run (default 3)\n"
"  --kill WHO         whom to kill: all, coordinator or workers (default all)\n"
"  --workers LAYOUT   worker processes: one (every task in one), stage (one\n"
"                     per stage, the default) or task (one per task)\n"
"  --duration D       produce the input over D; the kills fall in it\n"
"                     (default 10s)\n"
"  --restart-delay D  a killed process restarts after 0.1 s to D (default 2s)\n"
"  --timeout D        give up a run after D (default 2min)\n"
"  --partitions N     partitions of the source and sink topics (default:\n"
"                     the largest parallelism of the stages that use it)\n"
"  --set KEY=VALUE    a job property for both runs (repeatable), e.g. --set\n"
"                     execution.checkpointing.interval=1s for a quicker check\n"
"  --dir DIR          the runs' files (job files, one log per process,\n"
"                     outputs); default a new directory under $TMPDIR,\n"
"                     removed after a pass\n"
"  --keep             keep the files, topics and checkpoints of both runs\n"
"\n"
#if KSNAP_FAULT_INJECTION /* no fault hook's name in a release build */
"KSNAP_FAULT (this test build has the fault hooks) reaches the crash run's\n"
"processes and never the reference run's.\n"
"\n"
#endif
"Exit status: 0 the outputs are equal (PASS); 1 they differ (FAIL); 2 usage\n"
"error; 3 the check could not decide (a run did not finish: a process kept\n"
"failing, the job stalled, the cluster did not answer, or the reference run\n"
"had a failure), with the reason and the runs' files named.\n");
}

static int opt_duration(const char *opt, const char *v, int64_t *ms) {
  if (!cli_parse_duration(v, ms) && *ms > 0)
    return 0;
  fprintf(stderr, "ksnap verify: %s: \"%s\" is not a duration (e.g. 30s, "
                  "2min)\n", opt, v);
  return -1;
}

static int opt_int(const char *opt, const char *v, long min, long *out) {
  char *end;

  *out = strtol(v, &end, 10);
  if (*v && !*end && *out >= min && *out <= 1000000)
    return 0;
  fprintf(stderr, "ksnap verify: %s: \"%s\" is not a number >= %ld\n", opt,
          v, min);
  return -1;
}

/* --kill and --workers. */
static int opt_choice(verify_opts_t *o, const char *opt, const char *v) {
  static const char *const layouts[] = {"one", "stage", "task"};

  if (!strcmp(opt, "--kill")) {
    o->kill_coordinator = !strcmp(v, "all") || !strcmp(v, "coordinator");
    o->kill_workers = !strcmp(v, "all") || !strcmp(v, "workers");
    if (o->kill_coordinator || o->kill_workers)
      return 0;
  }
  for (int i = 0; strcmp(opt, "--kill") && i < 3; i++)
    if (!strcmp(v, layouts[i])) {
      o->layout = (verify_layout_t)i;
      return 0;
    }
  fprintf(stderr, "ksnap verify: %s: unknown value \"%s\"\n", opt, v);
  return -1;
}

static int opt_set(verify_opts_t *o, const char *v) {
  const char **s = realloc(o->sets, (o->nsets + 1) * sizeof(*s));

  if (!s)
    return -1;
  o->sets = s;
  if (!strchr(v, '=')) {
    fprintf(stderr, "ksnap verify: --set %s: expected KEY=VALUE\n", v);
    return -1;
  }
  o->sets[o->nsets++] = v;
  return 0;
}

/* An option with a value, @p opt = @p v. @returns 0, -1 bad, 1 unknown. */
static int option(verify_opts_t *o, const char *opt, const char *v,
                  int *seed_set) {
  long n = 0;
  int rc = 0;

  if (!strcmp(opt, "--input"))
    o->input = v;
  else if (!strcmp(opt, "--dir"))
    o->dir = v;
  else if (!strcmp(opt, "--set"))
    rc = opt_set(o, v);
  else if (!strcmp(opt, "--seed") && !(rc = opt_int(opt, v, 0, &n))) {
    o->seed = (uint64_t)n;
    *seed_set = 1;
  } else if (!strcmp(opt, "--kills") && !(rc = opt_int(opt, v, 0, &n)))
    o->kills = (int)n;
  else if (!strcmp(opt, "--partitions") && !(rc = opt_int(opt, v, 1, &n)))
    o->partitions = (int)n;
  else if (!strcmp(opt, "--duration"))
    rc = opt_duration(opt, v, &o->duration_ms);
  else if (!strcmp(opt, "--restart-delay"))
    rc = opt_duration(opt, v, &o->restart_max_ms);
  else if (!strcmp(opt, "--timeout"))
    rc = opt_duration(opt, v, &o->timeout_ms);
  else if (!strcmp(opt, "--kill") || !strcmp(opt, "--workers"))
    rc = opt_choice(o, opt, v);
  else if (strcmp(opt, "--seed") && strcmp(opt, "--kills") &&
           strcmp(opt, "--partitions"))
    rc = 1;
  return rc;
}

static int parse_args(int argc, char **argv, verify_opts_t *o) {
  int seed_set = 0, r = 1;

  memset(o, 0, sizeof(*o));
  o->kills = 3;
  o->kill_coordinator = o->kill_workers = 1;
  o->layout = VERIFY_LAYOUT_STAGE;
  o->duration_ms = 10000;
  o->restart_max_ms = 2000;
  o->timeout_ms = 120000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--keep"))
      o->keep = 1;
    else if (a[0] != '-' && !o->file)
      o->file = a;
    else if (a[0] == '-' && i + 1 < argc &&
             !(r = option(o, a, argv[i + 1], &seed_set)))
      i++;
    else {
      if (r > 0 || a[0] != '-' || i + 1 == argc)
        usage(stderr); /* option() said what is wrong with a value */
      return KSNAP_EXIT_USAGE;
    }
  }
  if (!o->file || !o->input) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if (!seed_set)
    o->seed = (uint64_t)time(NULL) % 1000000;
  return KSNAP_EXIT_OK;
}

/* The input's lines (without newlines). @returns 0 or -1 (printed). */
static int read_lines(const char *path, char ***linesp, size_t *np) {
  FILE *f = fopen(path, "r");
  char *line = NULL, **v = NULL;
  size_t cap = 0, n = 0, vcap = 0;
  ssize_t len;

  if (!f) {
    fprintf(stderr, "ksnap verify: --input: %s: %s\n", path, strerror(errno));
    return -1;
  }
  while ((len = getline(&line, &cap, f)) >= 0) {
    if (len > 0 && line[len - 1] == '\n')
      line[len - 1] = '\0';
    if (n == vcap) {
      char **nv = realloc(v, (vcap = vcap ? 2 * vcap : 1024) * sizeof(*v));
      if (!nv)
        break;
      v = nv;
    }
    if (!(v[n] = strdup(line)))
      break;
    n++;
  }
  free(line);
  fclose(f);
  *linesp = v;
  *np = n;
  if (!n)
    fprintf(stderr, "ksnap verify: --input: %s has no line\n", path);
  return n ? 0 : -1;
}

/* The user's job, with the --set options, checked as a worker checks it. */
static int load_job(const verify_opts_t *o, ksnap_conf_t **confp,
                    ksnap_job_t **jobp) {
  char errstr[512];

  if (cli_conf_read(o->file, confp))
    return -1;
  for (size_t i = 0; i < o->nsets; i++) {
    char key[256];
    const char *eq = strchr(o->sets[i], '=');
    snprintf(key, sizeof(key), "%.*s", (int)(eq - o->sets[i]), o->sets[i]);
    if (ksnap_conf_set(*confp, key, eq + 1, errstr, sizeof(errstr))) {
      fprintf(stderr, "ksnap verify: --set %s\n", errstr);
      return -1;
    }
  }
  return cli_job_check(*confp, o->file, CLI_JOB_NO_EMBEDDED, jobp) ||
                 cli_log_from_conf(*confp) || !cli_job_single_source(
                                                   *jobp, "verify")
             ? -1
             : 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static const char *const layout_names[] = {"one worker", "a worker per stage",
                                           "a worker per task"};

static void print_plan(const verify_run_t *run) {
#if KSNAP_FAULT_INJECTION
  const char *fault = getenv("KSNAP_FAULT");

  if (fault && *fault)
    printf("ksnap verify: crash run: KSNAP_FAULT=%s in its processes\n",
           fault);
#endif
  if (!run->nplan) {
    printf("ksnap verify: crash run: no kill -9 planned\n");
    fflush(stdout);
    return;
  }
  printf("ksnap verify: crash run: %zu kill -9%s planned:", run->nplan,
         run->nplan == 1 ? "" : "s");
  for (size_t i = 0; i < run->nplan; i++)
    printf("%s %.2f s %s (restart after %.2f s)", i ? "," : "",
           (double)run->plan[i].at_ms / 1000,
           run->procs[run->plan[i].proc].name,
           (double)run->plan[i].restart_after_ms / 1000);
  printf("\n");
  fflush(stdout);
}

/* Runs both runs; @returns 0 if both finished, else -1. */
static int run_both(verify_run_t *runs, const verify_opts_t *o,
                    const ksnap_conf_t *conf, const ksnap_job_t *job,
                    char **lines, size_t nlines) {
  uint64_t rng = o->seed;
  int rc = 0;

  for (int i = 0; i < 2 && !rc; i++) {
    rc = verify_job_prepare(&runs[i], o, conf, job) ||
         verify_kill_plan(&runs[i], o, &rng);
    if (!rc && runs[i].faults)
      print_plan(&runs[i]);
    if (!rc)
      rc = verify_run_execute(&runs[i], o, lines, nlines);
    if (!o->keep)
      verify_job_cleanup(&runs[i]);
  }
  return rc ? -1 : 0;
}

static int verdict(const verify_run_t *runs, const verify_opts_t *o,
                   int finished) {
  if (!finished) {
    printf("INCONCLUSIVE: the check could not finish (see above; seed "
           "%" PRIu64 "); files of the runs: %s\n", o->seed, o->dir);
    return VERIFY_EXIT_INCONCLUSIVE;
  }
  if (verify_out_equal(&runs[0], &runs[1])) {
    printf("PASS: every output topic has the same read_committed content in "
           "both runs (seed %" PRIu64 ")\n", o->seed);
    verify_out_report(&runs[0], &runs[1]);
    return KSNAP_EXIT_OK;
  }
  printf("FAIL: the crash run's read_committed output differs from the "
         "reference run's (seed %" PRIu64 "): the job is not exactly-once "
         "under these faults\n", o->seed);
  verify_out_report(&runs[0], &runs[1]);
  printf("  files of the runs (job files, process logs): %s\n"
         "  to run the same kill plan again: --seed %" PRIu64 "\n", o->dir,
         o->seed);
  return KSNAP_EXIT_FAIL;
}

/* The runs' directory: --dir, or a new one under $TMPDIR. */
static int make_dir(verify_opts_t *o, char *buf, size_t size, int *made) {
  const char *tmp = getenv("TMPDIR");

  *made = 0;
  if (o->dir)
    return mkdir(o->dir, 0700) && errno != EEXIST ? -1 : 0;
  snprintf(buf, size, "%s/ksnap-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(buf))
    return -1;
  o->dir = buf;
  *made = 1;
  return 0;
}

static int verify(verify_opts_t *o, ksnap_conf_t *conf, ksnap_job_t *job,
                  char **lines, size_t nlines) {
  verify_run_t runs[2];
  char dir[4096];
  unsigned nonce = (unsigned)((uint64_t)time(NULL) * 2654435761u ^
                              (unsigned)getpid()) & 0xffffffu;
  int made, rc, finished;

  if (make_dir(o, dir, sizeof(dir), &made)) {
    fprintf(stderr, "ksnap verify: %s: %s\n", o->dir ? o->dir : dir,
            strerror(errno));
    return VERIFY_EXIT_INCONCLUSIVE;
  }
  memset(runs, 0, sizeof(runs));
  runs[0].label = "reference";
  runs[1].label = "crash";
  runs[1].faults = 1;
  snprintf(runs[0].tag, sizeof(runs[0].tag), "-verify-%06x-ref", nonce);
  snprintf(runs[1].tag, sizeof(runs[1].tag), "-verify-%06x-crash", nonce);
  printf("ksnap verify: job %s, %zu lines of %s over %.1f s, %s; seed "
         "%" PRIu64 "\n", ksnap_job_name(job), nlines, o->input,
         (double)o->duration_ms / 1000, layout_names[o->layout], o->seed);
  fflush(stdout);
  finished = !run_both(runs, o, conf, job, lines, nlines);
  rc = verdict(runs, o, finished);
  if (rc == KSNAP_EXIT_OK && !o->keep && made)
    nftw(o->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  verify_run_free(&runs[0]);
  verify_run_free(&runs[1]);
  return rc;
}

int cmd_verify(int argc, char **argv) {
  ksnap_conf_t *conf = NULL;
  ksnap_job_t *job = NULL;
  char **lines = NULL;
  size_t nlines = 0;
  verify_opts_t o;
  ssize_t n;
  int rc;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  if ((rc = parse_args(argc, argv, &o)))
    return rc;
  rc = VERIFY_EXIT_INCONCLUSIVE;
  if ((n = readlink("/proc/self/exe", o.self, sizeof(o.self) - 1)) <= 0) {
    fprintf(stderr, "ksnap verify: cannot find this executable: %s\n",
            strerror(errno));
    goto out;
  }
  o.self[n] = '\0';
  if (load_job(&o, &conf, &job) || read_lines(o.input, &lines, &nlines))
    goto out;
  cli_stop_on_signals();
  rc = verify(&o, conf, job, lines, nlines);
out:
  for (size_t i = 0; i < nlines; i++)
    free(lines[i]);
  free(lines);
  free(o.sets);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
  return rc;
}
