#!/bin/sh
# scripts/deps.sh -- install what rlm needs to build, test and run: the Debian
# packages, Node.js (when `node` or `npm` is missing), and the npm clients
# of tests/test_clients.c (tests/js/node_modules, from its lockfile). Run
# as root (or with sudo available) when a package is missing. `--fuzz` adds
# clang and its runtime for `make fuzz`. Quick and silent-ish when all is
# there: npm ci runs only when tests/js/node_modules does not match the lock.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
js="$root/tests/js"
# chromium: tests/test_export.c opens the exported HTML viewer headless and
# fails without it. python3-jsonschema: the REPL worker validates structured
# answers with it (rlm solve --schema; docs/structured.md).
pkgs="gcc make pkg-config ca-certificates python3 python3-jsonschema
libcurl4-openssl-dev libcjson-dev libsqlite3-dev libseccomp-dev libmicrohttpd-dev
libxxhash-dev zlib1g-dev chromium"
if [ "${1:-}" = "--fuzz" ]; then
    pkgs="$pkgs clang libclang-rt-14-dev"
fi
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
# Node.js 18+ for tests/js: check the commands, not the packages (a
# nodesource nodejs bundles npm; Debian's nodejs does not).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
if [ -z "$missing" ]; then
    echo "deps: all present:" $pkgs node npm
else
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
fi

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
    echo "deps: node $(node --version) is too old for tests/js: need 18 or later" >&2
    exit 1
fi
# The lock and package.json, hashed: node_modules is current when it holds
# the same hash (written after a successful npm ci).
want=$(cat "$js/package.json" "$js/package-lock.json" | sha256sum | cut -d' ' -f1)
stamp="$js/node_modules/.rlm-lock-hash"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "deps: tests/js/node_modules matches its lock"
else
    echo "deps: npm ci in tests/js"
    (cd "$js" && npm ci --no-audit --no-fund)
    echo "$want" > "$stamp"
fi
echo "deps: done"
