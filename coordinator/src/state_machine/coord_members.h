/* The members of the job (coord_members.c): workers started with --join,
 * which the coordinator assigns tasks to (PROTOCOL.md section 11.5). Each
 * has an instance id, a host, its slots (capacity in tasks) and its last
 * heartbeat (a MEMBER record on the acks topic every heartbeat.interval).
 * A member silent for heartbeat.timeout, or whose task fell silent, is
 * removed for good: a removed instance never joins again (a new process
 * has a new id). Every join and removal is recorded on the control topic
 * (MEMBER records, SEND_MEMBER actions), so a restarted coordinator
 * rebuilds the table. Called by the hub only (coord_balance.c,
 * coord_setup.c); it calls coord_actions.c only. Not installed. */
#ifndef KSNAP_COORD_MEMBERS_H
#define KSNAP_COORD_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_members_s coord_members_t;

coord_members_t *ksnap__coord_members_new(coord_acts_t *acts,
                                          int64_t heartbeat_timeout_ms);
void ksnap__coord_members_destroy(coord_members_t *m);

/** A MEMBER record of instance @p hb. @returns 1 when it joined now
 *  (SEND_MEMBER emitted, logged), 0 when it was known (its heartbeat),
 *  -1 when it was removed before (refused, logged). */
int ksnap__coord_members_heard(coord_members_t *m, int64_t now_ms,
                               const ksnap_member_hb_t *hb);
/** Removes members silent for heartbeat.timeout (SEND_MEMBER, logged).
 *  @returns how many. */
size_t ksnap__coord_members_expire(coord_members_t *m, int64_t now_ms);
/** Removes member @p id for @p reason. @returns false if no member. */
bool ksnap__coord_members_remove(coord_members_t *m, const char *id,
                                 const char *reason);
/** Replay of a control MEMBER record. */
void ksnap__coord_members_replay(coord_members_t *m, const ksnap_member_t *r);
/** The coordinator starts: replayed members count as heard at @p now_ms. */
void ksnap__coord_members_start(coord_members_t *m, int64_t now_ms);

size_t ksnap__coord_members_cnt(const coord_members_t *m);
/** Member @p i's id, host, slots. */
const char *ksnap__coord_members_id(const coord_members_t *m, size_t i);
const char *ksnap__coord_members_host(const coord_members_t *m, size_t i);
int32_t ksnap__coord_members_slots(const coord_members_t *m, size_t i);
/** @returns member @p id's index, or -1. */
int ksnap__coord_members_find(const coord_members_t *m, const char *id);
/** @returns true if @p id was a member and was removed. */
bool ksnap__coord_members_removed(const coord_members_t *m, const char *id);
/** @returns how many members were removed (replayed removals too). */
size_t ksnap__coord_members_removed_cnt(const coord_members_t *m);
/** @returns the time of the last join (0: none). */
int64_t ksnap__coord_members_last_join(const coord_members_t *m);

#endif /* KSNAP_COORD_MEMBERS_H */
