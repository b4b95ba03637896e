/* Configuration (ksnap/conf.h) as a whole: loading files with every
 * problem reported, finalize's cross-property checks, the effective
 * configuration dump, and CONFIGURATION.md generated from the table. */
#include "conf/conf_int.h"
#include "conftest.h"

START_TEST(dump_marks_defaults_and_origins) {
  char *text;

  SET_OK("rest.port", "8081");
  ck_assert_int_eq(ksnap_conf_load_string(conf, "a.properties",
                                          "job.name=one\njob.name=two\n",
                                          collect, NULL),
                   KSNAP_ERR_OK);
  text = dump(1);
  ck_assert_ptr_nonnull(strstr(text, "# a.properties:2\njob.name=two\n"
                                     "# default\n"
                                     "execution.checkpointing.interval=10s\n"));
  ck_assert_ptr_nonnull(strstr(text, "# set by the application\n"
                                     "rest.port=8081\n"));
  ck_assert_ptr_nonnull(strstr(text, "# unset\n#s3.endpoint=\n"));
  free(text);
}
END_TEST

START_TEST(all_problems_reported_at_once) {
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             "# three bad lines and a syntax error\n"
                             "execution.checkpointing.intervall=10s\n"
                             "execution.checkpointing.timeout=10 parsecs\n"
                             "execution.checkpointing.max-concurrent-"
                             "checkpoints=0\n"
                             "s3.region=\\u12\n"
                             "s3.max-retries=7\n",
                             collect, NULL),
      KSNAP_ERR_CONF_SYNTAX);
  ck_assert_int_eq(ksnap_conf_finalize(conf, collect, NULL),
                   KSNAP_ERR_CONF_MISSING);
  ck_assert_str_eq(errors,
                   "job.properties:5: invalid \\u escape\n"
                   "job.properties:2: No such configuration property: "
                   "\"execution.checkpointing.intervall\" (did you mean "
                   "\"execution.checkpointing.interval\"?)\n"
                   "job.properties:3: execution.checkpointing.timeout: invalid "
                   "duration \"10 parsecs\" (expected a number with unit ms, "
                   "s, min or h)\n"
                   "job.properties:4: execution.checkpointing.max-concurrent-"
                   "checkpoints: value 0 is outside allowed range 1..100\n"
                   "job.properties: missing required property \"job.name\"\n");
  ck_assert_int_eq(get_int("s3.max-retries"), 7); /* good lines still apply */
}
END_TEST

START_TEST(finalize_cross_property_checks) {
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             "job.name=x\n"
                             "heartbeat.interval=20s\n"
                             "execution.checkpointing.mode=AT_LEAST_ONCE\n"
                             "execution.checkpointing.unaligned.enabled=true\n"
                             "execution.checkpointing.aligned-checkpoint-"
                             "timeout=10min\n"
                             "s3.secret-key=shh\n"
                             "stage.map.parallelism=200\n"
                             "restart-strategy.exponential-delay.initial-"
                             "backoff=2min\n",
                             collect, NULL),
      KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_finalize(conf, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(
      errors,
      "job.properties:2: heartbeat.timeout (10s) must be greater than "
      "heartbeat.interval (20s)\n"
      "job.properties:5: execution.checkpointing.aligned-checkpoint-timeout "
      "(10min) must be less than execution.checkpointing.timeout (10min)\n"
      "job.properties:4: execution.checkpointing.unaligned.enabled (true) "
      "must not be combined with execution.checkpointing.mode "
      "(AT_LEAST_ONCE)\n"
      "job.properties:8: restart-strategy.exponential-delay.initial-backoff "
      "(2min) must not exceed restart-strategy.exponential-delay.max-backoff "
      "(1min)\n"
      "job.properties:6: s3.secret-key is set but s3.access-key is not\n"
      "job.properties:7: stage.map.parallelism (200) must not exceed "
      "pipeline.max-parallelism (128)\n");
  ck_assert_ptr_null(strstr(errors, "shh"));
}
END_TEST

START_TEST(alignment_buffer_holds_the_largest_record) {
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             "job.name=x\n"
                             "kafka.message.max.bytes=5000000\n"
                             "execution.checkpointing.alignment.max-buffered-"
                             "bytes=2MiB\n",
                             collect, NULL),
      KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_finalize(conf, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_ptr_nonnull(strstr(
      errors, "job.properties:3: execution.checkpointing.alignment."
              "max-buffered-bytes (2MiB) must be at least "
              "kafka.message.max.bytes (5000000): the largest record must "
              "fit\n"));
  errors[0] = '\0';
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             "execution.checkpointing.alignment.max-buffered-"
                             "bytes=8MiB\n",
                             collect, NULL),
      KSNAP_ERR_OK);
  ksnap_conf_finalize(conf, collect, NULL);
  ck_assert_ptr_null(strstr(errors, "max-buffered-bytes"));
}
END_TEST

START_TEST(finalize_ok_and_missing_without_file) {
  ck_assert_int_eq(ksnap_conf_finalize(conf, collect, NULL),
                   KSNAP_ERR_CONF_MISSING);
  ck_assert_str_eq(errors, "missing required property \"job.name\"\n");
  errors[0] = '\0';
  SET_OK("job.name", "x");
  ck_assert_int_eq(ksnap_conf_finalize(conf, collect, NULL), KSNAP_ERR_OK);
  ck_assert_str_eq(errors, "");
}
END_TEST

START_TEST(load_file_that_does_not_exist) {
  ck_assert_int_eq(ksnap_conf_load_file(conf, "/nonexistent/job.properties",
                                        collect, NULL),
                   KSNAP_ERR_IO);
  ck_assert_str_eq(errors, "/nonexistent/job.properties: cannot open: No "
                           "such file or directory\n");
}
END_TEST

START_TEST(configuration_md_is_generated_and_fresh) {
  char *text = NULL, path[1024], *committed = NULL;
  size_t len = 0, clen = 0;
  FILE *fp = open_memstream(&text, &len);
  ksnap_buf_t buf;

  for (size_t i = 0; i < ksnap__conf_nprops; i++)
    ck_assert_msg(ksnap__conf_props[i].desc && *ksnap__conf_props[i].desc,
                  "%s has an empty description", ksnap__conf_props[i].name);
  for (size_t i = 0; i < ksnap__conf_stage_nprops; i++)
    ck_assert_msg(ksnap__conf_stage_props[i].desc &&
                      *ksnap__conf_stage_props[i].desc,
                  "stage.<name>.%s has an empty description",
                  ksnap__conf_stage_props[i].name);
  ksnap_conf_doc(fp);
  fclose(fp);
  ck_assert_ptr_null(strstr(text, "|  |\n")); /* no empty description cell */

  snprintf(path, sizeof(path), "%s/CONFIGURATION.md", KSNAP_SOURCE_DIR);
  fp = fopen(path, "rb");
  ck_assert_msg(fp != NULL, "%s is missing: run `build/bin/ksnap config doc "
                "> CONFIGURATION.md`", path);
  ksnap_buf_init(&buf);
  {
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
      ksnap_buf_append(&buf, chunk, n);
  }
  fclose(fp);
  committed = (char *)ksnap_buf_detach(&buf, &clen);
  ck_assert_msg(clen == len && !memcmp(committed, text, len),
                "CONFIGURATION.md is stale: run `build/bin/ksnap config doc > "
                "CONFIGURATION.md`");
  free(committed);
  free(text);
}
END_TEST

START_TEST(every_default_parses_and_table_is_sane) {
  for (size_t i = 0; i < ksnap__conf_nprops; i++) {
    const ksnap__conf_prop_t *p = &ksnap__conf_props[i];
    char *norm = NULL;
    int64_t num;
    ck_assert_msg(!p->sdef || ksnap__conf_parse_value(p, p->name, p->sdef,
                                                      &norm, &num, errstr,
                                                      sizeof(errstr)) == 0,
                  "default of %s: %s", p->name, errstr);
    free(norm);
    ck_assert_msg(ksnap__conf_prop_find(ksnap__conf_props, ksnap__conf_nprops,
                                        p->name) == p,
                  "%s is listed twice", p->name);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("conf_files");
  TCase *tf = tcase_create("files");

  tcase_add_checked_fixture(tf, setup, teardown);
  suite_add_tcase(s, tf);
  tcase_add_test(tf, dump_marks_defaults_and_origins);
  tcase_add_test(tf, all_problems_reported_at_once);
  tcase_add_test(tf, finalize_cross_property_checks);
  tcase_add_test(tf, alignment_buffer_holds_the_largest_record);
  tcase_add_test(tf, finalize_ok_and_missing_without_file);
  tcase_add_test(tf, load_file_that_does_not_exist);
  tcase_add_test(tf, configuration_md_is_generated_and_fresh);
  tcase_add_test(tf, every_default_parses_and_table_is_sane);
  return ksnap_test_run(s);
}
