#!/usr/bin/env bash
# Install kafkajs (the Node.js Kafka client) into build/node for tests/test_wire_kafkajs.py.
#
# Idempotent and cached: does nothing when build/node/node_modules/kafkajs is already there; npm's own
# cache (~/.npm) is used first (--prefer-offline). The version is pinned. Exits 1 with npm's last line
# when npm is missing or cannot install (the test then skips with that message).
set -uo pipefail

VERSION=2.2.4
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="$ROOT/build/node"

if [ -f "$PREFIX/node_modules/kafkajs/package.json" ]; then
  echo "install-kafkajs: kafkajs is already in $PREFIX; nothing to do."
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-kafkajs: npm is not installed"
  exit 1
fi
mkdir -p "$PREFIX"
if ! out=$(npm install --prefix "$PREFIX" --prefer-offline --no-audit --no-fund --no-save "kafkajs@$VERSION" 2>&1); then
  echo "install-kafkajs: npm could not install kafkajs@$VERSION: $(echo "$out" | tail -1)"
  exit 1
fi
echo "install-kafkajs: kafkajs@$VERSION installed in $PREFIX"
