/* The .properties parser (plugin/src/base/props.c): every syntax rule, every
 * error message exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "base/props.h"
#include "testutil.h"

static char errors[4096];
static int nerrors;

static void collect(void *opaque, const char *msg) {
  (void)opaque;
  nerrors++;
  strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
  strcat(errors, "\n");
}

/* Parses @p text as "job.properties", collecting errors. */
static ksnap_props_t *parse(const char *text, size_t len, ksnap_err_t expect) {
  ksnap_props_t *props = NULL;

  errors[0] = '\0';
  nerrors = 0;
  ck_assert_int_eq(ksnap_props_parse_string("job.properties", text, len,
                                            &props, collect, NULL),
                   expect);
  ck_assert_ptr_nonnull(props);
  return props;
}
#define PARSE(text) parse((text), strlen(text), KSNAP_ERR_OK)
#define PARSE_BAD(text) parse((text), strlen(text), KSNAP_ERR_CONF_SYNTAX)

static void assert_entry(ksnap_props_t *props, size_t i, const char *key,
                         const char *value, int line) {
  const ksnap_props_entry_t *e = ksnap_props_get(props, i);

  ck_assert_ptr_nonnull(e);
  ck_assert_str_eq(e->key, key);
  ck_assert_str_eq(e->value, value);
  ck_assert_str_eq(e->file, "job.properties");
  ck_assert_int_eq(e->line, line);
}

START_TEST(separators) {
  ksnap_props_t *p = PARSE("a=1\nb: 2\nc 3\nd \t = \t4\ne:=5\nf\ng=\nh = = x\n"
                           "i\t\tj k\n");
  ck_assert_uint_eq(ksnap_props_count(p), 9);
  assert_entry(p, 0, "a", "1", 1);
  assert_entry(p, 1, "b", "2", 2);
  assert_entry(p, 2, "c", "3", 3);
  assert_entry(p, 3, "d", "4", 4);
  assert_entry(p, 4, "e", "=5", 5);
  assert_entry(p, 5, "f", "", 6);
  assert_entry(p, 6, "g", "", 7);
  assert_entry(p, 7, "h", "= x", 8);
  assert_entry(p, 8, "i", "j k", 9);
  ck_assert_str_eq(errors, "");
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(comments_blank_lines_and_whitespace) {
  ksnap_props_t *p = PARSE("# comment\n! also\n   # indented\n\t! too\n\n"
                           "   \t \n  key = value # not a comment  \n");
  ck_assert_uint_eq(ksnap_props_count(p), 1);
  /* leading whitespace dropped, trailing kept, '#' inside a value kept */
  assert_entry(p, 0, "key", "value # not a comment  ", 7);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(value_escapes) {
  ksnap_props_t *p = PARSE("k=a\\tb\\nc\\rd\\fe\\\\f\\qg\\=\\:\\ \\#\n");
  assert_entry(p, 0, "k", "a\tb\nc\rd\fe\\fqg=: #", 1);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(unicode_escapes_become_utf8) {
  ksnap_props_t *p =
      PARSE("a=\\u0041\\u00e9\\u20AC\nb=\\uD83D\\uDE00!\n\\u006By=v\n");
  assert_entry(p, 0, "a", "A\xC3\xA9\xE2\x82\xAC", 1);
  assert_entry(p, 1, "b", "\xF0\x9F\x98\x80!", 2);
  assert_entry(p, 2, "ky", "v", 3);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(key_escapes) {
  ksnap_props_t *p = PARSE("a\\=b\\:c\\ d = v\n\\#not\\!comment=1\n");
  assert_entry(p, 0, "a=b:c d", "v", 1);
  assert_entry(p, 1, "#not!comment", "1", 2);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(line_continuations) {
  ksnap_props_t *p = PARSE("list = one, \\\n      two, \\\n\t  three\n"
                           "even=a\\\\\n"
                           "odd=b\\\\\\\n   c\n"
                           "k\\\n  ey=v\n"
                           "c=x\\\n   # not a comment\n"
                           "last=z\n");
  assert_entry(p, 0, "list", "one, two, three", 1);
  assert_entry(p, 1, "even", "a\\", 4); /* two backslashes: no continuation */
  assert_entry(p, 2, "odd", "b\\c", 5);
  assert_entry(p, 3, "key", "v", 7);
  assert_entry(p, 4, "c", "x# not a comment", 9);
  assert_entry(p, 5, "last", "z", 11);
  ck_assert_uint_eq(ksnap_props_count(p), 6);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(comment_lines_never_continue) {
  ksnap_props_t *p = PARSE("# comment \\\na=1\n");
  ck_assert_uint_eq(ksnap_props_count(p), 1);
  assert_entry(p, 0, "a", "1", 2);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(continuation_at_end_of_input) {
  ksnap_props_t *p = PARSE("a=1\\");
  assert_entry(p, 0, "a", "1", 1);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(line_endings_cr_crlf_lf_and_bom) {
  ksnap_props_t *p = PARSE("\xEF\xBB\xBF" "a=1\r\nb=2\rc=3\n\r\nd=4\\\r\n  5");
  assert_entry(p, 0, "a", "1", 1);
  assert_entry(p, 1, "b", "2", 2);
  assert_entry(p, 2, "c", "3", 3);
  assert_entry(p, 3, "d", "45", 5);
  ck_assert_uint_eq(ksnap_props_count(p), 4);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(duplicate_keys_later_wins) {
  ksnap_props_t *p = PARSE("a=1\nb=2\na=3\n");
  ck_assert_uint_eq(ksnap_props_count(p), 3);
  ck_assert_str_eq(ksnap_props_find(p, "a"), "3");
  ck_assert_str_eq(ksnap_props_find(p, "b"), "2");
  ck_assert_ptr_null(ksnap_props_find(p, "c"));
  ck_assert_str_eq(errors, "");
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(error_invalid_u_escape) {
  ksnap_props_t *p = PARSE_BAD("a=1\nb=\\u12\nc=\\uZZZZ\nd=4\n");
  ck_assert_str_eq(errors, "job.properties:2: invalid \\u escape\n"
                           "job.properties:3: invalid \\u escape\n");
  /* good lines around bad ones are kept */
  ck_assert_uint_eq(ksnap_props_count(p), 2);
  assert_entry(p, 1, "d", "4", 4);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(error_surrogates_and_nul_escape) {
  ksnap_props_t *p = PARSE_BAD("a=\\uD83D\nb=\\uDE00\nc=\\uD83D\\u0041\n"
                               "d=\\u0000\n");
  ck_assert_str_eq(errors,
                   "job.properties:1: unpaired surrogate in \\u escape\n"
                   "job.properties:2: unpaired surrogate in \\u escape\n"
                   "job.properties:3: unpaired surrogate in \\u escape\n"
                   "job.properties:4: \\u0000 is not allowed\n");
  ck_assert_uint_eq(ksnap_props_count(p), 0);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(error_nul_byte_and_empty_key) {
  static const char text[] = "a=x\0y\n=value\n  :v\nok=1\n";
  ksnap_props_t *p = parse(text, sizeof(text) - 1, KSNAP_ERR_CONF_SYNTAX);
  ck_assert_str_eq(errors, "job.properties:1: NUL byte is not allowed\n"
                           "job.properties:2: empty key\n"
                           "job.properties:3: empty key\n");
  ck_assert_int_eq(nerrors, 3);
  ck_assert_uint_eq(ksnap_props_count(p), 1);
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(error_line_of_a_continued_entry_is_its_first_line) {
  ksnap_props_t *p = PARSE_BAD("a=1\nb=x\\\n  \\u00\n");
  ck_assert_str_eq(errors, "job.properties:2: invalid \\u escape\n");
  ksnap_props_destroy(p);
}
END_TEST

START_TEST(parse_file_and_cannot_open) {
  char *dir = ksnap_test_tmpdir("props");
  char path[512], expect[1024];
  ksnap_props_t *p = NULL;
  FILE *fp;

  snprintf(path, sizeof(path), "%s/job.properties", dir);
  fp = fopen(path, "w");
  fputs("# job\njob.name = demo\n", fp);
  fclose(fp);
  ck_assert_int_eq(ksnap_props_parse_file(path, &p, collect, NULL),
                   KSNAP_ERR_OK);
  ck_assert_str_eq(ksnap_props_get(p, 0)->file, path);
  ck_assert_int_eq(ksnap_props_get(p, 0)->line, 2);
  ck_assert_str_eq(ksnap_props_find(p, "job.name"), "demo");
  ksnap_props_destroy(p);

  errors[0] = '\0';
  snprintf(path, sizeof(path), "%s/missing.properties", dir);
  ck_assert_int_eq(ksnap_props_parse_file(path, &p, collect, NULL),
                   KSNAP_ERR_IO);
  ck_assert_ptr_null(p);
  snprintf(expect, sizeof(expect),
           "%s: cannot open: No such file or directory\n", path);
  ck_assert_str_eq(errors, expect);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("props");
  TCase *tc = tcase_create("syntax");
  TCase *te = tcase_create("errors");

  tcase_add_test(tc, separators);
  tcase_add_test(tc, comments_blank_lines_and_whitespace);
  tcase_add_test(tc, value_escapes);
  tcase_add_test(tc, unicode_escapes_become_utf8);
  tcase_add_test(tc, key_escapes);
  tcase_add_test(tc, line_continuations);
  tcase_add_test(tc, comment_lines_never_continue);
  tcase_add_test(tc, continuation_at_end_of_input);
  tcase_add_test(tc, line_endings_cr_crlf_lf_and_bom);
  tcase_add_test(tc, duplicate_keys_later_wins);
  tcase_add_test(te, error_invalid_u_escape);
  tcase_add_test(te, error_surrogates_and_nul_escape);
  tcase_add_test(te, error_nul_byte_and_empty_key);
  tcase_add_test(te, error_line_of_a_continued_entry_is_its_first_line);
  tcase_add_test(te, parse_file_and_cannot_open);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, te);
  return ksnap_test_run(s);
}
