/* The copy-on-write state map: model-checked against a plain array, with
 * snapshots iterated on another thread while the writer keeps going. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state_map.h"
#include "testutil.h"

#define NKEYS 3000
#define MAXV 48

typedef struct {
  int present;
  uint8_t len;
  uint8_t v[MAXV];
  int64_t ts;
} model_t;

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void mkkey(int i, uint8_t key[8]) {
  memcpy(key, "k", 1);
  snprintf((char *)key + 1, 7, "%06d", i);
}

static int keyid(const uint8_t *key, size_t klen) {
  ck_assert_uint_eq(klen, 8);
  return atoi((const char *)key + 1);
}

typedef struct {
  ksnap_state_map_snap_t *snap;
  model_t *expect; /* model copied at the sync point */
  model_t *seen;
  int tombstones;
  int base_copy; /* delta: seen starts as the base model */
  int release_in_thread; /* as a runtime's async pool would */
  int by_kg; /* prepare, then key group by key group (as a snapshot file) */
} check_t;

static int collect(void *opaque, const ksnap_state_map_item_t *it) {
  check_t *c = opaque;
  int id = keyid(it->key, it->klen);

  if (it->tombstone) {
    c->seen[id].present = 0;
    c->tombstones++;
    return 0;
  }
  ck_assert_uint_le(it->vlen, MAXV);
  c->seen[id].present = 1;
  c->seen[id].len = (uint8_t)it->vlen;
  memcpy(c->seen[id].v, it->value, it->vlen);
  ck_assert_int_eq(it->kg, id % 128);
  return 0;
}

static void compare(const model_t *a, const model_t *b) {
  for (int i = 0; i < NKEYS; i++) {
    ck_assert_int_eq(a[i].present, b[i].present);
    if (a[i].present) {
      ck_assert_uint_eq(a[i].len, b[i].len);
      ck_assert_int_eq(memcmp(a[i].v, b[i].v, a[i].len), 0);
    }
  }
}

static void *check_thread(void *arg) {
  check_t *c = arg;
  if (c->by_kg) {
    ck_assert_int_eq(ksnap__state_map_snap_prepare(c->snap), KSNAP_ERR_OK);
    for (int kg = 0; kg < 128; kg++)
      ksnap__state_map_snap_iterate_kg(c->snap, kg, collect, c);
  } else {
    ksnap__state_map_snap_iterate(c->snap, collect, c);
  }
  if (c->release_in_thread) {
    ksnap__state_map_snap_release(c->snap);
    c->snap = NULL;
  }
  return NULL;
}

static void random_op(ksnap_state_map_t *map, model_t *m) {
  int id = (int)(rnd() % NKEYS);
  uint8_t key[8];

  mkkey(id, key);
  if (rnd() % 4 == 0) {
    ksnap_err_t err = ksnap__state_map_remove(map, (uint16_t)(id % 128),
                                              key, 8);
    ck_assert_int_eq(err, m[id].present ? KSNAP_ERR_OK : KSNAP_ERR_NOT_FOUND);
    m[id].present = 0;
  } else {
    uint8_t len = (uint8_t)(rnd() % MAXV);
    for (int j = 0; j < len; j++)
      m[id].v[j] = (uint8_t)rnd();
    m[id].len = len;
    m[id].present = 1;
    ck_assert_int_eq(ksnap__state_map_put(map, (uint16_t)(id % 128), key, 8,
                                          m[id].v, len), KSNAP_ERR_OK);
  }
}

static void check_reads(ksnap_state_map_t *map, const model_t *m) {
  uint8_t key[8];
  const uint8_t *v;
  size_t len;

  for (int i = 0; i < NKEYS; i++) {
    mkkey(i, key);
    ksnap_err_t err =
        ksnap__state_map_get(map, (uint16_t)(i % 128), key, 8, &v, &len);
    ck_assert_int_eq(err, m[i].present ? KSNAP_ERR_OK : KSNAP_ERR_NOT_FOUND);
    if (m[i].present) {
      ck_assert_uint_eq(len, m[i].len);
      ck_assert_int_eq(memcmp(v, m[i].v, len), 0);
    }
  }
}

START_TEST(put_get_remove_and_growth) {
  ksnap_state_map_t *map = ksnap__state_map_new(0, 0, NULL, NULL, 0, 128);
  char key[16];
  const uint8_t *v;
  size_t len;

  for (int i = 0; i < 100000; i++) {
    int n = snprintf(key, sizeof(key), "key%d", i);
    ck_assert_int_eq(ksnap__state_map_put(map, 0, key, (size_t)n, &i,
                                          sizeof(i)), KSNAP_ERR_OK);
  }
  ck_assert_uint_eq(ksnap__state_map_count(map), 100000);
  for (int i = 0; i < 100000; i++) {
    int n = snprintf(key, sizeof(key), "key%d", i);
    ck_assert_int_eq(ksnap__state_map_get(map, 0, key, (size_t)n, &v, &len),
                     KSNAP_ERR_OK);
    ck_assert_int_eq(memcmp(v, &i, sizeof(i)), 0);
    if (i % 2)
      ck_assert_int_eq(ksnap__state_map_remove(map, 0, key, (size_t)n),
                       KSNAP_ERR_OK);
  }
  ck_assert_uint_eq(ksnap__state_map_count(map), 50000);
  ck_assert_int_eq(ksnap__state_map_get(map, 0, "key1", 4, &v, &len),
                   KSNAP_ERR_NOT_FOUND);
  ksnap__state_map_destroy(map);
}
END_TEST

/* Random operations; snapshots at random points, each iterated on its own
 * thread while the writer continues; up to three live at once, released
 * in random order. Every snapshot must equal the model at its sync point. */
START_TEST(snapshots_match_model_under_concurrent_writes) {
  ksnap_state_map_t *map = ksnap__state_map_new(0, 0, NULL, NULL, 0, 128);
  model_t *m = calloc(NKEYS, sizeof(*m));
  check_t *live[3];
  pthread_t th[3];
  int nlive = 0, nsnaps = 0;

  rng_state += (uint64_t)_i * 7919;
  for (int step = 0; step < 60000; step++) {
    random_op(map, m);
    if (rnd() % 1500 == 0 && nlive < 3) {
      check_t *c = calloc(1, sizeof(*c));
      live[nlive] = c;
      c->release_in_thread = nsnaps % 2;
      c->snap = ksnap__state_map_snapshot(map, 0);
      c->expect = malloc(NKEYS * sizeof(model_t));
      memcpy(c->expect, m, NKEYS * sizeof(model_t));
      c->seen = calloc(NKEYS, sizeof(model_t));
      ck_assert_int_eq(pthread_create(&th[nlive], NULL, check_thread, c), 0);
      nlive++;
      nsnaps++;
    }
    if (nlive && rnd() % 700 == 0) {
      int k = (int)(rnd() % (uint64_t)nlive);
      pthread_join(th[k], NULL);
      compare(live[k]->expect, live[k]->seen);
      ksnap__state_map_snap_release(live[k]->snap);
      free(live[k]->expect);
      free(live[k]->seen);
      free(live[k]);
      live[k] = live[nlive - 1];
      th[k] = th[nlive - 1];
      nlive--;
    }
  }
  while (nlive--) {
    pthread_join(th[nlive], NULL);
    compare(live[nlive]->expect, live[nlive]->seen);
    ksnap__state_map_snap_release(live[nlive]->snap);
    free(live[nlive]->expect);
    free(live[nlive]->seen);
    free(live[nlive]);
  }
  ck_assert_int_gt(nsnaps, 5);
  check_reads(map, m);
  ksnap__state_map_reclaim(map);
  ck_assert_uint_eq(ksnap__state_map_retired_bytes(map), 0);
  ksnap__state_map_destroy(map);
  free(m);
}
END_TEST

/* A chain of delta views rebuilds the model: base + deltas (tombstones
 * first, then puts) equals the model at every sync point. */
/* Run 0 iterates the views whole; runs 1 and 2 key group by key group,
 * run 1 with few writes per interval (a delta view visits the buckets of
 * its dirty log, also while the table grows), run 2 with more writes than
 * a quarter of the entries (the log is off: the view walks). */
START_TEST(delta_chain_rebuilds_model) {
  ksnap_state_map_t *map = ksnap__state_map_new(0, 1, NULL, NULL, 0, 128);
  model_t *m = calloc(NKEYS, sizeof(*m));
  model_t *rebuilt = calloc(NKEYS, sizeof(*m));
  uint64_t base = 0;
  int indexed = 0;

  for (int ck = 0; ck < 20; ck++) {
    check_t c;
    pthread_t t;
    memset(&c, 0, sizeof(c));
    c.by_kg = _i > 0;
    for (int i = 0; i < (_i == 2 ? 4000 : ck == 0 ? 800 : 200 + 40 * ck); i++)
      random_op(map, m);
    c.snap = ksnap__state_map_snapshot(map, base);
    c.expect = malloc(NKEYS * sizeof(model_t));
    memcpy(c.expect, m, NKEYS * sizeof(model_t));
    c.seen = rebuilt;
    ck_assert_int_eq(pthread_create(&t, NULL, check_thread, &c), 0);
    for (int i = 0; i < 500; i++)
      random_op(map, m); /* concurrent with the async phase */
    pthread_join(t, NULL);
    compare(c.expect, rebuilt);
    if (base)
      ck_assert_uint_lt(ksnap__state_map_snap_count(c.snap), NKEYS);
    if (ksnap__state_map_snap_dirty_buckets(c.snap) >= 0)
      indexed++;
    base = ksnap__state_map_snap_version(c.snap);
    ksnap__state_map_snap_release(c.snap);
    free(c.expect);
  }
  /* every delta view of run 1 used its log, none of run 2 */
  if (_i == 1)
    ck_assert_int_eq(indexed, 19);
  else if (_i == 2)
    ck_assert_int_eq(indexed, 0);
  ksnap__state_map_destroy(map);
  free(m);
  free(rebuilt);
}
END_TEST

static int64_t fake_now;
static int64_t fake_clock(void *opaque) {
  (void)opaque;
  return fake_now;
}

static int count_items(void *opaque, const ksnap_state_map_item_t *it) {
  (void)it;
  (*(int *)opaque)++;
  return 0;
}

START_TEST(ttl_hides_expired_entries) {
  ksnap_state_map_t *map = ksnap__state_map_new(1000, 0, fake_clock, NULL, 0,
                                                128);
  ksnap_state_map_snap_t *snap;
  const uint8_t *v;
  size_t len;
  int n = 0;

  fake_now = 10000;
  ksnap__state_map_put(map, 1, "a", 1, "x", 1);
  fake_now = 10500;
  ksnap__state_map_put(map, 1, "b", 1, "y", 1);
  ck_assert_int_eq(ksnap__state_map_get(map, 1, "a", 1, &v, &len),
                   KSNAP_ERR_OK);
  fake_now = 11000; /* a expires exactly now */
  ck_assert_int_eq(ksnap__state_map_get(map, 1, "a", 1, &v, &len),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap__state_map_get(map, 1, "b", 1, &v, &len),
                   KSNAP_ERR_OK);
  snap = ksnap__state_map_snapshot(map, 0);
  fake_now = 20000; /* the view keeps its own sync-point clock */
  ksnap__state_map_snap_iterate(snap, count_items, &n);
  ck_assert_int_eq(n, 1);
  ksnap__state_map_snap_release(snap);
  ksnap__state_map_put(map, 1, "a", 1, "z", 1); /* rewrite refreshes */
  ck_assert_int_eq(ksnap__state_map_get(map, 1, "a", 1, &v, &len),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(v[0], 'z');
  ksnap__state_map_destroy(map);
}
END_TEST

/* Puts sweep expired entries out incrementally, snapshots or not. */
START_TEST(ttl_cleanup_frees_expired_entries) {
  ksnap_state_map_t *map = ksnap__state_map_new(1000, 0, fake_clock, NULL, 0,
                                                128);
  ksnap_state_map_snap_t *snap;
  char key[16];
  int n = 0;

  fake_now = 0;
  for (int i = 0; i < 5000; i++) {
    int len = snprintf(key, sizeof(key), "old%d", i);
    ksnap__state_map_put(map, 0, key, (size_t)len, "v", 1);
  }
  snap = ksnap__state_map_snapshot(map, 0); /* cleanup must copy on write */
  fake_now = 5000;
  for (int i = 0; i < 8000; i++) {
    int len = snprintf(key, sizeof(key), "new%d", i % 10);
    ksnap__state_map_put(map, 0, key, (size_t)len, "v", 1);
  }
  ck_assert_uint_eq(ksnap__state_map_count(map), 10);
  fake_now = 0; /* the view still holds all 5000 (as of its sync point) */
  ksnap__state_map_snap_iterate(snap, count_items, &n);
  ck_assert_int_eq(n, 5000);
  ksnap__state_map_snap_release(snap);
  ksnap__state_map_destroy(map);
}
END_TEST

typedef struct {
  int kg;          /* the key group iterated */
  int *seen;       /* per key id */
  int tombstones;
} by_kg_t;

static int by_kg(void *opaque, const ksnap_state_map_item_t *it) {
  by_kg_t *b = opaque;
  int id;

  ck_assert_int_eq(it->kg, b->kg);
  memcpy(&id, it->key, sizeof(id));
  if (it->tombstone)
    b->tombstones++;
  else
    b->seen[id]++;
  return 0;
}

/* Iterating a view key group by key group yields every entry once, under
 * its own key group, tombstones included, for ranges of any size and
 * offset (slot bits below 10, at 10 and above; a range not a power of
 * two), and a key group outside the map is refused. */
START_TEST(iterate_by_key_group_sees_each_entry_once) {
  static const int ranges[][2] = {{0, 128}, {5, 47}, {7, 8},
                                  {0, 300}, {100, 1300}};
  int n = 20000;

  for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
    int lo = ranges[r][0], hi = ranges[r][1], tombs = 0;
    ksnap_state_map_t *map = ksnap__state_map_new(0, 1, NULL, NULL, lo, hi);
    ksnap_state_map_snap_t *base, *snap;
    int *seen = calloc((size_t)n, sizeof(int));
    const uint8_t *v;
    size_t len;

    ck_assert_ptr_nonnull(map);
    for (int id = 0; id < n; id++) {
      uint16_t kg = (uint16_t)(lo + id % (hi - lo));
      ck_assert_int_eq(ksnap__state_map_put(map, kg, &id, sizeof(id), "v", 1),
                       0);
      ck_assert_int_eq(ksnap__state_map_get(map, kg, &id, sizeof(id), &v,
                                            &len), KSNAP_ERR_OK);
    }
    ck_assert_int_eq(ksnap__state_map_put(map, (uint16_t)hi, "x", 1, "v", 1),
                     KSNAP_ERR_INVALID_ARG);
    base = ksnap__state_map_snapshot(map, 0);
    for (int id = 0; id < n; id += 10, tombs++) {
      uint16_t kg = (uint16_t)(lo + id % (hi - lo));
      ck_assert_int_eq(ksnap__state_map_remove(map, kg, &id, sizeof(id)), 0);
    }
    snap = ksnap__state_map_snapshot(map,
                                     ksnap__state_map_snap_version(base));
    ck_assert_int_eq(ksnap__state_map_snap_prepare(base), 0);
    ck_assert_int_eq(ksnap__state_map_snap_prepare(snap), 0);
    {
      by_kg_t b = {0, seen, 0}, d = {0, seen, 0};
      for (b.kg = lo; b.kg < hi; b.kg++)
        ksnap__state_map_snap_iterate_kg(base, b.kg, by_kg, &b);
      for (int id = 0; id < n; id++)
        ck_assert_int_eq(seen[id], 1);
      for (d.kg = lo; d.kg < hi; d.kg++) /* the delta: tombstones only */
        ksnap__state_map_snap_iterate_kg(snap, d.kg, by_kg, &d);
      ck_assert_int_eq(d.tombstones, tombs);
      for (int id = 0; id < n; id++)
        ck_assert_int_eq(seen[id], 1);
      b.kg = hi; /* outside: nothing */
      ck_assert_int_eq(ksnap__state_map_snap_iterate_kg(base, hi, by_kg, &b),
                       0);
    }
    ksnap__state_map_snap_release(base);
    ksnap__state_map_snap_release(snap);
    ksnap__state_map_destroy(map);
    free(seen);
  }
  ck_assert_ptr_null(ksnap__state_map_new(0, 0, NULL, NULL, 10, 10));
  ck_assert_ptr_null(ksnap__state_map_new(0, 0, NULL, NULL, -1, 10));
}
END_TEST

int main(void) {
  Suite *s = suite_create("state_map");
  TCase *tc = tcase_create("map");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, put_get_remove_and_growth);
  tcase_add_loop_test(tc, snapshots_match_model_under_concurrent_writes, 0, 4);
  tcase_add_loop_test(tc, delta_chain_rebuilds_model, 0, 3);
  tcase_add_test(tc, ttl_hides_expired_entries);
  tcase_add_test(tc, ttl_cleanup_frees_expired_entries);
  tcase_add_test(tc, iterate_by_key_group_sees_each_entry_once);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
