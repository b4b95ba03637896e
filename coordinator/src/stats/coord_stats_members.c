/* The job's members in the statistics (see coord_stats.h): the member
 * table the coordinator last handed in (workers started with --join, their
 * hosts, slots and the tasks they own), the tasks without owner and the
 * slots missing, in the JSON document (its "members" member) and in
 * /metrics. The coordinator's hub computes the figures
 * (coord_balance.c); nothing here knows of tasks or owners. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_stats_int.h"

ksnap_err_t ksnap_coord_stats_members(ksnap_coord_stats_t *stats,
                                      const ksnap_member_stats_t *members,
                                      size_t cnt, int64_t tasks_vacant,
                                      int64_t slots_missing,
                                      int64_t removed) {
  ksnap_members_view_t *mv = &stats->mv;
  int64_t slots = 0;

  if (cnt > mv->cap) {
    ksnap_member_stats_t *m = realloc(mv->members, cnt * sizeof(*m));
    if (!m)
      return KSNAP_ERR_NOMEM;
    mv->members = m;
    mv->cap = cnt;
  }
  for (size_t i = 0; i < cnt; i++) {
    mv->members[i] = members[i];
    slots += members[i].slots;
  }
  mv->cnt = cnt;
  mv->slots = slots;
  mv->tasks_vacant = tasks_vacant;
  mv->slots_missing = slots_missing;
  mv->removed = removed;
  mv->known = true;
  return KSNAP_ERR_OK;
}

const ksnap_members_view_t *ksnap_coord_stats_members_view(
    const ksnap_coord_stats_t *stats) {
  return &stats->mv;
}

ksnap_err_t ksnap__stats_members_json(const ksnap_coord_stats_t *stats,
                                      ksnap_buf_t *out) {
  const ksnap_members_view_t *mv = &stats->mv;
  ksnap_err_t rc = KSNAP_ERR_OK;

  if (!mv->known)
    return KSNAP_ERR_OK;
  P(", \"members\": {\"count\": %zu, \"slots\": %" PRId64
    ", \"tasks_vacant\": %" PRId64 ", \"slots_missing\": %" PRId64
    ", \"removed\": %" PRId64 ", \"list\": [",
    mv->cnt, mv->slots, mv->tasks_vacant, mv->slots_missing, mv->removed);
  for (size_t i = 0; i < mv->cnt; i++) {
    const ksnap_member_stats_t *m = &mv->members[i];
    P("%s{\"id\": ", i ? ", " : "");
    if (ksnap__stats_json_str(out, m->id))
      rc = KSNAP_ERR_NOMEM;
    P(", \"host\": ");
    if (ksnap__stats_json_str(out, m->host))
      rc = KSNAP_ERR_NOMEM;
    P(", \"slots\": %" PRId32 ", \"tasks\": %" PRId32 "}", m->slots,
      m->tasks);
  }
  P("]}");
  return rc;
}

static void gauge(ksnap_buf_t *out, ksnap_err_t *rcp, const char *name,
                  const char *help, const char *job, int64_t value) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("# HELP %s %s\n# TYPE %s gauge\n%s{job=\"%s\"} %" PRId64 "\n", name,
    help, name, name, job, value);
  if (rc)
    *rcp = rc;
}

/* One family with a sample per member: its slots or its tasks. */
static void per_member(const ksnap_members_view_t *mv, const char *job,
                       bool tasks, ksnap_buf_t *out, ksnap_err_t *rcp) {
  const char *name = tasks ? "ksnap_member_tasks" : "ksnap_member_slots";
  ksnap_err_t rc = KSNAP_ERR_OK;
  char id[300], host[300];

  P("# HELP %s %s\n# TYPE %s gauge\n", name,
    tasks ? "Tasks a member owns now." : "A member's slots (worker.slots).",
    name);
  for (size_t i = 0; i < mv->cnt; i++) {
    ksnap__stats_label_escape(mv->members[i].id, id, sizeof(id));
    ksnap__stats_label_escape(mv->members[i].host, host, sizeof(host));
    P("%s{job=\"%s\",member=\"%s\",host=\"%s\"} %" PRId32 "\n", name, job,
      id, host, tasks ? mv->members[i].tasks : mv->members[i].slots);
  }
  if (rc)
    *rcp = rc;
}

void ksnap__stats_members_prom(const ksnap_coord_stats_t *stats,
                               const char *job, ksnap_buf_t *out,
                               ksnap_err_t *rcp) {
  const ksnap_members_view_t *mv = &stats->mv;

  if (!mv->known)
    return;
  gauge(out, rcp, "ksnap_members", "Members of the job (workers started "
        "with --join).", job, (int64_t)mv->cnt);
  gauge(out, rcp, "ksnap_members_slots", "The members' slots together.",
        job, mv->slots);
  gauge(out, rcp, "ksnap_tasks_vacant", "Tasks that no instance owns (they "
        "wait for a member or a restore).", job, mv->tasks_vacant);
  gauge(out, rcp, "ksnap_slots_missing", "Slots the members lack for the "
        "job's tasks (above 0: the job waits, checkpointing is paused).",
        job, mv->slots_missing);
  gauge(out, rcp, "ksnap_members_removed", "Members removed so far (silent "
        "past heartbeat.timeout, or lost with a task).", job, mv->removed);
  if (mv->cnt) {
    per_member(mv, job, false, out, rcp);
    per_member(mv, job, true, out, rcp);
  }
}
