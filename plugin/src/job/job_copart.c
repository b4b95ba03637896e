/*
 * Job graph: the co-partitioning rule of stages with several inputs.
 *
 * An operator of a stage that reads two or more inputs shares keyed state
 * and timers per key across them (a join keeps one side in the state and
 * looks it up from the other). That holds only if a key reaches the same
 * task whichever input brings it, and that task owns the key's key group.
 *
 * An exchange topic is always so: its writers partition every record for
 * the reading stage's parallelism by key group (ksnap/context.h), the
 * same rule for every exchange input of one stage, whatever their
 * partition counts. A source topic is partitioned by whoever produced it:
 * its partition p goes to task p mod P, which need not own the keys in
 * it, and equal partition counts with the same producer partitioner (the
 * rule of Kafka Streams) would still not match ksnap's key groups. So a
 * stage of parallelism above 1 with several inputs may read no source
 * topic: the way out is a stage of its own in front of the source (its
 * exchange topic is then partitioned by key for this stage), as Flink
 * keys both streams before connecting them. With one task every key
 * group is that task's, and any mix of inputs is co-partitioned.
 */
#include <stdio.h>
#include <string.h>

#include "job_int.h"

/* Writes "A, B, ..." (the stage's inputs as written) into @p buf. */
static void list_inputs(const ksnap_job_stage_t *stage, char *buf,
                        size_t size) {
  size_t off = 0;

  buf[0] = '\0';
  for (size_t r = 0; r < stage->nrefs && off < size; r++) {
    int n = snprintf(buf + off, size - off, "%s%s", r ? ", " : "",
                     stage->refs[r].entry);
    if (n < 0)
      break;
    off += (size_t)n;
  }
}

void ksnap__job_check_copartition(ksnap__job_build_t *b) {
  ksnap_job_t *job = b->job;
  char key[160], inputs[512];

  for (size_t i = 0; i < job->nstages; i++) {
    const ksnap_job_stage_t *stage = job->stages[i];
    const char *src = NULL;
    if (stage->nrefs < 2 || stage->parallelism <= 1)
      continue;
    for (size_t r = 0; r < stage->nrefs && !src; r++)
      if (!stage->refs[r].is_stage)
        src = stage->refs[r].entry;
    if (!src)
      continue;
    list_inputs(stage, inputs, sizeof(inputs));
    snprintf(key, sizeof(key), "stage.%s.input", stage->name);
    ksnap__job_problem(b, KSNAP_ERR_CONF_VALUE, key,
                       "the inputs of stage %s (%s) cannot be co-partitioned "
                       "by key: %s is partitioned by its producer, not by "
                       "ksnap's key groups, so a key may reach one task "
                       "from one input and another task from the other; "
                       "read %s in a stage of its own and list that stage "
                       "here, or set stage.%s.parallelism=1",
                       stage->name, inputs, src, src, stage->name);
  }
}
