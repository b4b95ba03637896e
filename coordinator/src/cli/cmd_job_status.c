/* `ksnap job status FILE`: the job's members (workers started with
 * --join) and which tasks each runs, from the control topic: the MEMBER
 * records (joins and removals) and the owner table of the latest RESTORE
 * with the ASSIGN records after it (PROTOCOL.md section 11); and whether
 * the job ended (FAILED, STOPPED or FINISHED: the last such record, not
 * followed by a RESTORE). Needs no running coordinator. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "control/coord_io.h"
#include "ksnap/job.h"

typedef struct member_s {
  char *id, *host, *why;
  int32_t slots;
  bool present;
} member_t;

typedef struct status_s {
  const ksnap_job_t *job;
  size_t ntasks;
  char **owner; /* per task in job order, "" vacant */
  member_t *m;
  size_t nm;
  int64_t gen;
  char ended[256]; /* "" while it runs */
  int oom;
} status_t;

static size_t task_index(const status_t *s, const ksnap_task_id_t *id) {
  size_t k = 0;

  for (size_t i = 0; i < ksnap_job_stage_cnt(s->job); i++) {
    const ksnap_job_stage_t *st = ksnap_job_stage(s->job, i);
    int32_t p = ksnap_job_stage_parallelism(st);
    if (id->stage && !strcmp(ksnap_job_stage_name(st), id->stage))
      return id->index >= 0 && id->index < p ? k + (size_t)id->index
                                             : s->ntasks;
    k += (size_t)p;
  }
  return s->ntasks;
}

static void set_owner(status_t *s, const ksnap_task_id_t *id,
                      const char *instance) {
  size_t i = task_index(s, id);
  char *dup;

  if (i >= s->ntasks)
    return; /* a task of an older job graph */
  if (!(dup = strdup(instance ? instance : ""))) {
    s->oom = 1;
    return;
  }
  free(s->owner[i]);
  s->owner[i] = dup;
}

static void on_member(status_t *s, const ksnap_member_t *r) {
  member_t *m = NULL, *n;

  for (size_t i = 0; i < s->nm; i++)
    if (!strcmp(s->m[i].id, r->worker_id))
      m = &s->m[i];
  if (!m) {
    if (!(n = realloc(s->m, (s->nm + 1) * sizeof(*n)))) {
      s->oom = 1;
      return;
    }
    s->m = n;
    m = &s->m[s->nm++];
    memset(m, 0, sizeof(*m));
    m->id = strdup(r->worker_id);
  }
  free(m->host);
  free(m->why);
  m->host = strdup(r->host ? r->host : "");
  m->why = strdup(r->reason ? r->reason : "");
  m->slots = r->slots;
  m->present = r->present;
  if (!m->id || !m->host || !m->why)
    s->oom = 1;
}

static int on_record(void *opaque, const void *buf, size_t len, int64_t ts) {
  status_t *s = opaque;
  ksnap_control_record_t rec;
  ksnap_error_t error;

  (void)ts;
  if (ksnap_codec_control_decode(buf, len, &rec, &error))
    return 0;
  if (rec.type == KSNAP_CONTROL_JOB_FINISHED)
    snprintf(s->ended, sizeof(s->ended), "FINISHED (final checkpoint %"
             PRId64 ")", rec.u.job_finished.checkpoint_id);
  else if (rec.type == KSNAP_CONTROL_JOB_STOPPED)
    snprintf(s->ended, sizeof(s->ended), "STOPPED (savepoint %s)",
             rec.u.job_stopped.savepoint_url);
  else if (rec.type == KSNAP_CONTROL_JOB_FAILED)
    snprintf(s->ended, sizeof(s->ended), "FAILED");
  if (rec.type == KSNAP_CONTROL_RESTORE) {
    s->ended[0] = '\0'; /* resumed */
    s->gen = rec.u.restore.generation;
    if (rec.u.restore.owner_cnt) /* a table: it replaces the owners */
      for (size_t i = 0; i < s->ntasks; i++)
        s->owner[i][0] = '\0';
    for (size_t i = 0; i < rec.u.restore.owner_cnt; i++)
      set_owner(s, &rec.u.restore.owners[i].task,
                rec.u.restore.owners[i].instance);
  } else if (rec.type == KSNAP_CONTROL_ASSIGN) {
    set_owner(s, &rec.u.assign.task, rec.u.assign.instance);
  } else if (rec.type == KSNAP_CONTROL_MEMBER && rec.u.member.worker_id) {
    on_member(s, &rec.u.member);
  }
  ksnap_control_record_cleanup(&rec);
  return s->oom;
}

/* Task i's name, "stage[i]". */
static void task_name(const status_t *s, size_t i, char *buf, size_t size) {
  size_t k = 0;

  for (size_t j = 0; j < ksnap_job_stage_cnt(s->job); j++) {
    const ksnap_job_stage_t *st = ksnap_job_stage(s->job, j);
    size_t p = (size_t)ksnap_job_stage_parallelism(st);
    if (i < k + p) {
      ksnap_job_task_id(st, (int32_t)(i - k), buf, size);
      return;
    }
    k += p;
  }
  snprintf(buf, size, "?");
}

/* The tasks owned by @p id, ", "-separated; @returns their count. */
static size_t print_tasks_of(const status_t *s, const char *id) {
  size_t n = 0;
  char name[KSNAP_JOB_TASK_ID_SIZE];

  for (size_t i = 0; i < s->ntasks; i++)
    if (!strcmp(s->owner[i], id)) {
      task_name(s, i, name, sizeof(name));
      printf("%s%s", n++ ? ", " : "", name);
    }
  if (!n)
    printf("none");
  return n;
}

static bool is_member(const status_t *s, const char *id) {
  for (size_t i = 0; i < s->nm; i++)
    if (s->m[i].present && !strcmp(s->m[i].id, id))
      return true;
  return false;
}

static void print_status(const status_t *s) {
  size_t present = 0, vacant = 0, other = 0;
  int64_t slots = 0;
  char name[KSNAP_JOB_TASK_ID_SIZE];

  for (size_t i = 0; i < s->nm; i++)
    if (s->m[i].present) {
      present++;
      slots += s->m[i].slots;
    }
  printf("Job %s: generation %" PRId64 ", %zu tasks, %zu member%s with %"
         PRId64 " slots\n", ksnap_job_name(s->job), s->gen, s->ntasks,
         present, present == 1 ? "" : "s", slots);
  if (*s->ended)
    printf("  state %s\n", s->ended);
  for (size_t i = 0; i < s->nm; i++) {
    const member_t *m = &s->m[i];
    size_t n;
    if (!m->present)
      continue;
    printf("  member %s  host %s  %d slots  tasks: ", m->id, m->host,
           (int)m->slots);
    n = print_tasks_of(s, m->id);
    printf(" (%zu)\n", n);
  }
  for (size_t i = 0; i < s->ntasks; i++) {
    if (!*s->owner[i])
      vacant++;
    else if (!is_member(s, s->owner[i]))
      other++;
  }
  if (vacant) {
    printf("  without an owner (%zu): ", vacant);
    for (size_t i = 0, k = 0; i < s->ntasks; i++)
      if (!*s->owner[i]) {
        task_name(s, i, name, sizeof(name));
        printf("%s%s", k++ ? ", " : "", name);
      }
    printf("\n");
  }
  if (other) {
    printf("  owned by an instance that is no member (%zu):\n", other);
    for (size_t i = 0; i < s->ntasks; i++)
      if (*s->owner[i] && !is_member(s, s->owner[i])) {
        task_name(s, i, name, sizeof(name));
        printf("    %s: %s\n", name, s->owner[i]);
      }
  }
  for (size_t i = 0; i < s->nm; i++)
    if (!s->m[i].present)
      printf("  removed member %s  host %s: %s\n", s->m[i].id, s->m[i].host,
             s->m[i].why);
}

int cli_job_status(const ksnap_conf_t *conf, const ksnap_job_t *job) {
  status_t s = {job, 0, NULL, NULL, 0, KSNAP_GENERATION_FIRST, "", 0};
  char topic[512];
  ksnap_error_t error;
  int rc = KSNAP_EXIT_FAIL;

  for (size_t i = 0; i < ksnap_job_stage_cnt(job); i++)
    s.ntasks += (size_t)ksnap_job_stage_parallelism(ksnap_job_stage(job, i));
  if (!(s.owner = calloc(s.ntasks + 1, sizeof(*s.owner))))
    goto oom;
  for (size_t i = 0; i < s.ntasks; i++)
    if (!(s.owner[i] = calloc(1, 1)))
      goto oom;
  ksnap__coord_topic(topic, sizeof(topic), ksnap_job_name(job),
                     KSNAP_COORD_CONTROL_SUFFIX);
  if (ksnap__coord_read_history(conf, topic, 30000, on_record, &s, &error)) {
    fprintf(stderr, "ksnap job status: %s\n", error.msg);
    goto out;
  }
  if (s.oom)
    goto oom;
  print_status(&s);
  rc = KSNAP_EXIT_OK;
  goto out;
oom:
  fprintf(stderr, "ksnap job status: out of memory\n");
out:
  for (size_t i = 0; s.owner && i < s.ntasks; i++)
    free(s.owner[i]);
  free(s.owner);
  for (size_t i = 0; i < s.nm; i++) {
    free(s.m[i].id);
    free(s.m[i].host);
    free(s.m[i].why);
  }
  free(s.m);
  return rc;
}
