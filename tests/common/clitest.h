/* Running the built `ksnap` binary from a Check suite. */
#ifndef KSNAP_CLITEST_H
#define KSNAP_CLITEST_H

#define KSNAP_TEST_BIN KSNAP_BINARY_DIR "/bin/ksnap"

/**
 * Runs `env ENV ksnap ARGS` (@p env: "VAR=value ..." or ""), collecting
 * stdout and stderr apart into malloc'd strings. Fails the test if the
 * binary does not exit normally. @returns its exit code.
 */
int ksnap_test_cli(const char *env, const char *args, char **outp,
                   char **errp);

#endif /* KSNAP_CLITEST_H */
