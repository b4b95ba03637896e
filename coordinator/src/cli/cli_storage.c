/* Storage options shared by the subcommands that read checkpoint storage. */
#include <string.h>

#include "cli.h"

int cli_storage_option(int argc, char **argv, int *ip,
                       ksnap_storage_opts_t *opts) {
  int i = *ip;

  if (!strcmp(argv[i], "--endpoint") && i + 1 < argc)
    opts->endpoint = argv[++i];
  else if (!strcmp(argv[i], "--region") && i + 1 < argc)
    opts->region = argv[++i];
  else if (!strcmp(argv[i], "--path-style"))
    opts->path_style = 1;
  else if (!strcmp(argv[i], "--virtual-host"))
    opts->path_style = 0;
  else
    return 0;
  *ip = i;
  return 1;
}
