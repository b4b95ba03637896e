/* The restart strategy (coord_restart.h), with the names, defaults and
 * meanings of Flink's RestartBackoffTimeStrategy implementations. A
 * failure here is one failure of the job's execution that the hub did not
 * coalesce into a restore already waiting for its delay (Flink merges
 * those too); each one the strategy accepts is one restore.
 *
 *  exponential-delay  delay = initial-backoff * backoff-multiplier^n, n the
 *                     restores since the last reset, plus or minus a
 *                     uniform jitter of up to jitter-factor of it, then
 *                     clamped to initial-backoff..max-backoff. A failure
 *                     that comes reset-backoff-threshold or more after the
 *                     time the last restore was due resets n to 0. The
 *                     strategy gives up on the failure after
 *                     attempts-before-reset-backoff restores without a
 *                     reset.
 *  fixed-delay        restores after delay, attempts times in all; the
 *                     next failure fails the job.
 *  failure-rate       restores after delay while at most
 *                     max-failures-per-interval failures fall within
 *                     failure-rate-interval (this one included); one more
 *                     fails the job.
 *  none               never restores.
 *
 * The jitter comes from a generator seeded by the configuration
 * (ksnap_restart_conf_t.jitter_seed): the same seed, the same delays. */
#include "coord_restart.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NO_RESTART INT64_MIN

struct coord_restart_s {
  ksnap_restart_conf_t conf;
  int64_t attempts;        /**< exponential: since the reset; fixed: all */
  int64_t next_restart_ms; /**< exponential: when the last one was due */
  int64_t *times;          /**< failure-rate: failures within the interval */
  size_t ntimes;
  uint64_t rng; /**< splitmix64 state */
};

static const char *const names[] = {"exponential-delay", "fixed-delay",
                                    "failure-rate", "none"};

const char *ksnap__coord_restart_check(const ksnap_restart_conf_t *c) {
  if ((unsigned)c->type > KSNAP_RESTART_NONE)
    return "restart-strategy.type is unknown";
  if (c->type == KSNAP_RESTART_EXPONENTIAL_DELAY) {
    if (c->initial_backoff_ms < 1 || c->max_backoff_ms < c->initial_backoff_ms)
      return "exponential-delay needs 1 <= initial-backoff <= max-backoff";
    if (!(c->backoff_multiplier >= 1) || !(c->jitter_factor >= 0) ||
        !(c->jitter_factor <= 1))
      return "exponential-delay needs backoff-multiplier >= 1 and "
             "jitter-factor in 0..1";
    if (c->reset_threshold_ms < 1 || c->attempts_before_reset < 1)
      return "exponential-delay needs reset-backoff-threshold and "
             "attempts-before-reset-backoff of at least 1";
  }
  if (c->type == KSNAP_RESTART_FIXED_DELAY &&
      (c->fixed_attempts < 0 || c->fixed_delay_ms < 0))
    return "fixed-delay needs attempts and delay of at least 0";
  if (c->type == KSNAP_RESTART_FAILURE_RATE &&
      (c->rate_max_failures < 1 || c->rate_interval_ms < 1 ||
       c->rate_delay_ms < 0))
    return "failure-rate needs max-failures-per-interval and "
           "failure-rate-interval of at least 1, delay of at least 0";
  return NULL;
}

coord_restart_t *ksnap__coord_restart_new(const ksnap_restart_conf_t *conf) {
  coord_restart_t *r = calloc(1, sizeof(*r));

  if (!r)
    return NULL;
  r->conf = *conf;
  r->next_restart_ms = NO_RESTART;
  r->rng = conf->jitter_seed;
  return r;
}

void ksnap__coord_restart_destroy(coord_restart_t *r) {
  if (!r)
    return;
  free(r->times);
  free(r);
}

const char *ksnap__coord_restart_name(const coord_restart_t *r) {
  return names[r->conf.type];
}

/* splitmix64: small, and the same sequence for the same seed. */
static uint64_t next_random(coord_restart_t *r) {
  uint64_t z = (r->rng += 0x9e3779b97f4a7c15ULL);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A uniform integer in -offset..offset. */
static int64_t jitter(coord_restart_t *r, int64_t offset) {
  if (offset <= 0)
    return 0;
  return (int64_t)(next_random(r) % (uint64_t)(2 * offset + 1)) - offset;
}

static void exponential(coord_restart_t *r, int64_t now_ms,
                        coord_restart_verdict_t *v) {
  const ksnap_restart_conf_t *c = &r->conf;
  double backoff;
  int64_t delay;

  if (r->next_restart_ms == NO_RESTART ||
      now_ms - r->next_restart_ms >= c->reset_threshold_ms)
    r->attempts = 0; /* ran long enough since the last restore */
  backoff = (double)c->initial_backoff_ms *
            pow(c->backoff_multiplier, (double)r->attempts);
  if (!(backoff < (double)c->max_backoff_ms))
    backoff = (double)c->max_backoff_ms; /* also inf: the clamp below */
  delay = (int64_t)backoff +
          jitter(r, (int64_t)(backoff * c->jitter_factor));
  if (delay > c->max_backoff_ms)
    delay = c->max_backoff_ms;
  if (delay < c->initial_backoff_ms)
    delay = c->initial_backoff_ms;
  r->attempts++;
  r->next_restart_ms = now_ms + delay;
  v->delay_ms = delay;
  v->restart = r->attempts <= c->attempts_before_reset;
  if (!v->restart)
    snprintf(v->why, sizeof(v->why),
             "the restart strategy exponential-delay made %" PRId64
             " restores without a reset "
             "(restart-strategy.exponential-delay."
             "attempts-before-reset-backoff=%" PRId64 ")",
             r->attempts - 1, c->attempts_before_reset);
}

static void fixed(coord_restart_t *r, coord_restart_verdict_t *v) {
  r->attempts++;
  v->delay_ms = r->conf.fixed_delay_ms;
  v->restart = r->attempts <= r->conf.fixed_attempts;
  if (!v->restart)
    snprintf(v->why, sizeof(v->why),
             "the restart strategy fixed-delay made its %" PRId64
             " restores (restart-strategy.fixed-delay.attempts=%" PRId64 ")",
             r->attempts - 1, r->conf.fixed_attempts);
}

/* Keeps the failures within the interval, at most max + 1 of them. */
static void rate(coord_restart_t *r, int64_t now_ms,
                 coord_restart_verdict_t *v) {
  const ksnap_restart_conf_t *c = &r->conf;
  size_t keep = 0, cap = (size_t)c->rate_max_failures + 1;
  int64_t *t;

  for (size_t i = 0; i < r->ntimes; i++)
    if (now_ms - r->times[i] <= c->rate_interval_ms)
      r->times[keep++] = r->times[i];
  r->ntimes = keep;
  if (r->ntimes == cap) { /* the oldest one no longer matters */
    for (size_t i = 1; i < r->ntimes; i++)
      r->times[i - 1] = r->times[i];
    r->ntimes--;
  }
  if (!(t = realloc(r->times, (r->ntimes + 1) * sizeof(*t)))) {
    v->restart = false; /* cannot count: fail rather than loop */
    snprintf(v->why, sizeof(v->why), "out of memory counting failures");
    return;
  }
  r->times = t;
  r->times[r->ntimes++] = now_ms;
  v->delay_ms = c->rate_delay_ms;
  v->restart = (int64_t)r->ntimes <= c->rate_max_failures;
  if (!v->restart)
    snprintf(v->why, sizeof(v->why),
             "the restart strategy failure-rate saw %zu failures within %"
             PRId64 " ms (restart-strategy.failure-rate."
             "max-failures-per-interval=%" PRId64 ")",
             r->ntimes, c->rate_interval_ms, c->rate_max_failures);
}

void ksnap__coord_restart_failure(coord_restart_t *r, int64_t now_ms,
                                  coord_restart_verdict_t *v) {
  v->restart = false;
  v->delay_ms = 0;
  v->why[0] = '\0';
  switch (r->conf.type) {
  case KSNAP_RESTART_EXPONENTIAL_DELAY:
    exponential(r, now_ms, v);
    v->attempt = r->attempts;
    break;
  case KSNAP_RESTART_FIXED_DELAY:
    fixed(r, v);
    v->attempt = r->attempts;
    break;
  case KSNAP_RESTART_FAILURE_RATE:
    rate(r, now_ms, v);
    v->attempt = (int64_t)r->ntimes;
    break;
  case KSNAP_RESTART_NONE:
    snprintf(v->why, sizeof(v->why),
             "the restart strategy is none (restart-strategy.type)");
    break;
  }
}
