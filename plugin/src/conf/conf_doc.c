/*
 * Documentation generated from the property table: `ksnap config list`
 * (plain text) and CONFIGURATION.md (`ksnap config doc`).
 */
#include <stdio.h>
#include <string.h>

#include "conf_int.h"

void ksnap__conf_print_escaped(FILE *fp, const char *s, int is_key) {
  for (const char *p = s; *p; p++) {
    switch (*p) {
    case '\\': fputs("\\\\", fp); break;
    case '\n': fputs("\\n", fp); break;
    case '\r': fputs("\\r", fp); break;
    case '\t': fputs("\\t", fp); break;
    case '\f': fputs("\\f", fp); break;
    case '=': case ':':
      fputs(is_key ? (*p == '=' ? "\\=" : "\\:") : (*p == '=' ? "=" : ":"),
            fp);
      break;
    case ' ':
      fputs(is_key || p == s ? "\\ " : " ", fp);
      break;
    case '#': case '!':
      if (is_key && p == s)
        fputc('\\', fp);
      fputc(*p, fp);
      break;
    default: fputc(*p, fp); break;
    }
  }
}

/* "1..100", "10ms..168h", "EXACTLY_ONCE, AT_LEAST_ONCE" or "". */
static void format_range(const ksnap__conf_prop_t *prop, char *buf,
                         size_t size) {
  char lo[32], hi[32];

  buf[0] = '\0';
  switch (prop->type) {
  case KSNAP_CONF_INT:
  case KSNAP_CONF_DURATION:
  case KSNAP_CONF_SIZE:
  case KSNAP_CONF_DOUBLE:
    ksnap__conf_format_num(prop->type, prop->vmin, lo, sizeof(lo));
    ksnap__conf_format_num(prop->type, prop->vmax, hi, sizeof(hi));
    snprintf(buf, size, "%s..%s", lo, hi);
    break;
  case KSNAP_CONF_ENUM:
    for (const char *p = prop->enums; *p && strlen(buf) + 3 < size; p++)
      strncat(buf, *p == '|' ? ", " : (char[]){*p, '\0'},
              size - strlen(buf) - 1);
    break;
  default: break;
  }
}

static void list_table(FILE *fp, const char *prefix,
                       const ksnap__conf_prop_t *table, size_t n) {
  char range[128], name[128];

  for (size_t i = 0; i < n; i++) {
    const ksnap__conf_prop_t *prop = &table[i];
    format_range(prop, range, sizeof(range));
    snprintf(name, sizeof(name), "%s%s", prefix, prop->name);
    fprintf(fp, "%-52s %-8s default: %s%s%s%s%s\n    %s\n", name,
            ksnap__conf_type_name(prop->type),
            prop->sdef ? (*prop->sdef ? prop->sdef : "\"\"") : "(none)",
            !*range ? ""
            : prop->type == KSNAP_CONF_ENUM ? ", values: "
                                            : ", range: ",
            range,
            prop->flags & KSNAP__CONF_REQUIRED ? ", required" : "",
            prop->flags & KSNAP__CONF_SECRET ? ", secret" : "", prop->desc);
  }
}

void ksnap_conf_list(FILE *fp) {
  list_table(fp, "", ksnap__conf_props, ksnap__conf_nprops);
  list_table(fp, "stage.<name>.", ksnap__conf_stage_props,
             ksnap__conf_stage_nprops);
  fprintf(fp, "%-52s %-8s passed to librdkafka (see its CONFIGURATION.md)\n",
          "kafka.<librdkafka property>", "");
}

static void doc_table(FILE *fp, const char *prefix,
                      const ksnap__conf_prop_t *table, size_t n) {
  char range[128];

  fprintf(fp, "| Property | Type | Default | Range | Description |\n"
              "|---|---|---|---|---|\n");
  for (size_t i = 0; i < n; i++) {
    const ksnap__conf_prop_t *prop = &table[i];
    format_range(prop, range, sizeof(range));
    int quoted = prop->sdef && *prop->sdef;
    fprintf(fp, "| `%s%s` | %s | %s%s%s%s | %s | %s%s |\n", prefix,
            prop->name, ksnap__conf_type_name(prop->type),
            prop->flags & KSNAP__CONF_REQUIRED ? "*required*" : "",
            quoted ? "`" : "", prop->sdef ? prop->sdef : "",
            quoted ? "`" : "", range,
            prop->flags & KSNAP__CONF_SECRET ? "**Secret.** " : "",
            prop->desc);
  }
}

void ksnap_conf_doc(FILE *fp) {
  fputs(
      "# ksnap configuration\n\n"
      "<!-- Generated from plugin/src/conf/conf_table.c by "
      "`build/bin/ksnap config doc > CONFIGURATION.md`. Do not edit. -->\n\n"
      "A job is configured with a Java `.properties` file (`key=value`, "
      "`key: value` or `key value`; `#` and `!` comments; `\\` escapes and "
      "line continuations). Check one with `ksnap config check FILE`: "
      "it makes every check that the coordinator, the workers and their "
      "tasks make at start without a server (values, the rules between "
      "them, the checkpoint storage and its credentials, the job graph, "
      "every operator library loaded as the worker loads it), and "
      "`ksnap job describe`, `ksnap coordinator`, `ksnap worker` and "
      "`ksnap run` refuse a file it refuses, before anything connects.\n\n"
      "## Values\n\n"
      "- **duration**: a whole number with unit `ms`, `s`, `min` or `h` "
      "(`500ms`, `10s`, `10min`, `1h`); a bare number is milliseconds.\n"
      "- **size**: a whole number with unit `b`, `kb`, `mb`, `gb` (or `k`, "
      "`m`, `g`, `kib`, `mib`, `gib`), case-insensitive; as in Flink, every "
      "unit is a power of 1024; a bare number is bytes.\n"
      "- **bool**: `true` or `false`. **enum**: one of the listed values, "
      "case-insensitive.\n"
      "- **double**: a decimal number (`1.5`, `0.1`), kept to six decimal "
      "places.\n"
      "- **url**: `s3://BUCKET/PREFIX`, `file:///PATH` or a plain path.\n"
      "- `${NAME}` in a value is replaced by environment variable NAME "
      "(an error if unset); `${NAME:-default}` uses `default` when NAME is "
      "unset or empty; `$${` is a literal `${`. `${file:/PATH}` is replaced "
      "by the content of the file /PATH (an absolute path; one trailing "
      "newline dropped; an error if it cannot be read), e.g. "
      "`kafka.sasl.password=${file:/run/secrets/kafka-password}`. Keep "
      "secrets out of job files in one of these two ways.\n\n"
      "Secret values print as `********` in `ksnap config check` and never "
      "reach a log line.\n\n"
      "## Properties\n\n",
      fp);
  doc_table(fp, "", ksnap__conf_props, ksnap__conf_nprops);
  fputs("\n## Pipeline stages: `stage.<name>.*`\n\n"
        "One group per stage; `<name>` is 1 to 100 characters of "
        "A-Z a-z 0-9 _ -. Other sub-keys are errors.\n\n",
        fp);
  doc_table(fp, "stage.<name>.", ksnap__conf_stage_props,
            ksnap__conf_stage_nprops);
  fputs("\nExample: `lines` -> split (2 tasks) -> count (3 tasks) -> "
        "`counts`. ksnap creates the exchange topic `wordcount.split` with "
        "3 partitions; task `count[i]` reads its partition i from each of "
        "`split[0]` and `split[1]` (2 channels). `ksnap job describe FILE` "
        "prints the whole graph.\n\n"
        "```properties\n"
        "job.name=wordcount\n"
        "stage.split.operator=libwordcount.so:split\n"
        "stage.split.parallelism=2\n"
        "stage.split.input=source:lines\n"
        "stage.count.operator=libwordcount.so:count\n"
        "stage.count.parallelism=3\n"
        "stage.count.input=stage:split\n"
        "stage.count.output=sink:counts\n"
        "```\n"
        "\nThe stages form any DAG: a stage may feed several stages "
        "(fan-out), read several stages (fan-in) and "
        "write several sinks. Fan-out to readers of different "
        "parallelisms: with `stage.audit.parallelism=2` and "
        "`stage.audit.input=stage:split` added above, split writes each "
        "record to `wordcount.split` (3 partitions, read by count) and to "
        "`wordcount.split.p2` (2 partitions, read by audit), each "
        "partitioned by key for its readers.\n",
        fp);
  fputs("\n## librdkafka: `kafka.*`\n\n"
        "`kafka.<property>` is passed to librdkafka as `<property>` "
        "(e.g. `kafka.bootstrap.servers`) and checked by librdkafka itself; "
        "its error message is reported. A job needs "
        "`kafka.bootstrap.servers`, and `kafka.transaction.timeout.ms` "
        "(librdkafka's default 60000) above "
        "execution.checkpointing.interval * sink.producer-pool-size + "
        "execution.checkpointing.timeout, and at most the broker's "
        "`transaction.max.timeout.ms`. A `kafka.*` property whose name contains "
        "`password` or `secret`, `ssl.key.pem`, `sasl.oauthbearer.config` "
        "and `ssl.*`/`sasl.*` names ending in `.key` are secret.\n",
        fp);
}
