/* `ksnap record decode FILE|-`: prints any ksnap record (a barrier body, a
 * control or ack topic value, a progress record, a _metadata object) as
 * one line of JSON, or says exactly why it is not a valid record. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ksnap/ksnap.h"

/* Records are small, but _metadata grows with the job: allow 64 MiB. */
#define RECORD_MAX_BYTES ((size_t)64 << 20)

static int usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap record decode FILE|-\n\n"
          "Decodes one ksnap record (barrier, control-topic or ack-topic\n"
          "value, sink progress, checkpoint _metadata) from FILE or stdin\n"
          "and prints it as one line of JSON. Exits 1 if the bytes are not\n"
          "a valid record (truncated, corrupt, or a newer schema version).\n");
  return out == stdout ? KSNAP_EXIT_OK : KSNAP_EXIT_USAGE;
}

static int read_all(FILE *in, const char *name, ksnap_buf_t *buf) {
  uint8_t chunk[65536];
  size_t n;

  while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0) {
    if (buf->len + n > RECORD_MAX_BYTES) {
      fprintf(stderr, "ksnap record decode: %s is larger than %zu bytes\n",
              name, RECORD_MAX_BYTES);
      return -1;
    }
    if (ksnap_buf_append(buf, chunk, n)) {
      fprintf(stderr, "ksnap record decode: out of memory\n");
      return -1;
    }
  }
  if (ferror(in)) {
    fprintf(stderr, "ksnap record decode: cannot read %s\n", name);
    return -1;
  }
  return 0;
}

int cmd_record(int argc, char **argv) {
  const char *path;
  ksnap_error_t err;
  ksnap_buf_t buf;
  char *json = NULL;
  FILE *in;
  int rc;

  if (cli_wants_help(argc, argv))
    return usage(stdout);
  if (argc != 3 || strcmp(argv[1], "decode") != 0)
    return usage(stderr);
  path = argv[2];
  in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!in) {
    perror(path);
    return KSNAP_EXIT_FAIL;
  }
  ksnap_buf_init(&buf);
  rc = read_all(in, path, &buf);
  if (in != stdin)
    fclose(in);
  if (rc == 0 && ksnap_codec_to_json(buf.data, buf.len, &json, &err)) {
    fprintf(stderr, "ksnap record decode: %s: %s\n", path, err.msg);
    rc = -1;
  }
  if (rc == 0)
    printf("%s\n", json);
  free(json);
  ksnap_buf_cleanup(&buf);
  return rc == 0 ? KSNAP_EXIT_OK : KSNAP_EXIT_FAIL;
}
