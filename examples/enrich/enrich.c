/*
 * Enrichment join operators (libenrich.so):
 *   keyby:  forwards each record (key, value) unchanged. A stage of it in
 *           front of each source topic repartitions the source by key for
 *           the join stage (its exchange topic is partitioned by key
 *           group), which is what makes the two inputs co-partitioned.
 *   enrich: a two-input join. Input 0 of stage.S.input is the event
 *           stream, input 1 the reference table (a compacted topic: the
 *           last value per key is the reference, a tombstone deletes it).
 *           Keyed value state "ref" holds the key's reference value; keyed
 *           list state "pending" the key's events that came before any
 *           reference. An event whose key has a reference is emitted at
 *           once as (key, "EVENT|REFERENCE"); one without waits in
 *           "pending" and is emitted when the key's reference arrives, in
 *           arrival order, then forgotten. Every event is emitted once,
 *           with the reference value the key has when it is joined (later
 *           reference updates do not re-emit it). Records without key
 *           cannot be joined: they are dropped and counted ("no_key").
 * Loaded by `stage.<name>.operator=libenrich.so:enrich` (or :keyby).
 */
#include <stdlib.h>
#include <string.h>

#include "ksnap/context.h"
#include "ksnap/operator.h"

#define INPUT_EVENTS 0
#define INPUT_REFERENCE 1

static ksnap_err_t keyby_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  (void)inst;
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, rec->value,
                        rec->value_len, NULL, 0, error);
}

static const ksnap_operator_t keyby_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "keyby",
    .process = keyby_process,
};

const ksnap_operator_t *ksnap_operator_keyby(void) { return &keyby_op; }

typedef struct enrich_s {
  int ref_id, pending_id;
} enrich_t;

static ksnap_err_t enrich_open(ksnap_operator_ctx_t *ctx, void **instp,
                               ksnap_error_t *error) {
  enrich_t *e = calloc(1, sizeof(*e));
  ksnap_state_t *state;
  ksnap_err_t err;

  if (!e)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, "ref", KSNAP_STATE_VALUE, 0,
                                  &e->ref_id, error)) ||
      (err = ksnap_state_register(state, "pending", KSNAP_STATE_LIST, 0,
                                  &e->pending_id, error))) {
    free(e);
    return err;
  }
  *instp = e;
  return KSNAP_ERR_OK;
}

/* Emits (key, "EVENT|REF"). */
static ksnap_err_t emit_joined(ksnap_operator_ctx_t *ctx,
                               const ksnap_record_t *rec, const void *event,
                               size_t elen, const void *ref, size_t rlen,
                               ksnap_error_t *error) {
  char *out = malloc(elen + 1 + rlen + 1);
  ksnap_err_t err;

  if (!out)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if (elen)
    memcpy(out, event, elen);
  out[elen] = '|';
  if (rlen)
    memcpy(out + elen + 1, ref, rlen);
  err = ksnap_ctx_emit(ctx, rec->key, rec->key_len, out, elen + 1 + rlen,
                       NULL, 0, error);
  free(out);
  return err;
}

/* A reference record: upsert (or delete) the key's reference, then join
 * the events that waited for it. */
static ksnap_err_t on_reference(ksnap_operator_ctx_t *ctx, enrich_t *e,
                                ksnap_state_t *state,
                                const ksnap_record_t *rec,
                                ksnap_error_t *error) {
  ksnap_state_list_iter_t it;
  const void *ref, *ev;
  size_t rlen, elen;
  ksnap_err_t err;

  if (!rec->value) { /* a tombstone: the key has no reference any more */
    ksnap_state_clear(state, e->ref_id);
    return KSNAP_ERR_OK;
  }
  if ((err = ksnap_state_value_put(state, e->ref_id, rec->value,
                                   rec->value_len, error)))
    return err;
  if (ksnap_state_list_get(state, e->pending_id, &it))
    return KSNAP_ERR_OK; /* nothing waited */
  /* the list is not written while iterating: emits copy what they need */
  ref = rec->value;
  rlen = rec->value_len;
  while (ksnap_state_list_next(&it, &ev, &elen))
    if ((err = emit_joined(ctx, rec, ev, elen, ref, rlen, error)))
      return err;
  ksnap_state_clear(state, e->pending_id);
  return KSNAP_ERR_OK;
}

static ksnap_err_t enrich_process(ksnap_operator_ctx_t *ctx, void *inst,
                                  const ksnap_record_t *rec,
                                  ksnap_error_t *error) {
  enrich_t *e = inst;
  ksnap_state_t *state;
  const void *ref;
  size_t rlen;
  ksnap_err_t err;

  if (!rec->key) {
    ksnap_ctx_counter_add(ctx, "no_key", 1);
    return KSNAP_ERR_OK;
  }
  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (rec->input_index == INPUT_REFERENCE)
    return on_reference(ctx, e, state, rec, error);
  if (rec->input_index != INPUT_EVENTS)
    return ksnap_error_set(error, KSNAP_ERR_OPERATOR,
                           "enrich reads two inputs (events, reference); "
                           "%s is a third one", rec->input);
  if (!ksnap_state_value_get(state, e->ref_id, &ref, &rlen))
    return emit_joined(ctx, rec, rec->value, rec->value_len, ref, rlen,
                       error);
  ksnap_ctx_counter_add(ctx, "waiting", 1);
  return ksnap_state_list_add(state, e->pending_id, rec->value,
                              rec->value_len, error);
}

static void enrich_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static const ksnap_operator_t enrich_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "enrich",
    .open = enrich_open,
    .process = enrich_process,
    .close = enrich_close,
};

const ksnap_operator_t *ksnap_operator_enrich(void) { return &enrich_op; }
