/*
 * libksnap_test_identity.so: operators for test_operator_registry.c,
 * loaded for real with dlopen(). Needs only the header: it calls nothing
 * in libksnap (the test executables link libksnap statically without
 * exporting its symbols).
 *   identity        ksnap_operator_identity: counts records, emits nothing
 *                   (emit comes with the task runtime)
 *   plain_identity  the same operator under a symbol without the prefix
 *   badabi          ABI version 99
 *   noprocess       no process callback
 *   null            returns NULL
 */
#include <stdlib.h>

#include "ksnap/operator.h"

typedef struct counter_s {
  int64_t records, checkpoints;
} counter_t;

static ksnap_err_t id_open(ksnap_operator_ctx_t *ctx, void **instancep,
                           ksnap_error_t *error) {
  (void)ctx, (void)error; /* ksnap_error_set() would need libksnap */
  *instancep = calloc(1, sizeof(counter_t));
  return *instancep ? KSNAP_ERR_OK : KSNAP_ERR_NOMEM;
}

static ksnap_err_t id_process(ksnap_operator_ctx_t *ctx, void *instance,
                              const ksnap_record_t *record,
                              ksnap_error_t *error) {
  (void)ctx, (void)record, (void)error;
  ((counter_t *)instance)->records++;
  return KSNAP_ERR_OK;
}

static void id_complete(ksnap_operator_ctx_t *ctx, void *instance,
                        int64_t checkpoint_id) {
  (void)ctx;
  ((counter_t *)instance)->checkpoints = checkpoint_id;
}

static void id_close(ksnap_operator_ctx_t *ctx, void *instance) {
  (void)ctx;
  free(instance);
}

static const ksnap_operator_t identity = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "identity",
    .open = id_open,
    .process = id_process,
    .notify_checkpoint_complete = id_complete,
    .close = id_close,
};

static const ksnap_operator_t badabi = {
    .abi_version = 99, .name = "badabi", .process = id_process};

static const ksnap_operator_t noprocess = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION, .name = "noprocess"};

const ksnap_operator_t *ksnap_operator_identity(void) { return &identity; }
const ksnap_operator_t *plain_identity(void) { return &identity; }
const ksnap_operator_t *ksnap_operator_badabi(void) { return &badabi; }
const ksnap_operator_t *ksnap_operator_noprocess(void) { return &noprocess; }
const ksnap_operator_t *ksnap_operator_null(void) { return NULL; }
