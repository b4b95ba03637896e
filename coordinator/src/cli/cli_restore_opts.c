/* The options that start a job from a savepoint, shared by `ksnap run`
 * and `ksnap coordinator` (cli.h): each sets its configuration key, so
 * the coordinator reads them as if the job file had them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_restore_opt(int argc, char **argv, int *i, cli_restore_opts_t *o) {
  if (!strcmp(argv[*i], "--allow-non-restored-state")) {
    o->allow_non_restored = 1;
    return 1;
  }
  if (strcmp(argv[*i], "--from-savepoint"))
    return 0;
  if (*i + 1 >= argc || !argv[*i + 1][0]) {
    fprintf(stderr, "ksnap: --from-savepoint needs the savepoint's URL\n");
    return -1;
  }
  o->from = argv[++*i];
  return 1;
}

int cli_restore_apply(const cli_restore_opts_t *o, ksnap_conf_t *conf) {
  char errstr[512];

  if (o->allow_non_restored && !o->from) {
    fprintf(stderr, "ksnap: --allow-non-restored-state needs "
                    "--from-savepoint URL\n");
    return KSNAP_EXIT_USAGE;
  }
  if ((o->from && ksnap_conf_set(conf, "execution.savepoint.path", o->from,
                                 errstr, sizeof(errstr))) ||
      (o->allow_non_restored &&
       ksnap_conf_set(conf, "execution.savepoint.ignore-unclaimed-state",
                      "true", errstr, sizeof(errstr)))) {
    fprintf(stderr, "ksnap: --from-savepoint %s: %s\n", o->from, errstr);
    return KSNAP_EXIT_FAIL;
  }
  return KSNAP_EXIT_OK;
}
