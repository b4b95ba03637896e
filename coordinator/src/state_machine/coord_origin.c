/*
 * The restore point from outside the job's history (coord_origin.h).
 *
 * Normally the job restores from its latest completed checkpoint. A job
 * started from a savepoint (or a chosen retained checkpoint) restores
 * from that point instead, in every restore, until one of its own
 * checkpoints completes; that checkpoint's parent is the point. The
 * RESTORE record names the point's URL, so a restarted coordinator that
 * replays it knows again where the job came from (coord_setup.c) and,
 * after a newer COMPLETE, that it no longer matters.
 */
#include "coord_origin.h"

#include <stdlib.h>
#include <string.h>

#include "coord_sm.h"

struct coord_origin_s {
  int64_t id;
  char *url; /* NULL: no origin */
};

coord_origin_t *ksnap__coord_origin_new(void) {
  coord_origin_t *o = calloc(1, sizeof(*o));

  if (o)
    o->id = KSNAP_CHECKPOINT_NONE;
  return o;
}

void ksnap__coord_origin_destroy(coord_origin_t *o) {
  if (!o)
    return;
  free(o->url);
  free(o);
}

ksnap_err_t ksnap__coord_origin_set(coord_origin_t *o, int64_t id,
                                    const char *url) {
  char *copy = strdup(url);

  if (!copy)
    return KSNAP_ERR_NOMEM;
  free(o->url);
  o->url = copy;
  o->id = id;
  return KSNAP_ERR_OK;
}

void ksnap__coord_origin_clear(coord_origin_t *o) {
  free(o->url);
  o->url = NULL;
  o->id = KSNAP_CHECKPOINT_NONE;
}

const char *ksnap__coord_origin_get(const coord_origin_t *o, int64_t *idp) {
  if (o->url)
    *idp = o->id;
  return o->url;
}
