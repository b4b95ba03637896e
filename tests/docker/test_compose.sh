#!/usr/bin/env bash
# ctest docker_compose_check: docker/compose.yaml and the Dockerfile it
# builds pass docker/validate (compose-go, Docker Compose v2's loader, and
# BuildKit's Dockerfile parser and linter: no Docker engine needed), and
# each broken fixture in tests/docker/bad/ fails with the message its
# `# expect:` line names. Skipped (77) when `go` is not installed.
#
#   tests/docker/test_compose.sh SOURCE_DIR OUT_DIR
set -euo pipefail

src=$(cd "$1" && pwd)
if ! command -v go >/dev/null 2>&1; then
  echo "skipped: no 'go' command: docker/validate is a Go program (Go 1.23 or newer)" >&2
  exit 77
fi
out=$(mkdir -p "$2" && cd "$2" && pwd)
bin=$out/validate
# -mod=readonly: go.mod and go.sum are the pinned versions, never updated.
(cd "$src/docker/validate" && go build -mod=readonly -buildvcs=false -o "$bin" .)

passed=0 failed=0
ok() { printf 'ok:   %s\n' "$1"; passed=$((passed + 1)); }
bad() { printf 'FAIL: %s\n' "$1"; failed=$((failed + 1)); }

compose=$src/docker/compose.yaml
if "$bin" "$compose" >"$out/services.txt" 2>"$out/err.txt"; then
  cat "$out/services.txt"
  missing=""
  for s in kafka minio minio-init topics coordinator worker-split worker-count producer counts; do
    grep -q "^  $s " "$out/services.txt" || missing+=" $s"
  done
  if [[ -z "$missing" ]]; then ok "docker/compose.yaml"; else bad "docker/compose.yaml: no service$missing"; fi
else
  cat "$out/err.txt"
  bad "docker/compose.yaml rejected"
fi

for f in "$src"/tests/docker/bad/*.yaml; do
  name=tests/docker/bad/$(basename "$f")
  expect=$(sed -n 's/^# expect: //p' "$f")
  if [[ -z "$expect" ]]; then
    bad "$name: no '# expect:' line"
  elif "$bin" "$f" >/dev/null 2>"$out/err.txt"; then
    bad "$name: accepted"
  elif grep -qF -- "$expect" "$out/err.txt"; then
    ok "$name rejected: $(head -1 "$out/err.txt" | sed "s|$src/||g; s|^$name: ||")"
  else
    bad "$name: rejected, but not with \"$expect\": $(cat "$out/err.txt")"
  fi
done

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
