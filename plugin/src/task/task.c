/*
 * The task: one processing thread (the mailbox) per stage instance.
 * task->life is this file's (task_int.h has the map of the other files).
 *
 * States and transitions:
 *
 *   CREATED --start()--> OPENING --open ok--> RUNNING <-------------+
 *                         | |                  |  RESTORE naming    |
 *          start_claim    | | error            v  this instance     |
 *     WAITING <-----------+ |              RESTORING --open ok------+
 *      | ^ | RESTORE or     |                  ^
 *      | | | ASSIGN naming  |                  | error
 *      | | | this instance  v                  |
 *      | | +------------> RESTORING <--- FAILED <- any callback or
 *      | |                                  |       Kafka error (fail():
 *      | |                                  |       FAILURE reported)
 *      | +-- RESTORE: vacant (own heartbeats missed) -- RUNNING, FAILED
 *      v
 *   REPLACED <-- a RESTORE or ASSIGN names another owner (RUNNING,
 *                FAILED), or refuses this instance's claim (WAITING)
 *   any --stop()--> CLOSED
 *
 *   A member's task (ksnap_task_set_member(): a worker started with
 *   --join) never claims and is never REPLACED: it starts WAITING without
 *   a claim (standing by), opens when a RESTORE or ASSIGN names this
 *   instance (WAITING -> RESTORING, or RUNNING/FAILED -> RESTORING on a
 *   RESTORE), and a RESTORE naming another instance or none sends it back
 *   to standing by (RUNNING, FAILED -> WAITING, everything closed). The
 *   coordinator moves a member's task only with a RESTORE (a new
 *   generation), so the instance it left never writes beside the one it
 *   went to; a removed member stops (worker.c).
 *
 *   Made by: restore() -> RESTORING (then open_all() -> RUNNING or FAILED),
 *   claim() -> WAITING, replaced() -> REPLACED, fail() -> FAILED; the
 *   loop (task_main()) also moves RUNNING -> FAILED when an on_timer
 *   callback failed or a snapshot found that the sink's transaction can
 *   never be committed (task_snap.c). transition() refuses the rest.
 *
 * Ownership (coord_owner.c has the coordinator's side): at most one
 * instance of a task runs in a generation. Once the coordinator decides
 * owners, an instance runs a task only when a RESTORE's owner table or an
 * ASSIGN names it (DECIDED): a new instance, or one the coordinator
 * presumed dead (vacant in a RESTORE), claims the task (REGISTER with
 * claim set, before it fences or writes anything) and waits; a DECIDED
 * owner that sees a decision naming another instance, or a claimant whose
 * claim is refused, is REPLACED. Before the coordinator decides owners (a
 * job's first start, or a RESTORE without owner table written by a tool)
 * an instance takes its task (TENTATIVE) unless another one already ran
 * it in the generation; an ASSIGN naming another instance may then be
 * older than this instance's REGISTER, so only a RESTORE replaces it.
 *
 * Invariants:
 *  1. Only the processing thread touches the inputs, outputs, state and
 *     operator instance; control records arrive through the queue
 *     (life.mu).
 *  2. A snapshot's sync phase runs between two records: either on TRIGGER
 *     (source tasks) or on the aligner's SNAPSHOT action (task_poll.c).
 *  3. Records, barriers and control messages of another generation than
 *     the task's are ignored (TRIGGER/COMPLETE/ABORT) or left to the
 *     acceptance rule (exchange records).
 *  4. A FAILED task reports its failure (FAILURE, flushed: not retriable
 *     when it failed to open with a configuration error, which every
 *     restore would meet again) and processes nothing but RESTORE and
 *     ASSIGN; the coordinator's restart strategy decides. Once the report
 *     is delivered it keeps heartbeating: it is alive and waits for the
 *     RESTORE, so a restart delay longer than heartbeat.timeout does not
 *     make its owner vacant; if the report cannot be delivered it falls
 *     silent and the heartbeat timeout stands for it. RUNNING and
 *     RESTORING tasks heartbeat (the worker's thread sends them), so a
 *     restore that takes longer than heartbeat.timeout does not restore
 *     the job again; WAITING and REPLACED tasks own nothing and do not.
 *  5. WAITING and REPLACED tasks have nothing open: a claimant fences,
 *     restores and writes nothing until it owns the task, so a paused
 *     instance that resumes after its replacement took over (a zombie)
 *     never runs beside it (tests/e2e/killrun.py --case zombie).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "ksnap/log.h"
#include "task_int.h"
#include "base/util.h"

#define POLL_MS 50
#define REGISTER_FLUSH_MS 30000
#define FAILURE_FLUSH_MS 10000

static const char *state_name(ksnap__task_state_t st) {
  static const char *names[] = {"CREATED", "OPENING", "RUNNING",
                                "RESTORING", "FAILED", "CLOSED",
                                "WAITING", "REPLACED"};
  return names[st];
}

/* The one transition function: refuses illegal transitions loudly. */
static void transition(ksnap_task_t *task, ksnap__task_state_t to) {
  static const unsigned allowed[] = {
      [KSNAP__TASK_CREATED] = 1u << KSNAP__TASK_OPENING,
      [KSNAP__TASK_OPENING] = 1u << KSNAP__TASK_RUNNING |
                              1u << KSNAP__TASK_FAILED |
                              1u << KSNAP__TASK_WAITING |
                              1u << KSNAP__TASK_CLOSED,
      [KSNAP__TASK_RUNNING] = 1u << KSNAP__TASK_RESTORING |
                              1u << KSNAP__TASK_FAILED |
                              1u << KSNAP__TASK_WAITING |
                              1u << KSNAP__TASK_REPLACED |
                              1u << KSNAP__TASK_CLOSED,
      [KSNAP__TASK_RESTORING] = 1u << KSNAP__TASK_RUNNING |
                                1u << KSNAP__TASK_FAILED |
                                1u << KSNAP__TASK_CLOSED,
      [KSNAP__TASK_FAILED] = 1u << KSNAP__TASK_RESTORING |
                             1u << KSNAP__TASK_WAITING |
                             1u << KSNAP__TASK_REPLACED |
                             1u << KSNAP__TASK_CLOSED,
      [KSNAP__TASK_CLOSED] = 0,
      [KSNAP__TASK_WAITING] = 1u << KSNAP__TASK_RESTORING |
                              1u << KSNAP__TASK_REPLACED |
                              1u << KSNAP__TASK_CLOSED,
      [KSNAP__TASK_REPLACED] = 1u << KSNAP__TASK_CLOSED,
  };
  if (!(allowed[task->life.st] & (1u << to))) {
    KSNAP_ERR("task", "%s: illegal transition %s -> %s", task->id,
              state_name(task->life.st), state_name(to));
    return;
  }
  KSNAP_DBG(TASK, "task", "%s: %s -> %s", task->id, state_name(task->life.st),
            state_name(to));
  task->life.st = to;
  atomic_store(&task->life.running, to == KSNAP__TASK_RUNNING);
  atomic_store(&task->life.alive,
               to == KSNAP__TASK_RUNNING || to == KSNAP__TASK_RESTORING);
  if (to == KSNAP__TASK_REPLACED)
    atomic_store(&task->life.replaced, 1);
  if (to == KSNAP__TASK_FAILED) {
    atomic_store(&task->life.failed, 1);
  } else if (to == KSNAP__TASK_RUNNING) { /* a new run */
    atomic_store(&task->life.failed, 0);
    ksnap__task_snap_clear_failed(task);
  }
}

/* Whether a restore may cure the failure @p code: not a configuration
 * error met while the task opened (start or restore), since every restore
 * opens the same configuration again. */
static bool restart_may_help(ksnap_err_t code, bool opening) {
  bool conf = code >= KSNAP_ERR_CONF_SYNTAX && code <= KSNAP_ERR_CONF_MISSING;
  /* a checkpoint's immutable object found corrupt, cut or missing
   * (restore.c) is so at every restore from it */
  bool stored = code == KSNAP_ERR_CORRUPT || code == KSNAP_ERR_TRUNCATED ||
                code == KSNAP_ERR_CHECKSUM;
  /* a restore point that does not fit the job fits no better next time,
   * nor is a missing bucket there at the next open */
  bool unfit = code == KSNAP_ERR_INCOMPATIBLE ||
               code == KSNAP_ERR_NO_SUCH_BUCKET;

  if (code == KSNAP_ERR_ACCESS_DENIED || code == KSNAP_ERR_AUTH ||
      code == KSNAP_ERR_TLS)
    return false; /* a missing permission, a refused login, a distrust */
  return !opening || !(conf || stored || unfit);
}

/* FAILURE to the acks topic, flushed: the coordinator acts on it at once.
 * Delivered, the task heartbeats on (invariant 4). */
static void report_failure(ksnap_task_t *task, const char *reason,
                           bool retriable) {
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_FAILURE};
  ksnap_error_t error;

  rec.u.failure = (ksnap_task_failure_t){
      {(char *)ksnap_job_stage_name(task->stage), task->index},
      (char *)(task->life.instance ? task->life.instance : ""),
      atomic_load(&task->gen), (char *)reason, retriable};
  if (ksnap_control_client_send(task->cc, &rec, &error) ||
      ksnap_control_client_flush(task->cc, FAILURE_FLUSH_MS, &error)) {
    KSNAP_WARN("task", "%s: cannot report its failure (%s): it stops "
               "heartbeating instead", task->id, error.msg);
    return;
  }
  atomic_store(&task->life.alive, 1);
}

/* -> FAILED, reported; @p opening: it failed to open (start or restore). */
static void fail(ksnap_task_t *task, const ksnap_error_t *error,
                 bool opening) {
  const ksnap_error_t *misuse;
  bool retriable;

  /* an emit to an output the stage does not have: the operator's code
   * does it again after any restore */
  if (ksnap__task_op_misused(task, &misuse))
    error = misuse;
  retriable = !ksnap__task_op_misused(task, NULL) &&
              restart_may_help(error->code, opening);

  KSNAP_ERR("task", "%s failed%s: %s", task->id,
            retriable ? "" : " (not retriable)", error->msg);
  transition(task, KSNAP__TASK_FAILED);
  report_failure(task, error->msg, retriable);
}

/* REGISTER, delivered before the task writes anything in its generation:
 * the coordinator must see this instance before any record of it, or a
 * replacement started after a crash (the REGISTER lost with the process)
 * would join the same generation and every record the dead instance wrote
 * would be accepted twice (tests/e2e: killrun.py --case early). With
 * @p claim it asks to own the task (and has done nothing yet). */
static ksnap_err_t send_register(ksnap_task_t *task, bool claim,
                                 ksnap_error_t *error) {
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_REGISTER};
  char host[128] = "localhost";
  ksnap_err_t err;

  gethostname(host, sizeof(host) - 1);
  rec.u.reg = (ksnap_register_t){
      {(char *)ksnap_job_stage_name(task->stage), task->index},
      (char *)task->life.instance, host, (int32_t)getpid(),
      atomic_load(&task->gen), claim};
  if ((err = ksnap_control_client_send(task->cc, &rec, error)) ||
      (err = ksnap_control_client_flush(task->cc, REGISTER_FLUSH_MS, error))) {
    char msg[sizeof(error->msg)];
    snprintf(msg, sizeof(msg), "%s", error->msg);
    return ksnap_error_set(error, err, "%s: cannot send REGISTER: %s",
                           task->id, msg);
  }
  return KSNAP_ERR_OK;
}

void ksnap_task_heartbeat(ksnap_task_t *task) {
  ksnap_ack_record_t rec = {.type = KSNAP_ACKT_HEARTBEAT};
  int64_t gen = atomic_load(&task->gen);
  int64_t ended = atomic_load(&task->ended_gen);
  ksnap_error_t error;

  if (!atomic_load(&task->life.alive))
    return; /* a restore slower than heartbeat.timeout is not a death */
  rec.u.heartbeat = (ksnap_heartbeat_t){
      {(char *)ksnap_job_stage_name(task->stage), task->index},
      gen, ksnap__wallclock_ms(),
      ksnap_task_records_in(task), ksnap_task_records_out(task),
      ended == gen};
  if (ended == gen)
    atomic_store(&task->ended_sent, ended);
  if (ksnap_control_client_send(task->cc, &rec, &error))
    KSNAP_WARN("task", "%s: cannot send HEARTBEAT: %s", task->id, error.msg);
}

int ksnap_task_ended_untold(ksnap_task_t *task) {
  int64_t ended = atomic_load(&task->ended_gen);

  return ended >= 0 && ended == atomic_load(&task->gen) &&
         ended != atomic_load(&task->ended_sent) &&
         atomic_load(&task->life.alive);
}

static void close_all(ksnap_task_t *task) {
  ksnap__task_op_close(task);
  ksnap__task_close_io(task);
}

/* OPENING/RESTORING -> RUNNING or FAILED. */
static void open_all(ksnap_task_t *task, int64_t gen, int64_t base_id) {
  ksnap_error_t error;

  ksnap_error_clear(&error);
  if (ksnap__task_open_io(task, gen, base_id, &error) ||
      ksnap__task_op_open(task, &error)) {
    fail(task, &error, true);
    return;
  }
  if (task->life.own == KSNAP__OWN_NONE)
    task->life.own = KSNAP__OWN_TENTATIVE;
  if (send_register(task, false, &error)) {
    fail(task, &error, false);
    return;
  }
  transition(task, KSNAP__TASK_RUNNING);
}

static void restore(ksnap_task_t *task, int64_t gen, int64_t base_id) {
  int waiting = task->life.st == KSNAP__TASK_WAITING;

  KSNAP_INFO("task", "%s: restoring generation %lld from checkpoint %lld",
             task->id, (long long)gen, (long long)base_id);
  transition(task, KSNAP__TASK_RESTORING);
  if (!waiting)
    close_all(task);
  atomic_store(&task->gen, gen);
  task->life.base_id = base_id;
  if (ksnap__fault_on("task.slow-restore"))
    usleep(5000 * 1000);
  open_all(task, gen, base_id);
}

/* -> WAITING: claims the task in generation @p gen and opens nothing
 * until a RESTORE or ASSIGN names this instance (invariant 5). */
static void claim(ksnap_task_t *task, int64_t gen, int64_t base_id) {
  ksnap_error_t error;

  if (task->life.st != KSNAP__TASK_WAITING) {
    close_all(task);
    transition(task, KSNAP__TASK_WAITING);
  }
  task->life.own = KSNAP__OWN_NONE;
  atomic_store(&task->gen, gen);
  task->life.base_id = base_id;
  KSNAP_INFO("task", "%s: claiming the task in generation %lld as instance "
             "%s; waiting for the coordinator", task->id, (long long)gen,
             task->life.instance);
  if (send_register(task, true, &error))
    KSNAP_WARN("task", "%s", error.msg); /* claimed again at the next one */
}

/* A member's task -> WAITING without a claim: nothing open, it follows
 * the generation and its base until a RESTORE or ASSIGN names it. */
static void standby(ksnap_task_t *task, int64_t gen, int64_t base_id,
                    const char *owner) {
  if (task->life.st != KSNAP__TASK_WAITING) {
    KSNAP_INFO("task", "%s: generation %lld gives the task to %s: this "
               "member (%s) stands by", task->id, (long long)gen,
               owner && *owner ? owner : "no member", task->life.instance);
    close_all(task);
    transition(task, KSNAP__TASK_WAITING);
  }
  task->life.own = KSNAP__OWN_NONE;
  atomic_store(&task->gen, gen);
  task->life.base_id = base_id;
}

static void replaced(ksnap_task_t *task, const char *by) {
  KSNAP_ERR("task", "%s: replaced by instance %s: this instance (%s) stops "
            "the task for good", task->id, *by ? by : "(none)",
            task->life.instance);
  if (task->life.st != KSNAP__TASK_WAITING)
    close_all(task);
  transition(task, KSNAP__TASK_REPLACED);
}

/* The owner a RESTORE names for this task: NULL when it has no owner
 * table (everyone restores), "" when the task is vacant or not listed. */
static const char *owner_in(const ksnap_task_t *task,
                            const ksnap_restore_t *r) {
  if (!r->owner_cnt)
    return NULL;
  for (size_t i = 0; i < r->owner_cnt; i++)
    if (ksnap_task_is(task, &r->owners[i].task))
      return r->owners[i].instance ? r->owners[i].instance : "";
  return "";
}

static void on_restore(ksnap_task_t *task, const ksnap_restore_t *r) {
  int64_t base = r->checkpoint_id > 0 ? r->checkpoint_id : 0;
  const char *owner = owner_in(task, r);

  if (r->generation <= atomic_load(&task->gen) ||
      task->life.st == KSNAP__TASK_REPLACED)
    return;
  ksnap_task_set_base_url(task, base ? r->metadata_path : NULL);
  if (task->life.member) { /* only a RESTORE naming it opens it */
    if (owner && !strcmp(owner, task->life.instance)) {
      task->life.own = KSNAP__OWN_DECIDED;
      restore(task, r->generation, base);
    } else {
      standby(task, r->generation, base, owner);
    }
    return;
  }
  if (!owner || !strcmp(owner, task->life.instance)) {
    if (owner)
      task->life.own = KSNAP__OWN_DECIDED;
    restore(task, r->generation, base);
  } else if (task->life.own != KSNAP__OWN_NONE && *owner)
    replaced(task, owner);
  else
    claim(task, r->generation, base); /* presumed dead, or still claiming */
}

static void on_assign(ksnap_task_t *task, const ksnap_assign_t *a) {
  if (!ksnap_task_is(task, &a->task) || task->life.st == KSNAP__TASK_REPLACED)
    return;
  if (task->life.member) { /* the coordinator ASSIGNs vacant tasks only */
    if (a->instance && !strcmp(a->instance, task->life.instance) &&
        task->life.st == KSNAP__TASK_WAITING) {
      task->life.own = KSNAP__OWN_DECIDED;
      restore(task, atomic_load(&task->gen), task->life.base_id);
    } else if (a->instance && strcmp(a->instance, task->life.instance) &&
               task->life.st != KSNAP__TASK_WAITING) {
      standby(task, atomic_load(&task->gen), task->life.base_id,
              a->instance);
    }
    return;
  }
  if (a->refused && !strcmp(a->refused, task->life.instance))
    replaced(task, a->instance);
  else if (a->instance && !strcmp(a->instance, task->life.instance)) {
    task->life.own = KSNAP__OWN_DECIDED;
    if (task->life.st == KSNAP__TASK_WAITING)
      restore(task, atomic_load(&task->gen), task->life.base_id);
  } else if (task->life.own == KSNAP__OWN_DECIDED)
    replaced(task, a->instance ? a->instance : "");
  /* NONE: still claiming; TENTATIVE: the ASSIGN may predate our REGISTER */
}


static void handle_control(ksnap_task_t *task, const ksnap__msg_t *msg) {
  ksnap_control_record_t rec;
  ksnap_error_t error;
  int64_t gen = atomic_load(&task->gen);

  if (ksnap_codec_control_decode(msg->data, msg->len, &rec, &error)) {
    KSNAP_WARN("task", "%s: undecodable control record: %s", task->id,
               error.msg);
    return;
  }
  if (rec.type == KSNAP_CONTROL_RESTORE) {
    on_restore(task, &rec.u.restore);
  } else if (rec.type == KSNAP_CONTROL_ASSIGN) {
    on_assign(task, &rec.u.assign);
  } else if (task->life.st != KSNAP__TASK_RUNNING) {
    /* FAILED: only RESTORE and ASSIGN matter (invariant 4); JOB_FAILED is
     * the worker's (it stops every task) */
  } else if (rec.type == KSNAP_CONTROL_TRIGGER) {
    if (rec.u.trigger.generation == gen &&
        ksnap__task_trigger(task, &rec.u.trigger, &error))
      fail(task, &error, false);
  } else if (rec.type == KSNAP_CONTROL_COMPLETE) {
    if (rec.u.complete.generation == gen &&
        ksnap__task_complete(task, rec.u.complete.checkpoint_id, &error))
      fail(task, &error, false);
  } else if (rec.type == KSNAP_CONTROL_ABORT) {
    if (rec.u.abort.generation == gen)
      ksnap__task_abort(task, rec.u.abort.checkpoint_id,
                        rec.u.abort.reason ? rec.u.abort.reason : "aborted");
  }
  ksnap_control_record_cleanup(&rec);
}

static void drain_queue(ksnap_task_t *task) {
  for (;;) {
    ksnap__msg_t *msg;
    pthread_mutex_lock(&task->life.mu);
    if ((msg = task->life.qhead) && !(task->life.qhead = msg->next))
      task->life.qtail = NULL;
    pthread_mutex_unlock(&task->life.mu);
    if (!msg)
      return;
    handle_control(task, msg);
    free(msg);
  }
}

/* Due timers; a sink task logs their firings at its input positions. */
static int fire_timers(ksnap_task_t *task) {
  int32_t n = 0;
  const int64_t *pos = ksnap__task_in_processed(task, &n);

  return ksnap__task_fire_timers(task, ksnap__wallclock_ms(),
                                 task->sink ? pos : NULL, n);
}

static void *task_main(void *arg) {
  ksnap_task_t *task = arg;
  ksnap_error_t error;
  int timer_failed;

  if (task->life.member) {
    transition(task, KSNAP__TASK_WAITING); /* standing by: see the top */
    KSNAP_INFO("task", "%s: member %s stands by in generation %lld until "
               "the coordinator gives it the task", task->id,
               task->life.instance, (long long)atomic_load(&task->gen));
  } else if (task->life.start_claim)
    claim(task, atomic_load(&task->gen), task->life.base_id);
  else
    open_all(task, atomic_load(&task->gen), task->life.base_id);
  while (!atomic_load(&task->life.stop)) {
    drain_queue(task);
    if (task->life.st != KSNAP__TASK_RUNNING) {
      usleep(POLL_MS * 1000);
      continue;
    }
    ksnap__task_snap_cancel_declined(task);
    /* an on_timer callback failed, or a snapshot's async phase found
     * that the sink's transaction can never be committed */
    timer_failed = fire_timers(task);
    if (!timer_failed && ksnap__task_wm_step(task, &error)) {
      fail(task, &error, false); /* an event-time timer or the send */
      continue;
    }
    if (timer_failed || ksnap__task_snap_failed(task)) {
      ksnap_error_set(&error, KSNAP_ERR_STATE, "%s: %s", task->id,
                      timer_failed ? "an on_timer callback failed"
                                   : "a snapshot found that the sink's "
                                     "transaction can never be committed");
      fail(task, &error, false);
      continue;
    }
    ksnap_error_clear(&error);
    if (ksnap__task_poll_input(task, POLL_MS, &error) < 0)
      fail(task, &error, false);
  }
  if (task->life.st != KSNAP__TASK_WAITING &&
      task->life.st != KSNAP__TASK_REPLACED)
    close_all(task);
  transition(task, KSNAP__TASK_CLOSED);
  return NULL;
}

ksnap_err_t ksnap_task_new(const ksnap_conf_t *conf, const ksnap_job_t *job,
                           const ksnap_job_stage_t *stage, int32_t index,
                           const char *job_dir, ksnap_control_client_t *cc,
                           ksnap__snap_pool_t *pool, ksnap_task_t **taskp,
                           ksnap_error_t *error) {
  ksnap_task_t *task = calloc(1, sizeof(*task));
  int64_t mp = KSNAP_STATE_MAX_PARALLELISM_DEFAULT;
  ksnap_err_t err;

  *taskp = NULL;
  if (!task)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  atomic_store(&task->ended_gen, -1);
  atomic_store(&task->ended_sent, -1);
  task->conf = conf;
  task->job = job;
  task->stage = stage;
  task->index = index;
  task->parallelism = ksnap_job_stage_parallelism(stage);
  ksnap_job_task_id(stage, index, task->id, sizeof(task->id));
  task->is_source = ksnap_job_stage_is_source(stage);
  task->is_sink = ksnap_job_stage_is_sink(stage);
  ksnap_conf_get_int(conf, "pipeline.max-parallelism", &mp);
  task->max_par = (int)mp;
  task->cc = cc;
  pthread_mutex_init(&task->life.mu, NULL);
  ksnap__task_snap_init(task, pool);
  if ((err = ksnap__task_op_init(task, job_dir, error))) {
    ksnap_task_destroy(task);
    return err;
  }
  *taskp = task;
  return KSNAP_ERR_OK;
}

void ksnap_task_set_base_url(ksnap_task_t *task, const char *url) {
  free(task->life.base_url);
  task->life.base_url = url && *url ? strdup(url) : NULL;
}

ksnap_err_t ksnap_task_start(ksnap_task_t *task, int64_t gen, int64_t base_id,
                             const char *instance, int start_claim,
                             ksnap_error_t *error) {
  task->life.instance = instance;
  task->life.start_claim = start_claim;
  atomic_store(&task->gen, gen);
  task->life.base_id = base_id > 0 ? base_id : 0;
  transition(task, KSNAP__TASK_OPENING);
  if (pthread_create(&task->life.thread, NULL, task_main, task))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "%s: cannot start the processing thread", task->id);
  task->life.thread_started = 1;
  return KSNAP_ERR_OK;
}

void ksnap_task_set_member(ksnap_task_t *task) { task->life.member = 1; }

void ksnap_task_post(ksnap_task_t *task, const void *rec, size_t len) {
  ksnap__msg_t *msg = malloc(sizeof(*msg) + len);

  if (!msg) {
    KSNAP_ERR("task", "%s: out of memory queueing a control record",
              task->id);
    return;
  }
  msg->next = NULL;
  msg->len = len;
  memcpy(msg->data, rec, len);
  pthread_mutex_lock(&task->life.mu);
  if (task->life.qtail)
    task->life.qtail->next = msg;
  else
    task->life.qhead = msg;
  task->life.qtail = msg;
  pthread_mutex_unlock(&task->life.mu);
}

void ksnap_task_stop(ksnap_task_t *task) {
  if (!task->life.thread_started)
    return;
  atomic_store(&task->life.stop, 1);
  pthread_join(task->life.thread, NULL);
  task->life.thread_started = 0;
}

void ksnap_task_destroy(ksnap_task_t *task) {
  if (!task)
    return;
  ksnap_task_stop(task);
  while (task->life.qhead) {
    ksnap__msg_t *next = task->life.qhead->next;
    free(task->life.qhead);
    task->life.qhead = next;
  }
  ksnap__task_op_cleanup(task);
  ksnap__task_snap_cleanup(task);
  pthread_mutex_destroy(&task->life.mu);
  free(task->life.base_url);
  free(task);
}

const char *ksnap_task_id(const ksnap_task_t *task) { return task->id; }
int ksnap_task_is(const ksnap_task_t *task, const ksnap_task_id_t *id) {
  return id->stage && id->index == task->index &&
         !strcmp(id->stage, ksnap_job_stage_name(task->stage));
}
int ksnap_task_failed(const ksnap_task_t *task) {
  /* FAILED, or about to be: an async phase asked for it */
  return atomic_load(&task->life.failed) || ksnap__task_snap_failed(task);
}
int ksnap_task_replaced(const ksnap_task_t *task) {
  return atomic_load(&task->life.replaced);
}
int ksnap_task_running(const ksnap_task_t *task) {
  return atomic_load(&task->life.running);
}
int64_t ksnap_task_generation(const ksnap_task_t *task) {
  return atomic_load(&task->gen);
}
/* ksnap_task_records_in/out: task_ctx.c (the operator's counters) */
