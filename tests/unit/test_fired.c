/* The timers' firing log and the epoch replay's plan that fires them
 * again (plugin/src/task/fired.c, PROTOCOL.md section 8.4): the log's
 * entries, and the plan's order against runs and replays of random
 * interleavings. */
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "task/fired.h"
#include "ksnap/context.h"
#include "testutil.h"

#define NCHAN 3
#define MAXEV 512

/* One event of a run or a replay: a record (chan >= 0) or a firing. */
typedef struct ev_s {
  int32_t chan; /* -1: a firing */
  int64_t offset;
  int64_t seen[NCHAN]; /* a firing: records of each channel before it */
} ev_t;

typedef struct trace_s {
  ev_t ev[MAXEV];
  int n;
  int64_t count[NCHAN]; /* records run so far per channel */
  int64_t last[NCHAN];  /* the last offset run per channel */
  int out_of_order;
} trace_t;

static ksnap_err_t run_rec(void *opaque, int32_t chan, void *rec,
                           ksnap_error_t *error) {
  trace_t *t = opaque;
  const ev_t *r = rec;

  (void)error;
  if (chan != r->chan)
    t->out_of_order = 1; /* the plan must pass each record's channel */
  if (r->offset <= t->last[r->chan])
    t->out_of_order = 1;
  t->last[r->chan] = r->offset;
  t->count[r->chan]++;
  t->ev[t->n++] = *r;
  return KSNAP_ERR_OK;
}

static ksnap_err_t fire(void *opaque, const ksnap__fired_t *f,
                        ksnap_error_t *error) {
  trace_t *t = opaque;
  ev_t *e = &t->ev[t->n++];

  (void)error;
  e->chan = -1;
  e->offset = f->seq;
  memcpy(e->seen, t->count, sizeof(e->seen));
  return KSNAP_ERR_OK;
}

static ksnap__fired_t firing(int64_t tag, int64_t seq, int64_t time_ms,
                             const int64_t *pos, int32_t npos) {
  ksnap__fired_t f = {tag, seq, time_ms, 0, malloc(4), 4, malloc(8 * 4), npos,
                      0, KSNAP_WATERMARK_MIN};

  memcpy(f.key, "k000", 4);
  f.key[3] = (uint8_t)('0' + seq % 10);
  memcpy(f.pos, pos, sizeof(*pos) * (size_t)npos);
  return f;
}

START_TEST(entry_round_trips) {
  int64_t pos[3] = {0, 17, 1LL << 40};
  ksnap__fired_t f = firing(7, 3, 1796293087088, pos, 3), g;
  uint8_t uk[16], *val;
  size_t vlen;
  ksnap_error_t err;

  ksnap__fired_user_key(f.tag, f.seq, uk);
  ck_assert_int_eq(ksnap__fired_encode(&f, &val, &vlen, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap__fired_decode(uk, 16, val, vlen, &g, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(g.tag, 7);
  ck_assert_int_eq(g.seq, 3);
  ck_assert_int_eq(g.time_ms, 1796293087088);
  ck_assert_int_eq(g.klen, 4);
  ck_assert_mem_eq(g.key, f.key, 4);
  ck_assert_int_eq(g.npos, 3);
  ck_assert_int_eq(g.pos[2], 1LL << 40);
  ck_assert_int_eq(g.event, 0);
  ck_assert(g.wm == KSNAP_WATERMARK_MIN);
  ksnap__fired_cleanup(&g);
  /* a truncated entry is refused, naming the state */
  ck_assert_int_eq(ksnap__fired_decode(uk, 16, val, vlen - 1, &g, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "state ksnap.timers.fired: an entry of 16 + 52 "
                            "bytes is not a timer firing");
  free(val);
  /* an event-time firing keeps its kind and watermark */
  f.event = 1;
  f.wm = 1796293080000;
  ck_assert_int_eq(ksnap__fired_encode(&f, &val, &vlen, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap__fired_decode(uk, 16, val, vlen, &g, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(g.event, 1);
  ck_assert_int_eq(g.wm, 1796293080000);
  ck_assert_int_eq(g.pos[2], 1LL << 40);
  ksnap__fired_cleanup(&g);
  /* an entry written before watermarks (no flag, 8 bytes shorter) */
  val[8] = 0;
  ck_assert_int_eq(ksnap__fired_decode(uk, 16, val, vlen - 8, &g, &err),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(g.event, 0);
  ck_assert(g.wm == KSNAP_WATERMARK_MIN);
  ck_assert_int_eq(g.pos[2], 1LL << 40);
  ksnap__fired_cleanup(&g);
  free(val);
  ksnap__fired_cleanup(&f);
}
END_TEST

START_TEST(list_is_in_firing_order_and_replaces_entries) {
  ksnap__fired_list_t l = {0};
  int64_t pos[1] = {5};
  ksnap_error_t err;
  int64_t order[][2] = {{4, 1}, {3, 9}, {4, 0}, {3, 2}};

  for (int i = 0; i < 4; i++) {
    ksnap__fired_t f = firing(order[i][0], order[i][1], i, pos, 1);
    ck_assert_int_eq(ksnap__fired_list_put(&l, &f, &err), KSNAP_ERR_OK);
  }
  ksnap__fired_t again = firing(3, 9, 99, pos, 1); /* the same entry */
  ck_assert_int_eq(ksnap__fired_list_put(&l, &again, &err), KSNAP_ERR_OK);
  ksnap__fired_list_remove(&l, 4, 0);
  ksnap__fired_list_sort(&l);
  ck_assert_int_eq(l.n, 3);
  ck_assert_int_eq(l.v[0].tag * 100 + l.v[0].seq, 302);
  ck_assert_int_eq(l.v[1].tag * 100 + l.v[1].seq, 309);
  ck_assert_int_eq(l.v[1].time_ms, 99);
  ck_assert_int_eq(l.v[2].tag * 100 + l.v[2].seq, 401);
  ksnap__fired_list_cleanup(&l);
}
END_TEST

/* A run: records of NCHAN channels (offsets start[c], start[c]+1, ...) in
 * a random interleaving, firings between them; each firing is logged
 * with the positions the task records (offset after the last processed
 * record per channel). @returns the number of records. */
static int make_run(unsigned *seed, const int64_t *start, trace_t *run,
                    ksnap__fired_list_t *log) {
  int64_t next[NCHAN], pos[NCHAN];
  int nrec = 0, nfire = 0;
  ksnap_error_t err;

  memset(run, 0, sizeof(*run));
  for (int c = 0; c < NCHAN; c++) {
    next[c] = start[c];
    pos[c] = start[c];
    run->last[c] = -1;
  }
  for (int i = 0; i < 120; i++) {
    if (rand_r(seed) % 4 == 0) { /* a timer fires */
      ksnap__fired_t f = firing(1, nfire++, 1000 + i, pos, NCHAN);
      ck_assert_int_eq(ksnap__fired_list_put(log, &f, &err), KSNAP_ERR_OK);
      fire(run, &log->v[log->n - 1], &err);
      continue;
    }
    int c = (int)(rand_r(seed) % NCHAN);
    ev_t r = {c, next[c]++, {0}};
    run_rec(run, c, &r, &err);
    pos[c] = r.offset + 1;
    nrec++;
  }
  ksnap__fired_list_sort(log);
  return nrec;
}

/* The replay: the run's records in another random interleaving (each
 * channel in offset order, as the replay's read delivers them) through
 * the plan. */
static void replay(unsigned *seed, const trace_t *run, const int64_t *start,
                   const ksnap__fired_list_t *log, trace_t *out) {
  ev_t *byc[NCHAN];
  int n[NCHAN] = {0}, at[NCHAN] = {0}, left = 0;
  ksnap__plan_t p = {0};
  ksnap_error_t err;

  memset(out, 0, sizeof(*out));
  for (int c = 0; c < NCHAN; c++) {
    out->last[c] = -1;
    byc[c] = calloc(MAXEV, sizeof(ev_t));
  }
  for (int i = 0; i < run->n; i++)
    if (run->ev[i].chan >= 0) {
      byc[run->ev[i].chan][n[run->ev[i].chan]++] = run->ev[i];
      left++;
    }
  ck_assert_int_eq(ksnap__plan_init(&p, log, NCHAN, start, &err),
                   KSNAP_ERR_OK);
  p.run = run_rec;
  p.fire = fire;
  p.opaque = out;
  ck_assert_int_eq(ksnap__plan_advance(&p, &err), KSNAP_ERR_OK);
  while (left) {
    int c = (int)(rand_r(seed) % NCHAN);
    if (at[c] == n[c])
      continue;
    ev_t *r = &byc[c][at[c]++];
    left--;
    if (ksnap__plan_must_hold(&p, c, r->offset))
      ck_assert_int_eq(ksnap__plan_hold(&p, c, r->offset, r, &err),
                       KSNAP_ERR_OK);
    else
      ck_assert_int_eq(ksnap__plan_record(&p, c, r->offset, r, &err),
                       KSNAP_ERR_OK);
  }
  ck_assert_int_eq(ksnap__plan_finish(&p, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(p.nheld, 0);
  ksnap__plan_cleanup(&p);
  for (int c = 0; c < NCHAN; c++)
    free(byc[c]);
}

START_TEST(replay_fires_where_the_run_fired) {
  static trace_t run, out;
  int64_t start[NCHAN] = {0, 40, 7};
  unsigned seed = (unsigned)_i * 7919u + 1;

  for (int round = 0; round < 50; round++) {
    ksnap__fired_list_t log = {0};
    int nrec = make_run(&seed, start, &run, &log), k = 0;
    replay(&seed, &run, start, &log, &out);
    ck_assert_int_eq(out.out_of_order, 0);
    ck_assert_int_eq(out.n, run.n); /* every record, every firing once */
    for (int i = 0; i < run.n; i++) {
      if (run.ev[i].chan >= 0)
        continue;
      while (out.ev[k].chan >= 0)
        k++;
      /* the same firing, in order, after the same records per channel */
      ck_assert_int_eq(out.ev[k].offset, run.ev[i].offset);
      ck_assert_mem_eq(out.ev[k].seen, run.ev[i].seen,
                       sizeof(run.ev[i].seen));
      k++;
    }
    ck_assert_int_gt(nrec, 0);
    ksnap__fired_list_cleanup(&log);
  }
}
END_TEST

START_TEST(a_firing_past_the_segment_fails_loudly) {
  ksnap__fired_list_t log = {0};
  int64_t pos[2] = {3, 9}, start[2] = {0, 0};
  ksnap__fired_t f = firing(4, 0, 1234, pos, 2);
  ksnap__plan_t p = {0};
  trace_t out = {0};
  ksnap_error_t err;
  ev_t r = {0, 0, {0}};

  ck_assert_int_eq(ksnap__fired_list_put(&log, &f, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap__plan_init(&p, &log, 2, start, &err), KSNAP_ERR_OK);
  p.run = run_rec;
  p.fire = fire;
  p.opaque = &out;
  for (int i = 0; i < 3; i++) {
    r.offset = i;
    ck_assert_int_eq(ksnap__plan_record(&p, 0, i, &r, &err), KSNAP_ERR_OK);
  }
  ck_assert_int_eq(ksnap__plan_finish(&p, &err), KSNAP_ERR_STATE);
  ck_assert_str_eq(err.msg, "timer firing 0 (time 1234, after cut 4) fired "
                            "in the run after channel 1's offset 8, but the "
                            "replayed segment ends at 0 there: 1 of 1 "
                            "firings not replayed");
  ksnap__plan_cleanup(&p);
  /* a firing with positions for another number of channels */
  ck_assert_int_eq(ksnap__plan_init(&p, &log, 3, start, &err),
                   KSNAP_ERR_CORRUPT);
  ck_assert_str_eq(err.msg, "timer firing 0 after cut 4 has 2 input "
                            "positions, the task has 3 input channels");
  ksnap__plan_cleanup(&p);
  ksnap__fired_list_cleanup(&log);
}
END_TEST

int main(void) {
  Suite *s = suite_create("fired");
  TCase *tc = tcase_create("log");

  tcase_add_test(tc, entry_round_trips);
  tcase_add_test(tc, list_is_in_firing_order_and_replaces_entries);
  tcase_add_loop_test(tc, replay_fires_where_the_run_fired, 0, 8);
  tcase_add_test(tc, a_firing_past_the_segment_fails_loudly);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
