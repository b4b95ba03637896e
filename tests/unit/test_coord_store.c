/* The coordinator's storage worker and start-up checks (coord_store.h) on
 * the file backend. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/coord_savepoint.h"
#include "driver/coord_store.h"
#include "ksnap/buf.h"
#include "testutil.h"

static ksnap_conf_t *conf_with(const char *dir, const char *extra) {
  ksnap_conf_t *conf = ksnap_conf_new();
  char text[1024];

  snprintf(text, sizeof(text),
           "job.name=j\nstate.checkpoints.dir=%s\n"
           "stage.a.operator=x\nstage.a.input=source:in\n"
           "stage.a.output=sink:out\n%s", dir, extra);
  ck_assert_int_eq(ksnap_conf_load_string(conf, "t", text, NULL, NULL), 0);
  ck_assert_int_eq(ksnap_conf_finalize(conf, NULL, NULL), 0);
  return conf;
}

static ksnap_conf_t *conf_for(const char *dir) { return conf_with(dir, ""); }

/* Waits for the next result of @p s. */
static void next_result(ksnap__coord_store_t *s, ksnap__store_op_t op,
                        int64_t id, int ok) {
  ksnap__store_op_t got;
  int64_t gid;
  char *errmsg = NULL;

  for (int i = 0; i < 500; i++) {
    if (ksnap__coord_store_result(s, &got, &gid, &errmsg)) {
      ck_assert_int_eq(got, op);
      ck_assert_int_eq(gid, id);
      ck_assert_msg(ok == !errmsg, "%s", errmsg ? errmsg : "no error");
      free(errmsg);
      return;
    }
    usleep(10 * 1000);
  }
  ck_abort_msg("no result");
}

static void sample_meta(ksnap_checkpoint_meta_t *m, ksnap_task_snapshot_t *t,
                        ksnap_state_handle_t *h, int64_t id) {
  memset(m, 0, sizeof(*m));
  memset(t, 0, sizeof(*t));
  m->job = "j";
  m->checkpoint_id = id;
  m->parent_id = KSNAP_CHECKPOINT_NONE;
  m->tasks = t;
  m->task_cnt = 1;
  t->task = (ksnap_task_id_t){"a", 0};
  t->handles = h;
  t->handle_cnt = 1;
}

START_TEST(metadata_written_then_loaded_and_verified) {
  char *dir = ksnap_test_tmpdir("cstore");
  ksnap_conf_t *conf = conf_for(dir);
  ksnap__coord_store_t *s;
  ksnap_storage_t *st;
  ksnap_error_t error;
  ksnap_checkpoint_meta_t m, back;
  ksnap_task_snapshot_t t;
  ksnap_storage_stat_t stat;
  ksnap_state_handle_t h = {"j/chk-3/a-0", 5, NULL, 0, 127};
  char sum[32];
  ksnap_buf_t buf;
  size_t len;

  ck_assert_int_eq(ksnap__coord_storage_open(conf, &st, &error), 0);
  ck_assert_int_eq(ksnap_storage_put(st, h.path, "state", 5, &error), 0);
  ck_assert_int_eq(ksnap_storage_head(st, h.path, &stat, &error), 0);
  snprintf(sum, sizeof(sum), "crc32c:%08x", stat.crc32c);
  h.checksum = sum;
  sample_meta(&m, &t, &h, 3);
  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_codec_meta_encode(&m, &buf, &error), 0);
  ck_assert_ptr_nonnull(s = ksnap__coord_store_new(conf, "j", &error));
  ck_assert_int_eq(
      ksnap__coord_store_put_meta(s, 3, buf.data, buf.len, NULL), 0);
  ksnap_buf_detach(&buf, &len);
  next_result(s, KSNAP__STORE_PUT_META, 3, 1);

  ck_assert_int_eq(ksnap__coord_meta_load(st, "j", 3, &back, &error), 0);
  ck_assert_int_eq(back.checkpoint_id, 3);
  ck_assert_int_eq(ksnap__coord_meta_verify(st, &back, &error), 0);
  ksnap_checkpoint_meta_cleanup(&back);

  /* a changed checksum names the object */
  sum[7] = sum[7] == '0' ? '1' : '0';
  ck_assert_int_eq(ksnap__coord_meta_verify(st, &m, &error),
                   KSNAP_ERR_CHECKSUM);
  ck_assert_ptr_nonnull(strstr(error.msg, "j/chk-3/a-0"));

  /* retire twice: both succeed, everything under chk-3/ is gone */
  ck_assert_int_eq(ksnap__coord_store_retire(s, 3), 0);
  next_result(s, KSNAP__STORE_RETIRE, 3, 1);
  ck_assert_int_eq(ksnap__coord_store_retire(s, 3), 0);
  next_result(s, KSNAP__STORE_RETIRE, 3, 1);
  ck_assert_int_eq(ksnap__coord_meta_load(st, "j", 3, &back, &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap__coord_meta_verify(st, &m, &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap__coord_store_busy(s), 0);
  ksnap__coord_store_destroy(s);
  ksnap_storage_destroy(st);
  ksnap_conf_destroy(conf);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A savepoint's directory: beside the checkpoints by default, named
 * savepoint-<job>-<id>-<random> (two plans differ), its file copied under
 * a relative name, its `_metadata` written there and verified against
 * the directory alone; a handle of another checkpoint is refused. */
START_TEST(savepoint_copied_into_its_own_directory) {
  char *dir = ksnap_test_tmpdir("cstore-sp");
  ksnap_conf_t *conf = conf_for(dir);
  ksnap__coord_savepoint_t *sp, *sp2;
  ksnap__coord_store_t *s;
  ksnap_storage_t *st, *spst;
  ksnap_error_t error;
  ksnap_checkpoint_meta_t m, back;
  ksnap_task_snapshot_t t;
  ksnap_state_handle_t h = {"j/chk-3/a-0", 5, NULL, 0, 127};
  ksnap_storage_stat_t stat;
  char want[600], sum[32];
  ksnap_buf_t buf;
  size_t len;

  ck_assert_int_eq(ksnap__coord_storage_open(conf, &st, &error), 0);
  ck_assert_int_eq(ksnap_storage_put(st, h.path, "state", 5, &error), 0);
  ck_assert_int_eq(ksnap_storage_head(st, h.path, &stat, &error), 0);
  snprintf(sum, sizeof(sum), "crc32c:%08x", stat.crc32c);
  h.checksum = sum;
  sample_meta(&m, &t, &h, 3);
  m.is_savepoint = true;
  ck_assert_msg(ksnap__coord_savepoint_plan(conf, &m, &sp, &error) == 0, "%s",
                error.msg);
  ck_assert_int_eq(ksnap__coord_savepoint_plan(conf, &m, &sp2, &error), 0);
  snprintf(want, sizeof(want), "%s/j/savepoint-j-3-", dir);
  ck_assert_msg(!strncmp(sp->url, want, strlen(want)), "%s", sp->url);
  ck_assert_uint_eq(strlen(sp->url), strlen(want) + 12);
  ck_assert_str_ne(sp->url, sp2->url);
  ksnap__coord_savepoint_free(sp2);
  snprintf(want, sizeof(want), "%s", sp->url);

  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_codec_meta_encode(&m, &buf, &error), 0);
  ck_assert_ptr_nonnull(s = ksnap__coord_store_new(conf, "j", &error));
  ck_assert_int_eq(ksnap__coord_store_put_meta(s, 3, buf.data, buf.len, sp),
                   0);
  ksnap_buf_detach(&buf, &len);
  next_result(s, KSNAP__STORE_PUT_META, 3, 1);
  ksnap__coord_store_destroy(s);

  ck_assert_int_eq(ksnap_storage_open(want, NULL, &spst, &error), 0);
  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_storage_get(spst, "_metadata", &buf, &error), 0);
  ck_assert_int_eq(ksnap_codec_meta_decode(buf.data, buf.len, &back, &error),
                   0);
  ck_assert(back.is_savepoint);
  ck_assert_str_eq(back.tasks[0].handles[0].path, "a-0");
  ck_assert_int_eq(ksnap__coord_meta_verify(spst, &back, &error), 0);
  ksnap_checkpoint_meta_cleanup(&back);
  ksnap_buf_cleanup(&buf);
  ck_assert_int_eq(ksnap__coord_meta_load(st, "j", 3, &back, &error), 0);
  ksnap_checkpoint_meta_cleanup(&back);

  h.path = "j/chk-2/a-0"; /* an incremental chain's older file */
  ck_assert_int_eq(ksnap__coord_savepoint_plan(conf, &m, &sp, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_msg(strstr(error.msg, "task a[0]'s state file j/chk-2/a-0"),
                "%s", error.msg);
  ksnap_storage_destroy(spst);
  ksnap_storage_destroy(st);
  ksnap_conf_destroy(conf);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

/* state.savepoints.dir, when set, is the directory's parent. */
START_TEST(savepoint_dir_from_state_savepoints_dir) {
  ksnap_conf_t *conf = conf_with("s3://bucket/pre/",
                                 "state.savepoints.dir=s3://other/sp/\n");
  ksnap__coord_savepoint_t *sp;
  ksnap_checkpoint_meta_t m;
  ksnap_task_snapshot_t t;
  ksnap_state_handle_t h = {"j/chk-7/a-0", 5, "crc32c:00000000", 0, 127};
  ksnap_error_t error;

  sample_meta(&m, &t, &h, 7);
  ck_assert_msg(ksnap__coord_savepoint_plan(conf, &m, &sp, &error) == 0, "%s",
                error.msg);
  ck_assert_msg(!strncmp(sp->url, "s3://other/sp/savepoint-j-7-", 28), "%s",
                sp->url);
  ck_assert_msg(!strncmp(sp->prefix, "savepoint-j-7-", 14), "%s", sp->prefix);
  ck_assert_str_eq(sp->src[0], "j/chk-7/a-0");
  ck_assert_uint_eq(strlen(sp->dst[0]), strlen(sp->prefix) + 4);
  ksnap__coord_savepoint_free(sp);
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(meta_url_and_missing_dir) {
  ksnap_conf_t *conf = conf_for("s3://bucket/pre/");
  ksnap_conf_t *none = ksnap_conf_new();
  ksnap_storage_t *st;
  ksnap_error_t error;
  char *url = ksnap__coord_meta_url(conf, "j", 12);

  ck_assert_str_eq(url, "s3://bucket/pre/j/chk-12/_metadata");
  free(url);
  ck_assert_int_eq(ksnap__coord_storage_open(none, &st, &error),
                   KSNAP_ERR_CONF_MISSING);
  ck_assert_ptr_nonnull(strstr(error.msg, "state.checkpoints.dir"));
  ksnap_conf_destroy(none);
  ksnap_conf_destroy(conf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_store");
  TCase *tc = tcase_create("store");

  tcase_add_test(tc, metadata_written_then_loaded_and_verified);
  tcase_add_test(tc, meta_url_and_missing_dir);
  tcase_add_test(tc, savepoint_copied_into_its_own_directory);
  tcase_add_test(tc, savepoint_dir_from_state_savepoints_dir);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
