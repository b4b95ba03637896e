/*
 * Fake tasks for the coordinator's integration tests: one thread playing
 * every task of one stage against a real broker through the contract only
 * (records.h codecs, <job>.ksnap.control and <job>.ksnap.acks): REGISTER
 * at start and after each RESTORE, HEARTBEAT every 100 ms, ACK every
 * TRIGGER of the current generation with one state object per task
 * ("<job>/chk-N/<stage>-<i>" in state.checkpoints.dir, handle with size
 * and crc32c) (or DECLINE one chosen checkpoint),
 * COMMITTED every COMPLETE. Every control record it reads is kept as an
 * event, with whether chk-N/_metadata existed (in state.checkpoints.dir,
 * file or S3) at the moment its COMPLETE was read.
 */
#ifndef KSNAP_FAKETASK_H
#define KSNAP_FAKETASK_H

#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/records.h"

typedef struct ksnap_fake_tasks_s ksnap_fake_tasks_t;

typedef struct ksnap_fake_event_s {
  ksnap_control_type_t type;
  int64_t checkpoint_id;
  int64_t generation;
  int is_savepoint;  /* TRIGGER */
  int meta_existed;  /* COMPLETE: chk-N/_metadata was there */
  char path[512];    /* COMPLETE: metadata_path */
  int64_t seen_us;   /* monotonic time the fake tasks read it */
} ksnap_fake_event_t;

/** Starts @p n tasks "@p stage[i]" of the job in @p conf (which must
 *  outlive them). */
ksnap_fake_tasks_t *ksnap_fake_tasks_start(const ksnap_conf_t *conf,
                                           const char *stage, int n);
void ksnap_fake_tasks_stop(ksnap_fake_tasks_t *ft);

/** Task 0 declines checkpoint @p id instead of acking it. */
void ksnap_fake_tasks_decline(ksnap_fake_tasks_t *ft, int64_t id);
/** From the next TRIGGER on, task @p task's ACKs carry the source
 *  position @p offset in partition @p task of @p topic (one topic for
 *  all of them), as a source task's would. */
void ksnap_fake_tasks_position(ksnap_fake_tasks_t *ft, int task,
                               const char *topic, int64_t offset);
/** Task @p task stops heartbeating and acking until the next RESTORE. */
void ksnap_fake_tasks_silence(ksnap_fake_tasks_t *ft, int task);

/** Waits until @p cnt events of @p type (and @p generation, or any if
 *  -1) were seen. @returns 1 if so within @p timeout_ms, else 0. */
int ksnap_fake_tasks_wait(ksnap_fake_tasks_t *ft, ksnap_control_type_t type,
                          int64_t generation, int cnt, int timeout_ms);

/** Copies all events seen so far into a malloc'd array. @returns n. */
int ksnap_fake_tasks_events(ksnap_fake_tasks_t *ft, ksnap_fake_event_t **evp);

#endif /* KSNAP_FAKETASK_H */
