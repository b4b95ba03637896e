/* SIGINT and SIGTERM stop the long-running subcommands (run, worker,
 * coordinator, dev-broker, verify) cleanly: the handler sets a flag,
 * which their loops poll, and stops the registered run with
 * ksnap_run_stop(), which is async-signal-safe (see cli.h). */
#include <string.h>

#include "cli.h"

volatile sig_atomic_t cli_stop_requested;
static ksnap_run_t *volatile signal_run;

static void on_signal(int sig) {
  ksnap_run_t *run = signal_run;

  (void)sig;
  cli_stop_requested = 1;
  if (run)
    ksnap_run_stop(run);
}

void cli_stop_on_signals(void) {
  struct sigaction sa;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

void cli_stop_run_on_signals(ksnap_run_t *run) {
  signal_run = run;
  if (run && cli_stop_requested) /* a signal before the run existed */
    ksnap_run_stop(run);
}
