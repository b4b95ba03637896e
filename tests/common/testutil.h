/* Helpers shared by the Check suites. */
#ifndef KSNAP_TESTUTIL_H
#define KSNAP_TESTUTIL_H

#include <check.h>
#include <stdio.h>

/** Exit code that CTest reports as "skipped" (SKIP_RETURN_CODE). */
#define KSNAP_TEST_SKIP 77

/**
 * Runs @p suite (forked, as Check does by default) and returns the process
 * exit code: 0 if every test passed, 1 otherwise.
 */
int ksnap_test_run(Suite *suite);

/**
 * @returns the value of environment variable @p name, or exits the suite
 * with KSNAP_TEST_SKIP... never: a missing server variable is a FAILURE
 * (exit 1) with a message telling how to start the servers, so a CI run
 * without servers cannot pass silently.
 */
const char *ksnap_test_require_env(const char *name);

/**
 * Exits with KSNAP_TEST_SKIP (the reason on stderr) unless the fault hooks
 * are compiled in (-DKSNAP_FAULT_INJECTION=ON, as tests/run.sh configures):
 * a suite whose tests need KSNAP_FAULT calls it first, so that without the
 * hooks it reports "skipped", never "passed". @p suite names it.
 */
void ksnap_test_require_faults(const char *suite);

/** Creates a fresh temporary directory; returns a malloc'd path. */
char *ksnap_test_tmpdir(const char *tag);

/** Reads @p fp to its end; returns a malloc'd NUL-terminated string. */
char *ksnap_test_read_all(FILE *fp);

/** @returns a TCP port of 127.0.0.1 nothing listens on now (the kernel's
 *  pick, outside any fixed range a server or a client may hold). */
int ksnap_test_free_port(void);

/** Removes @p path recursively (a test's temporary directory). */
void ksnap_test_rmtree(const char *path);

#endif /* KSNAP_TESTUTIL_H */
