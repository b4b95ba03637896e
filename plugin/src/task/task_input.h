/*
 * A task's input side: opening its inputs (task_input_open.c) and the
 * live loop over them (task_input.c). Threading: the task's processing
 * thread.
 */
#ifndef KSNAP_TASK_INPUT_H
#define KSNAP_TASK_INPUT_H

#include "input/aligner.h"
#include "ksnap/error.h"
#include "ksnap/records.h"

struct ksnap_task_s;

/* task_input_open.c */

/** Opens the source (source task) or the gate, aligner and exchange
 * reader, at @p meta's positions (NULL: a fresh start). */
ksnap_err_t ksnap__task_open_inputs(struct ksnap_task_s *task,
                                    const ksnap_checkpoint_meta_t *meta,
                                    ksnap_error_t *error);
void ksnap__task_close_inputs(struct ksnap_task_s *task);

/** A new gate with the task's exchange input channels (*gatep is set even
 * on error; the caller destroys it). */
ksnap_err_t ksnap__task_new_gate(struct ksnap_task_s *task,
                                 ksnap_gate_t **gatep, ksnap_error_t *error);

/** Positions of @p meta (the task's stage) naming @p gate's channels
 * (malloc'd into *posp, *np of them). */
ksnap_err_t ksnap__task_chan_positions(struct ksnap_task_s *task,
                                       ksnap_gate_t *gate,
                                       const ksnap_checkpoint_meta_t *meta,
                                       ksnap_chan_pos_t **posp, int32_t *np,
                                       ksnap_error_t *error);

/* task_input.c */

/** One poll of the inputs; @returns records handled or -1 (error set). */
int ksnap__task_poll_input(struct ksnap_task_s *task, int timeout_ms,
                           ksnap_error_t *error);

/** ABORT(@p id): the aligner releases what it blocked for @p id, then the
 * operator hears of it. */
void ksnap__task_abort(struct ksnap_task_s *task, int64_t id,
                       const char *reason);

#endif /* KSNAP_TASK_INPUT_H */
