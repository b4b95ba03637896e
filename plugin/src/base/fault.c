/* Test-only fault injection (fault.h): compiled only into builds with
 * KSNAP_FAULT_INJECTION=ON (plugin/CMakeLists.txt leaves it out of every
 * other build; the #error catches a build that would not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"

#if !KSNAP_FAULT_INJECTION
#error "fault.c belongs only in a build with KSNAP_FAULT_INJECTION=ON"
#endif

/* 1 if the comma-separated list in KSNAP_FAULT has @p entry. */
static int listed(const char *entry) {
  const char *s = getenv("KSNAP_FAULT");
  size_t n = strlen(entry);

  while (s && *s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && !strncmp(s, entry, n))
      return 1;
    s = end ? end + 1 : NULL;
  }
  return 0;
}

static void die(const char *entry) {
  fprintf(stderr, "ksnap: KSNAP_FAULT: crashing at %s\n", entry);
  _exit(137);
}

void ksnap__fault(const char *point) {
  if (listed(point))
    die(point);
}

void ksnap__fault_id(const char *point, int64_t id) {
  char entry[256];

  ksnap__fault(point);
  snprintf(entry, sizeof(entry), "%s@%lld", point, (long long)id);
  if (listed(entry))
    die(entry);
}

void ksnap__fault_who(const char *point, const char *who) {
  char entry[256];

  ksnap__fault(point);
  snprintf(entry, sizeof(entry), "%s:%s", point, who);
  if (listed(entry))
    die(entry);
}

int ksnap__fault_on(const char *point) { return listed(point); }

int ksnap__fault_on_id(const char *point, int64_t id) {
  char entry[256];

  snprintf(entry, sizeof(entry), "%s@%lld", point, (long long)id);
  return listed(point) || listed(entry);
}
