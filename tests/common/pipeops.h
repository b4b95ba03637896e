/*
 * Built-in test operators of the pipeline tests (registered with
 * pt_register_operators(), process-wide):
 *   t_split  line -> (word, "1") per space-separated word
 *   t_count  keyed value state "count": word -> running count; emits
 *            (word, count)
 *   t_max    keyed value state "max": word -> largest count seen; emits
 *            (word, "word:count") (sink topics: values name the key)
 * And the input model: line i of the test input and its words.
 */
#ifndef KSNAP_PIPEOPS_H
#define KSNAP_PIPEOPS_H

#include <stddef.h>

#define PT_NWORDS 13

void pt_register_operators(void);

/** t_split's task of this index sleeps 1 s before broadcasting each
 * barrier (a slow channel downstream); -1 (default): none. Set it before
 * the tasks start. */
extern int pt_slow_task;

/** Writes line @p i ("w3 w8 w1") into @p buf. */
void pt_line(size_t i, char *buf, size_t size);

/** Adds the word counts of line @p i to @p counts[PT_NWORDS]. */
void pt_line_count(size_t i, long long *counts);

#endif /* KSNAP_PIPEOPS_H */
