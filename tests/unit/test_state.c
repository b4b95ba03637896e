/* Keyed and operator state: accessors, key groups, snapshot and restore
 * at other parallelisms (1 -> 4 -> 3), incremental chains, TTL. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state/state_internal.h"
#include "testutil.h"

#define NK 400
#define NU 4
#define NL 4

typedef struct {
  int has_v, vlen;
  uint8_t v[16];
  int has_m[NU], mlen[NU];
  uint8_t m[NU][16];
  int nl, llen[NL];
  uint8_t l[NL][8];
} mkey_t;

static mkey_t model[NK];
static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}

static int keystr(int k, char *buf) { return sprintf(buf, "key%05d", k); }

typedef struct {
  ksnap_state_t *st;
  int v, m, l, split, uni;
} task_t;

static size_t task_buffer; /* conf.buffer_size of the tasks made next */

static void task_new(task_t *t, int p, int i, int incremental, int max_chain,
                     ksnap_state_clock_fn clock) {
  ksnap_state_conf_t conf;
  ksnap_error_t err;

  ksnap_state_conf_init(&conf);
  conf.buffer_size = task_buffer;
  conf.parallelism = p;
  conf.task_index = i;
  conf.incremental = incremental;
  conf.max_chain = max_chain;
  conf.clock = clock;
  ck_assert_int_eq(ksnap_state_new(&conf, &t->st, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(t->st, "v", KSNAP_STATE_VALUE, 0,
                                        &t->v, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(t->st, "m", KSNAP_STATE_MAP, 0,
                                        &t->m, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(t->st, "l", KSNAP_STATE_LIST, 0,
                                        &t->l, &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(t->st, "offsets",
                                        KSNAP_STATE_OP_SPLIT, 0, &t->split,
                                        &err), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_state_register(t->st, "all", KSNAP_STATE_OP_UNION,
                                        0, &t->uni, &err), KSNAP_ERR_OK);
}

static task_t *owner(task_t *tasks, int p, int k) {
  char key[16];
  int n = keystr(k, key);
  int kg = ksnap_state_key_group(key, (size_t)n, 128);
  task_t *t = &tasks[ksnap_state_task_of_key_group(128, p, kg)];
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_state_set_key(t->st, key, (size_t)n, &err),
                   KSNAP_ERR_OK);
  return t;
}

static void random_op(task_t *tasks, int p) {
  int k = (int)(rnd() % NK), u = (int)(rnd() % NU);
  task_t *t = owner(tasks, p, k);
  mkey_t *m = &model[k];
  ksnap_error_t err;

  switch (rnd() % 7) {
  case 0:
    ksnap_state_clear(t->st, t->v);
    m->has_v = 0;
    break;
  case 1:
  case 2:
    m->has_v = 1;
    m->vlen = (int)(rnd() % 16);
    for (int i = 0; i < m->vlen; i++)
      m->v[i] = (uint8_t)rnd();
    ck_assert_int_eq(ksnap_state_value_put(t->st, t->v, m->v,
                                           (size_t)m->vlen, &err), 0);
    break;
  case 3:
    ksnap_state_map_remove(t->st, t->m, &u, sizeof(u));
    m->has_m[u] = 0;
    break;
  case 4:
    m->has_m[u] = 1;
    m->mlen[u] = (int)(rnd() % 16);
    for (int i = 0; i < m->mlen[u]; i++)
      m->m[u][i] = (uint8_t)rnd();
    ck_assert_int_eq(ksnap_state_map_put(t->st, t->m, &u, sizeof(u),
                                         m->m[u], (size_t)m->mlen[u], &err),
                     0);
    break;
  case 5:
    if (m->nl == NL) {
      ksnap_state_clear(t->st, t->l);
      m->nl = 0;
      break;
    }
    m->llen[m->nl] = (int)(rnd() % 8);
    for (int i = 0; i < m->llen[m->nl]; i++)
      m->l[m->nl][i] = (uint8_t)rnd();
    ck_assert_int_eq(ksnap_state_list_add(t->st, t->l, m->l[m->nl],
                                          (size_t)m->llen[m->nl], &err), 0);
    m->nl++;
    break;
  default:
    break;
  }
}

/* Every task holds exactly its share of the model. */
static void verify(task_t *tasks, int p) {
  size_t want = 0, have = 0;

  for (int k = 0; k < NK; k++) {
    task_t *t = owner(tasks, p, k);
    mkey_t *m = &model[k];
    const void *v;
    size_t len;
    ksnap_state_list_iter_t it;
    int n = 0;

    ck_assert_int_eq(ksnap_state_value_get(t->st, t->v, &v, &len),
                     m->has_v ? KSNAP_ERR_OK : KSNAP_ERR_NOT_FOUND);
    if (m->has_v) {
      ck_assert_uint_eq(len, (size_t)m->vlen);
      ck_assert_int_eq(memcmp(v, m->v, len), 0);
    }
    want += (size_t)m->has_v + (m->nl > 0);
    for (int u = 0; u < NU; u++) {
      ck_assert_int_eq(ksnap_state_map_get(t->st, t->m, &u, sizeof(u), &v,
                                           &len),
                       m->has_m[u] ? KSNAP_ERR_OK : KSNAP_ERR_NOT_FOUND);
      if (m->has_m[u]) {
        ck_assert_uint_eq(len, (size_t)m->mlen[u]);
        ck_assert_int_eq(memcmp(v, m->m[u], len), 0);
      }
      want += (size_t)m->has_m[u];
    }
    ck_assert_int_eq(ksnap_state_list_get(t->st, t->l, &it),
                     m->nl ? KSNAP_ERR_OK : KSNAP_ERR_NOT_FOUND);
    while (ksnap_state_list_next(&it, &v, &len)) {
      ck_assert_int_lt(n, m->nl);
      ck_assert_uint_eq(len, (size_t)m->llen[n]);
      ck_assert_int_eq(memcmp(v, m->l[n], len), 0);
      n++;
    }
    ck_assert_int_eq(n, m->nl);
  }
  for (int i = 0; i < p; i++)
    for (size_t s = 0; s < tasks[i].st->nstates; s++)
      if (tasks[i].st->states[s].map)
        have += ksnap__state_map_count(tasks[i].st->states[s].map);
  ck_assert_uint_eq(have, want); /* no key restored into a wrong task */
}

typedef struct {
  ksnap_state_snapshot_t *snap;
  ksnap_buf_t out;
  ksnap_err_t rc;
} async_t;

static void *async_write(void *arg) {
  async_t *a = arg;
  ksnap_error_t err;
  a->rc = ksnap_state_snapshot_write(a->snap, &a->out, &err);
  return NULL;
}

/* Snapshot every task: sync phase, then the async phase on threads while
 * the processing thread keeps changing state (changes after the sync
 * point must not appear: the caller verifies against the model copy). */
static void snapshot_all(task_t *tasks, int p, int64_t ckpt, ksnap_buf_t *files,
                         int keep_writing) {
  async_t a[8];
  pthread_t th[8];
  ksnap_error_t err;
  char name[64];

  for (int i = 0; i < p; i++) {
    snprintf(name, sizeof(name), "chk-%lld/op-%d", (long long)ckpt, i);
    ck_assert_int_eq(ksnap_state_snapshot_begin(tasks[i].st, ckpt, name,
                                                &a[i].snap, &err),
                     KSNAP_ERR_OK);
    ksnap_buf_init(&a[i].out);
    ck_assert_int_eq(pthread_create(&th[i], NULL, async_write, &a[i]), 0);
  }
  if (keep_writing) {
    mkey_t *saved = malloc(sizeof(model));
    memcpy(saved, model, sizeof(model));
    for (int n = 0; n < 300; n++)
      random_op(tasks, p);
    memcpy(model, saved, sizeof(model)); /* forget them: not in the snap */
    free(saved);
  }
  for (int i = 0; i < p; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(a[i].rc, KSNAP_ERR_OK);
    ksnap_state_snapshot_end(a[i].snap, 1);
    files[i] = a[i].out;
  }
}

static void restore_all(task_t *tasks, int p, ksnap_buf_t *files, int oldp) {
  ksnap_state_file_t f[8];
  ksnap_state_chain_t ch[8];
  ksnap_error_t err;

  memset(f, 0, sizeof(f));
  for (int i = 0; i < oldp; i++) {
    f[i].data = files[i].data;
    f[i].len = files[i].len;
    ch[i].files = &f[i];
    ch[i].nfiles = 1;
  }
  for (int i = 0; i < p; i++) {
    ksnap_err_t rc = ksnap_state_restore(tasks[i].st, ch, (size_t)oldp, &err);
    ck_assert_msg(rc == KSNAP_ERR_OK, "restore: %s", err.msg);
  }
}

static void destroy_all(task_t *tasks, int p) {
  for (int i = 0; i < p; i++)
    ksnap_state_destroy(tasks[i].st);
}

START_TEST(murmur3_and_key_group_ranges) {
  int s, e;

  ck_assert_uint_eq(ksnap_state_murmur3_32("", 0, 0), 0);
  ck_assert_uint_eq(ksnap_state_murmur3_32("hello", 5, 0), 0x248bfa47u);
  ck_assert_uint_eq(ksnap_state_murmur3_32(
                        "The quick brown fox jumps over the lazy dog", 43, 0),
                    0x2e4ff723u);
  ksnap_state_key_group_range(128, 3, 0, &s, &e);
  ck_assert(s == 0 && e == 43);
  ksnap_state_key_group_range(128, 3, 1, &s, &e);
  ck_assert(s == 43 && e == 86);
  ksnap_state_key_group_range(128, 3, 2, &s, &e);
  ck_assert(s == 86 && e == 128);
  for (int p = 1; p <= 128; p += 9)
    for (int kg = 0; kg < 128; kg++) {
      int t = ksnap_state_task_of_key_group(128, p, kg);
      ksnap_state_key_group_range(128, p, t, &s, &e);
      ck_assert(kg >= s && kg < e);
    }
}
END_TEST

START_TEST(accessors_and_ownership) {
  task_t t[2];
  ksnap_error_t err;
  char key[16];
  int k, n;

  task_new(&t[0], 2, 0, 0, 10, NULL);
  for (k = 0;; k++) { /* a key of task 1 */
    n = keystr(k, key);
    if (ksnap_state_task_of_key_group(
            128, 2, ksnap_state_key_group(key, (size_t)n, 128)) == 1)
      break;
  }
  ck_assert_int_eq(ksnap_state_set_key(t[0].st, key, (size_t)n, &err),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(err.msg, "key group 76 is not owned by task 0 of 2");
  ck_assert_int_eq(ksnap_state_register(t[0].st, "v", KSNAP_STATE_LIST, 0,
                                        &n, &err), KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_state_register(t[0].st, "bad name",
                                        KSNAP_STATE_VALUE, 0, &n, &err),
                   KSNAP_ERR_INVALID_ARG);
  ksnap_state_destroy(t[0].st);
}
END_TEST

/* 1 -> 4 -> 3, with concurrent writes during every async phase. */
/* At an unchanged parallelism each task gets its own split list back,
 * whatever the lengths (a task's list may name its own keys). */
START_TEST(restore_keeps_split_lists_at_the_same_parallelism) {
  task_t two[2], again[2];
  ksnap_buf_t f[2];
  ksnap_error_t err;
  const void *b;
  size_t len;

  memset(model, 0, sizeof(model));
  for (int i = 0; i < 2; i++) {
    task_new(&two[i], 2, i, 0, 10, NULL);
    for (int j = 0; j < (i ? 2 : 7); j++) { /* 7 and 2 entries */
      int v = 100 * i + j;
      ksnap_state_op_add(two[i].st, two[i].split, &v, sizeof(v), &err);
    }
  }
  snapshot_all(two, 2, 1, f, 1);
  destroy_all(two, 2);
  for (int i = 0; i < 2; i++)
    task_new(&again[i], 2, i, 0, 10, NULL);
  restore_all(again, 2, f, 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(ksnap_state_op_count(again[i].st, again[i].split),
                      i ? 2 : 7);
    for (size_t j = 0; j < (i ? 2u : 7u); j++) {
      ksnap_state_op_get(again[i].st, again[i].split, j, &b, &len);
      ck_assert_int_eq(*(const int *)b, 100 * i + (int)j);
    }
  }
  destroy_all(again, 2);
  for (int i = 0; i < 2; i++)
    ksnap_buf_cleanup(&f[i]);
}
END_TEST

START_TEST(restore_rescales_1_to_4_to_3) {
  task_t one[1], four[4], three[3];
  ksnap_buf_t f1[1], f4[4], f3[3];
  ksnap_error_t err;
  const void *b;
  size_t len;

  memset(model, 0, sizeof(model));
  task_new(&one[0], 1, 0, 0, 10, NULL);
  for (int i = 0; i < 10; i++) {
    ksnap_state_op_add(one[0].st, one[0].split, &i, sizeof(i), &err);
    ksnap_state_op_add(one[0].st, one[0].uni, &i, sizeof(i), &err);
  }
  for (int n = 0; n < 4000; n++)
    random_op(one, 1);
  snapshot_all(one, 1, 1, f1, 1);
  /* the writes made during the async phase are forgotten by the model:
     the restored tasks must not have them */
  destroy_all(one, 1);

  for (int i = 0; i < 4; i++)
    task_new(&four[i], 4, i, 0, 10, NULL);
  restore_all(four, 4, f1, 1);
  verify(four, 4);
  for (int i = 0, next = 0; i < 4; i++) { /* split: 10 over 4 = 2,3,2,3 */
    size_t c = ksnap_state_op_count(four[i].st, four[i].split);
    ck_assert_uint_eq(c, (size_t)((i + 1) * 10 / 4 - i * 10 / 4));
    for (size_t j = 0; j < c; j++, next++) {
      ksnap_state_op_get(four[i].st, four[i].split, j, &b, &len);
      ck_assert_int_eq(*(const int *)b, next);
    }
    ck_assert_uint_eq(ksnap_state_op_count(four[i].st, four[i].uni), 10);
  }
  for (int n = 0; n < 4000; n++)
    random_op(four, 4);
  snapshot_all(four, 4, 2, f4, 1);
  destroy_all(four, 4);

  for (int i = 0; i < 3; i++)
    task_new(&three[i], 3, i, 0, 10, NULL);
  restore_all(three, 3, f4, 4);
  verify(three, 3);
  ck_assert_uint_eq(ksnap_state_op_count(three[0].st, three[0].split) +
                        ksnap_state_op_count(three[1].st, three[1].split) +
                        ksnap_state_op_count(three[2].st, three[2].split),
                    10);
  ck_assert_uint_eq(ksnap_state_op_count(three[2].st, three[2].uni), 40);
  snapshot_all(three, 3, 3, f3, 0);
  destroy_all(three, 3);
  for (int i = 0; i < 4; i++)
    ksnap_buf_cleanup(&f4[i]);
  for (int i = 0; i < 3; i++)
    ksnap_buf_cleanup(&f3[i]);
  ksnap_buf_cleanup(&f1[0]);
}
END_TEST

typedef struct {
  const ksnap_buf_t *file;
  size_t bytes_read;
  int reads;
  size_t max_read; /* the largest read past the header's first */
} ranged_t;

static ksnap_err_t ranged_read(void *opaque, uint64_t off, size_t len,
                               uint8_t *dst, ksnap_error_t *error) {
  ranged_t *r = opaque;

  if (off + len > r->file->len)
    return ksnap_error_set(error, KSNAP_ERR_IO, "range past the end");
  memcpy(dst, r->file->data + off, len);
  r->bytes_read += len;
  r->reads++;
  if (off && len > r->max_read)
    r->max_read = len;
  return KSNAP_ERR_OK;
}

/* Restoring at parallelism 4 through ranged reads fetches the header and
 * the task's own key groups (plus the operator-state slot), not the file. */
START_TEST(ranged_restore_reads_only_owned_key_groups) {
  task_t one[1], four[4];
  ksnap_buf_t f1[1];
  ksnap_error_t err;
  size_t total = 0;

  memset(model, 0, sizeof(model));
  task_new(&one[0], 1, 0, 0, 10, NULL);
  for (int n = 0; n < 6000; n++)
    random_op(one, 1);
  snapshot_all(one, 1, 1, f1, 0);
  destroy_all(one, 1);
  for (int i = 0; i < 4; i++) {
    ranged_t rd = {&f1[0], 0, 0, 0};
    ksnap_state_file_t file = {NULL, 0, ranged_read, &rd, f1[0].len};
    ksnap_state_chain_t ch = {&file, 1};
    task_new(&four[i], 4, i, 0, 10, NULL);
    ck_assert_msg(ksnap_state_restore(four[i].st, &ch, 1, &err) == 0, "%s",
                  err.msg);
    /* one header read (4 KiB) + about a quarter of the entries */
    ck_assert_uint_lt(rd.bytes_read, 4096 + f1[0].len * 3 / 10);
    ck_assert_int_le(rd.reads, 4); /* header, key groups, op slot twice */
    total += rd.bytes_read;
  }
  ck_assert_uint_lt(total, f1[0].len * 3 / 2); /* ~ one file + headers */
  verify(four, 4);
  destroy_all(four, 4);
  ksnap_buf_cleanup(&f1[0]);
}
END_TEST

/* The largest key-group slot of a file. */
static size_t largest_slot(const ksnap_buf_t *f) {
  size_t max = 0;
  ksnap_error_t err;

  for (int kg = 0; kg < 128; kg++) {
    uint64_t off, end;
    ck_assert_int_eq(ksnap_state_file_range(f->data, f->len, kg, kg + 1,
                                            &off, &end, &err), 0);
    max = end - off > max ? (size_t)(end - off) : max;
  }
  return max;
}

/* A restore through read callbacks reads in windows of about
 * conf.buffer_size bytes (one key group at least), never the whole
 * range at once, at any parallelism. */
START_TEST(ranged_restore_reads_in_bounded_windows) {
  task_t one[1], four[4];
  ksnap_buf_t f1[1];
  ksnap_error_t err;
  size_t slot;

  memset(model, 0, sizeof(model));
  task_new(&one[0], 1, 0, 0, 10, NULL);
  for (int n = 0; n < 6000; n++)
    random_op(one, 1);
  snapshot_all(one, 1, 1, f1, 0);
  destroy_all(one, 1);
  slot = largest_slot(&f1[0]);
  task_buffer = 1024;
  for (int i = 0; i < 4; i++) {
    ranged_t rd = {&f1[0], 0, 0, 0};
    ksnap_state_file_t file = {NULL, 0, ranged_read, &rd, f1[0].len};
    ksnap_state_chain_t ch = {&file, 1};
    task_new(&four[i], 4, i, 0, 10, NULL);
    ck_assert_msg(ksnap_state_restore(four[i].st, &ch, 1, &err) == 0, "%s",
                  err.msg);
    ck_assert_uint_le(rd.max_read, slot > 1024 ? slot : 1024);
    ck_assert_int_gt(rd.reads, 5); /* many windows, not one range */
  }
  task_buffer = 0;
  verify(four, 4);
  destroy_all(four, 4);
  ksnap_buf_cleanup(&f1[0]);
}
END_TEST

static int kg_of(int k) {
  char key[16];
  return ksnap_state_key_group(key, (size_t)keystr(k, key), 128);
}

/* A file whose key group K is corrupt: the restore fails naming K, and
 * nothing of K (or after it) is applied, since a window is checked before
 * it is decoded; a truncated file fails before any key group is read. */
START_TEST(corrupt_or_truncated_ranged_restore_applies_nothing_bad) {
  task_t one[1], back[1];
  ksnap_buf_t f1[1], cut;
  ksnap_error_t err;
  uint64_t off, end;
  int kgk = -1, below = 0;
  char want[128];

  memset(model, 0, sizeof(model));
  task_new(&one[0], 1, 0, 0, 10, NULL);
  for (int n = 0; n < 6000; n++)
    random_op(one, 1);
  snapshot_all(one, 1, 1, f1, 0);
  destroy_all(one, 1);
  for (int k = 0; k < NK && kgk < 0; k++) /* a key group in the middle */
    if (model[k].has_v && kg_of(k) >= 60)
      kgk = kg_of(k);
  ck_assert_int_eq(ksnap_state_file_range(f1[0].data, f1[0].len, kgk,
                                          kgk + 1, &off, &end, &err), 0);
  f1[0].data[(off + end) / 2] ^= 0x10;
  task_buffer = 1; /* one key group per window */
  {
    ranged_t rd = {&f1[0], 0, 0, 0};
    ksnap_state_file_t file = {NULL, 0, ranged_read, &rd, f1[0].len};
    ksnap_state_chain_t ch = {&file, 1};
    task_new(&back[0], 1, 0, 0, 10, NULL);
    ck_assert_int_eq(ksnap_state_restore(back[0].st, &ch, 1, &err),
                     KSNAP_ERR_CHECKSUM);
    snprintf(want, sizeof(want),
             "snapshot file checksum mismatch in key group %d", kgk);
    ck_assert_str_eq(err.msg, want);
  }
  for (int k = 0; k < NK; k++) {
    char key[16];
    const void *v;
    size_t len;
    if (!model[k].has_v)
      continue;
    ksnap_state_set_key(back[0].st, key, (size_t)keystr(k, key), &err);
    if (kg_of(k) >= kgk)
      ck_assert_int_eq(ksnap_state_value_get(back[0].st, back[0].v, &v,
                                             &len), KSNAP_ERR_NOT_FOUND);
    else
      below += ksnap_state_value_get(back[0].st, back[0].v, &v, &len) ==
               KSNAP_ERR_OK;
  }
  ck_assert_int_gt(below, 0); /* windows before K were applied */
  destroy_all(back, 1);

  ksnap_buf_init(&cut);
  ck_assert_int_eq(ksnap_buf_append(&cut, f1[0].data, f1[0].len - 100), 0);
  {
    ranged_t rd = {&cut, 0, 0, 0};
    ksnap_state_file_t file = {NULL, 0, ranged_read, &rd, cut.len};
    ksnap_state_chain_t ch = {&file, 1};
    task_new(&back[0], 1, 0, 0, 10, NULL);
    ck_assert_int_eq(ksnap_state_restore(back[0].st, &ch, 1, &err),
                     KSNAP_ERR_TRUNCATED);
    snprintf(want, sizeof(want),
             "snapshot file is truncated: %zu bytes, index says %zu",
             cut.len, f1[0].len);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_le(rd.reads, 1); /* the header, nothing else */
    ck_assert_uint_eq(ksnap__state_map_count(back[0].st->states[back[0].v]
                                                 .map), 0);
  }
  task_buffer = 0;
  destroy_all(back, 1);
  ksnap_buf_cleanup(&cut);
  ksnap_buf_cleanup(&f1[0]);
}
END_TEST

typedef struct {
  int lo, hi, n, stop_at;
} observed_t;

static int observe(void *opaque, const ksnap_state_entry_t *e) {
  observed_t *o = opaque;
  if (e->key_group >= o->lo && e->key_group < o->hi)
    o->n++;
  return o->stop_at && o->n == o->stop_at;
}

/* The observer of a restore sees exactly the keyed entries of the task's
 * key groups, and can stop the restore. */
START_TEST(restore_observer_sees_applied_entries) {
  task_t one[1], two[1];
  ksnap_buf_t f1[1];
  ksnap_error_t err;
  ksnap_state_file_t file = {NULL, 0, NULL, NULL, 0};
  ksnap_state_chain_t ch = {&file, 1};
  observed_t all = {0, 0, 0, 0}, o;

  memset(model, 0, sizeof(model));
  task_new(&one[0], 1, 0, 0, 10, NULL);
  for (int n = 0; n < 3000; n++)
    random_op(one, 1);
  snapshot_all(one, 1, 1, f1, 0);
  destroy_all(one, 1);
  file.data = f1[0].data;
  file.len = f1[0].len;
  ksnap_state_key_group_range(128, 2, 1, &all.lo, &all.hi);
  ck_assert_int_eq(ksnap_state_file_decode(f1[0].data, f1[0].len, NULL,
                                           observe, &all, &err), 0);
  o = (observed_t){all.lo, all.hi, 0, 0};
  task_new(&two[0], 2, 1, 0, 10, NULL);
  ck_assert_int_eq(ksnap_state_restore_observed(two[0].st, &ch, 1, observe,
                                                &o, &err), 0);
  ck_assert_int_gt(o.n, 100);
  ck_assert_int_eq(o.n, all.n);
  destroy_all(two, 1);
  o = (observed_t){all.lo, all.hi, 0, 5};
  task_new(&two[0], 2, 1, 0, 10, NULL);
  ck_assert_int_eq(ksnap_state_restore_observed(two[0].st, &ch, 1, observe,
                                                &o, &err),
                   KSNAP_ERR_INTERRUPTED);
  ck_assert_str_eq(err.msg, "restore stopped by the observer");
  destroy_all(two, 1);
  ksnap_buf_cleanup(&f1[0]);
}
END_TEST

#define MAXFILES 64
static struct {
  char name[64];
  ksnap_buf_t buf;
} store[MAXFILES];
static int nstore;

static const ksnap_buf_t *lookup(const char *name) {
  for (int i = 0; i < nstore; i++)
    if (!strcmp(store[i].name, name))
      return &store[i].buf;
  return NULL;
}

/* 20 incremental checkpoints with deletes; each checkpoint's manifest
 * names the files it needs; restoring that chain (at parallelism 1 and
 * 2) gives the model at the sync point. */
static void chain_test(int max_chain) {
  task_t t[1], back[2];
  int deltas = 0;
  size_t full_size = 0, delta_size = 0;

  memset(model, 0, sizeof(model));
  nstore = 0;
  task_new(&t[0], 1, 0, 1, max_chain, NULL);
  for (int n = 0; n < 3000; n++)
    random_op(t, 1);
  for (int ck = 1; ck <= 20; ck++) {
    ksnap_state_snapshot_t *snap;
    async_t a;
    pthread_t th;
    ksnap_error_t err;
    const char *const *names;
    size_t nnames;
    ksnap_state_file_t files[MAXFILES] = {{0}};
    ksnap_state_chain_t chain;
    mkey_t *saved = malloc(sizeof(model));

    for (int n = (int)(rnd() % 300); n > 0; n--)
      random_op(t, 1); /* sync point at a random op; includes deletes */
    snprintf(store[nstore].name, 64, "chk-%d/op-0", ck);
    ck_assert_int_eq(ksnap_state_snapshot_begin(t[0].st, ck,
                                                store[nstore].name, &snap,
                                                &err), 0);
    memcpy(saved, model, sizeof(model));
    a.snap = snap;
    ksnap_buf_init(&a.out);
    pthread_create(&th, NULL, async_write, &a);
    for (int n = (int)(rnd() % 200); n > 0; n--)
      random_op(t, 1); /* during the async phase: next delta's */
    pthread_join(th, NULL);
    ck_assert_int_eq(a.rc, 0);
    store[nstore++].buf = a.out;
    if (ksnap_state_snapshot_is_incremental(snap)) {
      deltas++;
      delta_size += a.out.len;
    } else {
      full_size = a.out.len;
    }
    nnames = ksnap_state_snapshot_manifest(snap, &names);
    ck_assert_uint_le(nnames, (size_t)max_chain);
    chain.files = files;
    chain.nfiles = nnames;
    for (size_t i = 0; i < nnames; i++) {
      const ksnap_buf_t *b = lookup(names[i]);
      ck_assert_ptr_nonnull(b);
      files[i].data = b->data;
      files[i].len = b->len;
    }
    ksnap_state_snapshot_end(snap, 1);
    /* restore the chain at parallelism 2 and compare with the sync point */
    {
      mkey_t *now = malloc(sizeof(model));
      memcpy(now, model, sizeof(model));
      memcpy(model, saved, sizeof(model));
      for (int i = 0; i < 2; i++) {
        task_new(&back[i], 2, i, 1, max_chain, NULL);
        ck_assert_int_eq(ksnap_state_restore(back[i].st, &chain, 1, &err), 0);
      }
      verify(back, 2);
      destroy_all(back, 2);
      memcpy(model, now, sizeof(model));
      free(now);
    }
    free(saved);
  }
  ck_assert_int_ge(deltas, 20 - 20 / max_chain - 1);
  if (deltas)
    ck_assert_uint_lt(delta_size / (size_t)deltas, full_size);
  destroy_all(t, 1);
  for (int i = 0; i < nstore; i++)
    ksnap_buf_cleanup(&store[i].buf);
}

START_TEST(incremental_chain_of_20) { chain_test(25); }
END_TEST

START_TEST(incremental_chain_rolls_over) { chain_test(5); }
END_TEST

START_TEST(failed_snapshot_makes_next_full) {
  task_t t[1];
  ksnap_state_snapshot_t *snap;
  ksnap_error_t err;

  memset(model, 0, sizeof(model));
  task_new(&t[0], 1, 0, 1, 10, NULL);
  random_op(t, 1);
  ksnap_state_snapshot_begin(t[0].st, 1, "a", &snap, &err);
  ck_assert(!ksnap_state_snapshot_is_incremental(snap));
  ksnap_state_snapshot_end(snap, 1);
  ksnap_state_snapshot_begin(t[0].st, 2, "b", &snap, &err);
  ck_assert(ksnap_state_snapshot_is_incremental(snap));
  ksnap_state_snapshot_end(snap, 0); /* upload failed */
  ksnap_state_snapshot_begin(t[0].st, 3, "c", &snap, &err);
  ck_assert(!ksnap_state_snapshot_is_incremental(snap));
  ksnap_state_snapshot_end(snap, 1);
  destroy_all(t, 1);
}
END_TEST

static int64_t now_ms;
static int64_t test_clock(void *opaque) {
  (void)opaque;
  return now_ms;
}

START_TEST(ttl_expiry_survives_restore) {
  ksnap_state_conf_t conf;
  ksnap_state_t *st, *back;
  ksnap_state_snapshot_t *snap;
  ksnap_buf_t out;
  ksnap_error_t err;
  ksnap_state_file_t f = {0};
  ksnap_state_chain_t ch = {&f, 1};
  const void *v;
  size_t len;
  int id;

  ksnap_state_conf_init(&conf);
  conf.clock = test_clock;
  now_ms = 1000;
  ksnap_state_new(&conf, &st, &err);
  ksnap_state_register(st, "session", KSNAP_STATE_VALUE, 100, &id, &err);
  ksnap_state_set_key(st, "a", 1, &err);
  ksnap_state_value_put(st, id, "1", 1, &err);
  now_ms = 1050;
  ksnap_state_set_key(st, "b", 1, &err);
  ksnap_state_value_put(st, id, "2", 1, &err);
  now_ms = 1120; /* a expired, b alive */
  ksnap_state_set_key(st, "a", 1, &err);
  ck_assert_int_eq(ksnap_state_value_get(st, id, &v, &len),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_state_snapshot_begin(st, 1, "x", &snap, &err);
  ksnap_buf_init(&out);
  ck_assert_int_eq(ksnap_state_snapshot_write(snap, &out, &err), 0);
  ksnap_state_snapshot_end(snap, 1);
  f.data = out.data;
  f.len = out.len;
  ksnap_state_new(&conf, &back, &err);
  ck_assert_int_eq(ksnap_state_restore(back, &ch, 1, &err), 0);
  ck_assert_int_eq(ksnap_state_register(back, "session", KSNAP_STATE_VALUE,
                                        100, &id, &err), 0);
  ck_assert_uint_eq(ksnap__state_map_count(back->states[id].map), 1);
  ksnap_state_set_key(back, "b", 1, &err);
  ck_assert_int_eq(ksnap_state_value_get(back, id, &v, &len), 0);
  now_ms = 1150; /* the restored timestamp still counts */
  ck_assert_int_eq(ksnap_state_value_get(back, id, &v, &len),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_buf_cleanup(&out);
  ksnap_state_destroy(st);
  ksnap_state_destroy(back);
}
END_TEST

int main(void) {
  Suite *s = suite_create("state");
  TCase *tc = tcase_create("state");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, murmur3_and_key_group_ranges);
  tcase_add_test(tc, accessors_and_ownership);
  tcase_add_test(tc, restore_rescales_1_to_4_to_3);
  tcase_add_test(tc, restore_keeps_split_lists_at_the_same_parallelism);
  tcase_add_test(tc, ranged_restore_reads_only_owned_key_groups);
  tcase_add_test(tc, ranged_restore_reads_in_bounded_windows);
  tcase_add_test(tc, corrupt_or_truncated_ranged_restore_applies_nothing_bad);
  tcase_add_test(tc, restore_observer_sees_applied_entries);
  tcase_add_test(tc, incremental_chain_of_20);
  tcase_add_test(tc, incremental_chain_rolls_over);
  tcase_add_test(tc, failed_snapshot_makes_next_full);
  tcase_add_test(tc, ttl_expiry_survives_restore);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
