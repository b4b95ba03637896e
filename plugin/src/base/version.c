#include "ksnap/ksnap.h"

const char *ksnap_version(void) {
  return KSNAP_VERSION_STR;
}
