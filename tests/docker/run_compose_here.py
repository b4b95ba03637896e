#!/usr/bin/env python3
"""ctest docker_compose_run: what `docker compose up` of docker/compose.yaml
runs, run here without Docker against the test servers.

docker/validate prints the checked project as JSON (interpolated, as
`docker compose config` would show it). Every service that runs the ksnap
image is then started as Compose would start it: the same entrypoint and
command (the image's entrypoint `ksnap` being this build's ksnap), the same
environment, the bind-mounted job file, in the order of depends_on (a
service another one waits for with service_completed_successfully runs to
its end and must exit 0; the others run in the background). What differs,
and only this:
  - kafka, minio and minio-init are the test servers (tests/servers/; the
    bucket already exists), so the service environment's addresses and
    keys, which name them (kafka:9092, http://minio:9000), are replaced by
    the KSNAP_TEST_* ones;
  - KSNAP_OPERATOR_PATH, which the image sets, is this build's operators;
  - the job and its topics get a suffix unique to this run (lines ->
    lines-SUFFIX in the job file and in the commands), as the broker is
    shared with other tests and with earlier runs.
The profile-tools service `counts` is then polled until the read_committed
totals are what docker/README.md promises for the producer's 20000 lines;
`topics` runs once more (a second `up`) and must report the topics as
existing; SIGTERM then stops the coordinator and the workers, which must
exit 0. The processes run in an empty directory that must stay empty: in
the image they run as an unprivileged user in /, where they cannot write.

  run_compose_here.py --compose FILE --validate-src DIR --ksnap BIN
                      --operators DIR --work DIR
Exit: 0 passed, 1 failed, 77 skipped (no `go`).
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

# Compose's names for the servers, and the test servers' variables.
SERVER_SERVICES = {"kafka", "minio", "minio-init"}
ENV_MAP = {
    "KAFKA_BOOTSTRAP": ("kafka:9092", "KSNAP_TEST_BOOTSTRAP"),
    "S3_ENDPOINT": ("http://minio:9000", "KSNAP_TEST_S3_ENDPOINT"),
    "S3_BUCKET": ("ksnap", "KSNAP_TEST_S3_BUCKET"),
    "AWS_ACCESS_KEY_ID": ("ksnap", "KSNAP_TEST_S3_ACCESS_KEY"),
    "AWS_SECRET_ACCESS_KEY": ("ksnap-secret", "KSNAP_TEST_S3_SECRET_KEY"),
    "AWS_REGION": ("us-east-1", "KSNAP_TEST_S3_REGION"),
}
TOPICS = ("lines", "counts")
# The producer's input (docker/compose.yaml, COPIES=10000).
EXPECTED = collections.Counter(
    ("to be or not to be that is the question".split()) * 10000)
TIMEOUT_S = 180


def log(msg):
    print("compose-run: " + msg, flush=True)


def fail(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def load_project(args):
    if not shutil.which("go"):
        print("skipped: no 'go' command: docker/validate is a Go program",
              file=sys.stderr)
        sys.exit(77)
    binary = os.path.join(args.work, "validate")
    subprocess.run(["go", "build", "-mod=readonly", "-buildvcs=false", "-o",
                    binary, "."], cwd=args.validate_src, check=True)
    out = subprocess.run([binary, "-json", args.compose], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)["services"]


class Renamer:
    """Topic and job names unique to this run."""

    def __init__(self):
        self.suffix = "%d-%d" % (os.getpid(), int(time.time() * 1000))

    def arg(self, text):
        """A topic name: a whole argument ("lines"), "lines:2" of
        `topics create`, or "-t lines" of kcat."""
        for t in TOPICS:
            text = re.sub(r"(^|(?<=-t ))%s(?=$|:\d+$|\s)" % t,
                          "%s-%s" % (t, self.suffix), text)
        return text

    def job(self, text):
        text = re.sub(r"^(job\.name=)(.*)$",
                      lambda m: "%s%s-%s" % (m.group(1), m.group(2),
                                             self.suffix),
                      text, flags=re.M)
        return re.sub(r"^(stage\.\w+\.(?:input|output)=(?:source|sink):)(\S+)$",
                      lambda m: m.group(1) + self.arg(m.group(2)), text,
                      flags=re.M)


def require_env(name):
    value = os.environ.get(name)
    if not value:
        fail("%s is not set: start the servers (tests/servers/up.sh) and "
             "source tests/.run/env, or use tests/run.sh" % name)
    return value


class Service:
    def __init__(self, name, spec, args, renamer):
        self.name, self.spec = name, spec
        self.log_path = os.path.join(args.work, name + ".log")
        self.cwd = os.path.join(args.work, "cwd")
        self.proc = None
        argv = (spec.get("entrypoint") or ["ksnap"]) + (spec.get("command") or [])
        if argv[0] == "ksnap":
            argv[0] = args.ksnap
        for v in spec.get("volumes", []):
            if v["type"] != "bind":
                fail("%s: volume %s: only bind mounts are mapped" % (name, v))
            copy = os.path.join(args.work, "mnt", v["target"].lstrip("/"))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            with open(v["source"]) as f:
                text = f.read()
            with open(copy, "w") as f:
                f.write(renamer.job(text))
            argv = [copy if a == v["target"] else a for a in argv]
        self.argv = [renamer.arg(a) for a in argv]
        self.env = dict(os.environ)
        for key, value in spec.get("environment", {}).items():
            if key in ENV_MAP:
                compose_value, test_var = ENV_MAP[key]
                if value != compose_value:
                    fail("%s: %s=%s, expected %s (the compose servers)" %
                         (name, key, value, compose_value))
                value = require_env(test_var)
            self.env[key] = value
        self.env["KSNAP_OPERATOR_PATH"] = args.operators

    def start(self):
        out = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=out,
                                     stderr=subprocess.STDOUT, cwd=self.cwd,
                                     start_new_session=True)
        out.close()

    def run(self, timeout=120):
        self.start()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            fail("%s did not end within %d s" % (self.name, timeout))

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()


def start_order(specs, names):
    """Services in depends_on order."""
    done, order = set(), []

    def visit(n):
        if n in done:
            return
        done.add(n)
        for dep in specs[n].get("depends_on", {}):
            if dep in names:
                visit(dep)
        order.append(n)

    for n in sorted(names):
        visit(n)
    return order


def waited_for(specs, name):
    """True if a service waits for @name to complete successfully."""
    return any(d.get("condition") == "service_completed_successfully"
               for s in specs.values()
               for n, d in s.get("depends_on", {}).items() if n == name)


def read_counts(reader):
    open(reader.log_path, "w").close()
    if reader.run(60) != 0:
        fail("counts exited %d: %s" % (reader.proc.returncode, reader.output()))
    counts = {}
    for line in reader.output().splitlines():
        word, n = line.split()
        counts[word] = int(n)
    return counts


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--compose", "--validate-src", "--ksnap", "--operators",
                "--work"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    for opt in ("compose", "validate_src", "ksnap", "operators", "work"):
        setattr(args, opt, os.path.abspath(getattr(args, opt)))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "cwd"))
    specs = load_project(args)
    missing = SERVER_SERVICES - set(specs)
    if missing:
        fail("no service %s in %s" % (", ".join(sorted(missing)), args.compose))
    renamer = Renamer()
    ksnap = {n for n, s in specs.items() if "build" in s}
    up = {n for n in ksnap if not specs[n].get("profiles")}
    services = {n: Service(n, specs[n], args, renamer) for n in ksnap}
    log("suffix %s; servers %s" % (renamer.suffix,
                                  ", ".join(sorted(SERVER_SERVICES))))
    background = []
    try:
        for name in start_order(specs, up):
            s = services[name]
            log("%s: %s" % (name, " ".join(s.argv)))
            if waited_for(specs, name):
                if s.run() != 0:
                    fail("%s exited %d:\n%s" % (name, s.proc.returncode,
                                                s.output()))
                log("%s: exit 0: %s" % (name, s.output().strip()))
            else:
                s.start()
                background.append(s)
        deadline, counts = time.time() + TIMEOUT_S, {}
        while time.time() < deadline:
            for s in background:
                if s.proc.poll() not in (None, 0):
                    fail("%s exited %d:\n%s" % (s.name, s.proc.returncode,
                                                s.output()[-3000:]))
            counts = read_counts(services["counts"])
            if counts == EXPECTED:
                break
            time.sleep(2)
        if counts != EXPECTED:
            fail("read_committed counts after %d s: %s, expected %s" %
                 (TIMEOUT_S, counts, dict(EXPECTED)))
        log("counts (read_committed): " +
            " ".join("%s %d" % kv for kv in sorted(counts.items())))
        topics = services["topics"]
        open(topics.log_path, "w").close()
        if topics.run() != 0 or "exists" not in topics.output():
            fail("topics again: %s" % topics.output())
        log("topics again: " + topics.output().strip().replace("\n", "; "))
    finally:
        status = {s.name: s.stop() for s in background}
    bad = {n: rc for n, rc in status.items() if rc != 0}
    if bad:
        fail("exit status after SIGTERM: %s (logs in %s)" % (bad, args.work))
    log("stopped with SIGTERM, exit 0: " + ", ".join(sorted(status)))
    written = os.listdir(os.path.join(args.work, "cwd"))
    if written:
        fail("files written in the working directory: %s" % written)
    log("passed")


if __name__ == "__main__":
    main()
