/*
 * `ksnap storage ls|put|get|cat|rm URL`: look at checkpoint storage.
 * Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN / AWS_REGION / AWS_ENDPOINT_URL; --endpoint, --region
 * and --path-style override them. Errors are one line on stderr, exit 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/storage.h"

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap storage [OPTIONS] ls URL\n"
          "       ksnap storage [OPTIONS] put URL [FILE]   (stdin without FILE)\n"
          "       ksnap storage [OPTIONS] get URL [FILE]   (stdout without FILE)\n"
          "       ksnap storage [OPTIONS] cat URL\n"
          "       ksnap storage [OPTIONS] rm URL\n"
          "\n"
          "URL is s3://BUCKET/KEY, file:///PATH or a plain path; for ls it is\n"
          "a prefix (every key under it is listed with its size).\n"
          "Objects are verified with their CRC32C on get/cat.\n"
          "\n"
          "Options:\n"
          CLI_STORAGE_OPTIONS_HELP
          "\n"
          "Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
          "AWS_SESSION_TOKEN.\n");
}

/* Splits URL into the storage URL (its parent) and the last key segment. */
static int split_url(const char *url, char **parent, const char **key) {
  const char *slash = strrchr(url, '/');
  const char *min = strstr(url, "://");

  min = min ? min + 3 : url;
  if (!slash || slash < min || !slash[1])
    return -1;
  if (!strncmp(url, "s3://", 5) && !strchr(min, '/'))
    return -1;
  *parent = strndup(url, (size_t)(slash - url));
  if (!**parent) { /* "/key" at the root */
    free(*parent);
    *parent = strdup("/");
  }
  *key = slash + 1;
  return *parent ? 0 : -1;
}

static int print_entry(void *opaque, const char *key, uint64_t size) {
  (void)opaque;
  printf("%12llu  %s\n", (unsigned long long)size, key);
  return 0;
}

static int write_out(void *opaque, const uint8_t *data, size_t len) {
  return fwrite(data, 1, len, opaque) == len ? 0 : -1;
}

static ksnap_err_t do_put(ksnap_storage_t *st, const char *key,
                          const char *file, ksnap_error_t *error) {
  FILE *in = file ? fopen(file, "rb") : stdin;
  ksnap_storage_writer_t *w;
  static char chunk[1 << 20];
  ksnap_err_t err;
  size_t n;

  if (!in)
    return ksnap_error_set(error, KSNAP_ERR_IO, "cannot open %s", file);
  if ((err = ksnap_storage_writer_open(st, key, &w, error)))
    goto done;
  while (!err && (n = fread(chunk, 1, sizeof(chunk), in)) > 0)
    err = ksnap_storage_writer_write(w, chunk, n, error);
  if (!err && ferror(in))
    err = ksnap_error_set(error, KSNAP_ERR_IO, "cannot read %s",
                          file ? file : "stdin");
  if (err)
    ksnap_storage_writer_abort(w);
  else
    err = ksnap_storage_writer_commit(w, error);
done:
  if (file)
    fclose(in);
  return err;
}

static ksnap_err_t do_get(ksnap_storage_t *st, const char *key,
                          const char *file, ksnap_error_t *error) {
  char tmp[4096];
  FILE *out = stdout;
  ksnap_err_t err;

  if (file) {
    snprintf(tmp, sizeof(tmp), "%s.ksnap-part", file);
    if (!(out = fopen(tmp, "wb")))
      return ksnap_error_set(error, KSNAP_ERR_IO, "cannot create %s", tmp);
  }
  err = ksnap_storage_get_stream(st, key, write_out, out, error);
  if (fflush(out) && !err)
    err = ksnap_error_set(error, KSNAP_ERR_IO, "cannot write output");
  if (file) {
    fclose(out);
    if (!err && rename(tmp, file))
      err = ksnap_error_set(error, KSNAP_ERR_IO, "cannot rename to %s",
                            file);
    if (err)
      remove(tmp);
  }
  return err;
}

int cmd_storage(int argc, char **argv) {
  ksnap_storage_opts_t opts;
  const char *pos[4], *key = NULL;
  char *parent = NULL;
  int npos = 0, rc = KSNAP_EXIT_FAIL;
  ksnap_storage_t *st = NULL;
  ksnap_error_t error;
  ksnap_err_t err = KSNAP_ERR_OK;
  const char *verb;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  ksnap_storage_opts_init(&opts);
  for (int i = 1; i < argc; i++) {
    if (cli_storage_option(argc, argv, &i, &opts))
      continue;
    if (argv[i][0] == '-' && argv[i][1] == '-') {
      fprintf(stderr, "ksnap storage: unknown option \"%s\"\n", argv[i]);
      return KSNAP_EXIT_USAGE;
    } else if (npos < 4)
      pos[npos++] = argv[i];
    else {
      fprintf(stderr, "ksnap storage: too many arguments\n");
      return KSNAP_EXIT_USAGE;
    }
  }
  ksnap_storage_opts_from_env(&opts);
  verb = npos ? pos[0] : "";
  if (npos < 2 || (strcmp(verb, "ls") && strcmp(verb, "put") &&
                   strcmp(verb, "get") && strcmp(verb, "cat") &&
                   strcmp(verb, "rm")) ||
      (npos > 2 && strcmp(verb, "put") && strcmp(verb, "get")) ||
      npos > 3) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  if (strcmp(verb, "ls") && split_url(pos[1], &parent, &key)) {
    fprintf(stderr, "ksnap storage %s: \"%s\" does not name an object\n",
            verb, pos[1]);
    return KSNAP_EXIT_USAGE;
  }
  ksnap_error_clear(&error);
  err = ksnap_storage_open(parent ? parent : pos[1], &opts, &st, &error);
  if (!err) {
    if (!strcmp(verb, "ls"))
      err = ksnap_storage_list(st, "", print_entry, NULL, &error);
    else if (!strcmp(verb, "put"))
      err = do_put(st, key, npos > 2 ? pos[2] : NULL, &error);
    else if (!strcmp(verb, "get"))
      err = do_get(st, key, npos > 2 ? pos[2] : NULL, &error);
    else if (!strcmp(verb, "cat"))
      err = do_get(st, key, NULL, &error);
    else
      err = ksnap_storage_delete(st, key, &error);
  }
  if (err)
    fprintf(stderr, "ksnap storage %s: %s\n", verb, error.msg);
  else
    rc = KSNAP_EXIT_OK;
  ksnap_storage_destroy(st);
  free(parent);
  return rc;
}
