/*
 * Job graph, step 1: the stage.<name>.* keys into stages. Each stage gets
 * its parallelism, operator spec, inputs as written (refs), sink topic
 * names and its handling of failed records (errors.*, the stage's keys
 * over the job's); stage references are resolved by job_validate.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_int.h"
#include "operator_registry.h"

#define TOPIC_CHARS                                                       \
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* Finds or creates the stage named by the first @p len bytes of @p name. */
static ksnap_job_stage_t *stage_get(ksnap__job_build_t *b, const char *name,
                                    size_t len) {
  ksnap_job_t *job = b->job;
  ksnap_job_stage_t *stage, **v;

  for (size_t i = 0; i < job->nstages; i++)
    if (strlen(job->stages[i]->name) == len &&
        !strncmp(job->stages[i]->name, name, len))
      return job->stages[i];
  stage = calloc(1, sizeof(*stage));
  v = realloc(job->stages, (job->nstages + 1) * sizeof(*v));
  if (v)
    job->stages = v;
  if (!stage || !v || !(stage->name = strndup(name, len))) {
    free(stage);
    b->nomem = 1;
    return NULL;
  }
  stage->decl = job->nstages;
  job->stages[job->nstages++] = stage;
  return stage;
}

/* A named output's key, stage.S.output.NAME: NAME into the stage's list
 * (the configuration checked its characters). */
static int add_named_output(ksnap__job_build_t *b, ksnap_job_stage_t *stage,
                            const char *key, const char *name) {
  char **v = realloc(stage->outs, (stage->nouts + 1) * sizeof(*v)), **k;

  if (v)
    stage->outs = v;
  k = realloc(stage->out_keys, (stage->nouts + 1) * sizeof(*k));
  if (k)
    stage->out_keys = k;
  if (!v || !k || !(stage->outs[stage->nouts] = strdup(name)))
    return b->nomem = 1, -1;
  if (!(stage->out_keys[stage->nouts] = strdup(key))) {
    free(stage->outs[stage->nouts]);
    return b->nomem = 1, -1;
  }
  stage->nouts++;
  return 0;
}

static int collect(void *opaque, const char *key, const char *value) {
  /* stage names have no dots; sub-keys may (errors.tolerance) */
  const char *name = key + strlen("stage."), *dot = strchr(name, '.');
  ksnap_job_stage_t *stage;

  (void)value;
  if (!dot)
    return 0;
  if (!(stage = stage_get(opaque, name, (size_t)(dot - name))))
    return -1;
  if (!strncmp(dot + 1, "output.", 7))
    return add_named_output(opaque, stage, key, dot + 8);
  return 0;
}

static int topic_name_ok(const char *name) {
  size_t n = strlen(name);
  return n >= 1 && n <= KSNAP__JOB_TOPIC_MAX &&
         strspn(name, TOPIC_CHARS) == n && strcmp(name, ".") &&
         strcmp(name, "..");
}

/* Splits @p value at commas into trimmed entries (malloc'd copies). */
static char **split_list(ksnap__job_build_t *b, const char *value,
                         size_t *np) {
  char **v = NULL;
  size_t n = 0;

  for (const char *p = value;; p++) {
    const char *end = p + strcspn(p, ",");
    const char *e = end;
    char **nv;
    while (*p == ' ' || *p == '\t')
      p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    if (!(nv = realloc(v, (n + 1) * sizeof(*v))) ||
        !(nv[n] = strndup(p, (size_t)(e - p)))) {
      b->nomem = 1;
      v = nv ? nv : v;
      break;
    }
    v = nv;
    n++;
    if (!*end)
      break;
    p = end;
  }
  *np = n;
  return v;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* @returns 1 if entry @p i of @p v repeats an earlier one. */
static int repeated(char **v, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (!strcmp(v[j], v[i]))
      return 1;
  return 0;
}

static void parse_inputs(ksnap__job_build_t *b, ksnap_job_stage_t *stage,
                         const char *key, const char *value) {
  size_t n = 0;
  char **v = split_list(b, value, &n);

  if (v && !(stage->refs = calloc(n, sizeof(*stage->refs))))
    b->nomem = 1;
  for (size_t i = 0; i < n && !b->nomem; i++) {
    int is_stage = !strncmp(v[i], "stage:", 6);
    const char *name = is_stage                         ? v[i] + 6
                       : !strncmp(v[i], "source:", 7) ? v[i] + 7
                                                        : NULL;
    if (!name) {
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid entry \"%s\" (expected source:TOPIC or "
                         "stage:NAME)", v[i]);
      continue;
    }
    if (repeated(v, i)) {
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "\"%s\" is listed twice", v[i]);
      continue;
    }
    if (!is_stage && !topic_name_ok(name)) {
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid topic name \"%s\" (1 to %d characters of "
                         "A-Z a-z 0-9 . _ -)", name, KSNAP__JOB_TOPIC_MAX);
      continue;
    }
    ksnap__job_ref_t *ref = &stage->refs[stage->nrefs];
    const char *dot = is_stage ? strchr(name, '.') : NULL;
    if (dot && (!dot[1] || strchr(dot + 1, '.'))) {
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid entry \"%s\" (expected stage:NAME or "
                         "stage:NAME.OUTPUT)", v[i]);
      continue;
    }
    if (!(ref->name = dot ? strndup(name, (size_t)(dot - name))
                          : strdup(name)) ||
        !(ref->entry = strdup(v[i])) ||
        (dot && !(ref->output = strdup(dot + 1)))) {
      free(ref->name);
      free(ref->entry);
      ref->name = ref->entry = NULL;
      b->nomem = 1;
    }
    else
      stage->refs[stage->nrefs++].is_stage = is_stage;
  }
  free_list(v, n);
}

/* The sink:TOPIC entries of stage.S.output (@p out NULL) or of named
 * output @p out (stage.S.output.OUT). */
static void parse_outputs(ksnap__job_build_t *b, ksnap_job_stage_t *stage,
                          const char *key, const char *value,
                          const char *out) {
  size_t n = 0;
  char **v = split_list(b, value, &n);
  char **ns = v ? realloc(stage->sinks, (stage->nsinks + n) * sizeof(*ns))
                : NULL;
  const char **no = ns ? realloc(stage->sink_outs,
                                 (stage->nsinks + n) * sizeof(*no))
                       : NULL;

  if (ns)
    stage->sinks = ns;
  if (no)
    stage->sink_outs = no;
  if (v && (!ns || !no))
    b->nomem = 1;
  for (size_t i = 0; i < n && !b->nomem; i++) {
    if (!strncmp(v[i], "stage:", 6))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid entry \"%s\" (expected sink:TOPIC; the "
                         "reader declares an edge: stage.%s.input=stage:%s%s%s)",
                         v[i], v[i] + 6, stage->name, out ? "." : "",
                         out ? out : "");
    else if (strncmp(v[i], "sink:", 5))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid entry \"%s\" (expected sink:TOPIC)", v[i]);
    else if (repeated(v, i))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "\"%s\" is listed twice", v[i]);
    else if (!topic_name_ok(v[i] + 5))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "invalid topic name \"%s\" (1 to %d characters of "
                         "A-Z a-z 0-9 . _ -)", v[i] + 5, KSNAP__JOB_TOPIC_MAX);
    else if (!(stage->sinks[stage->nsinks] = strdup(v[i] + 5)))
      b->nomem = 1;
    else
      stage->sink_outs[stage->nsinks++] = out;
  }
  free_list(v, n);
}

/* Into @p key: the stage's key stage.S.@p sub if it is set, else the
 * job's key @p sub. */
static void errors_key(ksnap__job_build_t *b, const ksnap_job_stage_t *stage,
                       const char *sub, char *key, size_t size) {
  snprintf(key, size, "stage.%s.%s", stage->name, sub);
  if (!ksnap_conf_is_set(b->conf, key))
    snprintf(key, size, "%s", sub);
}

/* errors.tolerance and the dead-letter keys, the stage's over the job's. */
static void parse_errors(ksnap__job_build_t *b, ksnap_job_stage_t *stage) {
  char key[256];
  const char *value = NULL;

  errors_key(b, stage, "errors.tolerance", key, sizeof(key));
  if (!ksnap_conf_get_str(b->conf, key, &value) && !strcmp(value, "all"))
    stage->tolerance = KSNAP_JOB_TOLERANCE_ALL;
  errors_key(b, stage, "errors.deadletterqueue.context.headers.enable", key,
             sizeof(key));
  ksnap_conf_get_bool(b->conf, key, &stage->dlq_headers);
  errors_key(b, stage, "errors.deadletterqueue.topic.name", key, sizeof(key));
  value = NULL;
  if (ksnap_conf_get_str(b->conf, key, &value) || !value || !*value ||
      stage->tolerance == KSNAP_JOB_TOLERANCE_NONE)
    return; /* no dead-letter topic: none set, or nothing goes there */
  if (!topic_name_ok(value))
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "invalid topic name \"%s\" (1 to %d characters of "
                       "A-Z a-z 0-9 . _ -)", value, KSNAP__JOB_TOPIC_MAX);
  else if (!(stage->dlq = strdup(value)) || !(stage->dlq_key = strdup(key)))
    b->nomem = 1;
}

static void parse_stage(ksnap__job_build_t *b, ksnap_job_stage_t *stage,
                        int64_t maxp) {
  char key[160], errstr[512];
  const char *value;
  int64_t num = 1;

  snprintf(key, sizeof(key), "stage.%s.parallelism", stage->name);
  ksnap_conf_get_int(b->conf, key, &num);
  stage->parallelism = (int32_t)num;
  if (num > maxp)
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "%lld exceeds pipeline.max-parallelism (%lld)",
                       (long long)num, (long long)maxp);
  snprintf(key, sizeof(key), "stage.%s.operator", stage->name);
  if (ksnap_conf_get_str(b->conf, key, &value) || !*value)
    ksnap__job_missing(b, key, NULL);
  else if (ksnap__operator_spec_check(value, errstr, sizeof(errstr)))
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key, "%s", errstr);
  else if (!(stage->op = strdup(value)))
    b->nomem = 1;
  snprintf(key, sizeof(key), "stage.%s.input", stage->name);
  if (ksnap_conf_get_str(b->conf, key, &value) || !*value)
    ksnap__job_missing(b, key, NULL);
  else
    parse_inputs(b, stage, key, value);
  snprintf(key, sizeof(key), "stage.%s.output", stage->name);
  if (!ksnap_conf_get_str(b->conf, key, &value) && *value)
    parse_outputs(b, stage, key, value, NULL);
  for (size_t i = 0; i < stage->nouts && !b->nomem; i++) {
    const char *o = stage->outs[i];
    if (o[0] == 'p' && o[1] && strspn(o + 1, "0123456789") == strlen(o + 1))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, stage->out_keys[i],
                         "output name \"%s\" is reserved (p and digits "
                         "name the exchange topics of other parallelisms)",
                         o);
    if (!ksnap_conf_get_str(b->conf, stage->out_keys[i], &value) && *value)
      parse_outputs(b, stage, stage->out_keys[i], value, o);
  }
  snprintf(key, sizeof(key), "stage.%s.partitions", stage->name);
  if (ksnap_conf_is_set(b->conf, key))
    ksnap_conf_get_int(b->conf, key, &stage->partitions);
  parse_errors(b, stage);
}

void ksnap__job_parse(ksnap__job_build_t *b) {
  int64_t maxp = 128;

  ksnap_conf_foreach_stage(b->conf, collect, b);
  if (b->nomem)
    return;
  if (!b->job->nstages) {
    ksnap__job_missing(b, "stage.NAME.input",
                       "the job has no stages; see stage.* in "
                       "CONFIGURATION.md");
    return;
  }
  ksnap_conf_get_int(b->conf, "pipeline.max-parallelism", &maxp);
  for (size_t i = 0; i < b->job->nstages && !b->nomem; i++)
    parse_stage(b, b->job->stages[i], maxp);
}
