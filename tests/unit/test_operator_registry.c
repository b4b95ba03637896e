/* Operators (ksnap/operator.h): loading the real test library
 * libksnap_test_identity.so (tests/data/operators/identity.c) with every
 * search-path rule and every error, and built-in registration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "testutil.h"

#define OPDIR KSNAP_BINARY_DIR "/tests/operators"
#define LIB "libksnap_test_identity.so"

static ksnap_operator_handle_t *h;
static ksnap_error_t error;

static void setup(void) {
  h = NULL;
  ksnap_error_clear(&error);
  unsetenv("KSNAP_OPERATOR_PATH");
}

static void teardown(void) { ksnap_operator_handle_destroy(h); }

static void expect_error(const char *spec, const char *dir, ksnap_err_t code,
                         const char *msg) {
  ck_assert_int_eq(ksnap_operator_resolve(spec, dir, &h, &error), code);
  ck_assert_ptr_null(h);
  ck_assert_str_eq(error.msg, msg);
}

START_TEST(load_from_job_dir_and_run) {
  const ksnap_operator_t *ops;
  ksnap_record_t rec = {0};
  void *inst = NULL;

  ck_assert_int_eq(ksnap_operator_resolve(LIB ":identity", OPDIR, &h,
                                          &error), KSNAP_ERR_OK);
  ops = ksnap_operator_handle_ops(h);
  ck_assert_str_eq(ops->name, "identity");
  ck_assert_uint_eq(ops->abi_version, KSNAP_OPERATOR_ABI_VERSION);
  ck_assert_ptr_null(ops->on_timer);
  /* the callbacks work across the library boundary */
  ck_assert_int_eq(ops->open(NULL, &inst, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ops->process(NULL, inst, &rec, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ops->process(NULL, inst, &rec, &error), KSNAP_ERR_OK);
  ops->notify_checkpoint_complete(NULL, inst, 7);
  ck_assert_int_eq(((int64_t *)inst)[0], 2); /* records */
  ck_assert_int_eq(((int64_t *)inst)[1], 7); /* last completed */
  ops->close(NULL, inst);
}
END_TEST

START_TEST(exact_symbol_when_no_prefixed_one) {
  ck_assert_int_eq(ksnap_operator_resolve(LIB ":plain_identity", OPDIR, &h,
                                          &error), KSNAP_ERR_OK);
  ck_assert_str_eq(ksnap_operator_handle_ops(h)->name, "identity");
}
END_TEST

START_TEST(load_from_operator_path) {
  setenv("KSNAP_OPERATOR_PATH", "/nonexistent::" OPDIR, 1);
  ck_assert_int_eq(ksnap_operator_resolve(LIB ":identity", "/tmp", &h,
                                          &error), KSNAP_ERR_OK);
}
END_TEST

START_TEST(load_relative_and_absolute_paths) {
  ck_assert_int_eq(ksnap_operator_resolve("operators/" LIB ":identity",
                                          KSNAP_BINARY_DIR "/tests", &h,
                                          &error), KSNAP_ERR_OK);
  ksnap_operator_handle_destroy(h);
  ck_assert_int_eq(ksnap_operator_resolve(OPDIR "/" LIB ":identity", "/tmp",
                                          &h, &error), KSNAP_ERR_OK);
}
END_TEST

#define NOFILE ": cannot open shared object file: No such file or directory"
#define SYSTEM ", then the system's library path)"

START_TEST(missing_file) {
  /* a bare name found nowhere: the loader's name, where it was searched */
  expect_error("libnope.so:split", OPDIR, KSNAP_ERR_NOT_FOUND,
               "cannot load \"libnope.so\": libnope.so" NOFILE
               " (searched " OPDIR ", KSNAP_OPERATOR_PATH (unset)" SYSTEM);
  /* not on any path: the job dir is searched first, not the cwd */
  expect_error(LIB ":identity", "/tmp", KSNAP_ERR_NOT_FOUND,
               "cannot load \"" LIB "\": " LIB NOFILE
               " (searched /tmp, KSNAP_OPERATOR_PATH (unset)" SYSTEM);
  setenv("KSNAP_OPERATOR_PATH", "/nonexistent:/nope", 1);
  expect_error(LIB ":identity", NULL, KSNAP_ERR_NOT_FOUND,
               "cannot load \"" LIB "\": " LIB NOFILE
               " (searched KSNAP_OPERATOR_PATH=/nonexistent:/nope" SYSTEM);
  /* a path: the file itself, a relative one in the job dir */
  expect_error("lib/" LIB ":identity", "/tmp", KSNAP_ERR_NOT_FOUND,
               "cannot load \"/tmp/lib/" LIB "\": /tmp/lib/" LIB NOFILE);
  expect_error("/nonexistent/" LIB ":identity", "/tmp", KSNAP_ERR_NOT_FOUND,
               "cannot load \"/nonexistent/" LIB "\": /nonexistent/" LIB
               NOFILE);
}
END_TEST

START_TEST(missing_symbol) {
  expect_error(LIB ":nope", OPDIR, KSNAP_ERR_NOT_FOUND,
               LIB " has no operator \"nope\" (no symbol "
               "ksnap_operator_nope or nope)");
}
END_TEST

START_TEST(abi_mismatch) {
  expect_error(LIB ":badabi", OPDIR, KSNAP_ERR_UNSUPPORTED,
               LIB ":badabi has operator ABI version 99, this ksnap needs 1 to 2");
}
END_TEST

START_TEST(null_and_incomplete_operators) {
  expect_error(LIB ":null", OPDIR, KSNAP_ERR_INVALID_ARG,
               LIB ":null returned no operator");
  expect_error(LIB ":noprocess", OPDIR, KSNAP_ERR_INVALID_ARG,
               LIB ":noprocess has no process callback");
}
END_TEST

START_TEST(bad_spec) {
  expect_error("libwc.so", NULL, KSNAP_ERR_INVALID_ARG,
               "invalid operator \"libwc.so\" (a library needs the "
               "operator's name: LIB.so:NAME)");
}
END_TEST

static ksnap_err_t upper_process(ksnap_operator_ctx_t *ctx, void *instance,
                                 const ksnap_record_t *record,
                                 ksnap_error_t *err) {
  (void)ctx, (void)instance, (void)record, (void)err;
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t upper = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "upper",
    .process = upper_process,
};

START_TEST(builtin_registration) {
  static const ksnap_operator_t old = {.abi_version = 0,
                                       .process = upper_process};

  expect_error("upper", NULL, KSNAP_ERR_NOT_FOUND,
               "no built-in operator \"upper\" is registered");
  ck_assert_int_eq(ksnap_operator_register("upper", &upper, &error),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_operator_resolve("upper", NULL, &h, &error),
                   KSNAP_ERR_OK);
  ck_assert_ptr_eq(ksnap_operator_handle_ops(h), &upper);
  ck_assert_int_eq(ksnap_operator_register("upper", &upper, &error),
                   KSNAP_ERR_EXISTS);
  ck_assert_str_eq(error.msg,
                   "built-in operator \"upper\" is already registered");
  ck_assert_int_eq(ksnap_operator_register("x.so", &upper, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg, "invalid built-in operator name \"x.so\" (no "
                   "':' or '/', not ending in .so)");
  ck_assert_int_eq(ksnap_operator_register("a:b", &upper, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_operator_register("old", &old, &error),
                   KSNAP_ERR_UNSUPPORTED);
  ck_assert_str_eq(error.msg,
                   "old has operator ABI version 0, this ksnap needs 1 to 2");
}
END_TEST

/* An operator built for ABI 1: the struct of that header, without the
 * finish member (what follows it in memory is not a callback). */
typedef struct abi1_operator_s {
  uint32_t abi_version;
  const char *name;
  void *open, *process, *pre_barrier, *on_timer, *complete, *aborted, *close;
} abi1_operator_t;

START_TEST(abi_1_operators_still_load) {
  static struct {
    abi1_operator_t op;
    const char *after; /* where an ABI 2 operator's finish would be */
  } v1 = {{1, "v1", NULL, NULL, NULL, NULL, NULL, NULL, NULL}, "not code"};
  const ksnap_operator_t *ops = (const ksnap_operator_t *)&v1.op;

  v1.op.process = (void *)upper_process;
  ck_assert_int_eq(ksnap_operator_register("v1", ops, &error), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_operator_resolve("v1", NULL, &h, &error),
                   KSNAP_ERR_OK);
  ck_assert_uint_eq(ksnap_operator_handle_ops(h)->abi_version, 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("operator_registry");
  TCase *tc = tcase_create("operator_registry");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, load_from_job_dir_and_run);
  tcase_add_test(tc, exact_symbol_when_no_prefixed_one);
  tcase_add_test(tc, load_from_operator_path);
  tcase_add_test(tc, load_relative_and_absolute_paths);
  tcase_add_test(tc, missing_file);
  tcase_add_test(tc, missing_symbol);
  tcase_add_test(tc, abi_mismatch);
  tcase_add_test(tc, null_and_incomplete_operators);
  tcase_add_test(tc, bad_spec);
  tcase_add_test(tc, builtin_registration);
  tcase_add_test(tc, abi_1_operators_still_load);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
