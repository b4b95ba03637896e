#!/usr/bin/env bash
# ctest docker_build_steps: the steps of docker/Dockerfile run here,
# without Docker, on this Debian 12 machine (the Dockerfile's base is
# debian:12):
#   1. the build context: the files BuildKit would send (docker/validate
#      applies docker/Dockerfile.dockerignore), copied to a scratch dir;
#   2. the build stage: scripts/install-deps.sh (as root only; it installs
#      only what is missing), then docker/build.sh with prefix /opt/ksnap
#      (installed under DESTDIR in the scratch dir);
#   3. the runtime stage's promises: every shared library that ksnap,
#      libksnap and the operators need comes from a package of
#      docker/runtime-packages.txt or one of its dependencies (or is part
#      of every Debian system), `ksnap version` runs, the operators are
#      where KSNAP_OPERATOR_PATH points, and the compose file's workers
#      run every task of the job.
# What this cannot show: that debian:12 and debian:12-slim as pulled from a
# registry install the same packages (no registry is reachable here).
# Skipped (77) when `go` is missing (step 1 needs docker/validate).
#
#   tests/docker/test_build_steps.sh SOURCE_DIR OUT_DIR
set -euo pipefail

src=$(cd "$1" && pwd)
if ! command -v go >/dev/null 2>&1; then
  echo "skipped: no 'go' command: docker/validate lists the build context" >&2
  exit 77
fi
out=$(mkdir -p "$2" && cd "$2" && pwd)
work=$out/scratch
rm -rf "$work"
mkdir -p "$work"
ctx=$work/context root=$work/root prefix=/opt/ksnap
log() { printf 'build-steps: %s\n' "$*"; }
die() { printf 'build-steps: FAIL: %s\n' "$*"; exit 1; }

(cd "$src/docker/validate" && go build -mod=readonly -buildvcs=false -o "$out/validate" .)
compose=$src/docker/compose.yaml

log "1. build context (docker/Dockerfile.dockerignore applied)"
"$out/validate" -context-files coordinator "$compose" >"$work/context.txt"
mkdir -p "$ctx"
tar -C "$src" -cf - -T "$work/context.txt" | tar -C "$ctx" -xf -
log "   $(wc -l <"$work/context.txt") files"
[[ ! -e "$ctx/build" && ! -e "$ctx/.git" ]] || die "build/ or .git/ in the context"

log "2. build stage"
if ((EUID == 0)); then
  bash "$ctx/scripts/install-deps.sh"
else
  log "   not root: scripts/install-deps.sh not run"
fi
DESTDIR=$root bash "$ctx/docker/build.sh" "$ctx" "$work/build" "$prefix" \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; die "docker/build.sh"; }
inst=$root$prefix
for f in bin/ksnap lib/libksnap.so.0 lib/ksnap/libwordcount.so; do
  [[ -f "$inst/$f" ]] || die "$prefix/$f not installed"
done

log "3. runtime stage: libraries from docker/runtime-packages.txt"
mapfile -t listed < <(grep -v '^#' "$src/docker/runtime-packages.txt" | grep .)
# What apt-get install of the listed packages brings, and what every
# Debian system has (priority required, as in debian:12-slim).
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${listed[@]}" |
  grep -v '^[ <]' >"$work/runtime-closure.txt" || die "apt-cache depends"
dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" {print $1}' \
  >>"$work/runtime-closure.txt"
bad=0
for elf in "$inst/bin/ksnap" "$inst"/lib/*.so.* "$inst"/lib/ksnap/*.so; do
  [[ -L "$elf" ]] && continue
  for lib in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # "lib => /path (addr)", or "/path/ld-linux-x86-64.so.2 (addr)"
    path=$(LD_LIBRARY_PATH=$inst/lib ldd "$elf" | awk -v l="$lib" '
      $1 == l && $2 == "=>" {print $3}
      $2 != "=>" && substr($1, length($1) - length(l)) == "/" l {print $1}')
    if [[ -z "$path" || "$path" == "not" ]]; then
      log "   ${elf#"$root"}: $lib not found"; bad=1; continue
    fi
    [[ "$path" == "$inst"/* ]] && continue
    pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1) ||
      pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1) || true
    if [[ -z "$pkg" ]]; then
      log "   ${elf#"$root"}: $lib ($path) belongs to no package"; bad=1
    elif grep -qx "$pkg" "$work/runtime-closure.txt"; then
      log "   ${elf#"$root"}: $lib from $pkg"
    else
      log "   ${elf#"$root"}: $lib from $pkg, not in docker/runtime-packages.txt"; bad=1
    fi
  done
done
((bad == 0)) || die "runtime libraries"

log "   ksnap version"
LD_LIBRARY_PATH=$inst/lib "$inst/bin/ksnap" version || die "ksnap version"
[[ -f "$inst/lib/ksnap/libwordcount.so" ]] || die "no $prefix/lib/ksnap/libwordcount.so (KSNAP_OPERATOR_PATH)"
grep -q "KSNAP_OPERATOR_PATH=$prefix/lib/ksnap" "$src/docker/Dockerfile" ||
  die "docker/Dockerfile does not set KSNAP_OPERATOR_PATH=$prefix/lib/ksnap"

log "   the compose file's workers run every task of the job"
env KAFKA_BOOTSTRAP=kafka:9092 S3_ENDPOINT=http://minio:9000 S3_BUCKET=ksnap \
  AWS_ACCESS_KEY_ID=ksnap AWS_SECRET_ACCESS_KEY=ksnap-secret \
  LD_LIBRARY_PATH="$inst/lib" KSNAP_OPERATOR_PATH="$inst/lib/ksnap" \
  "$inst/bin/ksnap" job describe \
  "$src/examples/wordcount/wordcount.properties" >"$work/describe.txt" ||
  die "ksnap job describe"
sed -n 's/^  task \([a-z]*\)\[\([0-9]*\)\].*/\1:\2/p' "$work/describe.txt" | sort >"$work/tasks-job.txt"
"$out/validate" "$compose" | grep -o '"--tasks" "[^"]*"' | cut -d'"' -f4 | tr ',' '\n' |
  sort >"$work/tasks-compose.txt"
diff "$work/tasks-job.txt" "$work/tasks-compose.txt" ||
  die "tasks of the job (<) and of the compose file's workers (>) differ"
log "   $(tr '\n' ' ' <"$work/tasks-job.txt")"
log "passed"
