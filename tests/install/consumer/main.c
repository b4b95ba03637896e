#include <stdio.h>
#include <string.h>

#include <ksnap/ksnap.h>

int main(void) {
  ksnap_conf_t *conf = ksnap_conf_new();
  char errstr[256];
  int ok = conf && ksnap_conf_set(conf, "job.name", "consumer", errstr,
                                  sizeof(errstr)) == KSNAP_ERR_OK;

  ksnap_conf_destroy(conf);
  printf("ksnap %s %s\n", ksnap_version(), ok ? "ok" : errstr);
  return ok && !strcmp(ksnap_version(), KSNAP_VERSION_STR) ? 0 : 1;
}
