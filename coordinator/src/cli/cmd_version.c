/* `ksnap version`: the library versions come from their wrappers, the
 * only folders that include the libraries' headers. */
#include "base/fault.h"
#include "cli.h"
#include "kafka/kafka_version.h"
#include "ksnap/ksnap.h"
#include "storage/storage_version.h"

int cmd_version(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("Usage: ksnap version\n\n"
           "Prints the versions of ksnap, librdkafka and libcurl, and\n"
           "says so when this is a test build with fault injection.\n");
    return KSNAP_EXIT_OK;
  }
  if (argc > 1) {
    fprintf(stderr, "ksnap version: unexpected argument \"%s\"\n", argv[1]);
    return KSNAP_EXIT_USAGE;
  }
  printf("ksnap %s\n", ksnap_version());
  printf("librdkafka %s\n", ksnap__kafka_lib_version());
  printf("libcurl %s\n", ksnap__storage_curl_version());
  /* A release build prints nothing here; tests/e2e/killrun.py reads this
   * line to skip the cases that need the hooks. */
  if (KSNAP_FAULT_INJECTION)
    printf("fault injection: compiled in (test build)\n");
  return KSNAP_EXIT_OK;
}
