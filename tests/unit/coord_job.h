/* The job graph of the coordinator state machine's tests (coord_fixture.h,
 * test_coord_random.c): src (2 tasks, source:in) -> snk (1 task,
 * sink:out); tasks src[0], src[1], snk[0]. */
#ifndef KSNAP_TEST_COORD_JOB_H
#define KSNAP_TEST_COORD_JOB_H

#define COORD_TEST_JOB_PROPERTIES \
  "job.name=j\n"                  \
  "stage.src.operator=x\n"        \
  "stage.src.parallelism=2\n"     \
  "stage.src.input=source:in\n"   \
  "stage.snk.operator=y\n"        \
  "stage.snk.input=stage:src\n"   \
  "stage.snk.output=sink:out\n"

#endif /* KSNAP_TEST_COORD_JOB_H */
