/*
 * `ksnap verify`: a run's own names and job file, its topics, and the
 * clean-up after it (see cmd_verify.h).
 *
 * A run's job file is the user's file, unchanged, followed by the lines
 * that give the run its own names (a later key wins in a .properties
 * file): job.name and every source and sink topic with the run's suffix,
 * a library operator given by a relative path made absolute (the run's
 * file lives elsewhere), kafka.group.id if the user set one, then the
 * --set options. So `${VAR}` references and every other setting mean
 * what they mean in the user's file.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_verify.h"
#include "driver/coord_store.h"
#include "ksnap/storage.h"

#define VERIFY_TOPICS_TIMEOUT_MS 60000

size_t verify_output_topics(const ksnap_job_t *job, const char **names,
                            size_t max) {
  size_t n = 0;

  for (size_t i = 0; i < ksnap_job_topic_cnt(job); i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(job, i);
    if (ksnap_job_topic_kind(t) != KSNAP_JOB_TOPIC_SINK)
      continue;
    if (n < max)
      names[n] = ksnap_job_topic_name(t);
    n++;
  }
  return n;
}

/* Appends "KEY=VALUE\n" with VALUE = @p fmt to @p f. */
static void put(FILE *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(FILE *f, const char *key, const char *fmt, ...) {
  va_list ap;

  fprintf(f, "%s=", key);
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
}

/* Writes @p value (a stage.S.input or .output list) with the run's suffix
 * on every entry of kind @p kind ("source:" or "sink:"). */
static void put_renamed(FILE *f, const char *key, const char *value,
                        const char *kind, const char *tag) {
  size_t klen = strlen(kind);
  const char *sep = "";

  fprintf(f, "%s=", key);
  for (const char *p = value; *p; p += *p == ',') {
    size_t n;
    p += strspn(p, " \t");
    n = strcspn(p, ",");
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    if (n)
      fprintf(f, "%s%.*s%s", sep, (int)n, p,
              n > klen && !strncmp(p, kind, klen) ? tag : "");
    sep = n ? "," : sep;
    p += strcspn(p, ",");
  }
  fputc('\n', f);
}

/* The operator of @p stage, if a library named by a relative path. */
static void put_operator(FILE *f, const ksnap_job_stage_t *stage,
                         const char *job_dir) {
  const char *op = ksnap_job_stage_operator(stage), *colon = strchr(op, ':');
  char key[160];

  if (!colon || op[0] == '/' || !memchr(op, '/', (size_t)(colon - op)))
    return; /* built-in, absolute, or looked up along KSNAP_OPERATOR_PATH */
  snprintf(key, sizeof(key), "stage.%s.operator", ksnap_job_stage_name(stage));
  put(f, key, "%s/%s", job_dir, op);
}

/* The user's file, then the run's names and the --set options. */
static int write_job_file(const verify_run_t *run, const verify_opts_t *o,
                          const ksnap_conf_t *conf, const ksnap_job_t *job,
                          const char *job_dir, FILE *f) {
  FILE *in = fopen(o->file, "r");
  char buf[8192], key[160];
  const char *v;
  size_t n;

  if (!in)
    return -1;
  while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
    fwrite(buf, 1, n, f);
  fclose(in);
  fprintf(f, "\n# ---- ksnap verify: the %s run's own names\n", run->label);
  put(f, "job.name", "%s", run->job);
  if (ksnap_conf_is_set(conf, "kafka.group.id"))
    put(f, "kafka.group.id", "%s", run->job);
  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++) {
    const ksnap_job_stage_t *st = ksnap_job_stage(job, i);
    const char *name = ksnap_job_stage_name(st);
    snprintf(key, sizeof(key), "stage.%s.input", name);
    if (!ksnap_conf_get_str(conf, key, &v) && v)
      put_renamed(f, key, v, "source:", run->tag);
    snprintf(key, sizeof(key), "stage.%s.output", name);
    if (!ksnap_conf_get_str(conf, key, &v) && v)
      put_renamed(f, key, v, "sink:", run->tag);
    put_operator(f, st, job_dir);
  }
  if (o->nsets)
    fprintf(f, "# ---- ksnap verify --set\n");
  for (size_t i = 0; i < o->nsets; i++)
    fprintf(f, "%s\n", o->sets[i]);
  return ferror(f) ? -1 : 0;
}

static char *concat(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  char *s = malloc(n + m + 1);

  if (s) {
    memcpy(s, a, n);
    memcpy(s + n, b, m + 1);
  }
  return s;
}

/* The run's outputs: the user's output topics with the run's suffix. */
static int plan_outputs(verify_run_t *run, const ksnap_job_t *job) {
  const char *names[256];
  size_t n = verify_output_topics(job, names, 256);

  if (n > 256 || !(run->outputs = calloc(n + 1, sizeof(*run->outputs))))
    return -1;
  for (size_t i = 0; i < n; i++, run->noutputs++)
    if (!(run->outputs[i].base = strdup(names[i])) ||
        !(run->outputs[i].name = concat(names[i], run->tag)))
      return -1;
  return 0;
}

int verify_job_prepare(verify_run_t *run, const verify_opts_t *o,
                       const ksnap_conf_t *conf, const ksnap_job_t *job) {
  const char *src = cli_job_single_source(job, "verify");
  char *copy = strdup(o->file), job_dir[4096];
  FILE *f = NULL;
  int fd, rc = -1;

  if (!copy || !src || !realpath(dirname(copy), job_dir) ||
      !(run->job = concat(ksnap_job_name(job), run->tag)) ||
      !(run->source = concat(src, run->tag)) || plan_outputs(run, job))
    goto out;
  snprintf(run->dir, sizeof(run->dir), "%s/%s", o->dir, run->label);
  snprintf(run->file, sizeof(run->file), "%s/job.properties", run->dir);
  if ((mkdir(run->dir, 0700) && errno != EEXIST) ||
      (fd = open(run->file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 ||
      !(f = fdopen(fd, "w"))) { /* 0600: it may hold secrets */
    fprintf(stderr, "ksnap verify: %s: %s\n", run->file, strerror(errno));
    goto out;
  }
  if (write_job_file(run, o, conf, job, job_dir, f) || fclose(f)) {
    f = NULL;
    fprintf(stderr, "ksnap verify: cannot write %s\n", run->file);
    goto out;
  }
  f = NULL;
  if (cli_conf_read(run->file, &run->conf) ||
      cli_job_check(run->conf, run->file, CLI_JOB_NO_EMBEDDED, &run->graph))
    goto out;
  rc = verify_procs_plan(run, o) || verify_procs_env(run, job_dir) ? -1 : 0;
out:
  if (f)
    fclose(f);
  if (rc && copy && src)
    fprintf(stderr, "ksnap verify: cannot prepare the %s run (see above)\n",
            run->label);
  free(copy);
  return rc;
}

int verify_job_topics_create(verify_run_t *run, const verify_opts_t *o) {
  ksnap_topic_spec_t specs[256];
  size_t n = cli_job_external_topics(run->graph, specs, 256);
  ksnap_error_t error;

  for (size_t i = 0; o->partitions && i < n; i++)
    specs[i].partitions = o->partitions;
  ksnap_error_clear(&error);
  run->topics_created = 1; /* some may exist even if the call fails */
  if (ksnap_topics_ensure(run->conf, specs, n, VERIFY_TOPICS_TIMEOUT_MS,
                          &error)) {
    fprintf(stderr, "ksnap verify: creating the %s run's topics: %s\n",
            run->label, error.msg);
    return -1;
  }
  return 0;
}

/* Collects the keys of a listing (at most 100000). */
typedef struct keys_s {
  char **v;
  size_t n, cap;
} keys_t;

static int on_key(void *opaque, const char *key, uint64_t size) {
  keys_t *k = opaque;

  (void)size;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    char **v = cap <= 100000 ? realloc(k->v, cap * sizeof(*v)) : NULL;
    if (!v)
      return 1;
    k->v = v;
    k->cap = cap;
  }
  if (!(k->v[k->n] = strdup(key)))
    return 1;
  k->n++;
  return 0;
}

/* Deletes "<job>/..." of the run's checkpoint storage. @returns how many
 * objects, or -1 (printed). */
static long delete_checkpoints(verify_run_t *run) {
  ksnap_storage_t *st = NULL;
  keys_t k = {NULL, 0, 0};
  ksnap_error_t error;
  char prefix[512];
  long n = -1;

  ksnap_error_clear(&error);
  snprintf(prefix, sizeof(prefix), "%s/", run->job);
  if (!ksnap__coord_storage_open(run->conf, &st, &error) &&
      !ksnap_storage_list(st, prefix, on_key, &k, &error)) {
    for (n = 0; (size_t)n < k.n; n++)
      if (ksnap_storage_delete(st, k.v[n], &error))
        break;
  }
  if (error.code)
    fprintf(stderr, "ksnap verify: deleting the %s run's checkpoints: %s\n",
            run->label, error.msg);
  for (size_t i = 0; i < k.n; i++)
    free(k.v[i]);
  free(k.v);
  ksnap_storage_destroy(st);
  return error.code ? -1 : n;
}

void verify_job_cleanup(verify_run_t *run) {
  static const char *const internal[] = {"control", "acks", "progress"};
  size_t n = run->graph ? ksnap_job_topic_cnt(run->graph) : 0, k = 0;
  const char **names = calloc(n + 3, sizeof(*names));
  char buf[3][300];
  ksnap_error_t error;
  long objects;

  if (!names || !run->graph || !run->topics_created) {
    free(names);
    return;
  }
  for (size_t i = 0; i < n; i++)
    names[k++] = ksnap_job_topic_name(ksnap_job_topic(run->graph, i));
  for (size_t i = 0; i < 3; i++) {
    snprintf(buf[i], sizeof(buf[i]), "%s.ksnap.%s", run->job, internal[i]);
    names[k++] = buf[i];
  }
  ksnap_error_clear(&error);
  if (ksnap_topics_delete(run->conf, names, k, VERIFY_TOPICS_TIMEOUT_MS,
                          &error))
    fprintf(stderr, "ksnap verify: deleting the %s run's topics: %s\n",
            run->label, error.msg);
  objects = delete_checkpoints(run);
  if (!error.code && objects >= 0)
    fprintf(stderr, "ksnap verify: deleted the %s run's %zu topics and %ld "
                    "checkpoint objects\n", run->label, k, objects);
  free(names);
}

void verify_run_free(verify_run_t *run) {
  verify_out_clear(run);
  for (size_t i = 0; i < run->noutputs; i++) {
    free(run->outputs[i].base);
    free(run->outputs[i].name);
  }
  free(run->outputs);
  for (size_t i = 0; i < run->nprocs; i++)
    for (size_t j = 0; run->procs[i].argv[j]; j++)
      free(run->procs[i].argv[j]);
  free(run->procs);
  free(run->plan);
  for (size_t i = 0; run->envp && run->envp[i]; i++)
    free(run->envp[i]);
  free(run->envp);
  ksnap_job_destroy(run->graph);
  ksnap_conf_destroy(run->conf);
  free(run->job);
  free(run->source);
}
