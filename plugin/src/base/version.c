/* ksnap/version.h is generated from version.h.in by CMake. */
#include "ksnap/version.h"

const char *ksnap_version(void) {
  return KSNAP_VERSION_STR;
}
