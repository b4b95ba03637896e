/*
 * The property table: the single source of every ksnap property's name,
 * type, range, default, description and flags. CONFIGURATION.md is
 * generated from it (`ksnap config doc`); a unit test fails when the
 * committed file is stale or a description is empty.
 */
#include <stdio.h>
#include <string.h>

#include "conf_int.h"
#include "ksnap/log.h"

#define S 1000LL
#define MIN (60 * S)
#define H (60 * MIN)
#define WEEK (168 * H)
#define MIB (1024LL * 1024)
#define GIB (1024 * MIB)
#define I32 2147483647LL
#define M6 KSNAP__CONF_MICRO /* a DOUBLE's unit: see conf_int.h */

static int check_job_name(const char *v, char *errstr, size_t size) {
  size_t n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789._-");
  if (*v && !v[n] && n <= 200 && strcmp(v, ".") && strcmp(v, ".."))
    return 0;
  snprintf(errstr, size,
           "invalid value \"%s\" (1 to 200 characters of A-Z a-z 0-9 . _ -)",
           v);
  return -1;
}

static int check_http_url(const char *v, char *errstr, size_t size) {
  if ((!strncmp(v, "http://", 7) && v[7]) ||
      (!strncmp(v, "https://", 8) && v[8]))
    return 0;
  snprintf(errstr, size, "invalid URL \"%s\" (expected http://HOST[:PORT] "
           "or https://HOST[:PORT])", v);
  return -1;
}

static int check_debug(const char *v, char *errstr, size_t size) {
  uint32_t mask;

  if (!*v)
    return 0;
  return ksnap_log_parse_debug(v, &mask, errstr, size);
}

#define DUR KSNAP_CONF_DURATION
#define REQ KSNAP__CONF_REQUIRED
#define SECRET KSNAP__CONF_SECRET

/* name, type, min, max, default, enum values, flags, check, description */
const ksnap__conf_prop_t ksnap__conf_props[] = {
    {"job.name", KSNAP_CONF_STRING, 0, 0, NULL, NULL, REQ, check_job_name,
     "Name of the job. Everything the job stores (topics, transactional "
     "ids, checkpoint objects) is named after it, so it is limited to "
     "1 to 200 characters of A-Z a-z 0-9 . _ -."},
    {"execution.checkpointing.interval", DUR, 10, WEEK, "10s", NULL, 0, NULL,
     "Time between the triggers of two checkpoints."},
    {"execution.checkpointing.mode", KSNAP_CONF_ENUM, 0, 0, "EXACTLY_ONCE",
     "EXACTLY_ONCE|AT_LEAST_ONCE", 0, NULL,
     "EXACTLY_ONCE aligns barriers; AT_LEAST_ONCE does not block channels, "
     "so records after a barrier may enter the snapshot and be processed "
     "again after a restore."},
    {"execution.checkpointing.timeout", DUR, 10, WEEK, "10min", NULL, 0, NULL,
     "A checkpoint not completed within this time is aborted."},
    {"execution.checkpointing.min-pause", DUR, 0, WEEK, "0", NULL, 0, NULL,
     "Minimum time between the end of one checkpoint and the trigger of the "
     "next."},
    {"execution.checkpointing.max-concurrent-checkpoints", KSNAP_CONF_INT, 1,
     100, "1", NULL, 0, NULL,
     "Maximum number of checkpoints in progress at the same time."},
    {"execution.checkpointing.tolerable-failed-checkpoints", KSNAP_CONF_INT, 0,
     I32, "0", NULL, 0, NULL,
     "Number of consecutive failed (declined, timed out) checkpoints "
     "tolerated; one more and the job fails over: restart-strategy.type "
     "decides whether it is restored (as in Flink) or fails."},
    {"execution.checkpointing.aligned-checkpoint-timeout", DUR, 0, WEEK, "0",
     NULL, 0, NULL,
     "With unaligned checkpoints enabled, a task whose barrier alignment "
     "takes longer than this switches to an unaligned checkpoint. 0: "
     "checkpoints start unaligned at once (as in Flink)."},
    {"execution.checkpointing.alignment.max-buffered-bytes", KSNAP_CONF_SIZE,
     MIB, 64 * GIB, "32MiB", NULL, 0, NULL,
     "Memory a task may hold for one aligned checkpoint: the records of the "
     "channels whose barrier came first, while it waits for the others. On "
     "reaching it the checkpoint switches to unaligned at that task (only "
     "channel positions are stored; no record is copied), as on "
     "aligned-checkpoint-timeout; a savepoint, which is always aligned, "
     "waits without memory instead: it drops the held records and those "
     "that follow on the waiting channels, and reads them again from the "
     "log after its snapshot. At least kafka.message.max.bytes (one "
     "record)."},
    {"execution.checkpointing.unaligned.enabled", KSNAP_CONF_BOOL, 0, 0,
     "false", NULL, 0, NULL,
     "Take unaligned checkpoints: barriers overtake buffered records and "
     "each channel's position is stored instead (needs EXACTLY_ONCE)."},
    {"execution.checkpointing.unaligned.snapshot-on-trigger",
     KSNAP_CONF_BOOL, 0, 0, "false", NULL, 0, NULL,
     "With unaligned checkpoints (timeout 0), a task that reads another "
     "stage takes its part of a checkpoint at the first of the TRIGGER and "
     "a barrier: on the TRIGGER it records its read position in every "
     "input, and the records up to the barriers stay in the exchange "
     "topics, replayed after a restore, so a backlog does not delay the "
     "checkpoint. Never for a savepoint."},
    {"state.checkpoints.dir", KSNAP_CONF_URL, 0, 0, NULL, NULL, 0, NULL,
     "Where checkpoints are stored: s3://BUCKET/PREFIX, file:///PATH or a "
     "plain PATH. Required to run a job (`ksnap run` with the embedded "
     "cluster makes a new local directory); an s3:// directory needs "
     "s3.access-key and s3.secret-key, or AWS_ACCESS_KEY_ID and "
     "AWS_SECRET_ACCESS_KEY in the environment."},
    {"state.savepoints.dir", KSNAP_CONF_URL, 0, 0, NULL, NULL, 0, NULL,
     "Where savepoints go: s3://BUCKET/PREFIX, file:///PATH or a plain "
     "PATH, each in its own self-contained directory "
     "savepoint-<job>-<id>-<random>. Unset: "
     "<state.checkpoints.dir>/<job>/. Savepoints are never retired."},
    {"execution.savepoint.path", KSNAP_CONF_URL, 0, 0, NULL, NULL, 0, NULL,
     "Start the job from this savepoint (its directory's URL, as `ksnap "
     "savepoint` prints it) or retained checkpoint (.../<job>/chk-N), in a "
     "new generation, also when the job has history; new checkpoint ids "
     "are above its id. A start whose control history shows the job "
     "already started from it restores as after any restart instead (the "
     "job's newer checkpoints win). `--from-savepoint URL` of ksnap run and "
     "ksnap coordinator sets it."},
    {"execution.savepoint.ignore-unclaimed-state", KSNAP_CONF_BOOL, 0, 0,
     "false", NULL, 0, NULL,
     "Starting from execution.savepoint.path, drop the state of stages "
     "that the job graph no longer has (matched by stage name) instead of "
     "failing the job. `--allow-non-restored-state` sets it."},
    {"state.checkpoints.num-retained", KSNAP_CONF_INT, 1, 1000, "1", NULL, 0,
     NULL, "Number of completed checkpoints kept."},
    {"state.backend.incremental", KSNAP_CONF_BOOL, 0, 0, "false", NULL, 0,
     NULL, "Upload only the state changed since the previous checkpoint: "
     "a checkpoint's file holds the entries written and deleted since the "
     "task's previous snapshot and names the older files it builds on (a "
     "chain, restored oldest first). Savepoints and the first checkpoint "
     "after a restore are full. Off by default: it pays where a large "
     "state changes little between checkpoints (figures in README.md); "
     "where most keys change, deltas are as large as full files."},
    {"state.backend.incremental.max-chain-length", KSNAP_CONF_INT, 1, 1000,
     "10", NULL, 0, NULL,
     "Files in an incremental chain (the full file and its deltas); the "
     "snapshot after a chain of this length is full. 1: every snapshot is "
     "full."},
    {"state.backend.incremental.max-delta-percent", KSNAP_CONF_INT, 1,
     100000, "50", NULL, 0, NULL,
     "The next snapshot is full once a chain's deltas together exceed this "
     "percentage of its full file's bytes, so a restore reads at most about "
     "(100 + this) percent of the state's size, plus one delta."},
    {"state.backend.write-buffer-size", KSNAP_CONF_SIZE, 64 * 1024, GIB,
     "2MiB", NULL, 0, NULL,
     "Memory a task's snapshot streams through: the async phase writes the "
     "state to storage as it serializes it, in buffers of this size (two: "
     "one filling, one being written), whatever the state's size; on S3 "
     "the upload adds one part (s3.part-size) and the object's first 5 MiB. "
     "A restore reads snapshot files in windows of about this size (one "
     "key group at least)."},
    {"pipeline.max-parallelism", KSNAP_CONF_INT, 1, 32768, "128", NULL, 0,
     NULL, "Number of key groups keyed state is split into: the upper bound "
     "of any stage's parallelism after a rescale. Fixed for the job's "
     "life: a restore from state written with another value fails the "
     "job."},
    {"heartbeat.interval", DUR, 10, H, "1s", NULL, 0, NULL,
     "Time between two heartbeats of a task to the coordinator."},
    {"heartbeat.timeout", DUR, 10, 24 * H, "10s", NULL, 0, NULL,
     "A task that sent no heartbeat for this long is considered dead; if "
     "it had registered in the current generation the job fails over "
     "(restart-strategy.type). Must exceed heartbeat.interval."},
    {"worker.join", KSNAP_CONF_BOOL, 0, 0, "false", NULL, 0, NULL,
     "A worker started with this (or with `ksnap worker --join`) runs no "
     "fixed tasks: it joins the job as a member with worker.slots slots, "
     "and the coordinator gives it tasks, balanced over the members by "
     "slots; a member that stops heartbeating loses its tasks to the "
     "others in the restore that follows, and a member that joins gets "
     "tasks at the next checkpoint (a restore). Ignored with --tasks."},
    {"worker.slots", KSNAP_CONF_INT, 0, 100000, "0", NULL, 0, NULL,
     "How many tasks a member (worker.join) runs at most; 0: the number "
     "of processor cores of its machine. With fewer slots than tasks over "
     "all members the job waits, checkpointing paused, and the "
     "coordinator logs the capacity missing."},
    {"restart-strategy.type", KSNAP_CONF_ENUM, 0, 0, "exponential-delay",
     "exponential-delay|fixed-delay|failure-rate|none|exponentialdelay|"
     "fixeddelay|failurerate|off|disable", 0, NULL,
     "What the coordinator does when a task fails, falls silent or is "
     "replaced, or when more checkpoints failed in a row than "
     "execution.checkpointing.tolerable-failed-checkpoints (Flink's names "
     "and meanings): exponential-delay restores the job after a delay "
     "that grows with each failure; fixed-delay after a fixed delay, a "
     "number of times; failure-rate after a fixed delay while the "
     "failures per interval stay under a limit; none (off, disable) never "
     "restores. When the strategy gives up the job FAILS for good: the "
     "coordinator writes that on the control topic, every worker stops "
     "and `ksnap coordinator` exits 1 naming the cause. Failures that "
     "happen while a restore waits for its delay join that restore. A "
     "task that cannot start because of its configuration fails the job "
     "at once, whatever the strategy."},
    {"restart-strategy.exponential-delay.initial-backoff", DUR, 1, WEEK,
     "1s", NULL, 0, NULL,
     "exponential-delay: the delay before the first restore."},
    {"restart-strategy.exponential-delay.max-backoff", DUR, 1, WEEK, "1min",
     NULL, 0, NULL,
     "exponential-delay: the longest delay before a restore."},
    {"restart-strategy.exponential-delay.backoff-multiplier",
     KSNAP_CONF_DOUBLE, 1 * M6, 1000 * M6, "1.5", NULL, 0, NULL,
     "exponential-delay: each restore's delay is the previous one times "
     "this, up to max-backoff."},
    {"restart-strategy.exponential-delay.jitter-factor", KSNAP_CONF_DOUBLE,
     0, 1 * M6, "0.1", NULL, 0, NULL,
     "exponential-delay: a random part of each delay, up to this fraction "
     "of it, is added or taken away, so that jobs restored at the same "
     "time do not retry in step."},
    {"restart-strategy.exponential-delay.reset-backoff-threshold", DUR, 1,
     WEEK, "1h", NULL, 0, NULL,
     "exponential-delay: after running this long without a failure since "
     "its last restore, the job starts again from initial-backoff (and "
     "the attempts count from 0)."},
    {"restart-strategy.exponential-delay.attempts-before-reset-backoff",
     KSNAP_CONF_INT, 1, I32, "2147483647", NULL, 0, NULL,
     "exponential-delay: restores made before the backoff resets; one "
     "failure more and the job fails (2147483647: no limit, Flink's "
     "infinite)."},
    {"restart-strategy.fixed-delay.attempts", KSNAP_CONF_INT, 0, I32, "1",
     NULL, 0, NULL,
     "fixed-delay: restores made in all; one failure more and the job "
     "fails."},
    {"restart-strategy.fixed-delay.delay", DUR, 0, WEEK, "1s", NULL, 0, NULL,
     "fixed-delay: the delay before each restore."},
    {"restart-strategy.failure-rate.max-failures-per-interval",
     KSNAP_CONF_INT, 1, I32, "1", NULL, 0, NULL,
     "failure-rate: restores allowed within failure-rate-interval; one "
     "failure more within it and the job fails."},
    {"restart-strategy.failure-rate.failure-rate-interval", DUR, 1, WEEK,
     "1min", NULL, 0, NULL,
     "failure-rate: the interval the failures are counted in."},
    {"restart-strategy.failure-rate.delay", DUR, 0, WEEK, "1s", NULL, 0,
     NULL, "failure-rate: the delay before each restore."},
    {"rest.port", KSNAP_CONF_INT, 0, 65535, "0", NULL, 0, NULL,
     "TCP port of the coordinator's HTTP status endpoint (GET /: the "
     "dashboard page, GET /checkpoints: JSON statistics, GET /metrics: "
     "Prometheus text). 0: off."},
    {"rest.address", KSNAP_CONF_STRING, 0, 0, "127.0.0.1", NULL, 0, NULL,
     "IPv4 address the HTTP status endpoint listens on (0.0.0.0: every "
     "interface)."},
    {"sink.producer-pool-size", KSNAP_CONF_INT, 1, 100, "4", NULL, 0, NULL,
     "Transactional producers per sink task (one open transaction each, "
     "ids `<job>.<stage>.<task>.<slot>`). A transaction may stay open for "
     "execution.checkpointing.interval * sink.producer-pool-size + "
     "execution.checkpointing.timeout: kafka.transaction.timeout.ms must "
     "exceed that."},
    {"source.stop-at", KSNAP_CONF_ENUM, 0, 0, "none", "none|latest", 0, NULL,
     "Where the source stages' input ends. none: never (unbounded). "
     "latest: at each source partition's last stable offset when the job "
     "first starts; the end offsets are stored in every checkpoint, so a "
     "restore keeps the same end, and records written later are not read. "
     "A source task that reached the end on every partition sends an end "
     "of input downstream; a task whose inputs all ended sends its own. "
     "A task whose input ended runs its operator's finish once; once every "
     "task finished the coordinator takes the final checkpoint at once, "
     "writes JOB_FINISHED when every sink committed it, and the "
     "coordinator and the workers exit 0 (plugin/PROTOCOL.md 5.9)."},
    {"source.watermark.max-out-of-orderness", DUR, 0, WEEK, NULL, NULL, 0,
     NULL,
     "Event time (plugin/PROTOCOL.md section 18): the stages that read "
     "source topics make watermarks, Flink's bounded out-of-orderness: per "
     "source partition, the largest event time read so far minus this, "
     "minus 1 ms. A record's event time is its emits' timestamp when its "
     "process returns (the last ksnap_ctx_set_timestamp(), else its Kafka "
     "timestamp). Every stage passes the minimum over its inputs on through "
     "its exchange topics, and fires its event-time timers as it rises. "
     "Unset: no watermarks (event-time timers fire at the end of input "
     "only)."},
    {"source.idle-timeout", DUR, 0, WEEK, "0", NULL, 0, NULL,
     "A source partition that gave no record for this long is idle: it no "
     "longer holds its task's watermark back until its next record (a task "
     "whose partitions are all idle, or that has none, says so downstream, "
     "and its readers leave it out of their minimum). 0: partitions are "
     "never idle, so an empty partition stops event time."},
    {"pipeline.auto-watermark-interval", DUR, 1, H, "200ms", NULL, 0, NULL,
     "How often a source task computes its watermark and, if it rose, "
     "sends it downstream (a reader sends its own as soon as it rises)."},
    {"errors.tolerance", KSNAP_CONF_ENUM, 0, 0, "none", "none|all", 0, NULL,
     "What a record whose processing fails does (Kafka Connect's key and "
     "values). none: the task fails and the job restores from its latest "
     "completed checkpoint, so the record fails again, until the restart "
     "strategy (restart-strategy.type) gives up and the job FAILS. all: "
     "the record is "
     "skipped, with everything the operator did for it undone (its state "
     "writes, the records it emitted, the timers it registered), counted, "
     "and written to errors.deadletterqueue.topic.name if that is set. A "
     "record fails when the operator's process callback returns an error "
     "(KSNAP_ERR_UNDECODABLE for a key or value it cannot decode); other "
     "errors (out of memory, Kafka) still fail the task. Per stage: "
     "stage.NAME.errors.tolerance."},
    {"errors.deadletterqueue.topic.name", KSNAP_CONF_STRING, 0, 0, "", NULL, 0,
     NULL,
     "Dead-letter topic of the records that fail under errors.tolerance=all "
     "(unused with none): each one is written there with its key and value, "
     "by the task's transactional producer inside the same epoch "
     "transaction as the task's output, so the topic's read_committed "
     "content holds every failed record exactly once, also after crashes. "
     "A stage with a dead-letter topic therefore commits transactions as a "
     "sink stage does (producer pool, commit on checkpoint completion, "
     "epoch replay). ksnap does not create the topic (`ksnap topics "
     "create`). Empty: failed records are only counted and logged. Per "
     "stage: stage.NAME.errors.deadletterqueue.topic.name (empty there: "
     "none for that stage)."},
    {"errors.deadletterqueue.context.headers.enable", KSNAP_CONF_BOOL, 0, 0,
     "false", NULL, 0, NULL,
     "Add headers saying where and why a record failed to each of its "
     "dead-letter records (as Kafka Connect's __connect.errors.* headers): "
     "ksnap.errors.stage, ksnap.errors.task (the task index), "
     "ksnap.errors.topic, ksnap.errors.partition, ksnap.errors.offset (where "
     "the record was read), ksnap.errors.code (the error's name, e.g. "
     "OPERATOR or UNDECODABLE) and ksnap.errors.message, all as text. Per "
     "stage: stage.NAME.errors.deadletterqueue.context.headers.enable."},
    {"s3.endpoint", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, check_http_url,
     "S3 endpoint, http(s)://HOST[:PORT]. Unset: "
     "https://s3.REGION.amazonaws.com."},
    {"s3.region", KSNAP_CONF_STRING, 0, 0, "us-east-1", NULL, 0, NULL,
     "Region used in SigV4 signatures."},
    {"s3.access-key", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "Access key id. Set with s3.secret-key."},
    {"s3.secret-key", KSNAP_CONF_STRING, 0, 0, NULL, NULL, SECRET, NULL,
     "Secret access key. Prefer `${ENV_VAR}` or `${file:/PATH}` over "
     "writing it in the job file."},
    {"s3.session-token", KSNAP_CONF_STRING, 0, 0, NULL, NULL, SECRET, NULL,
     "Session token of temporary credentials."},
    {"s3.ca-file", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "PEM file of the certificate authorities an https:// s3.endpoint's "
     "certificate is verified against. Unset: AWS_CA_BUNDLE if set, else "
     "the system's trust store. The certificate is always verified, "
     "host name included, unless s3.tls.skip-verify is true."},
    {"s3.tls.skip-verify", KSNAP_CONF_BOOL, 0, 0, "false", NULL, 0, NULL,
     "Do not verify the https:// s3.endpoint's certificate (for tests "
     "only: anyone on the path can read and change every checkpoint). "
     "Every process that opens the storage logs a warning."},
    {"s3.path-style", KSNAP_CONF_BOOL, 0, 0, "true", NULL, 0, NULL,
     "Address buckets as ENDPOINT/BUCKET (true) or BUCKET.ENDPOINT "
     "(false)."},
    {"s3.part-size", KSNAP_CONF_SIZE, 5 * MIB, 5 * GIB, "16MiB", NULL, 0, NULL,
     "Part size of multipart uploads; larger objects are uploaded in "
     "parts."},
    {"s3.max-retries", KSNAP_CONF_INT, 0, 100, "5", NULL, 0, NULL,
     "Retries of a failed request (with backoff) before giving up."},
    {"s3.connect-timeout", DUR, 10, H, "5s", NULL, 0, NULL,
     "Timeout of one connection attempt."},
    {"s3.request-timeout", DUR, 10, 24 * H, "60s", NULL, 0, NULL,
     "Timeout of one request attempt."},
    {"s3.retry-deadline", DUR, 0, 24 * H, "2min", NULL, 0, NULL,
     "No retry starts later than this after the first attempt. 0: only "
     "s3.max-retries limits retries."},
    {"s3.max-parallel", KSNAP_CONF_INT, 1, 256, "8", NULL, 0, NULL,
     "Requests in flight at the same time per process."},
    {"log.level", KSNAP_CONF_ENUM, 0, 0, "info",
     "error|warning|notice|info|debug", 0, NULL,
     "Highest level of log lines emitted."},
    {"log.debug", KSNAP_CONF_STRING, 0, 0, "", NULL, 0, check_debug,
     "Comma-separated debug contexts (log.level debug also needed): conf, "
     "storage, state, barrier, snapshot, kafka, coord, sink, codec, task, "
     "http, or all."},
};
const size_t ksnap__conf_nprops =
    sizeof(ksnap__conf_props) / sizeof(ksnap__conf_props[0]);

/* stage.<name>.<prop>: the pipeline description. */
const ksnap__conf_prop_t ksnap__conf_stage_props[] = {
    {"parallelism", KSNAP_CONF_INT, 1, 32768, "1", NULL, 0, NULL,
     "Number of parallel tasks of the stage, `NAME[0]` .. `NAME[P-1]`; at "
     "most pipeline.max-parallelism."},
    {"operator", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "Operator the stage runs (required): `LIB.so:NAME`, the function "
     "`ksnap_operator_NAME` (else the symbol `NAME`) of a shared library "
     "looked up in the job file's directory, then in the directories of "
     "`KSNAP_OPERATOR_PATH`, then in the system's library path; or the "
     "name of a built-in operator the program registered with "
     "ksnap_operator_register()."},
    {"input", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "Comma-separated inputs of the stage (required), each `source:TOPIC` "
     "(an external source topic), `stage:NAME` (the default output of stage "
     "NAME, through its exchange topic) or `stage:NAME.OUT` (stage NAME's "
     "named output OUT, stage.NAME.output.OUT). Partition p of an input goes to task p mod "
     "parallelism. The stages form a DAG: a cycle is an error. The "
     "operator sees each record's input as written here "
     "(ksnap_record_t.input); several inputs share keyed state per key, so "
     "a stage of parallelism above 1 with several inputs may not read a "
     "source topic (it cannot be co-partitioned by key: read it in a stage "
     "of its own)."},
    {"output", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "The stage's default output, what ksnap_ctx_emit() writes: "
     "comma-separated sink topics, each `sink:TOPIC` (external, written "
     "transactionally; several stages may write one sink). Edges between "
     "stages are declared by the reader (`stage.B.input=stage:A`), so a "
     "stage that another stage reads may have no output."},
    {"output.<out>", KSNAP_CONF_STRING, 0, 0, NULL, NULL, 0, NULL,
     "A named output `<out>` of the stage (a side output, or one of "
     "several routes), what ksnap_ctx_emit_to(ctx, \"<out>\", ...) "
     "writes: comma-separated `sink:TOPIC`, or empty when only stages "
     "read it, as `stage.B.input=stage:NAME.<out>` (its own exchange "
     "topics, `JOB.NAME.<out>`, `JOB.NAME.<out>.pP`). It must go "
     "somewhere: a sink or a reader. `<out>` is 1 to 100 characters of "
     "A-Z a-z 0-9 _ -, not `p` and digits. An emit to an output the stage "
     "does not declare fails the task and the job."},
    {"partitions", KSNAP_CONF_INT, 1, 100000, NULL, NULL, 0, NULL,
     "Partitions of each exchange topic ksnap creates when other stages "
     "read stage NAME: one per distinct parallelism P of its readers, its "
     "records partitioned by key for P (each reader reads all partitions "
     "of its topic; every record goes to each topic). The topic of the "
     "first reader in the job file is `JOB.NAME`, a reader of another "
     "parallelism P reads `JOB.NAME.pP`. Default: P; must not be less "
     "than any reader's parallelism."},
    {"errors.tolerance", KSNAP_CONF_ENUM, 0, 0, NULL, "none|all", 0, NULL,
     "The stage's errors.tolerance (none or all); unset: the job's."},
    {"errors.deadletterqueue.topic.name", KSNAP_CONF_STRING, 0, 0, NULL, NULL,
     0, NULL,
     "The stage's dead-letter topic (errors.deadletterqueue.topic.name); "
     "unset: the job's; empty: none. Used only when the stage's "
     "errors.tolerance is all."},
    {"errors.deadletterqueue.context.headers.enable", KSNAP_CONF_BOOL, 0, 0,
     NULL, NULL, 0, NULL,
     "The stage's errors.deadletterqueue.context.headers.enable; unset: the "
     "job's."},
};
const size_t ksnap__conf_stage_nprops =
    sizeof(ksnap__conf_stage_props) / sizeof(ksnap__conf_stage_props[0]);

const ksnap__conf_prop_t *ksnap__conf_stage_prop_find(const char *sub) {
  size_t n = strlen(sub);

  if (!strncmp(sub, "output.", 7) && n > 7 && n - 7 <= 100 &&
      strspn(sub + 7, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_-") == n - 7)
    return ksnap__conf_prop_find(ksnap__conf_stage_props,
                                 ksnap__conf_stage_nprops, "output.<out>");
  if (!strcmp(sub, "output.<out>"))
    return NULL; /* the table's placeholder is no key */
  return ksnap__conf_prop_find(ksnap__conf_stage_props,
                               ksnap__conf_stage_nprops, sub);
}

const ksnap__conf_prop_t *ksnap__conf_prop_find(const ksnap__conf_prop_t *table,
                                                size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(table[i].name, name))
      return &table[i];
  return NULL;
}
