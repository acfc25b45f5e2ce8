#!/bin/sh
# tools/deps.sh -- install the Debian packages rlm needs to build, test and
# run. Run as root (or with sudo available). `--fuzz` adds clang and its
# runtime for `make fuzz`.
set -eu
# chromium: tests/test_export.c opens the exported HTML viewer headless and
# fails without it.
pkgs="gcc make pkg-config ca-certificates python3
libcurl4-openssl-dev libcjson-dev libsqlite3-dev libseccomp-dev libmicrohttpd-dev
libxxhash-dev chromium"
if [ "${1:-}" = "--fuzz" ]; then
    pkgs="$pkgs clang libclang-rt-14-dev"
fi
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "deps: all present:" $pkgs
    exit 0
fi
echo "deps: installing:$missing"
sudo=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo=sudo
    else
        echo "deps: must run as root to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
echo "deps: done"
