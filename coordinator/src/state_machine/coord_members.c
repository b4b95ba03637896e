/* The member table (coord_members.h).
 *
 *   event                      member before   result
 *   MEMBER record of X         unknown         joined: SEND_MEMBER(present)
 *   MEMBER record of X         X               heartbeat (slots updated)
 *   MEMBER record of X         removed         refused (logged)
 *   silent heartbeat.timeout   X               removed: SEND_MEMBER(absent)
 *   its task fell silent       X               removed: SEND_MEMBER(absent)
 *   replayed MEMBER            any             as recorded
 *
 * Why removed for good: a member paused (SIGSTOP, a long stall) past
 * heartbeat.timeout lost its tasks to the others in the restore that
 * followed; resumed, it must not be given tasks again with what it still
 * holds in memory, nor be counted as capacity while it catches up. It
 * reads its removal on the control topic and stops; a new worker process
 * (a new instance id) may join. */
#include "coord_members.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"

#define MEMBER_ID_SIZE 128
#define REMOVED_MAX 64

typedef struct member_s {
  char id[MEMBER_ID_SIZE];
  char host[MEMBER_ID_SIZE];
  int32_t slots;
  int64_t last_seen_ms;
} member_t;

struct coord_members_s {
  coord_acts_t *acts;
  int64_t timeout_ms;
  member_t *m;
  size_t cnt, cap;
  char removed[REMOVED_MAX][MEMBER_ID_SIZE]; /* ring of removed ids */
  unsigned removed_next;
  size_t removed_cnt; /* removals since the start, replayed ones too */
  int64_t last_join_ms;
};

coord_members_t *ksnap__coord_members_new(coord_acts_t *acts,
                                          int64_t heartbeat_timeout_ms) {
  coord_members_t *m = calloc(1, sizeof(*m));

  if (m) {
    m->acts = acts;
    m->timeout_ms = heartbeat_timeout_ms;
  }
  return m;
}

void ksnap__coord_members_destroy(coord_members_t *m) {
  if (!m)
    return;
  free(m->m);
  free(m);
}

static void copy_id(char *dst, const char *src) {
  size_t n = strnlen(src ? src : "", MEMBER_ID_SIZE - 1);

  memcpy(dst, src ? src : "", n);
  dst[n] = '\0';
}

int ksnap__coord_members_find(const coord_members_t *m, const char *id) {
  for (size_t i = 0; i < m->cnt; i++)
    if (!strncmp(m->m[i].id, id, MEMBER_ID_SIZE - 1))
      return (int)i;
  return -1;
}

static bool was_removed(const coord_members_t *m, const char *id) {
  for (size_t i = 0; i < REMOVED_MAX; i++)
    if (*m->removed[i] && !strncmp(m->removed[i], id, MEMBER_ID_SIZE - 1))
      return true;
  return false;
}

bool ksnap__coord_members_removed(const coord_members_t *m, const char *id) {
  return was_removed(m, id);
}

static member_t *add(coord_members_t *m, const char *id, const char *host,
                     int32_t slots) {
  member_t *e;

  if (m->cnt == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 8;
    member_t *n = realloc(m->m, cap * sizeof(*n));
    if (!n) {
      ksnap__coord_oom(m->acts);
      return NULL;
    }
    m->m = n;
    m->cap = cap;
  }
  e = &m->m[m->cnt++];
  memset(e, 0, sizeof(*e));
  copy_id(e->id, id);
  copy_id(e->host, host);
  e->slots = slots;
  return e;
}

static void emit(coord_members_t *m, const member_t *e, bool present,
                 const char *reason) {
  ksnap_coord_action_t *act = ksnap__coord_emit(m->acts,
                                                KSNAP_COORD_ACT_SEND_MEMBER);

  if (!act)
    return;
  act->slots = e->slots;
  act->present = present;
  if ((act->instance = ksnap__coord_strdup(m->acts, e->id)) &&
      (act->refused = ksnap__coord_strdup(m->acts, e->host)))
    act->text = ksnap__coord_strdup(m->acts, reason ? reason : "");
}

static void drop(coord_members_t *m, size_t i) {
  copy_id(m->removed[m->removed_next], m->m[i].id);
  m->removed_next = (m->removed_next + 1) % REMOVED_MAX;
  m->removed_cnt++;
  m->m[i] = m->m[--m->cnt];
}

size_t ksnap__coord_members_removed_cnt(const coord_members_t *m) {
  return m->removed_cnt;
}

int ksnap__coord_members_heard(coord_members_t *m, int64_t now_ms,
                               const ksnap_member_hb_t *hb) {
  const char *id = hb->worker_id ? hb->worker_id : "";
  int i = ksnap__coord_members_find(m, id);
  member_t *e;

  if (i >= 0) {
    m->m[i].last_seen_ms = now_ms;
    if (hb->slots > 0)
      m->m[i].slots = hb->slots;
    return 0;
  }
  if (!*id || hb->slots <= 0 || was_removed(m, id)) {
    ksnap__coord_log(m->acts, KSNAP_LOG_WARNING,
                     "MEMBER record of instance %s refused: %s",
                     *id ? id : "(none)",
                     !*id ? "no instance id"
                     : hb->slots <= 0 ? "it has no slots"
                                      : "it was removed from the job");
    return -1;
  }
  if (!(e = add(m, id, hb->host, hb->slots)))
    return -1;
  e->last_seen_ms = now_ms;
  m->last_join_ms = now_ms;
  ksnap__coord_log(m->acts, KSNAP_LOG_INFO,
                   "Member %s joined (host %s, pid %d, %d slot%s): %zu "
                   "member%s",
                   e->id, e->host, (int)hb->pid, (int)e->slots,
                   e->slots == 1 ? "" : "s", m->cnt, m->cnt == 1 ? "" : "s");
  emit(m, e, true, NULL);
  return 1;
}

bool ksnap__coord_members_remove(coord_members_t *m, const char *id,
                                 const char *reason) {
  int i = ksnap__coord_members_find(m, id);

  if (i < 0)
    return false;
  ksnap__coord_log(m->acts, KSNAP_LOG_WARNING,
                   "Member %s (host %s, %d slots) removed: %s", m->m[i].id,
                   m->m[i].host, (int)m->m[i].slots, reason);
  emit(m, &m->m[i], false, reason);
  drop(m, (size_t)i);
  return true;
}

size_t ksnap__coord_members_expire(coord_members_t *m, int64_t now_ms) {
  size_t n = 0;

  for (size_t i = 0; i < m->cnt;) {
    char why[160];
    if (now_ms - m->m[i].last_seen_ms < m->timeout_ms) {
      i++;
      continue;
    }
    snprintf(why, sizeof(why),
             "no MEMBER heartbeat for %" PRId64 " ms (heartbeat.timeout=%"
             PRId64 " ms)",
             now_ms - m->m[i].last_seen_ms, m->timeout_ms);
    ksnap__coord_members_remove(m, m->m[i].id, why);
    n++;
  }
  return n;
}

void ksnap__coord_members_replay(coord_members_t *m,
                                 const ksnap_member_t *r) {
  const char *id = r->worker_id ? r->worker_id : "";
  int i = ksnap__coord_members_find(m, id);

  if (!*id)
    return;
  if (!r->present) {
    if (i >= 0)
      drop(m, (size_t)i);
    else if (!was_removed(m, id)) {
      copy_id(m->removed[m->removed_next], id);
      m->removed_next = (m->removed_next + 1) % REMOVED_MAX;
    }
  } else if (i < 0 && !was_removed(m, id)) {
    add(m, id, r->host, r->slots);
  }
}

void ksnap__coord_members_start(coord_members_t *m, int64_t now_ms) {
  for (size_t i = 0; i < m->cnt; i++)
    m->m[i].last_seen_ms = now_ms;
  if (m->cnt)
    m->last_join_ms = now_ms;
}

size_t ksnap__coord_members_cnt(const coord_members_t *m) { return m->cnt; }
const char *ksnap__coord_members_id(const coord_members_t *m, size_t i) {
  return m->m[i].id;
}
const char *ksnap__coord_members_host(const coord_members_t *m, size_t i) {
  return m->m[i].host;
}
int32_t ksnap__coord_members_slots(const coord_members_t *m, size_t i) {
  return m->m[i].slots;
}
int64_t ksnap__coord_members_last_join(const coord_members_t *m) {
  return m->last_join_ms;
}
