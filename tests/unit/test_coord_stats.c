/* Checkpoint statistics (coordinator/src/stats/coord_stats.h): bookkeeping, history,
 * summary, and the exact JSON, table, detail and Prometheus renderings;
 * plus the statistics the coordinator state machine records. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_machine/coord_sm.h"
#include "stats/coord_stats.h"
#include "ksnap/ksnap.h"
#include "testutil.h"

/* 2025-11-29 09:40:07.123 UTC */
#define T0 INT64_C(1764409207123)

static const char *const tasks[] = {"split[0]", "count[0]"};
static const ksnap_timings_t t1 = {120, 35000, 0, 1500, 0};
static const ksnap_timings_t t2 = {80, 20000, 4200, 9000, 2048};
static const ksnap_record_errors_t e1 = {3, 2}, e2 = {1, 0}, e3 = {4, 3},
                                   e0 = {0, 0};
/* count[0] switched to unaligned on the buffer limit in checkpoint 1 */
static const ksnap_align_stats_t a2 = {3, 1500};
static ksnap_coord_stats_t *st;
static ksnap_buf_t buf;

static void setup(void) {
  st = ksnap_coord_stats_new(10);
  ck_assert_ptr_nonnull(st);
  ksnap_buf_init(&buf);
}

static void teardown(void) {
  ksnap_buf_cleanup(&buf);
  ksnap_coord_stats_destroy(st);
}

/* 1 completed (two tasks), savepoint 2 failed after one ACK, a restore,
 * 3 in progress. */
static void scenario(void) {
  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 1, T0, false, tasks, 2),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap_coord_stats_acked(st, 1, "split[0]", T0 + 40, &t1, 1000, &e1),
      KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap_coord_stats_acked(st, 1, "count[0]", T0 + 60, &t2, 5000000,
                              &e2),
      KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_aligned(st, 1, "count[0]", &a2),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_aligned(st, 1, "nope[0]", &a2),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_coord_stats_completed(st, 1, T0 + 75),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap_coord_stats_triggered(st, 2, T0 + 10000, true, tasks, 2),
      KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap_coord_stats_acked(st, 2, "split[0]", T0 + 10030, &t1, 1000,
                              &e3),
      KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap_coord_stats_failed(st, 2, T0 + 20000,
                               "declined by task count[0]: \"disk\" full"),
      KSNAP_ERR_OK);
  ksnap_coord_stats_restored(st, 1, 1, T0 + 21000);
  ck_assert_int_eq(
      ksnap_coord_stats_triggered(st, 3, T0 + 30000, false, tasks, 2),
      KSNAP_ERR_OK);
}

static const char *const expected_json =
    "{\"counts\": {\"triggered\": 3, \"in_progress\": 1, \"completed\": 1,"
    " \"failed\": 1, \"restored\": 1, \"unaligned_timeout\": 0, \"unalign"
    "ed_buffer_limit\": 1}, \"summary\": {\"end_to_end_duration_ms\": {"
    "\"min\": 75, \"avg\": 75, \"max\": 75}, \"state_size\": {\"min\": 50010"
    "00, \"avg\": 5001000, \"max\": 5001000}, \"bytes_buffered\": {\"min\""
    ": 2048, \"avg\": 2048, \"max\": 2048}}, \"latest\": {\"completed\": 1"
    ", \"failed\": 2, \"restored\": {\"generation\": 1, \"id\": 1, \"timest"
    "amp_ms\": 1764409228123}, \"records_failed\": 4, \"records_dead_l"
    "ettered\": 2, \"finished\": null}, \"tasks\": [], \"history\": [{\"id\""
    ": 3, \"status\": \"I"
    "N_PROGRESS\", \"is_savepoint\": false, \"trigger_timestamp_ms\": 1"
    "764409237123, \"end_timestamp_ms\": null, \"end_to_end_duration_"
    "ms\": null, \"state_size\": 0, \"bytes_buffered\": 0, \"records_fai"
    "led\": 0, \"records_dead_lettered\": 0, \"num_acknowledged_tasks\""
    ": 0, \"num_tasks\": 2, \"max_paused_us\": 0, \"num_unaligned_tasks"
    "\": 0, \"num_reread_tasks\": 0, \"bytes_reread\": 0, \"unaligned_re"
    "ason\": null, \"failure_message\": null, \"tasks\": [{\"task\": \"spl"
    "it[0]\", \"acknowledged\": false}, {\"task\": \"count[0]\", \"acknowl"
    "edged\": false}]}, {\"id\": 2, \"status\": \"FAILED\", \"is_savepoint"
    "\": true, \"trigger_timestamp_ms\": 1764409217123, \"end_timestam"
    "p_ms\": 1764409227123, \"end_to_end_duration_ms\": 10000, \"state"
    "_size\": 1000, \"bytes_buffered\": 0, \"records_failed\": 4, \"reco"
    "rds_dead_lettered\": 3, \"num_acknowledged_tasks\": 1, \"num_task"
    "s\": 2, \"max_paused_us\": 0, \"num_unaligned_tasks\": 0, \"num_rer"
    "ead_tasks\": 0, \"bytes_reread\": 0, \"unaligned_reason\": null, \""
    "failure_message\": \"declined by task count[0]: \\\"disk\\\" full\","
    " \"tasks\": [{\"task\": \"split[0]\", \"acknowledged\": true, \"ack_ti"
    "mestamp_ms\": 1764409217153, \"end_to_end_duration_ms\": 30, \"sy"
    "nc_duration_us\": 120, \"async_duration_us\": 35000, \"alignment_"
    "duration_us\": 0, \"start_delay_us\": 1500, \"state_size\": 1000, "
    "\"bytes_buffered\": 0, \"records_failed\": 4, \"records_dead_lette"
    "red\": 3, \"paused_us\": 0, \"unaligned_reason\": null, \"reread\": "
    "null}, {\"task\": \"count[0]\", \"acknowledged\": false}]}, {\"id\": "
    "1, \"status\": \"COMPLETED\", \"is_savepoint\": false, \"trigger_tim"
    "estamp_ms\": 1764409207123, \"end_timestamp_ms\": 1764409207198,"
    " \"end_to_end_duration_ms\": 75, \"state_size\": 5001000, \"bytes_"
    "buffered\": 2048, \"records_failed\": 4, \"records_dead_lettered\""
    ": 2, \"num_acknowledged_tasks\": 2, \"num_tasks\": 2, \"max_paused"
    "_us\": 1500, \"num_unaligned_tasks\": 1, \"num_reread_tasks\": 0, "
    "\"bytes_reread\": 0, \"unaligned_reason\": \"buffer-limit\", \"failu"
    "re_message\": null, \"tasks\": [{\"task\": \"split[0]\", \"acknowledg"
    "ed\": true, \"ack_timestamp_ms\": 1764409207163, \"end_to_end_dur"
    "ation_ms\": 40, \"sync_duration_us\": 120, \"async_duration_us\": "
    "35000, \"alignment_duration_us\": 0, \"start_delay_us\": 1500, \"s"
    "tate_size\": 1000, \"bytes_buffered\": 0, \"records_failed\": 3, \""
    "records_dead_lettered\": 2, \"paused_us\": 0, \"unaligned_reason\""
    ": null, \"reread\": null}, {\"task\": \"count[0]\", \"acknowledged\":"
    " true, \"ack_timestamp_ms\": 1764409207183, \"end_to_end_duratio"
    "n_ms\": 60, \"sync_duration_us\": 80, \"async_duration_us\": 20000"
    ", \"alignment_duration_us\": 4200, \"start_delay_us\": 9000, \"sta"
    "te_size\": 5000000, \"bytes_buffered\": 2048, \"records_failed\": "
    "1, \"records_dead_lettered\": 0, \"paused_us\": 1500, \"unaligned_"
    "reason\": \"buffer-limit\", \"reread\": null}]}]}\n";

static const char *const expected_table =
    "Checkpoint counts:   triggered 3, in progress 1, completed 1"
    ", failed 1, restored 1\n"
    "End to end duration: min 75 ms, avg 75 ms, max 75 ms\n"
    "State size:          min 4.8 MiB, avg 4.8 MiB, max 4.8 MiB\n"
    "Bytes buffered:      min 2.0 KiB, avg 2.0 KiB, max 2.0 KiB\n"
    "Failed records:      4 (2 to dead-letter topics) up to check"
    "point 1\n"
    "Latest restore:      generation 1 from checkpoint 1 at 2025-"
    "11-29 09:40:28.123\n"
    "\n"
    "ID     STATUS      ACKED   TRIGGER TIME (UTC)      DURATION "
    "  STATE SIZE  BUFFERED   SYNC        ASYNC       ALIGNMENT  "
    " START DELAY  DEAD LETTERS UNALIGNED          TYPE\n"
    "3      IN_PROGRESS 0/2     2025-11-29 09:40:37.123 -        "
    "  0 B         0 B        -           -           -          "
    " -            0            -                  checkpoint\n"
    "2      FAILED      1/2     2025-11-29 09:40:17.123 10000 ms "
    "  1000 B      0 B        0.120 ms    35.000 ms   0.000 ms   "
    " 1.500 ms     3            -                  savepoint (dec"
    "lined by task count[0]: \"disk\" full)\n"
    "1      COMPLETED   2/2     2025-11-29 09:40:07.123 75 ms    "
    "  4.8 MiB     2.0 KiB    0.120 ms    35.000 ms   4.200 ms   "
    " 9.000 ms     2            1 buffer-limit     checkpoint\n";

static const char *const expected_detail1 =
    "Checkpoint 1: COMPLETED, triggered 2025-11-29 09:40:07.123, "
    "2/2 tasks acknowledged\n"
    "TASK             END TO END SYNC         ASYNC        ALIGNM"
    "ENT    START DELAY  STATE SIZE  BUFFERED   FAILED  DEAD LETT"
    "ERS PAUSED       UNALIGNED\n"
    "split[0]         40 ms      0.120 ms     35.000 ms    0.000 "
    "ms     1.500 ms     1000 B      0 B        3       2        "
    "    0.000 ms     -\n"
    "count[0]         60 ms      0.080 ms     20.000 ms    4.200 "
    "ms     9.000 ms     4.8 MiB     2.0 KiB    1       0        "
    "    1.500 ms     buffer-limit\n";

static const char *const expected_detail2 =
    "Savepoint 2: FAILED, triggered 2025-11-29 09:40:17.123, 1/2 "
    "tasks acknowledged\n"
    "TASK             END TO END SYNC         ASYNC        ALIGNM"
    "ENT    START DELAY  STATE SIZE  BUFFERED   FAILED  DEAD LETT"
    "ERS PAUSED       UNALIGNED\n"
    "split[0]         30 ms      0.120 ms     35.000 ms    0.000 "
    "ms     1.500 ms     1000 B      0 B        4       3        "
    "    0.000 ms     -\n"
    "count[0]         (not acknowledged)\n";

static const char *const expected_prom =
    "# HELP ksnap_checkpoints_triggered_total Checkpoints and save"
    "points triggered.\n"
    "# TYPE ksnap_checkpoints_triggered_total counter\n"
    "ksnap_checkpoints_triggered_total{job=\"wc\"} 3\n"
    "# HELP ksnap_checkpoints_completed_total Checkpoints and save"
    "points completed.\n"
    "# TYPE ksnap_checkpoints_completed_total counter\n"
    "ksnap_checkpoints_completed_total{job=\"wc\"} 1\n"
    "# HELP ksnap_checkpoints_failed_total Checkpoints and savepoi"
    "nts failed (declined, expired, aborted).\n"
    "# TYPE ksnap_checkpoints_failed_total counter\n"
    "ksnap_checkpoints_failed_total{job=\"wc\"} 1\n"
    "# HELP ksnap_checkpoints_in_progress Checkpoints in progress."
    "\n"
    "# TYPE ksnap_checkpoints_in_progress gauge\n"
    "ksnap_checkpoints_in_progress{job=\"wc\"} 1\n"
    "# HELP ksnap_restores_total Job restores (generation bumps).\n"
    "# TYPE ksnap_restores_total counter\n"
    "ksnap_restores_total{job=\"wc\"} 1\n"
    "# HELP ksnap_checkpoints_unaligned_timeout_total Completed ch"
    "eckpoints in which a task switched to unaligned on aligned-ch"
    "eckpoint-timeout.\n"
    "# TYPE ksnap_checkpoints_unaligned_timeout_total counter\n"
    "ksnap_checkpoints_unaligned_timeout_total{job=\"wc\"} 0\n"
    "# HELP ksnap_checkpoints_unaligned_buffer_limit_total Complet"
    "ed checkpoints in which a task switched to unaligned on reach"
    "ing alignment.max-buffered-bytes.\n"
    "# TYPE ksnap_checkpoints_unaligned_buffer_limit_total counter"
    "\n"
    "ksnap_checkpoints_unaligned_buffer_limit_total{job=\"wc\"} 1\n"
    "# HELP ksnap_last_checkpoint_id Id of the latest completed ch"
    "eckpoint.\n"
    "# TYPE ksnap_last_checkpoint_id gauge\n"
    "ksnap_last_checkpoint_id{job=\"wc\"} 1\n"
    "# HELP ksnap_last_checkpoint_duration_ms End-to-end duration "
    "of the latest completed checkpoint.\n"
    "# TYPE ksnap_last_checkpoint_duration_ms gauge\n"
    "ksnap_last_checkpoint_duration_ms{job=\"wc\"} 75\n"
    "# HELP ksnap_last_checkpoint_size_bytes State size of the lat"
    "est completed checkpoint.\n"
    "# TYPE ksnap_last_checkpoint_size_bytes gauge\n"
    "ksnap_last_checkpoint_size_bytes{job=\"wc\"} 5001000\n"
    "# HELP ksnap_last_checkpoint_buffered_bytes Bytes buffered du"
    "ring alignment in the latest completed checkpoint.\n"
    "# TYPE ksnap_last_checkpoint_buffered_bytes gauge\n"
    "ksnap_last_checkpoint_buffered_bytes{job=\"wc\"} 2048\n"
    "# HELP ksnap_last_checkpoint_alignment_max_us Longest task al"
    "ignment of the latest completed checkpoint.\n"
    "# TYPE ksnap_last_checkpoint_alignment_max_us gauge\n"
    "ksnap_last_checkpoint_alignment_max_us{job=\"wc\"} 4200\n"
    "# HELP ksnap_last_checkpoint_completion_timestamp_ms When the"
    " latest completed checkpoint completed.\n"
    "# TYPE ksnap_last_checkpoint_completion_timestamp_ms gauge\n"
    "ksnap_last_checkpoint_completion_timestamp_ms{job=\"wc\"} 17644"
    "09207198\n"
    "# HELP ksnap_task_checkpoint_duration_ms End-to-end duration "
    "of the task's part of the latest completed checkpoint: from t"
    "he trigger to its ACK.\n"
    "# TYPE ksnap_task_checkpoint_duration_ms gauge\n"
    "ksnap_task_checkpoint_duration_ms{job=\"wc\",task=\"split[0]\",st"
    "age=\"split\",subtask=\"0\"} 40\n"
    "ksnap_task_checkpoint_duration_ms{job=\"wc\",task=\"count[0]\",st"
    "age=\"count\",subtask=\"0\"} 60\n"
    "# HELP ksnap_task_checkpoint_sync_duration_us Synchronous par"
    "t of the task's snapshot in the latest completed checkpoint.\n"
    "# TYPE ksnap_task_checkpoint_sync_duration_us gauge\n"
    "ksnap_task_checkpoint_sync_duration_us{job=\"wc\",task=\"split[0"
    "]\",stage=\"split\",subtask=\"0\"} 120\n"
    "ksnap_task_checkpoint_sync_duration_us{job=\"wc\",task=\"count[0"
    "]\",stage=\"count\",subtask=\"0\"} 80\n"
    "# HELP ksnap_task_checkpoint_async_duration_us Asynchronous p"
    "art (upload) of the task's snapshot in the latest completed c"
    "heckpoint.\n"
    "# TYPE ksnap_task_checkpoint_async_duration_us gauge\n"
    "ksnap_task_checkpoint_async_duration_us{job=\"wc\",task=\"split["
    "0]\",stage=\"split\",subtask=\"0\"} 35000\n"
    "ksnap_task_checkpoint_async_duration_us{job=\"wc\",task=\"count["
    "0]\",stage=\"count\",subtask=\"0\"} 20000\n"
    "# HELP ksnap_task_checkpoint_alignment_duration_us Time the t"
    "ask aligned its inputs' barriers in the latest completed chec"
    "kpoint.\n"
    "# TYPE ksnap_task_checkpoint_alignment_duration_us gauge\n"
    "ksnap_task_checkpoint_alignment_duration_us{job=\"wc\",task=\"sp"
    "lit[0]\",stage=\"split\",subtask=\"0\"} 0\n"
    "ksnap_task_checkpoint_alignment_duration_us{job=\"wc\",task=\"co"
    "unt[0]\",stage=\"count\",subtask=\"0\"} 4200\n"
    "# HELP ksnap_task_checkpoint_start_delay_us From the trigger "
    "to the task's first barrier (a source: to its snapshot) in th"
    "e latest completed checkpoint.\n"
    "# TYPE ksnap_task_checkpoint_start_delay_us gauge\n"
    "ksnap_task_checkpoint_start_delay_us{job=\"wc\",task=\"split[0]\""
    ",stage=\"split\",subtask=\"0\"} 1500\n"
    "ksnap_task_checkpoint_start_delay_us{job=\"wc\",task=\"count[0]\""
    ",stage=\"count\",subtask=\"0\"} 9000\n"
    "# HELP ksnap_task_checkpoint_size_bytes State size of the tas"
    "k in the latest completed checkpoint.\n"
    "# TYPE ksnap_task_checkpoint_size_bytes gauge\n"
    "ksnap_task_checkpoint_size_bytes{job=\"wc\",task=\"split[0]\",sta"
    "ge=\"split\",subtask=\"0\"} 1000\n"
    "ksnap_task_checkpoint_size_bytes{job=\"wc\",task=\"count[0]\",sta"
    "ge=\"count\",subtask=\"0\"} 5000000\n"
    "# HELP ksnap_task_checkpoint_buffered_bytes Bytes the task bu"
    "ffered during alignment in the latest completed checkpoint.\n"
    "# TYPE ksnap_task_checkpoint_buffered_bytes gauge\n"
    "ksnap_task_checkpoint_buffered_bytes{job=\"wc\",task=\"split[0]\""
    ",stage=\"split\",subtask=\"0\"} 0\n"
    "ksnap_task_checkpoint_buffered_bytes{job=\"wc\",task=\"count[0]\""
    ",stage=\"count\",subtask=\"0\"} 2048\n"
    "# HELP ksnap_task_checkpoint_paused_us Longest time one of th"
    "e task's input partitions was paused by the alignment of the "
    "latest completed checkpoint.\n"
    "# TYPE ksnap_task_checkpoint_paused_us gauge\n"
    "ksnap_task_checkpoint_paused_us{job=\"wc\",task=\"split[0]\",stag"
    "e=\"split\",subtask=\"0\"} 0\n"
    "ksnap_task_checkpoint_paused_us{job=\"wc\",task=\"count[0]\",stag"
    "e=\"count\",subtask=\"0\"} 1500\n"
    "# HELP ksnap_task_checkpoint_unaligned_reason Why the task to"
    "ok its part of the latest completed checkpoint before every b"
    "arrier came: 0 aligned, 1 unaligned mode, 2 aligned-checkpoin"
    "t-timeout, 3 alignment buffer limit, 4 its TRIGGER (snapshot-"
    "on-trigger); 5: aligned all the same, a savepoint whose align"
    "ment reached the buffer limit waited and re-read.\n"
    "# TYPE ksnap_task_checkpoint_unaligned_reason gauge\n"
    "ksnap_task_checkpoint_unaligned_reason{job=\"wc\",task=\"split[0"
    "]\",stage=\"split\",subtask=\"0\"} 0\n"
    "ksnap_task_checkpoint_unaligned_reason{job=\"wc\",task=\"count[0"
    "]\",stage=\"count\",subtask=\"0\"} 3\n"
    "# HELP ksnap_task_checkpoint_reread_bytes Bytes of a savepoin"
    "t's task that waited at the alignment buffer limit: dropped, "
    "then read again after its snapshot (latest completed checkpoi"
    "nt).\n"
    "# TYPE ksnap_task_checkpoint_reread_bytes gauge\n"
    "ksnap_task_checkpoint_reread_bytes{job=\"wc\",task=\"split[0]\",s"
    "tage=\"split\",subtask=\"0\"} 0\n"
    "ksnap_task_checkpoint_reread_bytes{job=\"wc\",task=\"count[0]\",s"
    "tage=\"count\",subtask=\"0\"} 0\n"
    "# HELP ksnap_records_failed Records whose processing failed a"
    "nd that the task tolerated (errors.tolerance=all), up to the "
    "latest completed checkpoint.\n"
    "# TYPE ksnap_records_failed gauge\n"
    "ksnap_records_failed{job=\"wc\",task=\"split[0]\",stage=\"split\",s"
    "ubtask=\"0\"} 3\n"
    "ksnap_records_failed{job=\"wc\",task=\"count[0]\",stage=\"count\",s"
    "ubtask=\"0\"} 1\n"
    "# HELP ksnap_records_dead_lettered Records the task wrote to "
    "its dead-letter topic, up to the latest completed checkpoint "
    "(committed with it).\n"
    "# TYPE ksnap_records_dead_lettered gauge\n"
    "ksnap_records_dead_lettered{job=\"wc\",task=\"split[0]\",stage=\"s"
    "plit\",subtask=\"0\"} 2\n"
    "ksnap_records_dead_lettered{job=\"wc\",task=\"count[0]\",stage=\"c"
    "ount\",subtask=\"0\"} 0\n";

START_TEST(counts_and_summary) {
  const ksnap_stats_summary_t *s;
  const ksnap_ckpt_stats_t *c;

  scenario();
  s = ksnap_coord_stats_summary(st);
  ck_assert_int_eq(s->triggered, 3);
  ck_assert_int_eq(s->in_progress, 1);
  ck_assert_int_eq(s->completed, 1);
  ck_assert_int_eq(s->failed, 1);
  ck_assert_int_eq(s->restored, 1);
  ck_assert_int_eq(s->last_completed_id, 1);
  ck_assert_int_eq(s->last_failed_id, 2);
  ck_assert_int_eq(s->duration_ms.min, 75);
  ck_assert_int_eq(s->state_size.max, 5001000);
  ck_assert_int_eq(s->last_alignment_us, 4200);
  ck_assert_int_eq(s->last_errors.failed, 4); /* checkpoint 1's, 3 + 1 */
  ck_assert_int_eq(s->last_errors.dead_lettered, 2);
  ck_assert_uint_eq(s->last_task_cnt, 2);
  ck_assert_str_eq(s->last_tasks[1].task, "count[0]");
  ck_assert_int_eq(s->last_tasks[1].errors.failed, 1);
  c = ksnap_coord_stats_get(st, 1);
  ck_assert_int_eq(c->status, KSNAP_STATS_COMPLETED);
  ck_assert_int_eq(c->acked_cnt, 2);
  ck_assert_int_eq(c->tasks[1].timings.alignment_us, 4200);
  ck_assert_int_eq(c->bytes_buffered, 2048);
  c = ksnap_coord_stats_get(st, 2);
  ck_assert_str_eq(c->failure, "declined by task count[0]: \"disk\" full");
  ck_assert_int_eq(ksnap_coord_stats_at(st, 0)->id, 3); /* newest first */
  ck_assert_ptr_null(ksnap_coord_stats_at(st, 3));
}
END_TEST

START_TEST(unknown_ids_tasks_and_duplicates_refused) {
  scenario();
  ck_assert_int_eq(ksnap_coord_stats_acked(st, 99, "split[0]", 0, &t1, 1, &e0),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_coord_stats_acked(st, 3, "nope[0]", 0, &t1, 1, &e0),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_coord_stats_acked(st, 3, "split[0]", 0, &t1, 1, &e0),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_acked(st, 3, "split[0]", 0, &t1, 1, &e0),
                   KSNAP_ERR_EXISTS);
  ck_assert_int_eq(ksnap_coord_stats_completed(st, 1, 0),
                   KSNAP_ERR_NOT_FOUND); /* already final */
  ck_assert_int_eq(ksnap_coord_stats_failed(st, 2, 0, "x"),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 3, 0, false, tasks, 2),
                   KSNAP_ERR_EXISTS);
  ck_assert_int_eq(ksnap_coord_stats_summary(st)->triggered, 3);
}
END_TEST

START_TEST(history_keeps_the_newest_and_every_in_progress) {
  ksnap_coord_stats_t *small = ksnap_coord_stats_new(2);

  ck_assert_int_eq(ksnap_coord_stats_triggered(small, 1, 0, false, tasks, 2),
                   KSNAP_ERR_OK); /* stays in progress */
  for (int64_t id = 2; id <= 5; id++) {
    ksnap_coord_stats_triggered(small, id, id, false, tasks, 2);
    ksnap_coord_stats_completed(small, id, id + 10);
  }
  ck_assert_int_eq(ksnap_coord_stats_at(small, 0)->id, 5);
  ck_assert_int_eq(ksnap_coord_stats_at(small, 1)->id, 1);
  ck_assert_ptr_null(ksnap_coord_stats_at(small, 2));
  ck_assert_ptr_null(ksnap_coord_stats_get(small, 4));
  ck_assert_int_eq(ksnap_coord_stats_summary(small)->completed, 4);
  ck_assert_int_eq(ksnap_coord_stats_summary(small)->duration_ms.sum, 40);
  ksnap_coord_stats_failed(small, 1, 50, "expired before completing");
  ck_assert_int_eq(ksnap_coord_stats_at(small, 0)->id, 5);
  ck_assert_ptr_null(ksnap_coord_stats_at(small, 2));
  ksnap_coord_stats_destroy(small);
}
END_TEST

START_TEST(json_rendering) {
  scenario();
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data, expected_json);
}
END_TEST

/* A completed savepoint's directory is in the table and in the JSON as
 * Flink's external_path; a checkpoint takes none. */
START_TEST(savepoint_external_path_rendered) {
  const char *url = "s3://b/sp/savepoint-j-4-0123456789ab";

  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 4, T0, true, tasks, 2),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_completed(st, 4, T0 + 5), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_external_path(st, 4, url),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 5, T0, false, tasks, 2),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_external_path(st, 5, "x"),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_coord_stats_table(st, &buf), KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               " savepoint s3://b/sp/savepoint-j-4-"));
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "\"external_path\": \"s3://b/sp/savepoint-j-4-0123456789ab\""));
  ck_assert_int_eq(ksnap_coord_stats_detail(st, 5, &buf), KSNAP_ERR_OK);
}
END_TEST

START_TEST(json_of_nothing) {
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data,
                   "{\"counts\": {\"triggered\": 0, \"in_progress\": 0, "
                   "\"completed\": 0, \"failed\": 0, \"restored\": 0, "
                   "\"unaligned_timeout\": 0, \"unaligned_buffer_limit\": 0}, "
                   "\"summary\": {\"end_to_end_duration_ms\": null, "
                   "\"state_size\": null, \"bytes_buffered\": null}, "
                   "\"latest\": {\"completed\": null, \"failed\": null, "
                   "\"restored\": null, \"records_failed\": 0, "
                   "\"records_dead_lettered\": 0, \"finished\": null}, "
                   "\"tasks\": [], "
                   "\"history\": []}\n");
}
END_TEST

START_TEST(table_rendering) {
  scenario();
  ck_assert_int_eq(ksnap_coord_stats_table(st, &buf), KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data, expected_table);
}
END_TEST

START_TEST(detail_rendering) {
  scenario();
  ck_assert_int_eq(ksnap_coord_stats_detail(st, 1, &buf), KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data, expected_detail1);
  ksnap_buf_reset(&buf);
  ck_assert_int_eq(ksnap_coord_stats_detail(st, 2, &buf), KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data, expected_detail2);
  ck_assert_int_eq(ksnap_coord_stats_detail(st, 42, &buf),
                   KSNAP_ERR_NOT_FOUND);
}
END_TEST

START_TEST(prometheus_rendering) {
  scenario();
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf),
                   KSNAP_ERR_OK);
  ck_assert_str_eq((char *)buf.data, expected_prom);
  ksnap_buf_reset(&buf);
  ksnap_coord_stats_prometheus(st, "a\"b\\c", &buf);
  ck_assert_ptr_nonnull(
      strstr((char *)buf.data,
             "ksnap_restores_total{job=\"a\\\"b\\\\c\"} 1\n"));
}
END_TEST

/* HEARTBEATs: each task's latest record counts (an older generation's
 * instance does not overwrite them), in the JSON and as per-task
 * counters labelled job, task, stage and subtask (escaped). */
START_TEST(heartbeat_counts_per_task) {
  const ksnap_heartbeat_t a = {{(char *)"count", 1}, 2, 0, 17, 5, false};
  const ksnap_heartbeat_t stale = {{(char *)"count", 1}, 1, 0, 99, 99, false};
  const ksnap_heartbeat_t odd = {{(char *)"a\"b\\c", 0}, 2, 0, 1, 0, false};
  const ksnap_task_live_t *t;

  ck_assert_int_eq(ksnap_coord_stats_heartbeat(st, T0, &a), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_heartbeat(st, T0 + 5, &stale),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_heartbeat(st, T0 + 7, &odd),
                   KSNAP_ERR_OK);
  t = ksnap_coord_stats_live_at(st, 0);
  ck_assert_str_eq(t->task, "count[1]");
  ck_assert_int_eq(t->records_in, 17);
  ck_assert_int_eq(t->heartbeat_ms, T0);
  ck_assert_ptr_null(ksnap_coord_stats_live_at(st, 2));
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "\"tasks\": [{\"task\": \"count[1]\", \"generation\": 2, "
      "\"heartbeat_timestamp_ms\": 1764409207123, \"records_in\": 17, "
      "\"records_out\": 5}, {\"task\": \"a\\\"b\\\\c[0]\", \"generation\": "
      "2, \"heartbeat_timestamp_ms\": 1764409207130, \"records_in\": 1, "
      "\"records_out\": 0}], \"history\": []}\n"));
  ksnap_buf_reset(&buf);
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf),
                   KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "# TYPE ksnap_task_records_in_total counter\n"
      "ksnap_task_records_in_total{job=\"wc\",task=\"count[1]\","
      "stage=\"count\",subtask=\"1\"} 17\n"
      "ksnap_task_records_in_total{job=\"wc\",task=\"a\\\"b\\\\c[0]\","
      "stage=\"a\\\"b\\\\c\",subtask=\"0\"} 1\n"
      "# HELP ksnap_task_records_out_total "));
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data, "ksnap_task_records_out_total{job=\"wc\",task=\""
                        "count[1]\",stage=\"count\",subtask=\"1\"} 5\n"));
  /* no completed checkpoint yet: no per-task checkpoint series */
  ck_assert_ptr_null(strstr((char *)buf.data, "ksnap_task_checkpoint_"));
}
END_TEST

/* The text format's rules this output relies on: each family's HELP and
 * TYPE once, then only its samples; sample lines "name{labels} value". */
START_TEST(prometheus_one_family_per_metric) {
  const ksnap_heartbeat_t a = {{(char *)"split", 0}, 1, 0, 4, 4, false};
  char family[128] = "", seen[64][128];
  int nseen = 0, samples = 0;

  scenario();
  ksnap_coord_stats_heartbeat(st, T0, &a);
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf),
                   KSNAP_ERR_OK);
  for (char *line = strtok((char *)buf.data, "\n"); line;
       line = strtok(NULL, "\n")) {
    char name[128], type[32];
    if (sscanf(line, "# TYPE %127s %31s", name, type) == 2) {
      for (int i = 0; i < nseen; i++)
        ck_assert_msg(strcmp(seen[i], name), "family %s twice", name);
      ck_assert_int_lt(nseen, 64);
      snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
      snprintf(family, sizeof(family), "%s", name);
      ck_assert(!strcmp(type, "gauge") || !strcmp(type, "counter"));
    } else if (line[0] != '#') {
      size_t n = strlen(family);
      ck_assert_msg(n && !strncmp(line, family, n) && line[n] == '{',
                    "sample \"%s\" outside its family %s", line, family);
      ck_assert_ptr_nonnull(strstr(line, "} "));
      samples++;
    }
  }
  ck_assert_int_eq(nseen, 27);
  ck_assert_int_eq(samples, 13 + 12 * 2 + 2);
}
END_TEST

/* Source lag: the end offsets fed in minus the positions of the latest
 * completed checkpoint, per source task (summed over its partitions) and
 * per partition; none for a task without source offsets or while an end
 * offset is unknown. */
static void complete_with_positions(int64_t id, int64_t off0, int64_t off1) {
  ksnap_source_offset_t pos[2] = {{(char *)"in", 0, off0},
                                  {(char *)"in", 1, off1}};

  ck_assert_int_eq(ksnap_coord_stats_triggered(st, id, T0 + id * 1000, false,
                                               tasks, 2),
                   KSNAP_ERR_OK);
  ksnap_coord_stats_acked(st, id, "split[0]", T0 + id * 1000 + 5, &t1, 0,
                          &e0);
  ck_assert_int_eq(ksnap_coord_stats_positions(st, id, "split[0]", pos, 2),
                   KSNAP_ERR_OK);
  ksnap_coord_stats_acked(st, id, "count[0]", T0 + id * 1000 + 6, &t2, 0,
                          &e0);
  ck_assert_int_eq(ksnap_coord_stats_completed(st, id, T0 + id * 1000 + 9),
                   KSNAP_ERR_OK);
}

START_TEST(source_lag_per_task_and_partition) {
  const ksnap_heartbeat_t hs = {{(char *)"split", 0}, 1, 0, 4, 4, false};
  const ksnap_heartbeat_t hc = {{(char *)"count", 0}, 1, 0, 4, 4, false};
  const ksnap_source_offset_t *o;
  int64_t lag = -1;

  ck_assert_int_eq(ksnap_coord_stats_positions(st, 9, "split[0]", NULL, 0),
                   KSNAP_ERR_NOT_FOUND);
  complete_with_positions(1, 10, 5);
  o = ksnap_coord_stats_source_at(st, 1);
  ck_assert_str_eq(o->topic, "in");
  ck_assert_int_eq(o->partition, 1);
  ck_assert_ptr_null(ksnap_coord_stats_source_at(st, 2));
  /* no end offsets yet: no lag */
  ck_assert(!ksnap_coord_stats_task_lag(st, "split[0]", &lag));
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf),
                   KSNAP_ERR_OK);
  ck_assert_ptr_null(strstr((char *)buf.data, "lag_records"));
  ksnap_coord_stats_end_offset(st, "in", 0, 15);
  ck_assert(!ksnap_coord_stats_task_lag(st, "split[0]", &lag)); /* in/1 */
  ksnap_coord_stats_end_offset(st, "in", 1, 5);
  ck_assert(ksnap_coord_stats_task_lag(st, "split[0]", &lag));
  ck_assert_int_eq(lag, 5);
  ck_assert(!ksnap_coord_stats_task_lag(st, "count[0]", &lag));
  ksnap_buf_reset(&buf);
  ck_assert_int_eq(ksnap_coord_stats_prometheus(st, "wc", &buf),
                   KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "# TYPE ksnap_task_source_lag_records gauge\n"
      "ksnap_task_source_lag_records{job=\"wc\",task=\"split[0]\","
      "stage=\"split\",subtask=\"0\"} 5\n"
      "# HELP ksnap_source_partition_lag_records "));
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "records after the latest completed checkpoint's position"));
  ck_assert_ptr_nonnull(strstr(
      (char *)buf.data,
      "# TYPE ksnap_source_partition_lag_records gauge\n"
      "ksnap_source_partition_lag_records{job=\"wc\",topic=\"in\","
      "partition=\"0\"} 5\n"
      "ksnap_source_partition_lag_records{job=\"wc\",topic=\"in\","
      "partition=\"1\"} 0\n"));
  ck_assert_ptr_null(strstr((char *)buf.data,
                            "ksnap_task_source_lag_records{job=\"wc\","
                            "task=\"count[0]\""));
  /* JSON: on the source task's entry of "tasks" only */
  ksnap_coord_stats_heartbeat(st, T0, &hs);
  ksnap_coord_stats_heartbeat(st, T0, &hc);
  ksnap_buf_reset(&buf);
  ck_assert_int_eq(ksnap_coord_stats_json(st, &buf), KSNAP_ERR_OK);
  ck_assert_ptr_nonnull(strstr((char *)buf.data,
                               "\"records_out\": 4, \"source_lag_records\": "
                               "5}, {\"task\": \"count[0]\""));
  ck_assert_ptr_nonnull(strstr((char *)buf.data, "\"records_out\": 4}]"));
  /* a newer checkpoint caught up; an end below it counts 0 */
  complete_with_positions(2, 15, 7);
  ck_assert(ksnap_coord_stats_task_lag(st, "split[0]", &lag));
  ck_assert_int_eq(lag, 0);
  ksnap_coord_stats_end_offset(st, "in", 1, 9);
  ck_assert(ksnap_coord_stats_task_lag(st, "split[0]", &lag));
  ck_assert_int_eq(lag, 2);
}
END_TEST

/* The positions survive the history dropping their checkpoint. */
START_TEST(source_lag_outlives_the_history) {
  ksnap_coord_stats_t *small = ksnap_coord_stats_new(1);
  ksnap_coord_stats_t *keep = st;
  int64_t lag = -1;

  st = small;
  complete_with_positions(1, 3, 4);
  ck_assert_int_eq(ksnap_coord_stats_triggered(st, 2, T0 + 5000, false,
                                               tasks, 2),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_stats_failed(st, 2, T0 + 6000, "x"),
                   KSNAP_ERR_OK);
  ck_assert_ptr_null(ksnap_coord_stats_get(st, 1));
  ksnap_coord_stats_end_offset(st, "in", 0, 10);
  ksnap_coord_stats_end_offset(st, "in", 1, 10);
  ck_assert(ksnap_coord_stats_task_lag(st, "split[0]", &lag));
  ck_assert_int_eq(lag, 7 + 6);
  st = keep;
  ksnap_coord_stats_destroy(small);
}
END_TEST

/* The coordinator records its checkpoints' statistics. */
START_TEST(coordinator_records_statistics) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_coord_sm_conf_t smc = {1000, 10000, 0, 1, 0, 1, 100000,
                               KSNAP_CKPT_ALIGNED, KSNAP_CHECKPOINT_NONE,
                               KSNAP_RESTART_AT_ONCE};
  ksnap_coord_sm_t *sm;
  ksnap_coord_action_t act;
  ksnap_job_t *job;
  ksnap_error_t error;
  const ksnap_ckpt_stats_t *c;

  ck_assert_int_eq(ksnap_conf_load_string(conf, "j.properties",
                                          "job.name=j\n"
                                          "stage.a.operator=x\n"
                                          "stage.a.input=source:in\n"
                                          "stage.a.output=sink:out\n",
                                          NULL, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, NULL, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  ksnap_coord_sm_start(sm, T0);
  {
    ksnap_register_t r = {{(char *)"a", 0}, (char *)"w", (char *)"h", 1, 0,
                          false};
    ck_assert_int_eq(ksnap_coord_sm_register(sm, T0, &r), KSNAP_ERR_OK);
  }
  ksnap_coord_sm_tick(sm, T0 + 1000);
  {
    ksnap_ack_t a;
    memset(&a, 0, sizeof(a));
    a.checkpoint_id = 1;
    a.snapshot.task.stage = strdup("a");
    a.snapshot.timings = t2;
    a.snapshot.offsets = calloc(1, sizeof(*a.snapshot.offsets));
    a.snapshot.offsets[0].topic = strdup("in");
    a.snapshot.offsets[0].offset = 42;
    a.snapshot.offset_cnt = 1;
    a.errors = e3;
    ck_assert_int_eq(ksnap_coord_sm_ack(sm, T0 + 1050, &a), KSNAP_ERR_OK);
    ksnap_task_snapshot_cleanup(&a.snapshot);
  }
  ksnap_coord_sm_metadata_written(sm, T0 + 1060, 1, NULL);
  ksnap_coord_sm_complete_committed(sm, T0 + 1070, 1, NULL);
  ksnap_coord_sm_tick(sm, T0 + 2000);
  ksnap_coord_sm_request_restore(sm, T0 + 2100, "test");
  c = ksnap_coord_stats_get(ksnap_coord_sm_stats(sm), 1);
  ck_assert_int_eq(c->status, KSNAP_STATS_COMPLETED);
  ck_assert_int_eq(c->end_ms - c->trigger_ms, 70);
  ck_assert_int_eq(c->tasks[0].timings.alignment_us, 4200);
  ck_assert_str_eq(c->tasks[0].task, "a[0]");
  ck_assert_int_eq(c->tasks[0].errors.dead_lettered, 3); /* the ACK's */
  ck_assert_uint_eq(c->tasks[0].offset_cnt, 1); /* the source lag's */
  ck_assert_str_eq(c->tasks[0].offsets[0].topic, "in");
  ck_assert_int_eq(c->tasks[0].offsets[0].offset, 42);
  c = ksnap_coord_stats_get(ksnap_coord_sm_stats(sm), 2);
  ck_assert_int_eq(c->status, KSNAP_STATS_FAILED);
  ck_assert_str_eq(c->failure, "job restored in generation 1");
  ck_assert_int_eq(
      ksnap_coord_stats_summary(ksnap_coord_sm_stats(sm))->last_restored_id,
      1);
  while (ksnap_coord_sm_next_action(sm, &act))
    ksnap_coord_action_cleanup(&act);
  ksnap_coord_sm_destroy(sm);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
}
END_TEST

/* The statistics rebuilt from the control and ack topics equal those the
 * coordinator kept while it ran. */
static ksnap_control_record_t hist_ctl[64];
static int64_t hist_ctl_ts[64];
static size_t hist_ctl_cnt;
static ksnap_ack_record_t hist_ack[64];
static int64_t hist_ack_ts[64];
static size_t hist_ack_cnt;

/* Drains @p sm at @p now, writing what a driver would to the control
 * topic (COMPLETE only once committed: see commit()). */
static void to_topic(ksnap_coord_sm_t *sm, int64_t now) {
  ksnap_coord_action_t act;

  while (ksnap_coord_sm_next_action(sm, &act)) {
    ksnap_control_record_t *r = &hist_ctl[hist_ctl_cnt];
    memset(r, 0, sizeof(*r));
    switch (act.type) {
    case KSNAP_COORD_ACT_TRIGGER:
      r->type = KSNAP_CONTROL_TRIGGER;
      r->u.trigger = (ksnap_trigger_t){act.checkpoint_id, act.timestamp_ms,
                                       act.options, act.generation};
      break;
    case KSNAP_COORD_ACT_SEND_ABORT:
      r->type = KSNAP_CONTROL_ABORT;
      r->u.abort = (ksnap_abort_t){act.checkpoint_id, act.generation,
                                   strdup(act.text)};
      break;
    case KSNAP_COORD_ACT_SEND_RESTORE:
      r->type = KSNAP_CONTROL_RESTORE;
      r->u.restore = (ksnap_restore_t){act.generation, act.checkpoint_id,
                                       NULL, NULL, 0};
      break;
    default:
      ksnap_coord_action_cleanup(&act);
      continue;
    }
    hist_ctl_ts[hist_ctl_cnt++] = now;
    ksnap_coord_action_cleanup(&act);
  }
}

static void commit(ksnap_coord_sm_t *sm, int64_t now, int64_t id,
                   int64_t gen) {
  ksnap_control_record_t *r = &hist_ctl[hist_ctl_cnt];
  ck_assert_int_eq(ksnap_coord_sm_metadata_written(sm, now, id, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_complete_committed(sm, now, id, NULL),
                   KSNAP_ERR_OK);
  memset(r, 0, sizeof(*r));
  r->type = KSNAP_CONTROL_COMPLETE;
  r->u.complete = (ksnap_complete_t){id, gen, strdup("m")};
  hist_ctl_ts[hist_ctl_cnt++] = now;
  to_topic(sm, now);
}

static void ack_to(ksnap_coord_sm_t *sm, int64_t now, int64_t id,
                   const char *stage, int64_t gen) {
  ksnap_ack_record_t *rec = &hist_ack[hist_ack_cnt];
  ksnap_ack_t a;

  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_ACK;
  rec->u.ack.checkpoint_id = id;
  rec->u.ack.generation = gen;
  rec->u.ack.snapshot.task.stage = strdup(stage);
  rec->u.ack.snapshot.timings = t2;
  rec->u.ack.snapshot.handles = calloc(1, sizeof(ksnap_state_handle_t));
  rec->u.ack.snapshot.handle_cnt = 1;
  rec->u.ack.snapshot.handles[0].size = 700 + id;
  hist_ack_ts[hist_ack_cnt++] = now;
  /* the sm takes its own copy */
  memset(&a, 0, sizeof(a));
  a.checkpoint_id = id;
  a.generation = gen;
  a.snapshot.task.stage = strdup(stage);
  a.snapshot.timings = t2;
  a.snapshot.handles = calloc(1, sizeof(ksnap_state_handle_t));
  a.snapshot.handle_cnt = 1;
  a.snapshot.handles[0].size = 700 + id;
  ck_assert_int_eq(ksnap_coord_sm_ack(sm, now, &a), KSNAP_ERR_OK);
  ksnap_task_snapshot_cleanup(&a.snapshot);
  to_topic(sm, now);
}

/* A HEARTBEAT into the ack topic; with @p live also to the statistics,
 * as the coordinator's driver feeds them. */
static void heartbeat_to(ksnap_coord_sm_t *sm, int64_t now, const char *stage,
                         int64_t gen, int64_t in, int live) {
  ksnap_ack_record_t *rec = &hist_ack[hist_ack_cnt];

  memset(rec, 0, sizeof(*rec));
  rec->type = KSNAP_ACKT_HEARTBEAT;
  rec->u.heartbeat =
      (ksnap_heartbeat_t){{strdup(stage), 0}, gen, now, in, in / 2, false};
  hist_ack_ts[hist_ack_cnt++] = now;
  if (live)
    ck_assert_int_eq(ksnap_coord_stats_heartbeat(ksnap_coord_sm_stats(sm),
                                                 now, &rec->u.heartbeat),
                     KSNAP_ERR_OK);
}

START_TEST(statistics_rebuilt_from_the_topics) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_coord_sm_conf_t smc = {1000, 10000, 0, 1, 5, 1, 100000,
                               KSNAP_CKPT_ALIGNED, KSNAP_CHECKPOINT_NONE,
                               KSNAP_RESTART_AT_ONCE};
  ksnap_coord_sm_t *sm;
  ksnap_coord_stats_t *rebuilt;
  ksnap_job_t *job;
  ksnap_error_t error;
  ksnap_buf_t live;

  ck_assert_int_eq(ksnap_conf_load_string(conf, "j.properties",
                                          "job.name=j\n"
                                          "stage.a.operator=x\n"
                                          "stage.a.input=source:in\n"
                                          "stage.b.operator=x\n"
                                          "stage.b.input=stage:a\n"
                                          "stage.b.output=sink:out\n",
                                          NULL, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_job_new(conf, &job, NULL, NULL), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_coord_sm_new(job, &smc, &sm, &error), KSNAP_ERR_OK);
  hist_ctl_cnt = hist_ack_cnt = 0;
  ksnap_coord_sm_start(sm, T0);
  {
    ksnap_register_t r = {{(char *)"a", 0}, (char *)"w", (char *)"h", 1, 0,
                          false};
    ksnap_coord_sm_register(sm, T0, &r);
    r.task.stage = (char *)"b";
    ksnap_coord_sm_register(sm, T0, &r);
  }
  to_topic(sm, T0);
  ksnap_coord_sm_tick(sm, T0 + 1000); /* 1: completes */
  to_topic(sm, T0 + 1000);
  ack_to(sm, T0 + 1040, 1, "a", 0);
  ack_to(sm, T0 + 1090, 1, "b", 0);
  commit(sm, T0 + 1100, 1, 0);
  ksnap_coord_sm_tick(sm, T0 + 2000); /* 2: expires after one ACK */
  to_topic(sm, T0 + 2000);
  ack_to(sm, T0 + 2050, 2, "b", 0);
  ksnap_coord_sm_tick(sm, T0 + 12000);
  to_topic(sm, T0 + 12000);
  ksnap_coord_sm_request_restore(sm, T0 + 12500, "test"); /* 3: aborted */
  to_topic(sm, T0 + 12500);
  {
    ksnap_register_t r = {{(char *)"a", 0}, (char *)"w", (char *)"h", 1, 1,
                          false};
    ksnap_coord_sm_register(sm, T0 + 13000, &r);
    r.task.stage = (char *)"b";
    ksnap_coord_sm_register(sm, T0 + 13000, &r);
  }
  ksnap_coord_sm_tick(sm, T0 + 14000); /* 4: completes in generation 1 */
  to_topic(sm, T0 + 14000);
  ack_to(sm, T0 + 14010, 4, "b", 1);
  ack_to(sm, T0 + 14020, 4, "a", 1);
  commit(sm, T0 + 14030, 4, 1);
  ksnap_coord_sm_tick(sm, T0 + 15030); /* 5: in progress */
  to_topic(sm, T0 + 15030);
  heartbeat_to(sm, T0 + 15100, "a", 1, 40, 1);
  heartbeat_to(sm, T0 + 15200, "zz", 1, 7, 0); /* not a stage of the job */
  heartbeat_to(sm, T0 + 15300, "a", 1, 60, 1);

  ck_assert_int_eq(ksnap_coord_stats_from_history(
                       job, hist_ctl, hist_ctl_ts, hist_ctl_cnt, hist_ack,
                       hist_ack_ts, hist_ack_cnt, 10, &rebuilt),
                   KSNAP_ERR_OK);
  ksnap_buf_init(&live);
  ksnap_coord_stats_json(ksnap_coord_sm_stats(sm), &live);
  ksnap_coord_stats_json(rebuilt, &buf);
  ck_assert_str_eq((char *)buf.data, (char *)live.data);
  ck_assert_int_eq(ksnap_coord_stats_summary(rebuilt)->completed, 2);
  ck_assert_int_eq(ksnap_coord_stats_summary(rebuilt)->failed, 2);
  ck_assert_int_eq(ksnap_coord_stats_summary(rebuilt)->in_progress, 1);
  ck_assert_str_eq(ksnap_coord_stats_get(rebuilt, 2)->failure,
                   "expired before completing");
  ck_assert_int_eq(ksnap_coord_stats_live_at(rebuilt, 0)->records_in, 60);
  ck_assert_ptr_null(ksnap_coord_stats_live_at(rebuilt, 1));
  ksnap_buf_cleanup(&live);
  ksnap_coord_stats_destroy(rebuilt);
  for (size_t i = 0; i < hist_ctl_cnt; i++)
    ksnap_control_record_cleanup(&hist_ctl[i]);
  for (size_t i = 0; i < hist_ack_cnt; i++)
    ksnap_ack_record_cleanup(&hist_ack[i]);
  ksnap_coord_sm_destroy(sm);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_stats");
  TCase *tc = tcase_create("coord_stats");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, counts_and_summary);
  tcase_add_test(tc, savepoint_external_path_rendered);
  tcase_add_test(tc, unknown_ids_tasks_and_duplicates_refused);
  tcase_add_test(tc, history_keeps_the_newest_and_every_in_progress);
  tcase_add_test(tc, json_rendering);
  tcase_add_test(tc, json_of_nothing);
  tcase_add_test(tc, table_rendering);
  tcase_add_test(tc, detail_rendering);
  tcase_add_test(tc, prometheus_rendering);
  tcase_add_test(tc, heartbeat_counts_per_task);
  tcase_add_test(tc, prometheus_one_family_per_metric);
  tcase_add_test(tc, source_lag_per_task_and_partition);
  tcase_add_test(tc, source_lag_outlives_the_history);
  tcase_add_test(tc, coordinator_records_statistics);
  tcase_add_test(tc, statistics_rebuilt_from_the_topics);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
