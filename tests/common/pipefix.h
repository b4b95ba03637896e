/*
 * The fixture of the pipeline tests (tests/integration/test_pipeline*.c):
 * a 3-stage job on the real broker, source stage src (t_split, P=2, a
 * source topic of PF_NSRC_PARTS partitions) -> mid (t_count, P=3) -> fin
 * (t_max, P=2) -> a sink topic of 2 partitions; the input model (line i
 * goes to partition i mod PF_NSRC_PARTS) and checks of the snapshot
 * state against it.
 */
#ifndef KSNAP_PIPEFIX_H
#define KSNAP_PIPEFIX_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/records.h"
#include "ksnap/state.h"
#include "ksnap/storage.h"
#include "task/worker.h"

#define T_MS 60000
#define NSRC_PARTS 4
#define NLINES 400

typedef struct pf_fixture_s {
  char *job, *src, *out, *dir, url[600];
  ksnap_conf_t *conf;
  ksnap_storage_t *st; /* NULL for an s3:// url */
} pf_fixture_t;

const char *pf_bs(void);
/** The job with checkpoints at @p url (NULL: a temporary directory;
 * s3:// urls take the KSNAP_TEST_S3_* credentials). */
void pf_setup_url(pf_fixture_t *f, const char *url);
void pf_setup(pf_fixture_t *f);
void pf_teardown(pf_fixture_t *f);
/** Produces lines [from, to): line i to partition i mod NSRC_PARTS. */
void pf_produce_lines(pf_fixture_t *f, size_t from, size_t to);
/** Word counts of the first @p nlines lines before the src ACKs' offsets. */
void pf_model_n(const ksnap_ack_record_t *const *acks, size_t n,
                size_t nlines, long long *counts);
void pf_model(const ksnap_ack_record_t *const *acks, size_t n,
              long long *counts);
/** Decodes @p stage's snapshot files (from the ACKs) and compares state
 * @p state (word -> decimal) with @p expect. */
void pf_check_state(pf_fixture_t *f, const ksnap_ack_record_t *const *acks,
                    size_t n, const char *stage, const char *state,
                    const long long *expect);
/** The counts of state @p state in @p stage's snapshot files. */
void pf_state_counts(pf_fixture_t *f, const ksnap_ack_record_t *const *acks,
                     size_t n, const char *stage, const char *state,
                     long long *counts);
/** Records written by the fin tasks. */
int64_t pf_fin_out(ksnap_worker_t *w);
/** Waits until every task of @p w runs (ticking heartbeats). */
void pf_wait_running(ksnap_worker_t *w);

#endif /* KSNAP_PIPEFIX_H */
