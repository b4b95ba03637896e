/*
 * `ksnap inspect`: prints what a checkpoint holds, as Flink's State
 * Processor API lets users read a savepoint.
 *
 *   ksnap inspect [--state [--task STAGE[I]]] <dir>/<job>/chk-<N>
 *   ksnap inspect [--state [--task STAGE[I]]] <dir>/savepoint-<job>-<N>-<r>
 *   ksnap inspect --file <dir>/<job>/chk-<N>/<stage>-<task>
 *
 * State handle paths in a checkpoint's _metadata are keys relative to the
 * storage root (state.checkpoints.dir), "<job>/chk-<N>/<stage>-<task>", so
 * the root is the checkpoint URL less its last two segments. A savepoint
 * directory's are relative to the directory itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/ksnap.h"
#include "ksnap/records.h"
#include "ksnap/state.h"
#include "ksnap/storage.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap inspect [OPTIONS] CHECKPOINT_URL\n"
          "       ksnap inspect [OPTIONS] --file STATE_FILE_URL\n"
          "\n"
          "CHECKPOINT_URL is <state.checkpoints.dir>/<job>/chk-<N>, e.g.\n"
          "s3://bucket/prefix/wordcount/chk-7 or /var/ksnap/wordcount/chk-7,\n"
          "or a savepoint's directory (the URL `ksnap savepoint` prints,\n"
          ".../savepoint-<job>-<N>-<random>).\n"
          "Prints the checkpoint's _metadata as one JSON line. The _metadata\n"
          "object exists for every checkpoint whose acknowledgements were\n"
          "all collected; only one with a committed COMPLETE record on the\n"
          "control topic is ever restored from.\n"
          "\n"
          "Options:\n"
          "  --state          also print every state entry as JSON lines: a\n"
          "                   line {\"file\":...} per snapshot file, then\n"
          "                   one line per entry (keys and values as\n"
          "                   strings when printable, else base64)\n"
          "  --task STAGE[I]  with --state: only this task, e.g. count[1]\n"
          "  --file           the URL is one state snapshot file: print its\n"
          "                   entries\n" CLI_STORAGE_OPTIONS_HELP
          "\n"
          "Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
          "AWS_SESSION_TOKEN. Every object is verified with its CRC32C.\n");
}

/* Splits URL after its last @p nseg path segments: root and the rest. */
static int split_tail(const char *url, int nseg, char **rootp, char **restp) {
  size_t len = strlen(url);
  const char *min = strstr(url, "://");
  const char *cut;
  int seen = 0;

  min = min ? min + 3 : url;
  while (len > (size_t)(min - url) + 1 && url[len - 1] == '/')
    len--; /* trailing slashes */
  for (cut = url + len - 1; cut > min; cut--) {
    if (*cut == '/' && ++seen == nseg)
      break;
  }
  if (seen < nseg || cut <= min)
    return -1;
  *rootp = strndup(url, (size_t)(cut - url));
  *restp = strndup(cut + 1, len - (size_t)(cut + 1 - url));
  return *rootp && *restp ? 0 : -1;
}

/* 1 if @p url's last segment is a savepoint directory's name. */
static int is_savepoint_dir(const char *url) {
  size_t len = strlen(url);
  const char *seg;

  while (len && url[len - 1] == '/')
    len--;
  for (seg = url + len; seg > url && seg[-1] != '/'; seg--)
    ;
  return !strncmp(seg, "savepoint-", 10);
}

/* What the decoder's two callbacks share (it passes them one opaque). */
typedef struct inspect_file_s {
  const char *path;
  const char *task;
  ksnap_buf_t line;
} inspect_file_t;

static void print_file_info(void *opaque, const ksnap_state_file_info_t *info) {
  const inspect_file_t *file = opaque;

  printf("{\"file\":\"%s\",\"task\":\"%s\",\"checkpoint\":%lld,"
         "\"key_groups\":[%d,%d],\"max_parallelism\":%d,"
         "\"incremental\":%s,\"files_referenced\":%zu}\n",
         file->path, file->task, (long long)info->checkpoint_id,
         info->kg_start, info->kg_end, info->max_parallelism,
         info->incremental ? "true" : "false", info->nmanifest);
}

static int print_entry(void *opaque, const ksnap_state_entry_t *entry) {
  inspect_file_t *file = opaque;

  ksnap_buf_reset(&file->line);
  if (ksnap_state_entry_to_json(entry, &file->line))
    return 1;
  fwrite(file->line.data, 1, file->line.len, stdout);
  return 0;
}

/* Prints one snapshot file's header line and entries. */
static ksnap_err_t print_state_file(ksnap_storage_t *st, const char *key,
                                    const char *task, ksnap_error_t *error) {
  inspect_file_t file = {key, task, {NULL, 0, 0}};
  ksnap_buf_t bytes;
  ksnap_err_t err;

  ksnap_buf_init(&bytes);
  err = ksnap_storage_get(st, key, &bytes, error);
  if (!err) {
    err = ksnap_state_file_decode(bytes.data, bytes.len, print_file_info,
                                  print_entry, &file, error);
    if (err)
      ksnap_error_prefix(error, "%s", key);
  }
  ksnap_buf_cleanup(&file.line);
  ksnap_buf_cleanup(&bytes);
  return err;
}

/* @p chk's _metadata; with @p relative (a savepoint directory) its
 * handles are relative to @p chk. */
static ksnap_err_t print_metadata(ksnap_storage_t *st, const char *chk,
                                  int relative, int with_state,
                                  const char *only_task,
                                  ksnap_error_t *error) {
  ksnap_checkpoint_meta_t meta;
  ksnap_buf_t bytes;
  char key[1024], task[256];
  char *json = NULL;
  ksnap_err_t err;

  memset(&meta, 0, sizeof(meta));
  ksnap_buf_init(&bytes);
  snprintf(key, sizeof(key), "%s/_metadata", chk);
  err = ksnap_storage_get(st, key, &bytes, error);
  if (!err && !(err = ksnap_codec_to_json(bytes.data, bytes.len, &json, error)))
    printf("%s\n", json);
  if (!err && with_state)
    err = ksnap_codec_meta_decode(bytes.data, bytes.len, &meta, error);
  for (size_t t = 0; !err && with_state && t < meta.task_cnt; t++) {
    const ksnap_task_snapshot_t *ts = &meta.tasks[t];

    snprintf(task, sizeof(task), "%s[%d]", ts->task.stage, ts->task.index);
    if (only_task && strcmp(only_task, task))
      continue;
    for (size_t h = 0; !err && h < ts->handle_cnt; h++) {
      if (relative)
        snprintf(key, sizeof(key), "%s/%s", chk, ts->handles[h].path);
      else
        snprintf(key, sizeof(key), "%s", ts->handles[h].path);
      err = print_state_file(st, key, task, error);
    }
  }
  ksnap_checkpoint_meta_cleanup(&meta);
  free(json);
  ksnap_buf_cleanup(&bytes);
  return err;
}

int cmd_inspect(int argc, char **argv) {
  ksnap_storage_opts_t opts;
  const char *url = NULL, *only_task = NULL;
  int with_state = 0, one_file = 0, savepoint = 0, rc = KSNAP_EXIT_FAIL;
  char *root = NULL, *rest = NULL;
  ksnap_storage_t *st = NULL;
  ksnap_error_t error;
  ksnap_err_t err;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  ksnap_storage_opts_init(&opts);
  for (int i = 1; i < argc; i++) {
    if (cli_storage_option(argc, argv, &i, &opts))
      continue;
    if (!strcmp(argv[i], "--state"))
      with_state = 1;
    else if (!strcmp(argv[i], "--file"))
      one_file = 1;
    else if (!strcmp(argv[i], "--task") && i + 1 < argc)
      only_task = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1] == '-') {
      fprintf(stderr, "ksnap inspect: unknown option \"%s\"\n", argv[i]);
      return KSNAP_EXIT_USAGE;
    } else if (!url)
      url = argv[i];
    else {
      fprintf(stderr, "ksnap inspect: too many arguments\n");
      return KSNAP_EXIT_USAGE;
    }
  }
  if (!url || (only_task && !with_state) || (one_file && with_state)) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  savepoint = !one_file && is_savepoint_dir(url);
  if (split_tail(url, one_file || savepoint ? 1 : 2, &root, &rest)) {
    fprintf(stderr, "ksnap inspect: \"%s\" does not name %s\n", url,
            one_file ? "a file" : "a checkpoint (<dir>/<job>/chk-<N>)");
    free(root);
    free(rest);
    return KSNAP_EXIT_USAGE;
  }
  ksnap_storage_opts_from_env(&opts);
  ksnap_error_clear(&error);
  err = ksnap_storage_open(root, &opts, &st, &error);
  if (!err)
    err = one_file ? print_state_file(st, rest, "", &error)
                   : print_metadata(st, rest, savepoint, with_state,
                                    only_task, &error);
  fflush(stdout);
  if (err)
    fprintf(stderr, "ksnap inspect: %s\n", error.msg);
  else
    rc = KSNAP_EXIT_OK;
  ksnap_storage_destroy(st);
  free(root);
  free(rest);
  return rc;
}
