/*
 * `ksnap checkpoints list JOB.properties`: the job's checkpoint statistics
 * rebuilt from <job>.ksnap.control and <job>.ksnap.acks (no coordinator
 * needed), as a table like Flink's checkpoint tab (with --task, each
 * checkpoint's per-task rows too, like its details view), or as JSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "control/coord_io.h"
#include "stats/coord_stats.h"
#include "ksnap/buf.h"
#include "ksnap/job.h"

#define HISTORY_DEFAULT 20

typedef struct recs_s {
  int ack; /* decode as ack-topic records */
  void *recs;
  int64_t *ts;
  size_t n, cap;
} recs_t;

static int collect(void *opaque, const void *buf, size_t len, int64_t ts) {
  recs_t *r = opaque;
  size_t sz = r->ack ? sizeof(ksnap_ack_record_t)
                     : sizeof(ksnap_control_record_t);
  ksnap_error_t error;
  void *p;
  int bad;

  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    if (!(p = realloc(r->recs, r->cap * sz)))
      return 1;
    r->recs = p;
    if (!(p = realloc(r->ts, r->cap * sizeof(int64_t))))
      return 1;
    r->ts = p;
  }
  p = (char *)r->recs + r->n * sz;
  bad = r->ack ? ksnap_codec_ack_decode(buf, len, p, &error)
               : ksnap_codec_control_decode(buf, len, p, &error);
  if (!bad)
    r->ts[r->n++] = ts;
  return 0;
}

static void recs_free(recs_t *r) {
  for (size_t i = 0; i < r->n; i++) {
    if (r->ack)
      ksnap_ack_record_cleanup((ksnap_ack_record_t *)r->recs + i);
    else
      ksnap_control_record_cleanup((ksnap_control_record_t *)r->recs + i);
  }
  free(r->recs);
  free(r->ts);
}

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap checkpoints list JOB.properties [--json] [--task] "
          "[--history N]\n"
          "\n"
          "Prints the job's checkpoints (newest first), rebuilt from the\n"
          "job's control and ack topics (no coordinator needed): status,\n"
          "tasks acknowledged, trigger time, end-to-end duration, state\n"
          "size, bytes buffered during alignment, and the per-task figures\n"
          "summarized as their maximum over the tasks that acknowledged:\n"
          "SYNC (synchronous snapshot), ASYNC (upload), ALIGNMENT (barrier\n"
          "alignment), START DELAY (from the trigger to the task's first\n"
          "barrier); UNALIGNED: how many tasks took their part before\n"
          "every barrier came, and why (unaligned mode, timeout of\n"
          "aligned-checkpoint-timeout, buffer-limit of\n"
          "alignment.max-buffered-bytes).\n"
          "\n"
          "  --task        also print each checkpoint's per-task rows: end\n"
          "                to end, sync, async, alignment, start delay,\n"
          "                state size, buffered, failed, dead letters,\n"
          "                paused (longest input partition pause),\n"
          "                unaligned (why)\n"
          "  --json        print what the coordinator serves at GET\n"
          "                /checkpoints (per-task figures included)\n"
          "  --history N   keep the newest N checkpoints (default %d)\n"
          "\n"
          "DEAD LETTERS: the records the tasks wrote to their dead-letter\n"
          "topics up to the checkpoint (errors.tolerance=all); \"Failed\n"
          "records\" counts every tolerated failure up to the latest\n"
          "completed checkpoint. Both are restored with the state, so\n"
          "restores do not count a record twice.\n",
          HISTORY_DEFAULT);
}

/* The table, then with @p tasks each checkpoint's per-task rows. */
static ksnap_err_t render_table(const ksnap_coord_stats_t *stats, int tasks,
                                ksnap_buf_t *out) {
  ksnap_err_t err = ksnap_coord_stats_table(stats, out);
  const ksnap_ckpt_stats_t *ent;

  for (size_t i = 0; tasks && !err && (ent = ksnap_coord_stats_at(stats, i));
       i++)
    if (!(err = ksnap_buf_appendf(out, "\n")))
      err = ksnap_coord_stats_detail(stats, ent->id, out);
  return err;
}

static int list(const char *path, int json, int tasks, size_t history) {
  recs_t ctl = {0, NULL, NULL, 0, 0}, acks = {1, NULL, NULL, 0, 0};
  ksnap_coord_stats_t *stats = NULL;
  ksnap_conf_t *conf = NULL;
  ksnap_job_t *job = NULL;
  ksnap_error_t error;
  char topic[300];
  ksnap_buf_t out;
  int rc;

  if ((rc = cli_conf_load(path, &conf)) || (rc = cli_log_from_conf(conf))) {
    ksnap_conf_destroy(conf);
    return rc;
  }
  ksnap_buf_init(&out);
  ksnap_error_clear(&error);
  rc = KSNAP_EXIT_FAIL;
  if (ksnap_job_new(conf, &job, cli_print_error, NULL))
    goto out;
  ksnap__coord_topic(topic, sizeof(topic), ksnap_job_name(job),
                     KSNAP_COORD_CONTROL_SUFFIX);
  if (ksnap__coord_read_history(conf, topic, 30000, collect, &ctl, &error))
    goto fail;
  ksnap__coord_topic(topic, sizeof(topic), ksnap_job_name(job),
                     KSNAP_COORD_ACKS_SUFFIX);
  if (ksnap__coord_read_history(conf, topic, 30000, collect, &acks, &error))
    goto fail;
  if (ksnap_coord_stats_from_history(job, ctl.recs, ctl.ts, ctl.n, acks.recs,
                                     acks.ts, acks.n, history, &stats) ||
      (json ? ksnap_coord_stats_json(stats, &out)
            : render_table(stats, tasks, &out))) {
    fprintf(stderr, "ksnap checkpoints list: out of memory\n");
    goto out;
  }
  fwrite(out.data, 1, out.len, stdout);
  if (json)
    putchar('\n');
  rc = KSNAP_EXIT_OK;
  goto out;
fail:
  fprintf(stderr, "ksnap checkpoints list: %s\n", error.msg);
out:
  ksnap_coord_stats_destroy(stats);
  recs_free(&ctl);
  recs_free(&acks);
  ksnap_buf_cleanup(&out);
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
  return rc;
}

int cmd_checkpoints(int argc, char **argv) {
  const char *path = NULL;
  size_t history = HISTORY_DEFAULT;
  int json = 0, tasks = 0;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--task"))
      tasks = 1;
    else if (!strcmp(argv[i], "--history") && i + 1 < argc)
      history = (size_t)strtoul(argv[++i], NULL, 10);
    else if (argv[i][0] == '-' || path)
      path = "";
    else
      path = argv[i];
  }
  if (argc < 3 || strcmp(argv[1], "list") || !path || !*path || !history) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  return list(path, json, tasks, history);
}
