/*
 * Line-protocol driver of the input side (gate + acceptance rule + aligner)
 * for tests/model/crosscheck.py. Reads one command per line on stdin and
 * answers with one line per action, then a line ".". Channels are numbered
 * part * nwriters + writer, as ksnap_gate_add_partition assigns them.
 *
 *   INIT nparts nwriters mode timeout_ms max_bytes gen
 *           mode: aligned, unaligned, timeout, alo, or early (unaligned
 *           with snapshot_on_trigger)
 *   RESTORE nparts nwriters mode timeout_ms max_bytes gen base_id base_gen
 *           c off passed ...          (one triple per channel)
 *   REC part offset writer gen kind id trigger_ts size now tag
 *           kind: D data, B barrier, C cancel, E end; tag: uid or -
 *   TICK now
 *   ABORT id now
 *   TRIGGER id trigger_ts now       (the coordinator's TRIGGER reached B)
 *
 * Answers: P tag | S tag VERDICT | C tag | B tag | PAUSE p | RESUME p |
 *          SNAP id unaligned c off passed finished ... | ABORT id reason |
 *          FWD id | ERR name message
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/aligner.h"
#include "ksnap/ksnap.h"

static ksnap_gate_t *gate;
static ksnap_aligner_t *al;
static int nwriters;

static void free_tag(void *rec, void *opaque) {
  (void)opaque;
  free(rec);
}

static ksnap_align_mode_t parse_mode(const char *s) {
  if (!strcmp(s, "unaligned") || !strcmp(s, "early"))
    return KSNAP_ALIGN_UNALIGNED;
  if (!strcmp(s, "timeout"))
    return KSNAP_ALIGN_ALIGNED_TIMEOUT;
  if (!strcmp(s, "alo"))
    return KSNAP_ALIGN_AT_LEAST_ONCE;
  return KSNAP_ALIGN_ALIGNED;
}

static void report(ksnap_err_t err, const ksnap_error_t *error) {
  if (err)
    printf("ERR %s %s\n", ksnap_err2name(err), error->msg);
}

static void drain(void) {
  ksnap_action_t act;

  while (al && ksnap_aligner_pop(al, &act)) {
    const char *tag = act.in.rec ? (const char *)act.in.rec : "-";
    switch (act.kind) {
    case KSNAP_ACT_PROCESS:
      printf("P %s\n", tag);
      free(act.in.rec);
      break;
    case KSNAP_ACT_SKIP:
      printf("S %s %s\n", tag, ksnap_accept_verdict2str(act.verdict));
      free(act.in.rec);
      break;
    case KSNAP_ACT_CONSUMED:
      printf("C %s\n", tag);
      free(act.in.rec);
      break;
    case KSNAP_ACT_BUFFER:
      printf("B %s\n", tag);
      break;
    case KSNAP_ACT_PAUSE:
    case KSNAP_ACT_RESUME:
      printf("%s %d\n", ksnap_action2str(act.kind), (int)act.part);
      break;
    case KSNAP_ACT_SNAPSHOT:
      printf("SNAP %lld %d", (long long)act.id, act.unaligned);
      for (int32_t i = 0; i < act.npos; i++)
        printf(" %d %lld %d %d", (int)act.pos[i].chan,
               (long long)act.pos[i].off, act.pos[i].passed,
               act.pos[i].finished);
      printf("\n");
      break;
    case KSNAP_ACT_ABORT:
      printf("ABORT %lld %s\n", (long long)act.id, act.reason);
      break;
    case KSNAP_ACT_FORWARD_CANCEL:
      printf("FWD %lld\n", (long long)act.id);
      break;
    case KSNAP_ACT_DROP:
      printf("D %s\n", tag);
      free(act.in.rec);
      break;
    case KSNAP_ACT_SEEK:
      printf("SEEK %d %lld\n", (int)act.part, (long long)act.seek_off);
      break;
    }
  }
}

/* INIT / RESTORE: a new gate and aligner. */
static void setup(char *args, int restore) {
  int nparts = 0, pos_n = 0;
  long long timeout = 0, maxb = 0, gen = 0, base_id = 0, base_gen = 0;
  char mode[32];
  ksnap_aligner_conf_t conf;
  ksnap_accept_t acc;
  ksnap_error_t error;
  ksnap_chan_pos_t *pos = NULL;
  char *p;

  ksnap_aligner_destroy(al);
  ksnap_gate_destroy(gate);
  al = NULL;
  sscanf(args, "%d %d %31s %lld %lld %lld %lld %lld%n", &nparts, &nwriters,
         mode, &timeout, &maxb, &gen, &base_id, &base_gen, &pos_n);
  gate = ksnap_gate_new();
  for (int i = 0; i < nparts; i++)
    ksnap_gate_add_partition(gate, "x", i, "A", nwriters, NULL, &error);
  memset(&conf, 0, sizeof(conf));
  conf.mode = parse_mode(mode);
  conf.snapshot_on_trigger = !strcmp(mode, "early");
  conf.timeout_ms = timeout;
  conf.max_buffered_bytes = (size_t)maxb;
  conf.free_rec = free_tag;
  ksnap_accept_init(&acc, gate, gen);
  if (restore) {
    int n = nparts * nwriters;
    pos = calloc((size_t)n, sizeof(*pos));
    p = args + pos_n;
    for (int i = 0; i < n; i++) {
      long long off;
      int chan, passed, used;
      sscanf(p, "%d %lld %d%n", &chan, &off, &passed, &used);
      p += used;
      pos[i].chan = chan;
      pos[i].off = off;
      pos[i].passed = passed;
    }
    report(ksnap_accept_restore(&acc, gate, gen, base_id, base_gen, pos, n,
                                &error), &error);
    free(pos);
  }
  al = ksnap_aligner_new(gate, &acc, &conf);
}

int main(void) {
  char line[8192];
  ksnap_error_t error;

  ksnap_log_set_level(KSNAP_LOG_ERR);
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);
  while (fgets(line, sizeof(line), stdin)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "INIT ", 5)) {
      setup(line + 5, 0);
    } else if (!strncmp(line, "RESTORE ", 8)) {
      setup(line + 8, 1);
    } else if (!strncmp(line, "REC ", 4)) {
      int part, writer;
      long long off, gen, id, ts, size, now;
      char kind, tag[128];
      ksnap_in_t in;
      ksnap_err_t err;

      sscanf(line + 4, "%d %lld %d %lld %c %lld %lld %lld %lld %127s", &part,
             &off, &writer, &gen, &kind, &id, &ts, &size, &now, tag);
      memset(&in, 0, sizeof(in));
      in.chan = part * nwriters + writer;
      in.offset = off;
      in.gen = gen;
      in.kind = kind == 'B'   ? KSNAP_REC_BARRIER
                : kind == 'C' ? KSNAP_REC_CANCEL
                : kind == 'E' ? KSNAP_REC_END
                              : KSNAP_REC_DATA;
      in.id = id;
      in.trigger_ts_ms = ts;
      in.size = (size_t)size;
      in.rec = strdup(tag);
      err = ksnap_aligner_push(al, &in, now, &error);
      if (err)
        free(in.rec);
      report(err, &error);
    } else if (!strncmp(line, "TICK ", 5)) {
      report(ksnap_aligner_tick(al, atoll(line + 5), &error), &error);
    } else if (!strncmp(line, "TRIGGER ", 8)) {
      long long id, ts, now;
      sscanf(line + 8, "%lld %lld %lld", &id, &ts, &now);
      report(ksnap_aligner_trigger(al, id, ts, now, &error), &error);
    } else if (!strncmp(line, "ABORT ", 6)) {
      long long id, now;
      sscanf(line + 6, "%lld %lld", &id, &now);
      report(ksnap_aligner_abort(al, id, "aborted by the coordinator", now,
                                 &error), &error);
    } else {
      printf("ERR USAGE unknown command: %s\n", line);
    }
    drain();
    printf(".\n");
    fflush(stdout);
  }
  ksnap_aligner_destroy(al);
  ksnap_gate_destroy(gate);
  return 0;
}
