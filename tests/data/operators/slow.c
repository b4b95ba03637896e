/*
 * libksnap_test_slow.so: the word count of examples/wordcount with one
 * slow writer, for the alignment buffer limit (tests/e2e/killrun.py, case
 * buffer-limit). Deterministic: the output is the example's word count.
 *   split  wordcount's split, but task 0 sleeps KSNAP_TEST_SLOW_US
 *          microseconds (default 1000) per line, the others
 *          KSNAP_TEST_SLOW_OTHER_US (default 0): with a backlog it answers
 *          a TRIGGER only after its batch of lines, so its barriers reach
 *          the exchange partitions far behind those of task 1, whose
 *          records in between the readers must buffer. Every word's value
 *          is "1" padded with KSNAP_TEST_SLOW_PAD spaces (default 0), which
 *          count reads as 1: larger records, the same counts.
 *   count  wordcount's count of the value's leading digits, each record
 *          after a sleep of KSNAP_TEST_SLOW_COUNT_US microseconds (default
 *          0): with a backlog the readers stay far behind the barriers, so
 *          a snapshot taken on the TRIGGER leaves channel state in the log
 *          (killrun.py --slow-count).
 * wordcount.c is compiled into this module with its operators renamed
 * (tests/CMakeLists.txt), so the counting is the example's own code.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

const ksnap_operator_t *wordcount_count(void);

#define PAD_MAX 65536

static long env_long(const char *name, long dflt, long max) {
  const char *v = getenv(name);
  long n = v && *v ? strtol(v, NULL, 10) : dflt;

  return n < 0 ? 0 : n > max ? max : n;
}

/* Emits (word, padded "1") for each maximal run of letters and digits of
 * the line, lower-cased (the example's split, which these lines' words,
 * lower-case letters, do not tell apart). */
static ksnap_err_t split_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  static char value[PAD_MAX + 1];
  static size_t vlen;
  const unsigned char *p = (const unsigned char *)rec->value;
  const unsigned char *end = p + rec->value_len;
  ksnap_err_t err;

  (void)inst;
  if (!vlen) { /* "1" and the padding, once */
    vlen = 1 + (size_t)env_long("KSNAP_TEST_SLOW_PAD", 0, PAD_MAX);
    memset(value, ' ', vlen);
    value[0] = '1';
  }
  usleep((useconds_t)(ksnap_ctx_task_index(ctx) == 0
                          ? env_long("KSNAP_TEST_SLOW_US", 1000, 1000000)
                          : env_long("KSNAP_TEST_SLOW_OTHER_US", 0, 1000000)));
  while (p && p < end) {
    char word[256];
    size_t n = 0;
    while (p < end && !isalnum(*p))
      p++;
    for (; p < end && isalnum(*p); p++)
      if (n < sizeof(word))
        word[n++] = (char)tolower(*p);
    if (n && (err = ksnap_ctx_emit(ctx, word, n, value, vlen, NULL, 0,
                                   error)))
      return err;
  }
  return KSNAP_ERR_OK;
}

/* The example's count on the value's leading digits (the padding cut). */
static ksnap_err_t count_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  ksnap_record_t r = *rec;
  size_t n = 0;

  usleep((useconds_t)env_long("KSNAP_TEST_SLOW_COUNT_US", 0, 1000000));
  while (r.value && n < r.value_len && isdigit(((const unsigned char *)
                                                    r.value)[n]))
    n++;
  r.value_len = n;
  return wordcount_count()->process(ctx, inst, &r, error);
}

static ksnap_err_t count_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  return wordcount_count()->open(ctx, instp, error);
}

static void count_close(ksnap_operator_ctx_t *ctx, void *inst) {
  wordcount_count()->close(ctx, inst);
}

static const ksnap_operator_t split_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "split",
    .process = split_process,
};

static const ksnap_operator_t count_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "count",
    .open = count_open,
    .process = count_process,
    .close = count_close,
};

const ksnap_operator_t *ksnap_operator_split(void) { return &split_op; }
const ksnap_operator_t *ksnap_operator_count(void) { return &count_op; }
