#!/bin/sh
# Refreshes third_party/js/ (the libraries `gpuleak html` embeds in its
# pages) from the npm registry at the versions pinned below: only the files
# the page uses, each library's LICENSE, a VERSION file, and SHA256SUMS so a
# refresh shows in review exactly what changed. Needs npm (`npm pack`
# checks each tarball against the registry's integrity hash). To move to a
# newer version: change its pin here, run this, rebuild, run
# `make cli-test` (the page test loads every library in Chromium).
set -eu
cd "$(dirname "$0")/.."
DEST=third_party/js
UPLOT=1.6.32
D3=7.9.2
FLAME=5.0.0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-vendor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# vendor PACKAGE VERSION DIR FILE...: FILEs (paths inside the package) go to
# $DEST/DIR with the package's LICENSE.
vendor() {
    pkg=$1 ver=$2 dir=$3
    shift 3
    mkdir -p "$tmp/$dir"
    (cd "$tmp/$dir" && npm pack --silent "$pkg@$ver" >/dev/null && tar xzf ./*.tgz)
    rm -rf "${DEST:?}/$dir"
    mkdir -p "$DEST/$dir"
    cp "$tmp/$dir/package/LICENSE" "$DEST/$dir/LICENSE"
    for f; do
        # The page inlines every file in a <script> or <style> element,
        # which a "</script" or "</style" inside would end early.
        if grep -qiE '</(script|style)' "$tmp/$dir/package/$f"; then
            echo "vendor-js: $pkg@$ver: $f contains a closing tag; cannot inline it" >&2
            exit 1
        fi
        cp "$tmp/$dir/package/$f" "$DEST/$dir/"
    done
    echo "$pkg@$ver" >"$DEST/$dir/VERSION"
}

vendor uplot "$UPLOT" uplot dist/uPlot.iife.min.js dist/uPlot.min.css
vendor d3 "$D3" d3 dist/d3.min.js
vendor d3-flame-graph "$FLAME" d3-flame-graph dist/d3-flamegraph.umd.min.js dist/d3-flamegraph.css
(cd "$DEST" && find . -type f ! -name SHA256SUMS ! -name README.md | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "vendor-js: $DEST refreshed:"
cat "$DEST"/*/VERSION
