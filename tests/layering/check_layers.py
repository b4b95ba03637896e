#!/usr/bin/env python3
"""
The layering check of ksnap (ctest test "layering"; Python 3 standard
library only). The rules are the tables of layers.txt beside this file;
`check_layers.py --explain` prints this text and the folder order.

ksnap is built in layers, one folder per subsystem, and dependencies go one
way: a file may include headers of its own folder and of the folders below
it, never of a folder above. From the bottom:

  base                      errors, logging, buffers, checksums, utilities
  conf codec storage state  the core: properties, Avro records, file:// and
  input job                 S3 storage, operator state, input channels and
                            aligner, job graph (job uses conf)
  kafka                     the librdkafka wrapper (connectors/src/kafka)
  exchange source sink      the Kafka adapters, on the wrapper only: they
  control                   never include the task runtime or the coordinator
  task                      the task runtime, on the adapters
  stats state_machine       the coordinator: statistics and the pure state
                            machine sit on the core alone (no Kafka);
  driver                    its driver adds I/O on the adapters
  runner                    a job run in the calling process (ksnap/run.h,
                            the embedding API): driver and task
  cli                       the `ksnap` command line, on everything

The task runtime and the coordinator are two separate stacks on the
adapters (a worker process and a coordinator process); only the runner and
the command line hold both. A public header (plugin/include/ksnap/) sits in
the folder that implements it (conf.h in conf, context.h in task); ksnap.h,
the umbrella for users, sits just below cli.

One call goes against the order, on purpose and at link time only: conf
checks kafka.* properties with librdkafka through conf/conf_kafka.h, a
header conf declares and the Kafka wrapper implements (kafka_conf.c), so
that conf includes no librdkafka header.

Each third-party library is included by its wrapper alone: librdkafka by
connectors/src/kafka/, Avro C by plugin/src/codec/, libcurl by
plugin/src/storage/, libmicrohttpd by coordinator/src/driver/coord_rest.c.
That holds through other headers too: a file outside the wrapper must not
reach the library's header through the headers it includes, except through
a wrapper header listed in [exposed] (kafka_client.h hands librdkafka's
types to the adapters, which call librdkafka through the client the wrapper
configured).

Headers named like a folder's internals (*_int.h, *_internal.h, *_impl.h)
are included by files of that folder only.

The check reads every .c and .h of plugin/src, plugin/include,
connectors/src and coordinator/src (not tests/, not examples/) and resolves
each quoted include: a bare name ("codec.h") in the including file's
folder, "folder/x.h" in the one src root that has that folder, "ksnap/x.h"
in plugin/include. It fails, naming file:line, the include and the rule,
when
  (a) a file includes a header of a folder it may not depend on;
  (b) a third-party header is reached outside its wrapper;
  (c) a quoted include names no file of the tree (angle-bracket includes
      are system headers and are not resolved);
  (d) a folder's internal header is included from another folder.
Conditional compilation is not evaluated: every #include line counts.

Usage: check_layers.py [--root DIR] [--rules FILE] [--explain]
"""
import argparse
import fnmatch
import os
import re
import sys

SRC_ROOTS = ("plugin/src", "connectors/src", "coordinator/src")
PUBLIC_ROOT = "plugin/include"
PUBLIC_DIR = "plugin/include/ksnap"
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class RulesError(Exception):
    pass


def parse_rules(path):
    """Returns {section: [(line number, [words])]} of layers.txt."""
    sections, current = {}, None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], [])
            elif current is None:
                raise RulesError(f"{path}:{lineno}: text before a section")
            else:
                current.append((lineno, line.split()))
    return sections


class Rules:
    def __init__(self, path, shown):
        self.path = shown  # in messages
        sections = parse_rules(path)
        self.order = []  # folders, bottom first
        self.direct = {}
        for lineno, words in sections.get("folders", []):
            name, deps = words[0], [w for w in words[1:] if w != "-"]
            for dep in deps:
                if dep not in self.direct:
                    raise RulesError(
                        f"{path}:{lineno}: {name} names {dep}, which is not "
                        "a row above it")
            self.order.append(name)
            self.direct[name] = deps
        self.reach = {}
        for name in self.order:
            seen = set(self.direct[name])
            for dep in self.direct[name]:
                seen |= self.reach[dep]
            self.reach[name] = seen
        self.public = {}
        for lineno, words in sections.get("public", []):
            if len(words) != 2 or words[1] not in self.direct:
                raise RulesError(f"{path}:{lineno}: expected HEADER FOLDER")
            self.public[words[0]] = words[1]
        self.generated = {w[0]: w[1] for _, w in sections.get("generated", [])}
        self.third_party = [(w[0], w[1:]) for _, w in
                            sections.get("third-party", [])]
        self.exposed = {w[0]: set(w[1:]) for _, w in
                        sections.get("exposed", [])}
        self.private = [w[0] for _, w in sections.get("private", [])]

    def library_of(self, name):
        """The [third-party] row matching include @name, or None."""
        for header, places in self.third_party:
            if name == header or (header.endswith("/") and
                                  name.startswith(header)):
                return header, places
        return None

    def explain(self):
        lines = ["Folder order, bottom first (direct: what a folder's rows "
                 "name; reach: everything it may include):"]
        width = max(len(n) for n in self.order)
        for name in self.order:
            direct = " ".join(self.direct[name]) or "-"
            reach = " ".join(n for n in self.order if n in self.reach[name])
            lines.append(f"  {name:<{width}}  direct: {direct}")
            lines.append(f"  {'':<{width}}  reach:  {reach or '-'}")
        lines.append("Public headers (plugin/include/ksnap/) by folder:")
        for name in self.order:
            headers = [h for h, f in self.public.items() if f == name]
            if headers:
                lines.append(f"  {name:<{width}}  {' '.join(headers)}")
        return "\n".join(lines)


class Tree:
    """The checked files of the tree and the layer each sits in."""

    def __init__(self, root, rules):
        self.root, self.rules = root, rules
        self.problems = []
        self.folder_root = {}  # folder name -> its src root
        self.files = []
        for src in SRC_ROOTS:
            top = os.path.join(root, src)
            for folder in sorted(os.listdir(top)):
                if not os.path.isdir(os.path.join(top, folder)):
                    continue
                if folder in self.folder_root:
                    self.problems.append(
                        f"{src}/{folder}: folder name also in "
                        f"{self.folder_root[folder]}: \"{folder}/x.h\" is "
                        "ambiguous")
                self.folder_root[folder] = src
                if folder not in rules.direct:
                    self.problems.append(
                        f"{src}/{folder}: folder has no row in [folders] of "
                        f"{rules.path}")
        for src in SRC_ROOTS + (PUBLIC_ROOT,):
            for dirpath, _, names in os.walk(os.path.join(root, src)):
                for name in sorted(names):
                    if name.endswith((".c", ".h", ".h.in")):
                        self.files.append(os.path.relpath(
                            os.path.join(dirpath, name), root))
        self.files.sort()
        layers = set(self.folder_root) | set(rules.public.values())
        for name in rules.order:
            if name not in layers:
                self.problems.append(
                    f"{rules.path}: [folders] row {name} is neither a folder "
                    "of the tree nor named by [public]")

    def layer(self, path):
        """The folder row of @path (a file of the tree), or None."""
        if os.path.dirname(path) == PUBLIC_DIR:
            name = os.path.basename(path)
            return self.rules.public.get(name[:-3] if name.endswith(".in")
                                         else name)
        for src in SRC_ROOTS:
            if path.startswith(src + "/"):
                return path[len(src) + 1:].split("/")[0]
        return None

    def resolve(self, path, name):
        """The file of the tree a quoted include names, or None."""
        if name in self.rules.generated:
            target = self.rules.generated[name]
        elif "/" not in name:
            target = os.path.join(os.path.dirname(path), name)
        elif name.startswith("ksnap/"):
            target = os.path.join(PUBLIC_ROOT, name)
        else:
            src = self.folder_root.get(name.split("/")[0])
            if not src:
                return None
            target = os.path.join(src, name)
        target = os.path.normpath(target)
        return target if os.path.isfile(os.path.join(self.root, target)) \
            else None

    def includes(self, path):
        """[(line, bracket, name)] of the #include lines of @path."""
        out = []
        with open(os.path.join(self.root, path), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if m:
                    out.append((lineno, m.group(1), m.group(2)))
        return out


def allowed_place(path, places):
    return any(path.startswith(p) if p.endswith("/") else path == p
               for p in places)


class Checker:
    def __init__(self, tree):
        self.tree, self.rules = tree, tree.rules
        self.violations = [("", 0, p) for p in tree.problems]
        self.include_cnt = 0
        self.graph = {}  # file -> [(line, bracket, name, resolved or None)]
        for path in tree.files:
            edges = []
            for lineno, bracket, name in tree.includes(path):
                target = None
                if bracket == '"' and not self.rules.library_of(name):
                    target = tree.resolve(path, name)
                edges.append((lineno, bracket, name, target))
            self.graph[path] = edges
        self.exposed = {}  # wrapper header (path) -> folders it serves
        for key, folders in self.rules.exposed.items():
            target = tree.resolve("", key)
            if target is None:
                self.violations.append(
                    ("", 0, f"{self.rules.path}: [exposed] {key} names no "
                     "file"))
            else:
                self.exposed[target] = folders

    def report(self, path, lineno, bracket, name, rule, why):
        close = ">" if bracket == "<" else '"'
        self.violations.append(
            (path, lineno,
             f"{path}:{lineno}: #include {bracket}{name}{close}: {rule}: "
             f"{why}"))

    def run(self):
        for path in self.tree.files:
            layer = self.tree.layer(path)
            if layer is None:
                self.violations.append(
                    (path, 0, f"{path}: public header has no row in "
                     f"[public] of {self.rules.path}"))
                continue
            for lineno, bracket, name, target in self.graph[path]:
                self.include_cnt += 1
                self.check_one(path, layer, lineno, bracket, name, target)
            self.check_reach(path, layer)
        return [text for _, _, text in sorted(self.violations)]

    def check_one(self, path, layer, lineno, bracket, name, target):
        lib = self.rules.library_of(name)
        if lib:
            if not allowed_place(path, lib[1]):
                self.report(path, lineno, bracket, name,
                            "(b) third-party header outside its wrapper",
                            f"only {' '.join(lib[1])} may include {lib[0]}")
            return
        if bracket == "<":
            return  # a system header
        if target is None:
            self.report(path, lineno, bracket, name,
                        "(c) unresolved include",
                        "no such file in the tree (bare names: the "
                        "including folder; \"folder/x.h\": plugin/src, "
                        "connectors/src, coordinator/src; \"ksnap/x.h\": "
                        "plugin/include)")
            return
        to = self.tree.layer(target)
        if to is not None and to != layer and to not in self.rules.reach[layer]:
            below = " ".join(self.rules.direct[layer]) or "nothing"
            self.report(path, lineno, bracket, name, "(a) layering",
                        f"{layer} may not depend on {to} ({target}); {layer} "
                        f"sits on: {below}")
        if os.path.dirname(target) != os.path.dirname(path) and any(
                fnmatch.fnmatch(os.path.basename(target), p)
                for p in self.rules.private):
            self.report(path, lineno, bracket, name, "(d) private header",
                        f"{target} holds the internals of its folder")

    def check_reach(self, path, layer):
        """Rule (b) through headers: library headers @path reaches."""
        for lineno, bracket, name, target in self.graph[path]:
            if target is None:
                continue
            for lib, chain in self.libraries_behind(target, layer):
                if allowed_place(path, lib[1]):
                    continue
                self.report(path, lineno, bracket, name,
                            "(b) third-party header outside its wrapper",
                            f"reaches <{lib[0]}> through "
                            f"{' -> '.join(chain)}; only {' '.join(lib[1])} "
                            f"may include it")

    def libraries_behind(self, start, layer):
        """[(library row, include chain)] reached from header @start."""
        found, seen, stack = {}, set(), [(start, [start])]
        while stack:
            header, chain = stack.pop()
            if header in seen:
                continue
            seen.add(header)
            if layer in self.exposed.get(header, ()):
                continue  # hands its library on to @layer by design
            for _, _, name, target in self.graph.get(header, []):
                lib = self.rules.library_of(name)
                if lib and lib[0] not in found:
                    found[lib[0]] = (lib, chain)
                elif target is not None:
                    stack.append((target, chain + [target]))
        return list(found.values())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="ksnap's layering check")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--rules", default=os.path.join(here, "layers.txt"))
    ap.add_argument("--explain", action="store_true",
                    help="print the rules in prose and the folder order")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    shown = os.path.relpath(os.path.abspath(args.rules), root)
    if shown.startswith(".."):
        shown = args.rules
    try:
        rules = Rules(args.rules, shown)
    except (OSError, RulesError) as e:
        print(f"layering: bad rules: {e}", file=sys.stderr)
        return 2
    if args.explain:
        print(__doc__.strip())
        print()
        print(rules.explain())
        return 0
    tree = Tree(root, rules)
    checker = Checker(tree)
    violations = checker.run()
    for v in violations:
        print(v)
    if violations:
        print(f"layering: FAILED: {len(violations)} violation(s) in "
              f"{len(tree.files)} files; the rules: {shown} "
              "(check_layers.py --explain)")
        return 1
    print(f"layering: OK ({len(tree.files)} files, {checker.include_cnt} "
          "includes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
