/* Output helpers of `ksnap run` (cmd_run_out.c). */
#ifndef KSNAP_CMD_RUN_H
#define KSNAP_CMD_RUN_H

#include "ksnap/conf.h"
#include "ksnap/job.h"
#include "ksnap/run.h"

/**
 * Prints every sink topic of @p job, read to its end with read_committed,
 * as "TOPIC KEY VALUE" lines on stdout: the last value per key, sorted by
 * key. @returns 0, or -1 (the reason printed on stderr).
 */
int cli_run_print_sinks(const ksnap_conf_t *conf, const ksnap_job_t *job,
                        int timeout_ms);

/** The progress line on a terminal (@p tty), else one plain log line. */
void cli_run_progress(const ksnap_run_stats_t *st, int tty);

#endif /* KSNAP_CMD_RUN_H */
