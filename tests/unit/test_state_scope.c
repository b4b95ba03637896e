/* Record scopes over a task's state (state/state_scope.h): a rollback
 * undoes every write of the scope (value, list, map, clear, remove,
 * operator state), a commit keeps them, snapshots taken around scopes see
 * exactly the committed state (full and incremental), and a random mix of
 * scopes matches a model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/state.h"
#include "state/state_scope.h"
#include "testutil.h"

#define NK 64 /* keys */
#define NU 3  /* user keys of the map state per key */

/* The model: per key, the value (-1: none), the map (-1: none) and the
 * list length (every element is the byte 'x'+i); the op list length. */
typedef struct model_s {
  int v[NK], m[NK][NU], nl[NK], nop;
} model_t;

typedef struct fix_s {
  ksnap_state_t *st;
  int v, m, l, op;
} fix_t;

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (unsigned)(rs % n);
}

static void fix_new(fix_t *f, int incremental) {
  ksnap_state_conf_t conf;
  ksnap_error_t err;

  ksnap_state_conf_init(&conf);
  conf.incremental = incremental;
  ck_assert_int_eq(ksnap_state_new(&conf, &f->st, &err), 0);
  ck_assert_int_eq(ksnap_state_register(f->st, "v", KSNAP_STATE_VALUE, 0,
                                        &f->v, &err), 0);
  ck_assert_int_eq(ksnap_state_register(f->st, "m", KSNAP_STATE_MAP, 0,
                                        &f->m, &err), 0);
  ck_assert_int_eq(ksnap_state_register(f->st, "l", KSNAP_STATE_LIST, 0,
                                        &f->l, &err), 0);
  ck_assert_int_eq(ksnap_state_register(f->st, "op", KSNAP_STATE_OP_SPLIT, 0,
                                        &f->op, &err), 0);
}

static void set_key(fix_t *f, int k) {
  char key[16];
  int n = snprintf(key, sizeof(key), "k%d", k);
  ksnap_error_t err;

  ck_assert_int_eq(ksnap_state_set_key(f->st, key, (size_t)n, &err), 0);
}

static void model_init(model_t *m) {
  memset(m, 0, sizeof(*m));
  for (int k = 0; k < NK; k++) {
    m->v[k] = -1;
    for (int u = 0; u < NU; u++)
      m->m[k][u] = -1;
  }
}

/* One random write to the state and to @p m. */
static void random_write(fix_t *f, model_t *m) {
  int k = (int)rnd(NK), u = (int)rnd(NU), x = (int)rnd(1000);
  uint8_t ukey = (uint8_t)u, elem;
  ksnap_error_t err;

  set_key(f, k);
  switch (rnd(6)) {
  case 0:
    ck_assert_int_eq(ksnap_state_value_put(f->st, f->v, &x, sizeof(x), &err),
                     0);
    m->v[k] = x;
    break;
  case 1:
    ksnap_state_clear(f->st, f->v);
    m->v[k] = -1;
    break;
  case 2:
    ck_assert_int_eq(ksnap_state_map_put(f->st, f->m, &ukey, 1, &x,
                                         sizeof(x), &err), 0);
    m->m[k][u] = x;
    break;
  case 3:
    ksnap_state_map_remove(f->st, f->m, &ukey, 1);
    m->m[k][u] = -1;
    break;
  case 4:
    elem = (uint8_t)('x' + m->nl[k] % 3);
    ck_assert_int_eq(ksnap_state_list_add(f->st, f->l, &elem, 1, &err), 0);
    m->nl[k]++;
    break;
  default:
    if (rnd(4)) {
      ck_assert_int_eq(ksnap_state_op_add(f->st, f->op, &m->nop,
                                          sizeof(m->nop), &err), 0);
      m->nop++;
    } else {
      ksnap_state_op_clear(f->st, f->op);
      m->nop = 0;
    }
  }
}

static void check(fix_t *f, const model_t *m) {
  for (int k = 0; k < NK; k++) {
    const void *v;
    size_t len;
    ksnap_state_list_iter_t it;
    int n = 0;
    set_key(f, k);
    if (m->v[k] < 0)
      ck_assert_int_eq(ksnap_state_value_get(f->st, f->v, &v, &len),
                       KSNAP_ERR_NOT_FOUND);
    else {
      ck_assert_int_eq(ksnap_state_value_get(f->st, f->v, &v, &len), 0);
      ck_assert_int_eq(*(const int *)v, m->v[k]);
    }
    for (int u = 0; u < NU; u++) {
      uint8_t ukey = (uint8_t)u;
      int r = ksnap_state_map_get(f->st, f->m, &ukey, 1, &v, &len);
      ck_assert_int_eq(r, m->m[k][u] < 0 ? KSNAP_ERR_NOT_FOUND : 0);
      if (!r)
        ck_assert_int_eq(*(const int *)v, m->m[k][u]);
    }
    if (!ksnap_state_list_get(f->st, f->l, &it))
      while (ksnap_state_list_next(&it, &v, &len)) {
        ck_assert_int_eq(*(const uint8_t *)v, 'x' + n % 3);
        n++;
      }
    ck_assert_int_eq(n, m->nl[k]);
  }
  ck_assert_uint_eq(ksnap_state_op_count(f->st, f->op), (size_t)m->nop);
  for (int i = 0; i < m->nop; i++) {
    const void *b;
    size_t len;
    ck_assert_int_eq(ksnap_state_op_get(f->st, f->op, (size_t)i, &b, &len),
                     0);
    ck_assert_int_eq(*(const int *)b, i);
  }
}

/* Every kind of write in one scope, rolled back: nothing changed; the
 * same writes committed: all kept. */
START_TEST(rollback_undoes_every_kind_of_write) {
  fix_t f;
  model_t before, after;
  ksnap_error_t err;

  fix_new(&f, 0);
  model_init(&before);
  for (int i = 0; i < 300; i++)
    random_write(&f, &before);
  check(&f, &before);
  for (int round = 0; round < 2; round++) {
    after = before;
    ck_assert_int_eq(ksnap__state_scope_begin(f.st, &err), 0);
    ck_assert(ksnap__state_scope_open(f.st));
    ck_assert_int_eq(ksnap__state_scope_begin(f.st, &err), KSNAP_ERR_STATE);
    for (int i = 0; i < 200; i++) /* many keys, each written many times */
      random_write(&f, &after);
    if (round == 0) {
      ck_assert_int_eq(ksnap__state_scope_rollback(f.st, &err), 0);
      check(&f, &before);
    } else {
      ksnap__state_scope_commit(f.st);
      check(&f, &after);
    }
    ck_assert(!ksnap__state_scope_open(f.st));
  }
  ksnap_state_destroy(f.st);
}
END_TEST

/* A new key written and rolled back is gone; so is a value put twice. */
START_TEST(rollback_removes_a_new_key) {
  fix_t f;
  const void *v;
  size_t len;
  ksnap_error_t err;
  int one = 1, two = 2;

  fix_new(&f, 0);
  set_key(&f, 7);
  ck_assert_int_eq(ksnap__state_scope_begin(f.st, &err), 0);
  ksnap_state_value_put(f.st, f.v, &one, sizeof(one), &err);
  ksnap_state_value_put(f.st, f.v, &two, sizeof(two), &err);
  ck_assert_int_eq(ksnap_state_value_get(f.st, f.v, &v, &len), 0);
  ck_assert_int_eq(ksnap__state_scope_rollback(f.st, &err), 0);
  ck_assert_int_eq(ksnap_state_value_get(f.st, f.v, &v, &len),
                   KSNAP_ERR_NOT_FOUND);
  /* outside a scope nothing is logged: a rollback then changes nothing */
  ksnap_state_value_put(f.st, f.v, &one, sizeof(one), &err);
  ck_assert_int_eq(ksnap__state_scope_rollback(f.st, &err), 0);
  ck_assert_int_eq(ksnap_state_value_get(f.st, f.v, &v, &len), 0);
  ksnap_state_destroy(f.st);
}
END_TEST

/* Restores the chain @p files (full file first) into a new state and
 * checks it against @p m. */
static void check_file(const ksnap_buf_t *files, size_t nfiles,
                       const model_t *m) {
  ksnap_state_file_t sf[32];
  ksnap_state_chain_t ch = {sf, nfiles};
  fix_t back;
  ksnap_error_t err;

  ck_assert_uint_le(nfiles, 32);
  for (size_t i = 0; i < nfiles; i++)
    sf[i] = (ksnap_state_file_t){files[i].data, files[i].len, NULL, NULL, 0};
  fix_new(&back, 0);
  ck_assert_int_eq(ksnap_state_restore(back.st, &ch, 1, &err), 0);
  check(&back, m);
  ksnap_state_destroy(back.st);
}

/* Random scopes, committed or rolled back, with a snapshot after every
 * few of them (a snapshot is never taken inside a scope: the task takes
 * them between records): the live state and every snapshot, full and as
 * an incremental chain, hold exactly the committed writes. */
static void random_scopes(int incremental) {
  enum { ROUNDS = 40 };
  fix_t f;
  model_t m, pending;
  ksnap_buf_t files[ROUNDS];
  size_t nfiles = 0;
  ksnap_error_t err;

  fix_new(&f, incremental);
  model_init(&m);
  for (int r = 0; r < ROUNDS; r++) {
    ksnap_state_snapshot_t *snap;
    char name[32];
    for (int s = 0; s < 5; s++) {
      int writes = (int)rnd(8);
      pending = m;
      ck_assert_int_eq(ksnap__state_scope_begin(f.st, &err), 0);
      for (int i = 0; i < writes; i++)
        random_write(&f, &pending);
      if (rnd(2)) {
        ksnap__state_scope_commit(f.st);
        m = pending;
      } else {
        ck_assert_int_eq(ksnap__state_scope_rollback(f.st, &err), 0);
      }
      if (rnd(3) == 0) /* a write outside any scope */
        random_write(&f, &m);
    }
    check(&f, &m);
    snprintf(name, sizeof(name), "chk-%d", r + 1);
    ck_assert_int_eq(ksnap_state_snapshot_begin(f.st, r + 1, name, &snap,
                                                &err), 0);
    /* the snapshot's view must not move when scopes run after it */
    pending = m;
    ck_assert_int_eq(ksnap__state_scope_begin(f.st, &err), 0);
    for (int i = 0; i < 20; i++)
      random_write(&f, &pending);
    ck_assert_int_eq(ksnap__state_scope_rollback(f.st, &err), 0);
    if (!ksnap_state_snapshot_is_incremental(snap)) { /* a new chain */
      for (size_t i = 0; i < nfiles; i++)
        ksnap_buf_cleanup(&files[i]);
      nfiles = 0;
    }
    ksnap_buf_init(&files[nfiles]);
    ck_assert_int_eq(ksnap_state_snapshot_write(snap, &files[nfiles], &err),
                     0);
    nfiles++;
    ksnap_state_snapshot_end(snap, 1);
    check_file(files, nfiles, &m);
  }
  for (size_t i = 0; i < nfiles; i++)
    ksnap_buf_cleanup(&files[i]);
  ksnap_state_destroy(f.st);
}

START_TEST(random_scopes_full_snapshots) { random_scopes(0); }
END_TEST

START_TEST(random_scopes_incremental_snapshots) { random_scopes(1); }
END_TEST

int main(void) {
  Suite *s = suite_create("state_scope");
  TCase *tc = tcase_create("state_scope");

  tcase_add_test(tc, rollback_undoes_every_kind_of_write);
  tcase_add_test(tc, rollback_removes_a_new_key);
  tcase_add_test(tc, random_scopes_full_snapshots);
  tcase_add_test(tc, random_scopes_incremental_snapshots);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
