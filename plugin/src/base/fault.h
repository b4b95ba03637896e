/*
 * Fault injection for tests (crash points and switches), compiled in only
 * by a build configured with -DKSNAP_FAULT_INJECTION=ON (tests/run.sh does;
 * the option is OFF unless asked for). In every other build the hooks
 * below are constant "no fault" macros: KSNAP_FAULT is never read, the
 * point names are not in the binary, fault.c is not compiled, and no
 * environment variable can crash a process or switch a safety rule off.
 *
 * With the hooks compiled in: off unless the environment variable
 * KSNAP_FAULT names a point; then the process _exit(137)s there (like
 * kill -9: no cleanup, no flush, nothing committed). KSNAP_FAULT is a
 * comma-separated list; an entry "point@N" fires only for id N (e.g.
 * KSNAP_FAULT=sink.before-commit@2: the sink task process dies on
 * COMPLETE(2) before committing its transaction), an entry "point:WHO"
 * only in task WHO (e.g. sink.before-commit:count[0]). tests/e2e and
 * tests/integration/test_sink_repair.c use them.
 *
 * Points:
 *   sink.before-commit   a sink task received COMPLETE(N) (the decision)
 *                        and has not committed its transactions yet
 *   coord.before-complete the coordinator wrote chk-N/_metadata and has
 *                        not written COMPLETE(N) yet
 *   coord.after-stop-trigger the coordinator wrote the TRIGGER of a
 *                        stop-with-savepoint (test_stop)
 *   coord.before-job-stopped a stop-with-savepoint completed and every
 *                        sink committed it (or the wait ended); the
 *                        coordinator has not written JOB_STOPPED yet
 *                        (test_stop)
 *   coord.before-job-finished a bounded job's final checkpoint completed
 *                        and every sink committed it; the coordinator
 *                        has not written JOB_FINISHED yet (finishrun.py)
 *   coord.savepoint-copy the coordinator's storage worker copied a
 *                        savepoint's first task file into its directory,
 *                        not the others nor its _metadata (killrun.py
 *                        --case savepoint)
 *   sink.after-commit   a sink task committed transaction N (with its
 *                        progress record) and has not committed the next
 *                        pending one (several pending after an ABORT)
 *   sink.skip-repair     not a crash: ksnap__fault_on() makes the sink
 *                        skip its commit repair on restore (tests prove
 *                        with it that the repair test can fail)
 *   task.slow-restore    not a crash: ksnap__fault_on() makes every
 *                        restore of a task (on a RESTORE or ASSIGN) take
 *                        5 s longer (killrun.py --case slow-restore: a
 *                        restore slower than heartbeat.timeout)
 *   sink.slow-flush      not a crash: ksnap__fault_on_id() bounds a
 *                        sink task's flush at barrier N (every barrier,
 *                        or those of the "@N" entries) by 0 ms instead
 *                        of the checkpoint timeout, so that under load
 *                        it times out (test_cli_run: such a checkpoint
 *                        is declined, the job goes on)
 *
 * Threading: any thread; the variable is read on every call (cheap; the
 * points are on rare paths: commits and restores).
 */
#ifndef KSNAP_FAULT_H
#define KSNAP_FAULT_H

#include <stdint.h>

/* 0 or 1, set by CMake for libksnap and everything that includes its
 * internal headers (ksnap_internal), so that no file can disagree. */
#ifndef KSNAP_FAULT_INJECTION
#error "KSNAP_FAULT_INJECTION is not defined (CMake defines it as 0 or 1)"
#endif

#if KSNAP_FAULT_INJECTION

/** _exit(137)s if KSNAP_FAULT lists @p point; no-op otherwise. */
void ksnap__fault(const char *point);

/** As ksnap__fault(), also for an entry "point@id" with this @p id. */
void ksnap__fault_id(const char *point, int64_t id);

/** As ksnap__fault(), also for an entry "point:who" with this @p who. */
void ksnap__fault_who(const char *point, const char *who);

/** @returns 1 if KSNAP_FAULT lists @p point (a switch, not a crash). */
int ksnap__fault_on(const char *point);

/** As ksnap__fault_on(), also for an entry "point@id" with this @p id. */
int ksnap__fault_on_id(const char *point, int64_t id);

#else

/* Macros, not inline functions: a point name under sizeof is never
 * emitted, even at -O0, and `if (ksnap__fault_on(...))` is `if (0)`.
 * The other arguments are evaluated (void) so that a variable used only
 * by a hook is still used. */
#define ksnap__fault(point) ((void)sizeof(point))
#define ksnap__fault_id(point, id) ((void)sizeof(point), (void)(id))
#define ksnap__fault_who(point, who) ((void)sizeof(point), (void)(who))
#define ksnap__fault_on(point) ((void)sizeof(point), 0)
#define ksnap__fault_on_id(point, id) ((void)sizeof(point), (void)(id), 0)

#endif /* KSNAP_FAULT_INJECTION */

#endif /* KSNAP_FAULT_H */
