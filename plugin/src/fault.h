/*
 * Fault injection for the crash tests (tests/e2e/). Internal; a no-op
 * unless the environment variable KSNAP_FAULT is set, which no normal run
 * does.
 *
 *   KSNAP_FAULT=POINT[:WHO]
 *
 * ksnap__fault(POINT, WHO) ends the whole process with _exit(137) (what a
 * kill -9 looks like to a parent's wait status, 128 + 9) when the variable
 * names that POINT and, if the variable has a ":WHO" part, that WHO too
 * (e.g. a task id "count[1]"). Nothing is flushed: no producer, no log
 * buffer, no storage upload gets to finish, as in a real crash.
 *
 * Points (each named where it is placed):
 *   crash-after-complete-before-commit:TASK  a sink task got COMPLETE(N)
 *       and has not committed its pending transactions (task_commit.c)
 *   crash-after-metadata-before-complete     the coordinator wrote
 *       chk-N/_metadata and has not written COMPLETE(N) (coord_drv_act.c)
 *
 * The variable is read on every call (getenv is cheap next to a commit or
 * a control record and these points run once per checkpoint).
 */
#ifndef KSNAP_FAULT_H
#define KSNAP_FAULT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void ksnap__fault(const char *point, const char *who) {
  const char *spec = getenv("KSNAP_FAULT");
  size_t n;

  if (!spec || !*spec)
    return;
  n = strlen(point);
  if (strncmp(spec, point, n) != 0)
    return;
  if (spec[n] == ':') {
    if (!who || strcmp(spec + n + 1, who) != 0)
      return;
  } else if (spec[n] != '\0') {
    return;
  }
  fprintf(stderr, "KSNAP_FAULT: crashing at %s%s%s (pid %d)\n", point,
          who ? " in " : "", who ? who : "", (int)getpid());
  _exit(137);
}

#endif
