#!/usr/bin/env bash
# Install Debian's Chromium for the real-browser tests (Playwright drives it through
# executable_path=/usr/bin/chromium) and for kaleido's PNG export.
#
# Idempotent: does nothing when /usr/bin/chromium is already there. Never runs
# `playwright install` (that downloads a browser build and fails offline). When it cannot
# install (not root, no apt-get, apt failure) it says so and exits 0, so `make browser-deps`
# never breaks a build; the browser tests skip themselves when Chromium is missing.
set -uo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  echo "install-chromium: $CHROMIUM is already installed; nothing to do."
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-chromium: not root, so not installing. Ask an administrator to run:"
  echo "    apt-get install -y chromium"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: apt-get not found; install Chromium with your system's package manager"
  echo "and make sure it is at $CHROMIUM. The browser tests will be skipped until then."
  exit 0
fi

echo "install-chromium: installing Debian's chromium package (apt-get update, then install)..."
export DEBIAN_FRONTEND=noninteractive
if apt-get update -q && apt-get install -y -q chromium; then
  if [ -x "$CHROMIUM" ]; then
    echo "install-chromium: installed $("$CHROMIUM" --version 2>/dev/null | tail -n 1)"
  else
    echo "install-chromium: apt-get succeeded but $CHROMIUM is missing; browser tests will be skipped."
  fi
else
  echo "install-chromium: apt-get failed (see above); browser tests will be skipped."
fi
exit 0
