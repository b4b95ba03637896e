/*
 * kafka.* properties: validated by librdkafka itself on a scratch
 * rd_kafka_conf_t, so its own error text is the one users read.
 *
 * An inversion of the layering: the configuration module (plugin/src/conf)
 * declares this interface in conf/conf_kafka.h and calls it, and the Kafka
 * wrapper implements it here, so that conf includes no librdkafka header.
 * Nothing else of the wrapper is used by conf.
 */
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_kafka.h"

struct ksnap__conf_kafka_s {
  rd_kafka_conf_t *scratch;
};

ksnap__conf_kafka_t *ksnap__conf_kafka_new(void) {
  ksnap__conf_kafka_t *kc = calloc(1, sizeof(*kc));

  if (kc && !(kc->scratch = rd_kafka_conf_new())) {
    free(kc);
    return NULL;
  }
  return kc;
}

void ksnap__conf_kafka_destroy(ksnap__conf_kafka_t *kc) {
  if (!kc)
    return;
  rd_kafka_conf_destroy(kc->scratch);
  free(kc);
}

int ksnap__conf_kafka_check(ksnap__conf_kafka_t *kc, const char *name,
                            const char *value, char *errstr,
                            size_t errstr_size) {
  size_t n;

  if (rd_kafka_conf_set(kc->scratch, name, value, errstr, errstr_size) ==
      RD_KAFKA_CONF_OK)
    return 0;
  /* librdkafka's messages may end with a newline: one line per error. */
  n = strlen(errstr);
  while (n > 0 && (errstr[n - 1] == '\n' || errstr[n - 1] == '\r'))
    errstr[--n] = '\0';
  return -1;
}

int ksnap__conf_kafka_known(ksnap__conf_kafka_t *kc, const char *name) {
  /* rd_kafka_conf_get() says UNKNOWN for some unset properties: ask a
   * throwaway configuration to set it instead (error path only). */
  rd_kafka_conf_t *tmp = rd_kafka_conf_new();
  char errstr[256];
  int known;

  (void)kc;
  known = rd_kafka_conf_set(tmp, name, "", errstr, sizeof(errstr)) !=
          RD_KAFKA_CONF_UNKNOWN;
  rd_kafka_conf_destroy(tmp);
  return known;
}
