/* `ksnap verify` on examples/wordcount/wordcount.properties, the example
 * file itself, pointed at the test servers through the environment
 * variables it reads (KAFKA_BOOTSTRAP, S3_*, AWS_*); for the suites
 * tests/integration/test_cli_verify*.c. */
#ifndef KSNAP_VERIFYTEST_H
#define KSNAP_VERIFYTEST_H

/**
 * Runs `ksnap verify --input IN --seed SEED [OPTS] wordcount.properties`
 * with 2000 generated lines over 8 s, checkpoints every second and
 * heartbeats timing out after 2 s, with KSNAP_FAULT=@p fault in its
 * environment unless NULL. Collects stdout and stderr (malloc'd).
 * @returns verify's exit status.
 */
int ksnap_test_verify(int seed, const char *opts, const char *fault,
                      char **outp, char **errp);

/** @returns how many times @p needle occurs in @p s. */
int ksnap_test_count(const char *s, const char *needle);

#endif /* KSNAP_VERIFYTEST_H */
