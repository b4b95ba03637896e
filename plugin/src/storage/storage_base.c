/*
 * The part of a ksnap_storage_t that every backend shares (struct
 * ksnap_storage_s, storage_int.h): destroy and accessors. The lowest file
 * of the storage: the backends call ksnap_storage_destroy() on an object
 * they failed to build, storage.c dispatches to the backends, and this
 * file calls neither.
 */
#include <stdlib.h>

#include "storage_int.h"

void ksnap_storage_destroy(ksnap_storage_t *st) {
  if (!st)
    return;
  free(st->url);
  st->ops->destroy(st);
}

const char *ksnap_storage_url(const ksnap_storage_t *st) { return st->url; }

uint64_t ksnap__storage_requests(const ksnap_storage_t *st) {
  return st->requests;
}
