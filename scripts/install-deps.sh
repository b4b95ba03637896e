#!/usr/bin/env bash
# Installs every Debian 12 package ksnap needs to build and to run its tests
# (real Kafka broker via Java + Maven, S3 server via Node.js + npm,
# headless chromium for the dashboard's browser test).
# Non-interactive and idempotent: installs only what is missing, and runs
# apt-get update only when something is.
#
#   sudo scripts/install-deps.sh        (or as root)
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config git
  librdkafka-dev libavro-dev libcurl4-openssl-dev libssl-dev
  libmicrohttpd-dev check
  # test servers and their probes
  openjdk-17-jre-headless maven python3 curl ca-certificates kcat
  openssl # the secured servers' CA (tests/servers/secure.sh)
  # the dashboard's browser test (headless; fonts for its screenshot)
  chromium fonts-liberation
)

log() { printf 'install-deps: %s\n' "$*" >&2; }

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

main() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    installed "$pkg" || missing+=("$pkg")
  done
  # Node.js may come from another source (e.g. NodeSource, which bundles
  # npm and conflicts with Debian's npm package): only the commands matter.
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)

  if ((${#missing[@]} == 0)); then
    log "all packages already installed"
    return 0
  fi
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || {
      log "missing: ${missing[*]}; run as root (or install sudo)"
      exit 1
    }
    sudo=(sudo)
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

main "$@"
