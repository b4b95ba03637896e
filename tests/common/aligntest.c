/* The fixture of the aligner suites (see aligntest.h). */
#include "aligntest.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

ksnap_gate_t *gate;
ksnap_accept_t acc;
ksnap_aligner_t *al;
ksnap_aligner_conf_t conf;
ksnap_error_t err;
static char trace[4096];
int nfreed;

static void free_rec(void *rec, void *opaque) {
  (void)rec;
  (void)opaque;
  nfreed++;
}

void make_gate(int nparts) {
  gate = ksnap_gate_new();
  for (int p = 0; p < nparts; p++)
    ck_assert_int_eq(
        ksnap_gate_add_partition(gate, "x", p, "up", 2, NULL, &err),
        KSNAP_ERR_OK);
}

void start(ksnap_align_mode_t mode, int nparts) {
  make_gate(nparts);
  ksnap_accept_init(&acc, gate, 1);
  memset(&conf, 0, sizeof(conf));
  conf.mode = mode;
  conf.timeout_ms = 100;
  conf.free_rec = free_rec;
  al = ksnap_aligner_new(gate, &acc, &conf);
  ck_assert_ptr_nonnull(al);
  nfreed = 0;
}

void restart(void) { /* after changing conf or acc */
  ksnap_aligner_destroy(al);
  al = ksnap_aligner_new(gate, &acc, &conf);
}

void teardown(void) {
  ksnap_aligner_destroy(al);
  ksnap_gate_destroy(gate);
  al = NULL;
  gate = NULL;
}

/* Drains the actions into `trace`; returns it. */
const char *drain(void) {
  ksnap_action_t act;
  size_t len = 0;

  trace[0] = '\0';
  while (ksnap_aligner_pop(al, &act)) {
    char item[512];
    int n = 0;
    switch (act.kind) {
    case KSNAP_ACT_PROCESS:
    case KSNAP_ACT_CONSUMED:
    case KSNAP_ACT_BUFFER:
      n = snprintf(item, sizeof(item), "%c %d@%lld",
                   "PSCB"[act.kind], (int)act.in.chan,
                   (long long)act.in.offset);
      break;
    case KSNAP_ACT_SKIP:
      n = snprintf(item, sizeof(item), "S %d@%lld:%s", (int)act.in.chan,
                   (long long)act.in.offset,
                   ksnap_accept_verdict2str(act.verdict));
      break;
    case KSNAP_ACT_PAUSE:
    case KSNAP_ACT_RESUME:
      n = snprintf(item, sizeof(item), "%s %d", ksnap_action2str(act.kind),
                   (int)act.part);
      break;
    case KSNAP_ACT_SNAPSHOT:
      n = snprintf(item, sizeof(item), "SNAP %lld%s%s", (long long)act.id,
                   act.unaligned ? "u" : "",
                   act.unaligned_reason == KSNAP_UNALIGNED_REREAD ? "r" : "");
      for (int32_t i = 0; i < act.npos; i++)
        n += snprintf(item + n, sizeof(item) - (size_t)n, " %d:%lld:%d%s",
                      (int)act.pos[i].chan, (long long)act.pos[i].off,
                      act.pos[i].passed, act.pos[i].finished ? "f" : "");
      break;
    case KSNAP_ACT_ABORT:
      n = snprintf(item, sizeof(item), "ABORT %lld (%s)", (long long)act.id,
                   act.reason);
      break;
    case KSNAP_ACT_FORWARD_CANCEL:
      n = snprintf(item, sizeof(item), "FWD %lld", (long long)act.id);
      break;
    case KSNAP_ACT_DROP:
      n = snprintf(item, sizeof(item), "D %d@%lld", (int)act.in.chan,
                   (long long)act.in.offset);
      break;
    case KSNAP_ACT_SEEK:
      n = snprintf(item, sizeof(item), "SEEK %d@%lld", (int)act.part,
                   (long long)act.seek_off);
      break;
    }
    len += (size_t)snprintf(trace + len, sizeof(trace) - len, "%s%s",
                            len ? " | " : "", item);
    (void)n;
  }
  return trace;
}

ksnap_err_t push(int32_t c, int64_t off, int64_t gen,
                        ksnap_rec_kind_t kind, int64_t id, int64_t now) {
  ksnap_in_t in = {c, off, gen, kind, id, 0 /* trigger ts */, 10, NULL, 0};
  return ksnap_aligner_push(al, &in, now, &err);
}

