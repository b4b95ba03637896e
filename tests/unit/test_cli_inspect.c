/*
 * `ksnap inspect` on a checkpoint this test writes to a file:// directory
 * through the real state, codec and storage modules: metadata as JSON,
 * state entries as JSON lines, one task, one file, and a corrupt file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "ksnap/ksnap.h"
#include "ksnap/state.h"
#include "ksnap/storage.h"
#include "testutil.h"

static char *root; /* the storage root: state.checkpoints.dir */

/* Writes task count[INDEX] of 2 with words as keys and counts as values. */
static void write_task(ksnap_storage_t *st, int index, const char *key,
                       ksnap_state_handle_t *handle) {
  ksnap_state_conf_t conf;
  ksnap_state_t *state = NULL;
  ksnap_state_snapshot_t *snap = NULL;
  ksnap_buf_t bytes;
  ksnap_error_t err;
  const char *words[] = {"apple", "kiwi", "pear", "plum", "fig", "lime"};
  int id;

  ksnap_state_conf_init(&conf);
  conf.parallelism = 2;
  conf.task_index = index;
  ck_assert_int_eq(ksnap_state_new(&conf, &state, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(state, "counts", KSNAP_STATE_VALUE, 0,
                                        &id, &err), KSNAP_ERR_OK);
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
    char count[16];
    int kg = ksnap_state_key_group(words[i], strlen(words[i]), 128);

    if (ksnap_state_task_of_key_group(128, 2, kg) != index)
      continue;
    snprintf(count, sizeof(count), "%zu", i + 1);
    ck_assert_int_eq(ksnap_state_set_key(state, words[i], strlen(words[i]),
                                         &err), KSNAP_ERR_OK);
    ck_assert_int_eq(ksnap_state_value_put(state, id, count, strlen(count),
                                           &err), KSNAP_ERR_OK);
  }
  ck_assert_int_eq(ksnap_state_snapshot_begin(state, 3, key, &snap, &err),
                   KSNAP_ERR_OK);
  ksnap_buf_init(&bytes);
  ck_assert_int_eq(ksnap_state_snapshot_write(snap, &bytes, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_storage_put(st, key, bytes.data, bytes.len, &err),
                   KSNAP_ERR_OK);
  handle->path = (char *)key;
  handle->size = (int64_t)bytes.len;
  handle->checksum = "crc32c:00000000";
  ksnap_state_key_group_range(128, 2, index, &handle->key_group_start,
                              &handle->key_group_end);
  ksnap_state_snapshot_end(snap, 1);
  ksnap_state_destroy(state);
  ksnap_buf_cleanup(&bytes);
}

static void setup(void) {
  ksnap_storage_t *st = NULL;
  ksnap_state_handle_t handles[2];
  ksnap_task_snapshot_t tasks[2];
  ksnap_checkpoint_meta_t meta;
  ksnap_buf_t bytes;
  ksnap_error_t err;

  root = ksnap_test_tmpdir("inspect");
  ck_assert_int_eq(ksnap_storage_open(root, NULL, &st, &err), KSNAP_ERR_OK);
  memset(tasks, 0, sizeof(tasks));
  write_task(st, 0, "wc/chk-3/count-0", &handles[0]);
  write_task(st, 1, "wc/chk-3/count-1", &handles[1]);
  for (int i = 0; i < 2; i++) {
    tasks[i].task.stage = "count";
    tasks[i].task.index = i;
    tasks[i].handles = &handles[i];
    tasks[i].handle_cnt = 1;
  }
  memset(&meta, 0, sizeof(meta));
  meta.job = "wc";
  meta.checkpoint_id = 3;
  meta.generation = 1;
  meta.parent_id = 2;
  meta.timestamp_ms = 1700000000000;
  meta.tasks = tasks;
  meta.task_cnt = 2;
  ksnap_buf_init(&bytes);
  ck_assert_int_eq(ksnap_codec_meta_encode(&meta, &bytes, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_storage_put(st, "wc/chk-3/_metadata", bytes.data,
                                     bytes.len, &err), KSNAP_ERR_OK);
  ksnap_buf_cleanup(&bytes);
  ksnap_storage_destroy(st);
}

static void teardown(void) {
  ksnap_test_rmtree(root);
  free(root);
}

static int count_lines(const char *s, const char *needle) {
  int n = 0;

  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

START_TEST(metadata_as_json) {
  char args[512], *out, *err;

  snprintf(args, sizeof(args), "inspect %s/wc/chk-3/", root);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_msg(strstr(out, "\"checkpoint_id\": 3"), "output: %s", out);
  ck_assert_ptr_nonnull(strstr(out, "wc/chk-3/count-1"));
  ck_assert_int_eq(count_lines(out, "\n"), 1);
  free(out);
  free(err);
}
END_TEST

START_TEST(state_of_every_task_and_of_one) {
  char args[512], *out, *err;

  snprintf(args, sizeof(args), "inspect --state file://%s/wc/chk-3", root);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_int_eq(count_lines(out, "{\"file\":"), 2);
  /* every word once, across both tasks, with its count */
  ck_assert_int_eq(count_lines(out, "\"apple\""), 1);
  ck_assert_int_eq(count_lines(out, "\"lime\""), 1);
  ck_assert_int_eq(count_lines(out, "\"state\":\"counts\""), 6);
  free(out);
  free(err);

  snprintf(args, sizeof(args), "inspect --state --task 'count[1]' %s/wc/chk-3",
           root);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_int_eq(count_lines(out, "{\"file\":"), 1);
  ck_assert_ptr_nonnull(strstr(out, "\"task\":\"count[1]\""));
  ck_assert_ptr_null(strstr(out, "\"task\":\"count[0]\""));
  free(out);
  free(err);
}
END_TEST

START_TEST(one_file_and_a_corrupt_one) {
  char args[512], path[512], *out, *err;
  FILE *f;

  snprintf(args, sizeof(args), "inspect --file %s/wc/chk-3/count-0", root);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  ck_assert_int_eq(count_lines(out, "{\"file\":"), 1);
  free(out);
  free(err);

  snprintf(path, sizeof(path), "%s/wc/chk-3/count-0", root);
  f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 40, SEEK_SET);
  fputc(0x5a ^ fgetc(f), f);
  fclose(f);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "count-0"));
  ck_assert_int_eq(count_lines(err, "\n"), 1);
  free(out);
  free(err);
}
END_TEST

START_TEST(missing_checkpoint_and_usage) {
  char args[512], *out, *err;

  snprintf(args, sizeof(args), "inspect %s/wc/chk-9", root);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "ksnap inspect: "));
  ck_assert_ptr_nonnull(strstr(err, "chk-9/_metadata"));
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_test_cli("", "inspect --task 'a[0]' x/y/z", &out,
                                  &err), 2);
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_test_cli("", "inspect chk-3", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "does not name a checkpoint"));
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_inspect");
  TCase *tc = tcase_create("inspect");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, metadata_as_json);
  tcase_add_test(tc, state_of_every_task_and_of_one);
  tcase_add_test(tc, one_file_and_a_corrupt_one);
  tcase_add_test(tc, missing_checkpoint_and_usage);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
