/* Members and the tasks they run (hub; PROTOCOL.md section 11.5): the
 * glue between the member table (coord_members.c), the task table's
 * owners (coord_tasks.c) and the assignment (coord_assign.c).
 *
 *   event                        what the coordinator does
 *   a member joins               recorded (MEMBER on the control topic);
 *                                vacant tasks go to the members by ASSIGN
 *                                once no member joined for JOIN_SETTLE_MS
 *                                and no restore is pending; if the
 *                                members are unbalanced, a rebalance at
 *                                the next completed checkpoint
 *   a member falls silent        removed (MEMBER absent); its tasks
 *   (heartbeat.timeout)          vacant; if one ran in G: a failure of
 *                                the job, so one restore
 *   a RESTORE goes out           members whose task fell silent are
 *                                removed; every task goes to a live
 *                                member, balanced by slots (moves
 *                                allowed: everything restarts anyway);
 *                                the owner table names them
 *   a checkpoint completes,      a restore (not a failure) that moves
 *   a rebalance is due           tasks to the member that joined
 *   not enough slots             tasks stay vacant: the job waits (no
 *                                checkpoint), logged with the missing
 *                                capacity
 *
 * Why ASSIGN only for vacant tasks and only without a restore pending:
 * a task vacant in G whose last owner registered in G may have written in
 * G; opening it again in G would replay G's input beside those records
 * (coord_owner.c). Such a task waits for the RESTORE(G+1), which names
 * its new member. A running task moves only with a RESTORE.
 *
 * Why wait JOIN_SETTLE_MS after a join: workers started together join
 * within moments of each other; assigning at the first join would give
 * every task to it and rebalance at once (Kafka's
 * group.initial.rebalance.delay.ms).
 *
 * Tasks whose owner is an instance that is not a member (a worker
 * started with --tasks or without --join) are left to it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

#define JOIN_SETTLE_MS 1000

/* The assignment problem of the tasks that members may run: those owned
 * by members, and the vacant ones. in->cur[i] = -2: not a member's. */
typedef struct problem_s {
  coord_assign_in_t in;
  int *stage, *cur, *out;
  int32_t *slots;
} problem_t;

static void problem_free(problem_t *p) {
  free(p->stage);
  free(p->cur);
  free(p->out);
  free(p->slots);
}

static bool problem_build(ksnap_coord_sm_t *sm, problem_t *p) {
  size_t n = ksnap__coord_tasks_cnt(sm->tasks);
  size_t nm = ksnap__coord_members_cnt(sm->members), k = 0;

  memset(p, 0, sizeof(*p));
  p->stage = calloc(n + 1, sizeof(int));
  p->cur = calloc(n + 1, sizeof(int));
  p->out = calloc(n + 1, sizeof(int));
  p->slots = calloc(nm + 1, sizeof(int32_t));
  if (!p->stage || !p->cur || !p->out || !p->slots) {
    problem_free(p);
    ksnap__coord_oom(sm->acts);
    return false;
  }
  for (size_t m = 0; m < nm; m++)
    p->slots[m] = ksnap__coord_members_slots(sm->members, m);
  for (size_t i = 0; i < n; i++) {
    const char *owner = ksnap__coord_tasks_owner_at(sm->tasks, i);
    const char *st = ksnap__coord_tasks_stage_at(sm->tasks, i);
    int s = (int)i;
    for (size_t j = 0; j < i; j++)
      if (!strcmp(ksnap__coord_tasks_stage_at(sm->tasks, j), st)) {
        s = p->stage[j];
        break;
      }
    p->stage[i] = s;
    p->cur[i] = *owner ? ksnap__coord_members_find(sm->members, owner) : -1;
    if (*owner && p->cur[i] < 0 &&
        !ksnap__coord_members_removed(sm->members, owner))
      p->cur[i] = -2; /* a removed member's task is vacant */
    k += p->cur[i] != -2;
  }
  p->in = (coord_assign_in_t){n, p->stage, p->cur, nm, p->slots};
  return k > 0;
}

/* Logs, at most once per heartbeat.timeout, the capacity missing. */
static void capacity_log(ksnap_coord_sm_t *sm, int64_t now_ms, size_t left) {
  int64_t slots = 0;
  size_t nm = ksnap__coord_members_cnt(sm->members);

  if (sm->capacity_logged &&
      now_ms - sm->capacity_log_ms < sm->conf.heartbeat_timeout_ms)
    return;
  sm->capacity_logged = true;
  sm->capacity_log_ms = now_ms;
  for (size_t m = 0; m < nm; m++)
    slots += ksnap__coord_members_slots(sm->members, m);
  ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                   "Not enough slots: the job has %zu tasks, its %zu "
                   "member%s %" PRId64 " slots; %zu task%s wait%s for %zu "
                   "more slot%s (start a worker with --join, or raise "
                   "worker.slots); checkpointing is paused",
                   ksnap__coord_tasks_cnt(sm->tasks), nm,
                   nm == 1 ? " has" : "s have",
                   slots, left, left == 1 ? "" : "s", left == 1 ? "s" : "",
                   left, left == 1 ? "" : "s");
}

/* Runs the assignment and applies it. @returns the tasks left vacant. */
static size_t apply(ksnap_coord_sm_t *sm, bool moves, bool announce) {
  problem_t p;
  size_t left = 0;

  if (!ksnap__coord_members_cnt(sm->members) || !problem_build(sm, &p))
    return 0;
  ksnap__coord_assign(&p.in, moves, p.out);
  for (size_t i = 0; i < p.in.ntasks; i++) {
    const char *to;
    if (p.cur[i] == -2)
      continue;
    if (p.out[i] < 0)
      left++;
    if (p.out[i] == p.cur[i])
      continue;
    to = p.out[i] >= 0 ? ksnap__coord_members_id(sm->members,
                                                 (size_t)p.out[i])
                       : "";
    if (!moves && (p.cur[i] >= 0 || !*to))
      continue; /* without moves only vacant tasks get a member */
    ksnap__coord_tasks_assign_at(sm->tasks, i, to, announce);
  }
  problem_free(&p);
  return left;
}

/* Removes member @p id; its tasks are vacant, and a failure of the job if
 * one of them ran in G. */
static void lose(ksnap_coord_sm_t *sm, int64_t now_ms, const char *id) {
  coord_tasks_verdict_t v;

  if (ksnap__coord_tasks_vacate_instance(sm->tasks, id, sm->generation, &v))
    ksnap__coord_failure(sm, now_ms, v.why, true);
}

static bool restore_pending(const ksnap_coord_sm_t *sm) {
  return sm->state == KSNAP_COORD_RESTARTING ||
         sm->state == KSNAP_COORD_RESTORE_PENDING;
}

/* The member view of the statistics (coord_stats.h), once the job has
 * had a member: each member's tasks, the tasks without owner, and the
 * slots missing for the tasks that members may run (the vacant ones and
 * the members' own). */
static void publish(ksnap_coord_sm_t *sm) {
  size_t nm = ksnap__coord_members_cnt(sm->members);
  size_t removed = ksnap__coord_members_removed_cnt(sm->members);
  ksnap_member_stats_t *ms;
  int64_t vacant = 0, eligible = 0, slots = 0;

  if (!nm && !removed)
    return;
  if (!(ms = calloc(nm ? nm : 1, sizeof(*ms)))) {
    ksnap__coord_oom(sm->acts);
    return;
  }
  for (size_t m = 0; m < nm; m++) {
    snprintf(ms[m].id, sizeof(ms[m].id), "%s",
             ksnap__coord_members_id(sm->members, m));
    snprintf(ms[m].host, sizeof(ms[m].host), "%s",
             ksnap__coord_members_host(sm->members, m));
    ms[m].slots = ksnap__coord_members_slots(sm->members, m);
    slots += ms[m].slots;
  }
  for (size_t t = 0; t < ksnap__coord_tasks_cnt(sm->tasks); t++) {
    const char *owner = ksnap__coord_tasks_owner_at(sm->tasks, t);
    int m = *owner ? ksnap__coord_members_find(sm->members, owner) : -1;
    vacant += !*owner;
    eligible += !*owner || m >= 0;
    if (m >= 0)
      ms[m].tasks++;
  }
  if (ksnap_coord_stats_members(sm->stats, ms, nm, vacant,
                                eligible > slots ? eligible - slots : 0,
                                (int64_t)removed))
    ksnap__coord_oom(sm->acts);
  free(ms);
}

void ksnap__coord_balance_tick(ksnap_coord_sm_t *sm, int64_t now_ms) {
  size_t nm = ksnap__coord_members_cnt(sm->members), left;
  char gone[128];
  bool vacant = false;

  ksnap__coord_members_expire(sm->members, now_ms); /* silent ones */
  nm = ksnap__coord_members_cnt(sm->members);
  for (size_t t = 0; t < ksnap__coord_tasks_cnt(sm->tasks); t++) {
    const char *owner = ksnap__coord_tasks_owner_at(sm->tasks, t);
    if (*owner && ksnap__coord_members_removed(sm->members, owner)) {
      snprintf(gone, sizeof(gone), "%s", owner);
      lose(sm, now_ms, gone);
    }
    vacant |= !*ksnap__coord_tasks_owner_at(sm->tasks, t);
  }
  if (nm && vacant && !restore_pending(sm) && !ksnap__coord_is_terminal(sm) &&
      now_ms - ksnap__coord_members_last_join(sm->members) >= JOIN_SETTLE_MS &&
      (left = apply(sm, false, true)))
    capacity_log(sm, now_ms, left);
  publish(sm);
}

void ksnap__coord_balance_restore(ksnap_coord_sm_t *sm, int64_t now_ms) {
  size_t left;

  if (!ksnap__coord_members_cnt(sm->members))
    return;
  for (size_t t = 0; t < ksnap__coord_tasks_cnt(sm->tasks); t++) {
    const char *last = ksnap__coord_tasks_last_owner_at(sm->tasks, t);
    char why[256];
    if (*ksnap__coord_tasks_owner_at(sm->tasks, t) || !*last ||
        ksnap__coord_members_find(sm->members, last) < 0)
      continue;
    snprintf(why, sizeof(why), "its task %s fell silent",
             ksnap__coord_task_name_at(sm->tasks, t));
    ksnap__coord_members_remove(sm->members, last, why);
  }
  sm->rebalance = false;
  if ((left = apply(sm, true, false)))
    capacity_log(sm, now_ms, left);
}

bool ksnap__coord_balance_due(ksnap_coord_sm_t *sm) {
  problem_t p;
  bool due;

  if (!sm->rebalance || sm->state != KSNAP_COORD_RUNNING)
    return false;
  if (!ksnap__coord_members_cnt(sm->members) || !problem_build(sm, &p)) {
    sm->rebalance = false;
    return false;
  }
  due = ksnap__coord_assign_unbalanced(&p.in);
  problem_free(&p);
  if (!due)
    sm->rebalance = false;
  return due;
}

ksnap_err_t ksnap_coord_sm_member(ksnap_coord_sm_t *sm, int64_t now_ms,
                                  const ksnap_member_hb_t *hb) {
  ksnap_err_t err = ksnap__coord_enter(sm, "MEMBER");
  int joined;

  if (err)
    return err;
  joined = ksnap__coord_members_heard(sm->members, now_ms, hb);
  if (joined < 0)
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  if (joined > 0)
    sm->rebalance = true;
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

size_t ksnap_coord_sm_members(const ksnap_coord_sm_t *sm, size_t i,
                              const char **id, const char **host,
                              int32_t *slots) {
  size_t n = ksnap__coord_members_cnt(sm->members);

  if (i < n) {
    if (id)
      *id = ksnap__coord_members_id(sm->members, i);
    if (host)
      *host = ksnap__coord_members_host(sm->members, i);
    if (slots)
      *slots = ksnap__coord_members_slots(sm->members, i);
  }
  return n;
}
