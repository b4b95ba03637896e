/*
 * The fixture of the aligner suites (test_aligner.c, test_align_wait.c):
 * a gate of partitions x[p] written by up[0], up[1] (x[0]: channels 0, 1;
 * x[1]: 2, 3), an aligner in generation 1, and the drained actions as a
 * trace:
 *   P c@o  PROCESS      S c@o:VERDICT  SKIP     C c@o  CONSUMED
 *   B c@o  BUFFER       D c@o  DROP    PAUSE p / RESUME p    SEEK p@o
 *   SNAP n[u][r] c:off:passed[f] ...   ABORT n (reason)    FWD n
 * (u: unaligned; r: a savepoint that waited and re-reads).
 */
#ifndef KSNAP_TEST_ALIGNTEST_H
#define KSNAP_TEST_ALIGNTEST_H

#include "input/aligner.h"

extern ksnap_gate_t *gate;
extern ksnap_accept_t acc;
extern ksnap_aligner_t *al;
extern ksnap_aligner_conf_t conf;
extern ksnap_error_t err;
extern int nfreed; /* records handed to conf.free_rec */

/** A new gate of @p nparts partitions (into gate). */
void make_gate(int nparts);
/** make_gate(), a fresh start in generation 1 and an aligner in @p mode. */
void start(ksnap_align_mode_t mode, int nparts);
/** A new aligner after changing conf or acc. */
void restart(void);
/** The fixture's teardown: destroys the aligner and the gate. */
void teardown(void);
/** Drains the actions into a trace; @returns it (static). */
const char *drain(void);
/** Pushes a record of 10 bytes at @p off on channel @p c. */
ksnap_err_t push(int32_t c, int64_t off, int64_t gen, ksnap_rec_kind_t kind,
                 int64_t id, int64_t now);

#define DATA(c, off) ck_assert_int_eq(push(c, off, 1, KSNAP_REC_DATA, 0, 0), 0)
#define BAR(c, off, id) \
  ck_assert_int_eq(push(c, off, 1, KSNAP_REC_BARRIER, id, 0), 0)
#define BAR_AT(c, off, id, now) \
  ck_assert_int_eq(push(c, off, 1, KSNAP_REC_BARRIER, id, now), 0)
#define CANCEL(c, off, id) \
  ck_assert_int_eq(push(c, off, 1, KSNAP_REC_CANCEL, id, 0), 0)
#define END(c, off) ck_assert_int_eq(push(c, off, 1, KSNAP_REC_END, 0, 0), 0)
#define EXPECT(s) ck_assert_str_eq(drain(), s)

#endif /* KSNAP_TEST_ALIGNTEST_H */
