/*
 * A record scope over a task's state (state_scope.c): every write made to
 * the state while a scope is open can be undone as a whole. The task
 * runtime opens one around each record of a stage that tolerates record
 * failures (errors.tolerance=all), so that a record whose processing
 * fails leaves the state as it found it.
 *
 * Cost: without an open scope a write pays one pointer test. With one,
 * the first write to a key saves that key's old value (or its absence)
 * in an undo log kept by the state and reused from record to record;
 * operator state saves a copy of the whole list at its first write.
 *
 * Not undone: a state registered inside the scope stays registered
 * (empty, since its writes are undone). Threading: the state's processing
 * thread, as every other call on it.
 */
#ifndef KSNAP_STATE_SCOPE_H
#define KSNAP_STATE_SCOPE_H

#include "ksnap/error.h"
#include "ksnap/state.h"

/** Opens a scope (none may be open). @returns OK, STATE (one is open),
 * NOMEM. */
ksnap_err_t ksnap__state_scope_begin(ksnap_state_t *state,
                                     ksnap_error_t *error);

/** Closes the scope and keeps every write made in it. */
void ksnap__state_scope_commit(ksnap_state_t *state);

/**
 * Closes the scope and undoes every write made in it, newest first: each
 * key gets its old value and write time back, or is removed if it was
 * absent; each operator state its old list. @returns OK or NOMEM (the
 * state is then partly rolled back and the task must not go on with it).
 */
ksnap_err_t ksnap__state_scope_rollback(ksnap_state_t *state,
                                        ksnap_error_t *error);

/** @returns 1 while a scope is open. */
int ksnap__state_scope_open(const ksnap_state_t *state);

#endif /* KSNAP_STATE_SCOPE_H */
