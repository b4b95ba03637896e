/*
 * The source-lag reader (coord_lag.h). The lag of a source task is that
 * of the job's consumer group as Kafka's consumer-groups tool shows it:
 * per partition, the end offset minus the position the latest completed
 * checkpoint recorded (the sources commit exactly those positions to
 * group.id=<job> once it completes). The positions come with the ACKs
 * (stats keeps them); this file reads the end offsets.
 *
 * End offset: ListOffsets(latest) through a read_committed consumer,
 * i.e. the last stable offset, which is what a read_committed source can
 * reach (records of open transactions are not lag yet). A transactional
 * writer's commit markers take offsets too: a source past its last record
 * may stay 1 below the end per marker until it reads further, as in the
 * consumer-groups tool.
 *
 *   coordinator thread                     reader thread
 *   ksnap__lag_exchange():                 every LAG_EVERY_MS:
 *     want <- stats' source partitions       copy want
 *     stats <- ends (those read last)        query each partition's end
 *                                            ends <- the answers
 * Both sides only hold the lock to copy; the broker queries run
 * unlocked, so a slow broker delays the lag, never the state machine.
 */
#include "coord_lag.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/consumer.h"
#include "ksnap/log.h"

#define LAG_EVERY_MS 2000
#define QUERY_TIMEOUT_MS 2000

typedef struct part_s {
  char *topic;
  int32_t partition;
  int64_t end; /* -1: not read (yet) */
} part_t;

typedef struct parts_s {
  part_t *v;
  size_t cnt;
} parts_t;

struct ksnap__lag_s {
  ksnap_kafka_consumer_t *consumer; /* reader thread only */
  const char *job_name;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stop;    /* under lock */
  parts_t want; /* under lock: set by the coordinator thread */
  parts_t ends; /* under lock: set by the reader thread */
};

static void parts_free(parts_t *p) {
  for (size_t i = 0; i < p->cnt; i++)
    free(p->v[i].topic);
  free(p->v);
  p->v = NULL;
  p->cnt = 0;
}

/* Appends (topic, partition, end) unless already there. */
static int parts_add(parts_t *p, const char *topic, int32_t partition,
                     int64_t end) {
  part_t *v;

  for (size_t i = 0; i < p->cnt; i++)
    if (p->v[i].partition == partition && !strcmp(p->v[i].topic, topic))
      return 0;
  if (!(v = realloc(p->v, (p->cnt + 1) * sizeof(*v))))
    return -1;
  p->v = v;
  if (!(v[p->cnt].topic = strdup(topic)))
    return -1;
  v[p->cnt].partition = partition;
  v[p->cnt].end = end;
  p->cnt++;
  return 0;
}

static int parts_copy(parts_t *dst, const parts_t *src) {
  memset(dst, 0, sizeof(*dst));
  for (size_t i = 0; i < src->cnt; i++)
    if (parts_add(dst, src->v[i].topic, src->v[i].partition, src->v[i].end))
      return -1;
  return 0;
}

/* Reader thread: one round of queries over @p p (unlocked). */
static void query(ksnap__lag_t *lag, parts_t *p) {
  ksnap_error_t error;
  int64_t low, high;

  for (size_t i = 0; i < p->cnt; i++) {
    pthread_mutex_lock(&lag->lock);
    int stop = lag->stop; /* a stop waits for one query at most */
    pthread_mutex_unlock(&lag->lock);
    if (stop)
      return;
    if (ksnap__consumer_watermarks(lag->consumer, p->v[i].topic,
                                   p->v[i].partition, &low, &high,
                                   QUERY_TIMEOUT_MS, &error)) {
      KSNAP_DBG(COORD, "COORD", "job %s: Source lag: %s", lag->job_name,
                  error.msg);
      continue; /* end stays -1: no lag for its task this round */
    }
    p->v[i].end = high;
  }
}

static void *reader(void *opaque) {
  ksnap__lag_t *lag = opaque;
  struct timespec until;
  parts_t p;

  pthread_mutex_lock(&lag->lock);
  while (!lag->stop) {
    if (parts_copy(&p, &lag->want) == 0) {
      pthread_mutex_unlock(&lag->lock);
      query(lag, &p);
      pthread_mutex_lock(&lag->lock);
      parts_free(&lag->ends);
      lag->ends = p;
    } else {
      parts_free(&p);
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LAG_EVERY_MS / 1000;
    until.tv_nsec += (long)(LAG_EVERY_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    if (!lag->stop)
      pthread_cond_timedwait(&lag->cond, &lag->lock, &until);
  }
  pthread_mutex_unlock(&lag->lock);
  return NULL;
}

ksnap__lag_t *ksnap__lag_start(const ksnap_conf_t *conf, const char *job_name,
                               ksnap_error_t *error) {
  ksnap__lag_t *lag = calloc(1, sizeof(*lag));

  if (!lag) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "source lag: out of memory");
    return NULL;
  }
  lag->job_name = job_name;
  /* its group is never joined nor committed to: queries only */
  if (!(lag->consumer = ksnap_kafka_consumer_new(conf, "read_committed",
                                                 job_name, 0, error))) {
    free(lag);
    return NULL;
  }
  pthread_mutex_init(&lag->lock, NULL);
  pthread_cond_init(&lag->cond, NULL);
  if (pthread_create(&lag->thread, NULL, reader, lag)) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "source lag: no thread");
    pthread_mutex_destroy(&lag->lock);
    pthread_cond_destroy(&lag->cond);
    ksnap_kafka_consumer_destroy(lag->consumer);
    free(lag);
    return NULL;
  }
  return lag;
}

void ksnap__lag_exchange(ksnap__lag_t *lag, ksnap_coord_stats_t *stats) {
  const ksnap_source_offset_t *o;
  parts_t want = {0};

  if (!lag)
    return;
  for (size_t i = 0; (o = ksnap_coord_stats_source_at(stats, i)); i++)
    if (parts_add(&want, o->topic, o->partition, -1))
      break; /* out of memory: a shorter list this round */
  pthread_mutex_lock(&lag->lock);
  parts_free(&lag->want);
  lag->want = want;
  for (size_t i = 0; i < lag->ends.cnt; i++)
    if (lag->ends.v[i].end >= 0)
      ksnap_coord_stats_end_offset(stats, lag->ends.v[i].topic,
                                   lag->ends.v[i].partition,
                                   lag->ends.v[i].end);
  pthread_mutex_unlock(&lag->lock);
}

void ksnap__lag_stop(ksnap__lag_t *lag) {
  if (!lag)
    return;
  pthread_mutex_lock(&lag->lock);
  lag->stop = 1;
  pthread_cond_signal(&lag->cond);
  pthread_mutex_unlock(&lag->lock);
  pthread_join(lag->thread, NULL);
  pthread_mutex_destroy(&lag->lock);
  pthread_cond_destroy(&lag->cond);
  parts_free(&lag->want);
  parts_free(&lag->ends);
  ksnap_kafka_consumer_destroy(lag->consumer);
  free(lag);
}
