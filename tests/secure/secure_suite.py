#!/usr/bin/env python3
"""The secured suite: ksnap against the secured test servers
(tests/servers/secure.sh: Kafka with SASL_SSL, SCRAM-SHA-512 users and
ACLs; S3 over HTTPS; one test CA). Stdlib only.

Cases (--case):
  wordcount  `ksnap topics create` and `ksnap run --duration` of the word
             count as user ksnap (password from a file through
             ${file:...}), log.level=debug, REST on: the committed
             counts equal the failure-free model; then the secret scan:
             no password of the servers' users appears in any output of
             the run (every command's stdout and stderr, GET /, GET
             /checkpoints and GET /metrics, `ksnap checkpoints`, `ksnap
             inspect --state` of the latest checkpoint, `ksnap config
             check`, every object the run stored in S3, every record of
             the job's topics)
  errors     each failure no restart can fix, produced for real, ends
             `ksnap run` (exit 1, no restore) with its message: a wrong
             SASL password, a broker certificate not trusted, a sink
             topic without ACL (TOPIC_AUTHORIZATION_FAILED), a user
             without transactional id ACL
             (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), S3 credentials
             refused (403), an S3 certificate not trusted; and
             s3.tls.skip-verify=true runs with a warning

Environment: the secured servers' env file (source
tests/.run/secure/env): KSNAP_TEST_KAFKA_SECURE_DIR, KSNAP_TEST_BOOTSTRAP,
KSNAP_TEST_S3_*. Without KSNAP_TEST_KAFKA_SECURE_DIR it exits 77
(skipped).
"""
import argparse
import collections
import glob
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel".split()


def log(msg):
    print("secure_suite: " + msg, file=sys.stderr, flush=True)


class Failed(Exception):
    pass


class Suite:
    def __init__(self, args):
        self.args = args
        self.sec = os.environ["KSNAP_TEST_KAFKA_SECURE_DIR"]
        self.ca = os.path.join(self.sec, "tls", "ca.pem")
        self.dir = tempfile.mkdtemp(prefix="secure-", dir=args.run_root)
        self.outputs = []  # (what, bytes): everything the secret scan reads

    def password(self, user):
        with open(os.path.join(self.sec, "secrets", user + ".password")) as f:
            return f.read()

    def job_props(self, job, user="ksnap", sink=None):
        e = os.environ
        lib = self.args.lib
        return {
            "job.name": job,
            "execution.checkpointing.interval": "500ms",
            "execution.checkpointing.timeout": "20s",
            "heartbeat.interval": "200ms",
            "heartbeat.timeout": "3s",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "200ms",
            "state.checkpoints.dir": "s3://%s/secure/%s" % (
                e["KSNAP_TEST_S3_BUCKET"], job),
            "s3.endpoint": e["KSNAP_TEST_S3_ENDPOINT"],
            "s3.access-key": e["KSNAP_TEST_S3_ACCESS_KEY"],
            "s3.secret-key": e["KSNAP_TEST_S3_SECRET_KEY"],
            "s3.ca-file": self.ca,
            "kafka.bootstrap.servers": e["KSNAP_TEST_BOOTSTRAP"],
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanisms": "SCRAM-SHA-512",
            "kafka.sasl.username": user,
            "kafka.sasl.password": "${file:%s}" % os.path.join(
                self.sec, "secrets", user + ".password"),
            "kafka.ssl.ca.location": self.ca,
            "stage.split.operator": lib + ":split",
            "stage.split.parallelism": "2",
            "stage.split.input": "source:%s.lines" % job,
            "stage.count.operator": lib + ":count",
            "stage.count.parallelism": "2",
            "stage.count.input": "stage:split",
            "stage.count.output": "sink:" + (sink or job + ".counts"),
        }

    def write_job(self, name, props):
        path = os.path.join(self.dir, name + ".properties")
        with open(path, "w") as f:
            for k, v in props.items():
                if v is not None:
                    f.write("%s=%s\n" % (k, v))
        return path

    def ksnap(self, *argv, timeout=60, check=True):
        t0 = time.monotonic()
        r = subprocess.run([self.args.ksnap] + list(argv),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        what = "ksnap " + " ".join(os.path.basename(a) for a in argv)
        self.outputs.append((what + " (stdout)", r.stdout))
        self.outputs.append((what + " (stderr)", r.stderr))
        r.elapsed = time.monotonic() - t0
        if check and r.returncode != 0:
            raise Failed("%s: exit %d: %s" % (what, r.returncode,
                                              r.stderr.decode()[-2000:]))
        return r

    def kcat(self, *argv, data=None, user="ksnap"):
        conf = os.path.join(self.sec, user + ".kcat.conf")
        r = subprocess.run(["kcat", "-F", conf, "-q"] + list(argv),
                           input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise Failed("kcat %s: %s" % (" ".join(argv), r.stderr.decode()))
        return r.stdout

    def input_lines(self, rng, n):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
                 for _ in range(n)]
        model = collections.Counter(w for l in lines for w in l.split())
        return lines, model

    # --- wordcount + secret scan ----------------------------------------
    def case_wordcount(self):
        rng = random.Random(1)
        job = "sec-wc-%d-%d" % (os.getpid(), int(time.time()) % 10**6)
        port = free_port()
        props = self.job_props(job)
        props.update({"rest.port": str(port), "log.level": "debug",
                      "log.debug": "conf,storage,coord,sink,http,kafka"})
        jf = self.write_job("wordcount", props)
        self.ksnap("config", "check", jf)
        self.ksnap("topics", "create", jf, job + ".lines:2", job + ".counts:2")
        lines, model = self.input_lines(rng, 400)
        self.kcat("-P", "-t", job + ".lines",
                  data=("\n".join(lines) + "\n").encode())
        run = subprocess.Popen([self.args.ksnap, "run", "--duration", "20s",
                                jf], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        time.sleep(8)
        for path in ("/", "/checkpoints", "/metrics"):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d%s" % (
                        port, path), timeout=10) as resp:
                    self.outputs.append(("GET " + path, resp.read()))
            except OSError as e:
                run.kill()
                raise Failed("GET %s: %s" % (path, e))
        out, err = run.communicate(timeout=60)
        self.outputs += [("ksnap run (stdout)", out), ("ksnap run (stderr)",
                                                       err)]
        if run.returncode != 0:
            raise Failed("ksnap run: exit %d: %s" % (run.returncode,
                                                     err.decode()[-2000:]))
        got = {}
        for line in out.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == job + ".counts":
                got[parts[1]] = int(parts[2])
        if got != dict(model):
            raise Failed("committed counts %s != model %s" % (got,
                                                              dict(model)))
        log("wordcount: the committed counts of %d words equal the model" %
            len(model))
        if b"Kafka authentication" in err or b"Restoring the job" in err:
            raise Failed("the run restored or failed to log in:\n" +
                         err.decode()[-2000:])
        self.scan_more(jf, job)
        self.secret_scan()

    def scan_more(self, jf, job):
        """The other outputs of the run: ksnap's listings, the stored
        objects, the job's topics."""
        r = self.ksnap("checkpoints", "list", jf, check=False)
        r = self.ksnap("checkpoints", jf, check=False)
        ids = re.findall(rb"chk-(\d+)", r.stdout + r.stderr)
        data = os.environ["KSNAP_TEST_S3_DATA_DIR"]
        files = [f for f in glob.glob(os.path.join(data, "**", "*"),
                                      recursive=True)
                 if job in f and os.path.isfile(f)]
        if not files:
            raise Failed("no stored object of the job under %s" % data)
        for f in files:
            with open(f, "rb") as fp:
                self.outputs.append((f, fp.read()))
        metas = [f for f in files if "_metadata" in f]
        if metas:
            chk = re.search(r"chk-(\d+)", metas[-1]).group(1)
            self.ksnap("inspect", "--state", jf, chk, check=False)
        topics = self.kcat("-L", "-J").decode()
        names = [t["topic"] for t in json.loads(topics)["topics"]
                 if t["topic"].startswith(job)]
        for t in names:
            self.outputs.append(("topic " + t, self.kcat(
                "-C", "-t", t, "-o", "beginning", "-e",
                "-f", "%k %s %h\n")))
        log("scan: %d outputs (%d stored objects, %d topics: %s)" % (
            len(self.outputs), len(files), len(names), ", ".join(names)))

    def secret_scan(self):
        secrets = {u: self.password(u) for u in ("ksnap", "admin",
                                                 "ksnap-notxn")}
        total = 0
        for what, data in self.outputs:
            total += len(data)
            for user, pw in secrets.items():
                if pw.encode() in data:
                    raise Failed("the password of %s appears in %s" % (
                        user, what))
        if total < 10000:
            raise Failed("the scan read only %d bytes" % total)
        log("secret scan: no password in %d outputs (%d bytes)" % (
            len(self.outputs), total))

    # --- errors ---------------------------------------------------------
    def expect_failure(self, name, props, topics, needles, admin=False):
        jf = self.write_job(name, props)
        if topics:
            creator = jf
            if admin:
                ap = dict(props)
                ap["kafka.sasl.username"] = "admin"
                ap["kafka.sasl.password"] = "${file:%s}" % os.path.join(
                    self.sec, "secrets", "admin.password")
                creator = self.write_job(name + "-admin", ap)
            self.ksnap("topics", "create", creator, *topics)
        inp = os.path.join(self.dir, "input.txt")
        with open(inp, "w") as f:
            f.write("alpha bravo\nbravo\n")
        r = self.ksnap("run", "--input", inp, jf, timeout=60, check=False)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 1:
            raise Failed("%s: ksnap run exit %d (expected 1):\n%s" % (
                name, r.returncode, err[-3000:]))
        for n in needles:
            if n not in err:
                raise Failed("%s: %r not in the output:\n%s" % (
                    name, n, err[-3000:]))
        if "Restoring the job" in err:
            raise Failed("%s: the job was restored:\n%s" % (name, err[-3000:]))
        last = [l for l in err.splitlines() if l.startswith("ksnap run:")]
        log("%s: exit 1 after %.1f s: %s" % (name, r.elapsed,
                                            last[-1][:300] if last else "?"))

    def case_errors(self):
        tag = "%d-%d" % (os.getpid(), int(time.time()) % 10**6)

        def job(n):
            return "sec-%s-%s" % (n, tag)

        j = job("badpw")
        p = self.job_props(j)
        p["kafka.sasl.password"] = "not-the-password"
        self.expect_failure("wrong-password", p, None, [
            "Kafka authentication failed", "invalid credentials"])

        j = job("kafka-ca")
        p = self.job_props(j)
        p["kafka.ssl.ca.location"] = None  # the system's trust store
        self.expect_failure("kafka-untrusted", p, None, [
            "TLS to the Kafka broker failed", "certificate verify failed"])

        j = job("topic-acl")
        sink = "denied-" + j + ".counts"  # outside the user's prefixes
        p = self.job_props(j, sink=sink)
        self.expect_failure("topic-acl", p, [j + ".lines:2", sink + ":2"], [
            "TOPIC_AUTHORIZATION_FAILED", "lacks an ACL",
            "not retriable"], admin=True)

        j = job("txn-acl")
        p = self.job_props(j, user="ksnap-notxn")
        self.expect_failure("txn-acl", p, [j + ".lines:2", j + ".counts:2"], [
            "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "lacks an ACL"])

        j = job("s3-denied")
        p = self.job_props(j)
        p["s3.secret-key"] = "not-the-secret"
        self.expect_failure("s3-denied", p, [j + ".lines:2", j + ".counts:2"],
                            ["checkpoint storage", "HTTP 403",
                             "SignatureDoesNotMatch"])

        j = job("s3-ca")
        p = self.job_props(j)
        p["s3.ca-file"] = None
        self.expect_failure("s3-untrusted", p, [j + ".lines:2",
                                                j + ".counts:2"],
                            ["checkpoint storage",
                             "TLS certificate is not trusted"])

        # the explicit skip: runs, loudly
        j = job("s3-skip")
        p = self.job_props(j)
        p["s3.ca-file"] = None
        p["s3.tls.skip-verify"] = "true"
        jf = self.write_job("s3-skip-verify", p)
        self.ksnap("topics", "create", jf, j + ".lines:2", j + ".counts:2")
        inp = os.path.join(self.dir, "input.txt")
        r = self.ksnap("run", "--input", inp, jf, timeout=60)
        err = r.stderr.decode(errors="replace")
        if "is NOT verified" not in err:
            raise Failed("s3.tls.skip-verify=true logged no warning:\n" +
                         err[-2000:])
        if "%s.counts bravo 2" % j not in r.stdout.decode():
            raise Failed("s3.tls.skip-verify=true: unexpected output %r" %
                         r.stdout.decode())
        log("s3-skip-verify: ran, with the warning, in %.1f s" % r.elapsed)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ksnap", required=True)
    ap.add_argument("--lib", required=True, help="libwordcount.so")
    ap.add_argument("--case", required=True, choices=["wordcount", "errors"])
    ap.add_argument("--run-root", default=None)
    args = ap.parse_args()
    if not os.environ.get("KSNAP_TEST_KAFKA_SECURE_DIR"):
        log("skipped: no secured servers (tests/servers/secure.sh start; "
            "source tests/.run/secure/env)")
        return 77
    if args.run_root:
        os.makedirs(args.run_root, exist_ok=True)
    suite = Suite(args)
    t0 = time.monotonic()
    try:
        getattr(suite, "case_" + args.case)()
    except (Failed, subprocess.TimeoutExpired) as e:
        log("FAILED %s: %s (files in %s)" % (args.case, e, suite.dir))
        return 1
    log("ok %s (%.1f s)" % (args.case, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
