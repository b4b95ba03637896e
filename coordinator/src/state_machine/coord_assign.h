/* Which member runs which task (pure: no state, no I/O). A member is a
 * worker started with --join, with a capacity in tasks (its slots); the
 * coordinator gives every task to a member, balanced by slots, a stage's
 * tasks spread over the members (Kafka Streams' and Flink's slot sharing
 * are the model). Called by the hub only (coord_balance.c). Not
 * installed. */
#ifndef KSNAP_COORD_ASSIGN_H
#define KSNAP_COORD_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One assignment problem: @p ntasks tasks, task i of stage stage[i]
 *  (any number naming it) now run by member cur[i] (-1: vacant, or its
 *  owner is no member); @p nmembers members with slots[m] > 0. */
typedef struct coord_assign_in_s {
  size_t ntasks;
  const int *stage;
  const int *cur;
  size_t nmembers;
  const int32_t *slots;
} coord_assign_in_t;

/**
 * Fills out[i] with the member that runs task i, or -1 when no slot is
 * left for it. With @p moves (a restore: every task starts again anyway)
 * the tasks are balanced: member m gets its share of the tasks by slots
 * (the shares differ by at most one task per slot ratio, and never exceed
 * its slots), keeping a task where it runs while that member's share
 * allows; without, only vacant tasks are placed and no running task
 * moves. Among the members with room, a task goes to the one with the
 * fewest tasks of its stage, then the lowest load (tasks per slot), then
 * the lowest index. @returns the number of tasks left at -1.
 */
size_t ksnap__coord_assign(const coord_assign_in_t *in, bool moves, int *out);

/** @returns true if ksnap__coord_assign() with moves would give some task
 *  another member than cur[] (a rebalance would change something). */
bool ksnap__coord_assign_unbalanced(const coord_assign_in_t *in);

#endif /* KSNAP_COORD_ASSIGN_H */
