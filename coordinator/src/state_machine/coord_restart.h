/* The restart strategy of the coordinator state machine (coord_restart.c;
 * what each strategy means is at its top): after a failure of the job's
 * execution, whether the job is restored and after which delay, or fails
 * for good. Called by the hub only (coord_sm.c; created by coord_setup.c)
 * for each failure that is not part of a restore already under way (the
 * hub coalesces those); it calls nothing. Not installed. */
#ifndef KSNAP_COORD_RESTART_H
#define KSNAP_COORD_RESTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_sm.h"

typedef struct coord_restart_s coord_restart_t;

/** What a failure means for the job. */
typedef struct coord_restart_verdict_s {
  bool restart;     /**< false: the strategy gives up, the job fails */
  int64_t delay_ms; /**< restart: wait this long, then restore */
  int64_t attempt;  /**< restart: its number (1: the first one) */
  char why[320];    /**< give up: the strategy's rule that says so */
} coord_restart_verdict_t;

/** @returns the strategy of @p conf with no failure yet, or NULL (no
 *  memory). ksnap__coord_restart_check() must have accepted @p conf. */
coord_restart_t *ksnap__coord_restart_new(const ksnap_restart_conf_t *conf);
void ksnap__coord_restart_destroy(coord_restart_t *restart);

/** @returns NULL if @p conf is usable, else what is wrong with it. */
const char *ksnap__coord_restart_check(const ksnap_restart_conf_t *conf);

/** A failure at @p now_ms (a new one: not joining a restore under way):
 *  fills @p v. */
void ksnap__coord_restart_failure(coord_restart_t *restart, int64_t now_ms,
                                  coord_restart_verdict_t *v);

/** "exponential-delay", "fixed-delay", "failure-rate" or "none". */
const char *ksnap__coord_restart_name(const coord_restart_t *restart);

#endif /* KSNAP_COORD_RESTART_H */
