#!/bin/sh
# Installs the Debian packages the build and the tests need, when missing.
# Run by `make demo` and `make test`, so a fresh machine needs nothing else.
set -e
# chromium: tests/cli/html_test.py opens the pages `gpuleak html` writes in it, headless.
# prometheus-node-exporter: tests/integration/test_metrics.py serves the shim's
# metrics through its textfile collector, on loopback.
need=""
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in gcc g++ make libunwind-dev uthash-dev check libdw-dev libjansson-dev \
           python3 python3-dev python3-pytest python3-pytest-xdist libxml2-utils pkg-config clang \
           libclang-rt-14-dev liblzma-dev xz-utils chromium prometheus-node-exporter; do
    have "$pkg" || need="$need $pkg"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
echo "gpuleak: installing:$need"
$SUDO apt-get update -qq
# $need is a list of package names: split on purpose.
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
