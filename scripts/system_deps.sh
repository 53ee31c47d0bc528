#!/usr/bin/env bash
# Installs the system packages clawgym's settings and tests use (Debian/Ubuntu), or says exactly
# what to install when not running as root. Each entry is "command:package".
set -euo pipefail
needed=(
  "bwrap:bubblewrap"        # Terminal / ToolCall / SWE sandbox
  "chromium:chromium"       # GUI-v0
  "git:git"                 # SWE-v0, terminal tasks
  "jq:jq"                   # terminal tasks
  "sqlite3:sqlite3"         # terminal tasks
  "zip:zip"                 # terminal tasks
  "unzip:unzip"             # terminal tasks
  "dockerd:docker.io"       # Docker sandbox backend (the tests start a private engine)
  "debootstrap:debootstrap" # builds the Docker test image without a registry
  "npm:npm"                 # installs Node 24 and the real OpenClaw client for its integration test
)
missing=()
for entry in "${needed[@]}"; do
  command -v "${entry%%:*}" >/dev/null 2>&1 || missing+=("${entry##*:}")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "system-deps: missing packages: ${missing[*]}" >&2
  echo "  install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
