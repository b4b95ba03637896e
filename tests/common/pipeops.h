/*
 * Built-in test operators of the pipeline tests (registered with
 * pt_register_operators(), process-wide):
 *   t_split  line -> (word, "1") per space-separated word
 *   t_count  keyed value state "count": word -> running count; emits
 *            (word, count)
 *   t_max    keyed value state "max": word -> largest count seen; emits
 *            (word, "word:count") (sink topics: values name the key)
 *   t_timer  a processing-time timer PT_TIMER_MS after each record, for
 *            its key; when it fires: (key, "timer:KEY")
 * And the input model: line i of the test input and its words.
 */
#ifndef KSNAP_PIPEOPS_H
#define KSNAP_PIPEOPS_H

#include <stddef.h>

#define PT_NWORDS 13
#define PT_TIMER_MS 2000

void pt_register_operators(void);

/** t_split's task of this index sleeps pt_slow_ms (default 1000) before
 * broadcasting each barrier (a slow channel downstream); -1 (default):
 * none. Set them before the tasks start. */
extern int pt_slow_task;
extern int pt_slow_ms;

/** Writes line @p i ("w3 w8 w1") into @p buf. */
void pt_line(size_t i, char *buf, size_t size);

/** Adds the word counts of line @p i to @p counts[PT_NWORDS]. */
void pt_line_count(size_t i, long long *counts);

#endif /* KSNAP_PIPEOPS_H */
