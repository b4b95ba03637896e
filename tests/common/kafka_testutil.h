/*
 * Kafka helpers shared by the integration suites: client handles, unique
 * names, topic creation through the Admin API, reading a partition to its
 * end with a chosen isolation level, telling librdkafka's mock cluster
 * from a real broker, and running Kafka's own command-line tools.
 *
 * Every helper fails the current Check test (ck_abort_msg) on an error, so
 * callers need no error handling; call them only inside a test (or, for
 * ksnap_test_broker_is_mock(), before the suite runs).
 */
#ifndef KSNAP_KAFKA_TESTUTIL_H
#define KSNAP_KAFKA_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "testnames.h" /* ksnap_test_unique_name() */

/** Timeout for one helper's broker round trips (ms). */
#define KSNAP_TEST_KAFKA_TIMEOUT_MS 30000

/**
 * Creates a client of @p type for @p bootstrap with extra properties given
 * as a NULL-terminated list of key, value pairs (may be NULL). Consumers
 * get fetch.wait.max.ms=10 and enable.partition.eof=true unless overridden.
 */
rd_kafka_t *ksnap_test_kafka_new(rd_kafka_type_t type, const char *bootstrap,
                                 const char *const *kv);

/** Creates @p topic with @p partitions (replication 1) and waits for it. */
void ksnap_test_create_topic(const char *bootstrap, const char *topic,
                             int partitions);

/** Records read from one partition, in offset order. */
typedef struct ksnap_test_records_s {
  size_t cnt;
  char **values;    /**< NUL-terminated copies of the values ("" if NULL) */
  int64_t *offsets; /**< offset of each record */
  char **keys;      /**< NUL-terminated copies of the keys, NULL if none */
  char **headers;   /**< "name=value\n" per header, "" if none */
} ksnap_test_records_t;

/**
 * Reads @p topic / @p partition from the beginning to its end (the high
 * watermark, or the last stable offset with "read_committed") with
 * @p isolation_level "read_committed" or "read_uncommitted".
 * @returns the records; free them with ksnap_test_records_free().
 */
ksnap_test_records_t *ksnap_test_consume_all(const char *bootstrap,
                                             const char *topic, int partition,
                                             const char *isolation_level);

void ksnap_test_records_free(ksnap_test_records_t *records);

/**
 * Produces @p lines lines of words to @p topic on $KSNAP_TEST_BOOTSTRAP
 * (flushed), cycling "one two three", "four five six", "seven eight",
 * "nine ten one two": per 4 lines, "one" and "two" twice, the others once.
 */
void ksnap_test_produce_word_lines(const char *topic, int lines);

/**
 * @returns 1 if the broker at @p bootstrap is librdkafka's mock cluster
 * (detected by its cluster id, which the mock cluster names "mockCluster..."),
 * 0 if not, -1 if no cluster id could be read within the timeout.
 */
int ksnap_test_broker_is_mock(const char *bootstrap);

/**
 * Runs one of Kafka's own command-line tools from the test broker's jars
 * (the directory KSNAP_TEST_KAFKA_LIBS, written by tests/servers/kafka.sh):
 * java with every jar there on its class path runs @p main_class with
 * @p args, e.g. main_class
 * "org.apache.kafka.tools.FeatureCommand" (kafka-features.sh) and args
 * "--bootstrap-server HOST:PORT describe". Its stdout goes to a malloc'd
 * string in @p *outp, its stderr to the test's.
 * @returns its exit status (-1 if it did not exit normally).
 */
int ksnap_test_kafka_tool(const char *main_class, const char *args,
                          char **outp);

/** The read_committed counts of a word count's sink @p topic (partitions
 * 0..@p nparts-1); with @p check, fails unless each word's counts go 1,
 * 2, ... in offset order (naming a duplicate or a loss). @returns the
 * last count of @p word (0: none yet). At most 32 words. */
long ksnap_test_word_count(const char *topic, int nparts, const char *word,
                           int check);

/** Waits up to @p wait_s s for ksnap_test_word_count() of @p word to reach
 * @p want, and fails unless it is exactly @p want then. */
void ksnap_test_wait_word_count(const char *topic, int nparts,
                                const char *word, long want, int wait_s);

#endif /* KSNAP_KAFKA_TESTUTIL_H */
