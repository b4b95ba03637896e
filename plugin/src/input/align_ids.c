/*
 * The ids above the aligner's last_started (see aligner_int.h): the
 * checkpoints aborted here before their first barrier came, whose later
 * barriers are ignored, and the TRIGGERs that wait for a snapshot (T12,
 * T13 in aligner.c). Both sets only hold ids above last_started: raising
 * it forgets the rest.
 *
 * Threading: the aligner's, i.e. the task's processing thread.
 */
#include "aligner_int.h"

#include <stdlib.h>
#include <string.h>

/* Doubles an array of *cap elements of @p size (4 at first): returns the
 * new array, *cap updated; out of memory, sets al->nomem and returns
 * @p arr, *cap kept (the array is still full). */
static void *grow(ksnap_aligner_t *al, void *arr, size_t *cap, size_t size) {
  size_t ncap = *cap ? *cap * 2 : 4;
  void *bigger = realloc(arr, ncap * size);

  if (!bigger) {
    al->nomem = 1;
    return arr;
  }
  *cap = ncap;
  return bigger;
}

int ksnap__align_is_aborted(const ksnap_aligner_t *al, int64_t id) {
  for (size_t i = 0; i < al->naborted; i++)
    if (al->aborted[i] == id)
      return 1;
  return 0;
}

void ksnap__align_add_aborted(ksnap_aligner_t *al, int64_t id) {
  if (id <= al->last_started || ksnap__align_is_aborted(al, id))
    return;
  if (al->naborted == al->capaborted)
    al->aborted = grow(al, al->aborted, &al->capaborted, sizeof(*al->aborted));
  if (al->naborted == al->capaborted)
    return; /* out of memory */
  al->aborted[al->naborted++] = id;
}

void ksnap__align_set_last_started(ksnap_aligner_t *al, int64_t id) {
  size_t keep = 0;

  al->last_started = id;
  for (size_t i = 0; i < al->naborted; i++)
    if (al->aborted[i] > id)
      al->aborted[keep++] = al->aborted[i];
  al->naborted = keep;
  keep = 0;
  for (size_t i = 0; i < al->ntrig; i++)
    if (al->trig[i].id > id)
      al->trig[keep++] = al->trig[i];
  al->ntrig = keep;
}

void ksnap__align_add_trigger(ksnap_aligner_t *al, int64_t id, int64_t ts,
                              int must_align) {
  size_t i;

  if (id <= al->last_started)
    return;
  for (i = 0; i < al->ntrig; i++)
    if (al->trig[i].id >= id)
      break;
  if (i < al->ntrig && al->trig[i].id == id)
    return;
  if (al->ntrig == al->captrig)
    al->trig = grow(al, al->trig, &al->captrig, sizeof(*al->trig));
  if (al->ntrig == al->captrig)
    return; /* out of memory */
  memmove(&al->trig[i + 1], &al->trig[i], (al->ntrig - i) * sizeof(*al->trig));
  al->trig[i] = (trig_t){id, ts, must_align};
  al->ntrig++;
}