#!/usr/bin/env bash
# Installs the Debian packages Strom needs when they are missing; a no-op (and fast) otherwise.
# Usage: scripts/ensure_system_packages.sh run|test
set -euo pipefail
mode=${1:-run}

missing=()
need() { # need COMMAND-OR-PATH PACKAGE
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -e "$1" ]; then missing+=("$2"); fi
}
need redis-server redis-server
need java openjdk-17-jre-headless
if [ "$mode" = test ]; then
  need chromium chromium
  need kcat kcat
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  # Non-Python clients under test (tests/integration/clients): sarama and kafka-go built offline with
  # Debian's Go (cgo: gcc, zstd headers), KafkaJS with Node.js/npm, Burrow with the ZooKeeper it needs.
  need go golang-go
  need gcc gcc
  need /usr/include/zstd.h libzstd-dev
  need /usr/share/gocode/src/github.com/Shopify/sarama/client.go golang-github-shopify-sarama-dev
  need /usr/share/gocode/src/github.com/segmentio/kafka-go/conn.go golang-github-segmentio-kafka-go-dev
  need node nodejs
  need npm npm
  need Burrow burrow
  need /usr/share/java/zookeeper.jar zookeeper
  need curl curl  # scripts/ensure_trixie_go.sh
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# sarama 1.45 and the Go 1.24 that builds it (Debian trixie's), unpacked under var/ without installing them.
if [ "$mode" = test ]; then "$(dirname "$0")/ensure_trixie_go.sh"; fi
