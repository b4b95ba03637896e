/* SIGINT and SIGTERM stop the long-running subcommands (run, worker,
 * coordinator, dev-broker) cleanly: the handler only sets a flag, which
 * their loops poll (see cli.h). */
#include <string.h>

#include "cli.h"

volatile sig_atomic_t cli_stop_requested;

static void on_signal(int sig) {
  (void)sig;
  cli_stop_requested = 1;
}

void cli_stop_on_signals(void) {
  struct sigaction sa;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
