/*
 * Job graph, step 2: resolve `stage:NAME[.OUT]` inputs, create the
 * exchange topics (per output of a stage that some stage reads, one per
 * parallelism of its readers: `JOB.STAGE[.OUT]`, `JOB.STAGE[.OUT].pP`, see
 * add_exchange), then the
 * source and sink topics, check the graph, and sort the stages
 * topologically (Kahn; ties by declaration order, so the order is
 * deterministic). A cycle is reported at the input key of its first
 * stage in declaration order, in data-flow direction:
 * "stage.a.input: cycle a -> b -> a" (b reads a, a reads b).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_int.h"

static ksnap_job_stage_t *find(ksnap_job_t *job, const char *name) {
  return (ksnap_job_stage_t *)ksnap_job_stage_find(job, name);
}

/* @returns 1 if @p a and @p b name the same output (NULL: the default). */
static int same_out(const char *a, const char *b) {
  return a && b ? !strcmp(a, b) : a == b;
}

/* @returns 1 if @p reader reads output @p out of @p writer. */
static int reads_out(const ksnap_job_stage_t *reader,
                     const ksnap_job_stage_t *writer, const char *out) {
  for (size_t i = 0; i < reader->nrefs; i++)
    if (reader->refs[i].is_stage &&
        !strcmp(reader->refs[i].name, writer->name) &&
        same_out(reader->refs[i].output, out))
      return 1;
  return 0;
}

/* @returns 1 if @p reader has an input `stage:<writer>[.OUT]`. */
static int reads(const ksnap_job_stage_t *reader,
                 const ksnap_job_stage_t *writer) {
  for (size_t i = 0; i < reader->nrefs; i++)
    if (reader->refs[i].is_stage && !strcmp(reader->refs[i].name, writer->name))
      return 1;
  return 0;
}

static void check_refs(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  char key[160];

  for (size_t i = 0; i < job->nstages; i++) {
    ksnap_job_stage_t *stage = job->stages[i];
    snprintf(key, sizeof(key), "stage.%s.input", stage->name);
    for (size_t r = 0; r < stage->nrefs; r++) {
      const ksnap__job_ref_t *ref = &stage->refs[r];
      const ksnap_job_stage_t *w = ref->is_stage ? find(job, ref->name) : NULL;
      if (ref->is_stage && !w)
        ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                           "unknown stage \"%s\"", ref->name);
      else if (w && ref->output && !ksnap__job_out_find(w, ref->output))
        ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                           "%s: stage %s has no output \"%s\" (declare it: "
                           "stage.%s.output.%s=, with its sink:TOPIC "
                           "entries if any)", ref->entry, w->name,
                           ref->output, w->name, ref->output);
    }
  }
}

/* A task reads either source topics or exchange topics (its barriers come
 * from the coordinator's triggers or from its channels): a stage reading
 * both is refused, with the way out. */
static void check_mixed(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  char key[160];

  for (size_t i = 0; i < job->nstages; i++) {
    const ksnap_job_stage_t *stage = job->stages[i];
    const char *src = NULL, *stg = NULL;
    for (size_t r = 0; r < stage->nrefs; r++) {
      if (stage->refs[r].is_stage && !stg && find(job, stage->refs[r].name))
        stg = stage->refs[r].name; /* (an unknown one is reported) */
      else if (!stage->refs[r].is_stage && !src)
        src = stage->refs[r].name;
    }
    snprintf(key, sizeof(key), "stage.%s.input", stage->name);
    if (src && stg)
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "reads both source topics (source:%s) and stages "
                         "(stage:%s), which is not supported yet: read "
                         "source:%s in a stage of its own and list that "
                         "stage here", src, stg, src);
  }
}

/*
 * Creates the exchange topics of output @p out (NULL: the default) of a
 * stage W that is read: one per distinct parallelism P of its readers,
 * each partitioned for that P (a key goes to the partition its reading
 * task owns). The topic of the first reader in declaration order is
 * JOB.W (JOB.W.OUT for a named output); a reader of another parallelism
 * P reads JOB.W.pP (JOB.W.OUT.pP). Each has stage.W.partitions
 * partitions, by default P. @returns the number of readers.
 */
static size_t add_exchange_out(ksnap__job_build_t *b, ksnap_job_stage_t *w,
                               const char *out) {
  ksnap_job_t *job = b->job;
  size_t nread = 0;
  char key[160], name[512], base[400];

  snprintf(key, sizeof(key), "stage.%s.partitions", w->name);
  snprintf(base, sizeof(base), "%s.%s%s%s", job->name, w->name,
           out ? "." : "", out ? out : "");
  for (size_t i = 0; i < job->nstages && !b->nomem; i++) {
    ksnap_job_stage_t *r = job->stages[i];
    ksnap_job_topic_t *topic;
    if (!reads_out(r, w, out))
      continue;
    if (!(topic = ksnap__job_exchange_find(job, w, out, r->parallelism))) {
      if (nread)
        snprintf(name, sizeof(name), "%s.p%d", base, (int)r->parallelism);
      else
        snprintf(name, sizeof(name), "%s", base);
      if (strlen(name) > KSNAP__JOB_TOPIC_MAX) {
        ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, "job.name",
                           "exchange topic name \"%s\" is longer than %d "
                           "characters", name, KSNAP__JOB_TOPIC_MAX);
        return nread;
      }
      if (!(topic = ksnap__job_topic_add(b, name, KSNAP_JOB_TOPIC_EXCHANGE)))
        return nread;
      topic->writer = w;
      topic->output = out;
      topic->reader_p = r->parallelism;
      topic->partitions = w->partitions ? (int32_t)w->partitions
                                        : r->parallelism;
    }
    nread++;
    if (r->parallelism > topic->partitions)
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                         "%d partitions are fewer than the %d tasks of "
                         "stage %s, which reads them", (int)topic->partitions,
                         (int)r->parallelism, r->name);
  }
  return nread;
}

/* @returns 1 if output @p out (NULL: the default) of @p w has a sink. */
static int has_sink(const ksnap_job_stage_t *w, const char *out) {
  for (size_t s = 0; s < w->nsinks; s++)
    if (same_out(w->sink_outs[s], out))
      return 1;
  return 0;
}

/* The exchange topics of every output of @p w; an output that goes
 * nowhere is refused, at its key. */
static void add_exchange(ksnap__job_build_t *b, ksnap_job_stage_t *w) {
  size_t nread = add_exchange_out(b, w, NULL), nall = nread;
  char key[160];

  for (size_t o = 0; o < w->nouts && !b->nomem; o++) {
    size_t n = add_exchange_out(b, w, w->outs[o]);
    nall += n;
    if (!n && !has_sink(w, w->outs[o]))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, w->out_keys[o],
                         "output %s of stage %s goes nowhere: it has no "
                         "sink:TOPIC and no stage reads stage:%s.%s",
                         w->outs[o], w->name, w->name, w->outs[o]);
  }
  snprintf(key, sizeof(key), "stage.%s.partitions", w->name);
  if (!nall && w->partitions)
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "no stage reads stage:%s, so it has no exchange "
                       "topic", w->name);
  else if (!nall && !w->nsinks && !w->nouts) {
    char why[160];
    snprintf(why, sizeof(why), "stage %s has no sink:TOPIC and no stage "
             "reads stage:%s", w->name, w->name);
    snprintf(key, sizeof(key), "stage.%s.output", w->name);
    ksnap__job_missing(b, key, why);
  }
}

/* Finds or adds an external topic, refusing clashes with other kinds. */
static void add_external(ksnap__job_build_t *b, const char *key,
                         const char *name, ksnap_job_topic_kind_t kind) {
  ksnap_job_topic_t *topic = ksnap__job_topic_find(b->job, name);
  size_t n = strlen(b->job->name);

  if (!strncmp(name, b->job->name, n) && !strncmp(name + n, ".ksnap.", 7))
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "topic \"%s\" is reserved for ksnap's control "
                       "topics (%s.ksnap.*)", name, b->job->name);
  else if (!topic)
    ksnap__job_topic_add(b, name, kind);
  else if (topic->kind == KSNAP_JOB_TOPIC_EXCHANGE)
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "topic \"%s\" is the exchange topic of stage %s",
                       name, topic->writer->name);
  else if (topic->kind != kind)
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "topic \"%s\" cannot be both a source and a sink of "
                       "the job", name);
}

static void add_topics(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  char key[160];

  for (size_t i = 0; i < job->nstages && !b->nomem; i++)
    add_exchange(b, job->stages[i]);
  for (size_t i = 0; i < job->nstages && !b->nomem; i++) {
    ksnap_job_stage_t *stage = job->stages[i];
    snprintf(key, sizeof(key), "stage.%s.input", stage->name);
    for (size_t r = 0; r < stage->nrefs; r++)
      if (!stage->refs[r].is_stage)
        add_external(b, key, stage->refs[r].name, KSNAP_JOB_TOPIC_SOURCE);
    for (size_t s = 0; s < stage->nsinks; s++) {
      snprintf(key, sizeof(key), "stage.%s.output%s%s", stage->name,
               stage->sink_outs[s] ? "." : "",
               stage->sink_outs[s] ? stage->sink_outs[s] : "");
      add_external(b, key, stage->sinks[s], KSNAP_JOB_TOPIC_SINK);
    }
  }
}

/* A dead-letter topic holds failed input records only: it may be no
 * other topic of the job (several stages may share one). */
static void check_dlq(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  size_t n = strlen(job->name);

  for (size_t i = 0; i < job->nstages; i++) {
    const ksnap_job_stage_t *stage = job->stages[i];
    const ksnap_job_topic_t *t;
    if (!stage->dlq)
      continue;
    t = ksnap__job_topic_find(job, stage->dlq);
    if (!strncmp(stage->dlq, job->name, n) &&
        !strncmp(stage->dlq + n, ".ksnap.", 7))
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, stage->dlq_key,
                         "topic \"%s\" is reserved for ksnap's control "
                         "topics (%s.ksnap.*)", stage->dlq, job->name);
    else if (t)
      ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, stage->dlq_key,
                         "dead-letter topic \"%s\" of stage %s is a%s %s "
                         "topic of the job", stage->dlq, stage->name,
                         t->kind == KSNAP_JOB_TOPIC_EXCHANGE ? "n" : "",
                         ksnap_job_topic_kind_name(t->kind));
  }
}

/*
 * Reports the shortest cycle through @p s among stages not yet sorted
 * (done[] == 0), found by a breadth-first walk along data flow.
 * @returns 1 if @p s is on a cycle.
 */
static int report_cycle(ksnap__job_build_t *b, size_t s, const char *done,
                        char *reported) {
  ksnap_job_t *job = b->job;
  size_t n = job->nstages, *queue = calloc(n + 1, sizeof(*queue)),
         *parent = calloc(n, sizeof(*parent)), head = 0, tail = 0;
  char *seen = calloc(n, 1), msg[1024], key[160];
  int found = 0;

  if (!queue || !parent || !seen) {
    b->nomem = 1;
    goto done;
  }
  queue[tail++] = s;
  while (head < tail && !found) {
    size_t u = queue[head++];
    for (size_t v = 0; v < n && !found; v++) {
      if (done[v] || seen[v] || !reads(job->stages[v], job->stages[u]))
        continue;
      seen[v] = 1;
      parent[v] = u;
      if (v == s)
        found = 1;
      else
        queue[tail++] = v;
    }
  }
  if (found) {
    /* Walk back from s to s (into queue, no longer needed), then print
     * forwards. */
    size_t *path = queue, len = 0, u = s;
    int off = 0;
    do {
      path[len++] = u;
      u = parent[u];
    } while (u != s && len < n);
    path[len++] = s;
    for (size_t i = len; i-- > 0 && off < (int)sizeof(msg);) {
      reported[path[i]] = 1;
      off += snprintf(msg + off, sizeof(msg) - (size_t)off, "%s%s",
                      i + 1 < len ? " -> " : "", job->stages[path[i]]->name);
    }
    snprintf(key, sizeof(key), "stage.%s.input", job->stages[s]->name);
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key, "cycle %s", msg);
  }
done:
  free(queue);
  free(parent);
  free(seen);
  return found;
}

/* Kahn's algorithm; on success reorders job->stages topologically. */
static void sort_stages(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  size_t n = job->nstages, sorted = 0;
  char *done = calloc(n, 1), *reported = calloc(n, 1);
  ksnap_job_stage_t **order = calloc(n, sizeof(*order));

  if (!done || !reported || !order) {
    b->nomem = 1;
    goto out;
  }
  while (sorted < n) {
    size_t next = n;
    for (size_t v = 0; v < n && next == n; v++) {
      int ready = !done[v];
      for (size_t u = 0; u < n && ready; u++)
        if (!done[u] && reads(job->stages[v], job->stages[u]))
          ready = 0;
      if (ready)
        next = v;
    }
    if (next == n)
      break;
    done[next] = 1;
    job->stages[next]->index = sorted;
    order[sorted++] = job->stages[next];
  }
  for (size_t s = 0; s < n && sorted < n && !b->nomem; s++)
    if (!done[s] && !reported[s])
      report_cycle(b, s, done, reported);
  if (sorted == n) {
    memcpy(job->stages, order, n * sizeof(*order));
  }
out:
  free(done);
  free(reported);
  free(order);
}

/* Fills each stage's inputs and outputs and orders the topics. */
static void link_topics(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  ksnap_job_topic_t **t = job->topics;

  for (size_t i = 0; i < job->ntopics; i++)
    t[i]->first_use = job->nstages;
  for (size_t i = 0; i < job->nstages; i++) {
    ksnap_job_stage_t *stage = job->stages[i];
    stage->inputs = calloc(stage->nrefs, sizeof(*stage->inputs));
    stage->outputs = calloc(stage->nsinks + job->ntopics + 1,
                            sizeof(*stage->outputs));
    stage->output_names = calloc(stage->nsinks + job->ntopics + 1,
                                 sizeof(*stage->output_names));
    if (!stage->inputs || !stage->outputs || !stage->output_names) {
      b->nomem = 1;
      return;
    }
    for (size_t r = 0; r < stage->nrefs; r++) {
      const ksnap__job_ref_t *ref = &stage->refs[r];
      ksnap_job_topic_t *in =
          ref->is_stage ? ksnap__job_exchange_find(job, find(job, ref->name),
                                                   ref->output,
                                                   stage->parallelism)
                        : ksnap__job_topic_find(job, ref->name);
      if (in->first_use > i)
        in->first_use = i;
      stage->inputs[stage->ninputs++] = in;
    }
    for (size_t k = 0; k < job->ntopics; k++)
      if (t[k]->writer == stage) {
        t[k]->first_use = i;
        stage->output_names[stage->noutputs] = t[k]->output;
        stage->outputs[stage->noutputs++] = t[k];
      }
    for (size_t s = 0; s < stage->nsinks; s++) {
      ksnap_job_topic_t *topic = ksnap__job_topic_find(job, stage->sinks[s]);
      if (topic->first_use > i)
        topic->first_use = i;
      stage->output_names[stage->noutputs] = stage->sink_outs[s];
      stage->outputs[stage->noutputs++] = topic;
    }
  }
  /* Insertion sort by (kind, first use): stable, and lists are short. */
  for (size_t i = 1; i < job->ntopics; i++) {
    ksnap_job_topic_t *x = t[i];
    size_t j = i;
    for (; j > 0 && (t[j - 1]->kind > x->kind ||
                     (t[j - 1]->kind == x->kind &&
                      t[j - 1]->first_use > x->first_use));
         j--)
      t[j] = t[j - 1];
    t[j] = x;
  }
}

void ksnap__job_validate(ksnap__job_build_t *b) {
  check_refs(b);
  check_mixed(b);
  if (!b->nomem)
    add_topics(b);
  if (!b->nomem)
    check_dlq(b);
  if (!b->nomem)
    ksnap__job_check_copartition(b);
  if (!b->nomem)
    sort_stages(b);
  if (!b->nomem && !b->first)
    link_topics(b);
}
