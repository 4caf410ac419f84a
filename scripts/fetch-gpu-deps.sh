#!/usr/bin/env bash
# fetch-gpu-deps.sh: runs HERE (the Debian build machine, with network), never on
# the GPU machine. Fills .deps/ (git-ignored) with Debian's libunwind runtime and
# headers, so the shim can be built and run on the GPU machine, which has no
# libunwind and no package installs. Carry it along with the device tool's
# carry: [".deps"].
#
#   .deps/lib/       libunwind.so.8*, libunwind-x86_64.so.8*, libunwind.so (link-time name)
#   .deps/include/   libunwind*.h (not unwind.h: that would shadow GCC's own), and the
#                    build-time-only headers the shim includes: uthash.h (header-only),
#                    elfutils/libdw*.h, dwarf.h, gelf.h, libelf.h (libdw itself is
#                    dlopen'ed at run time, and absent there: no source lines then),
#                    lzma.h and lzma/ (liblzma is dlopen'ed for MiniDebugInfo)
#   .deps/fallback/  liblzma.so.5* (only for a machine without liblzma; not on rpath)
#   .deps/MANIFEST   package versions, NEEDED entries, sha256 sums
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$repo/.deps"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pkgs=(libunwind8 libunwind-dev liblzma5 liblzma-dev uthash-dev libdw-dev libelf-dev libjansson4 libjansson-dev)
echo "fetch-gpu-deps: downloading ${pkgs[*]}"
(cd "$work" && apt-get download "${pkgs[@]}") || {
    echo "fetch-gpu-deps: apt-get download failed (run 'apt-get update' once first?)" >&2
    exit 1
}

rm -rf "$deps"
mkdir -p "$deps/root" "$deps/lib" "$deps/include" "$deps/fallback"
for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$deps/root"
done

rm -rf "$deps/root/usr/share/man" "$deps/root/usr/share/doc"
multi="$deps/root/usr/lib/x86_64-linux-gnu"
inc="$deps/root/usr/include/x86_64-linux-gnu"
[ -d "$multi" ] || multi="$deps/root/lib/x86_64-linux-gnu"

# Runtime libraries as plain files (cp -L): a carried symlink might not survive
# the trip, and they are small.
shopt -s nullglob
libs=("$multi"/libunwind.so.8* "$multi"/libunwind-x86_64.so.8*)
[ "${#libs[@]}" -gt 0 ] || { echo "fetch-gpu-deps: no libunwind.so.8 in the packages" >&2; exit 1; }
cp -L "${libs[@]}" "$deps/lib/"
# The link-time name -lunwind needs; point it at the soname in the same folder.
cp -L "$deps/lib/libunwind.so.8" "$deps/lib/libunwind.so"
cp -L "$deps/lib/libunwind-x86_64.so.8" "$deps/lib/libunwind-x86_64.so"

# Headers the shim includes (<libunwind.h> pulls libunwind-x86_64.h, -common, -dynamic).
for h in "$inc"/libunwind*.h "$deps/root/usr/include"/libunwind*.h; do
    cp -L "$h" "$deps/include/"
done
[ -f "$deps/include/libunwind.h" ] || { echo "fetch-gpu-deps: libunwind.h missing" >&2; exit 1; }
# Header-only and build-time headers (no libraries: libdw is dlopen'ed).
ui="$deps/root/usr/include"
cp -L "$ui"/ut*.h "$ui/dwarf.h" "$ui/gelf.h" "$ui/libelf.h" "$ui/nlist.h" "$deps/include/"
mkdir -p "$deps/include/elfutils"
cp -L "$ui"/elfutils/*.h "$deps/include/elfutils/"
mkdir -p "$deps/include/lzma"
cp -L "$ui/lzma.h" "$deps/include/"
cp -L "$ui"/lzma/*.h "$deps/include/lzma/"
for h in uthash.h dwarf.h gelf.h libelf.h elfutils/libdw.h elfutils/libdwfl.h lzma.h lzma/base.h; do
    [ -f "$deps/include/$h" ] || { echo "fetch-gpu-deps: $h missing" >&2; exit 1; }
done

# jansson for the gpuleak command (gpuleak merge in the rank check).
cp -L "$multi"/libjansson.so.4 "$deps/lib/" && cp -L "$multi"/libjansson.so.4 "$deps/lib/libjansson.so"
cp -L "$ui"/jansson.h "$ui"/jansson_config.h "$deps/include/"

# liblzma: the GPU machine has it; keep Debian's copy aside for a machine that doesn't.
lz=("$deps/root"/{usr/,}lib/x86_64-linux-gnu/liblzma.so.5*)
[ "${#lz[@]}" -gt 0 ] && cp -L "${lz[@]}" "$deps/fallback/"

# Check: what the libraries need, and that nothing beyond libc, ld.so and liblzma is needed.
{
    echo "# .deps built $(date -u +%FT%TZ) on $(sed -n "s/^PRETTY_NAME=//p" /etc/os-release | tr -d \")"
    for p in "${pkgs[@]}"; do
        echo "package $p $(dpkg-deb -f "$work/${p}"_*.deb Version)"
    done
    for f in "$deps"/lib/*.so.8; do
        echo "needed $(basename "$f"): $(readelf -d "$f" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
        echo "glibc  $(basename "$f"): $(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    done
    (cd "$deps" && find lib include fallback -type f -print0 | sort -z | xargs -0 sha256sum)
} > "$deps/MANIFEST"

bad=$(readelf -d "$deps"/lib/*.so.8 | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort -u |
      grep -v -E '^(libc\.so\.6|ld-linux-x86-64\.so\.2|liblzma\.so\.5|libunwind\.so\.8)$' || true)
if [ -n "$bad" ]; then
    echo "fetch-gpu-deps: WARNING: libunwind needs libraries not carried: $bad" >&2
fi

# Smoke test here: link and run a tiny unwinder against the carried files only.
cat > "$work/t.c" <<'C'
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <uthash.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <lzma.h>
#include <stdio.h>
int main(void) { void *b[32]; int n = unw_backtrace(b, 32); printf("%d\n", n); return n > 0 ? 0 : 1; }
C
cc -I"$deps/include" -H -o "$work/t" "$work/t.c" -L"$deps/lib" -lunwind -Wl,-rpath,"$deps/lib" 2>"$work/headers.txt"
# The top-level includes must come from .deps/include, not this machine's /usr/include.
if grep '^\. ' "$work/headers.txt" | grep -v "^\. $deps/include/" ; then
    echo "fetch-gpu-deps: the headers above did not come from .deps/include" >&2; exit 1
fi
n=$("$work/t")
ldd "$work/t" | grep "$deps/lib/libunwind.so.8" >/dev/null || { echo "fetch-gpu-deps: smoke test did not load .deps/lib" >&2; exit 1; }
echo "fetch-gpu-deps: smoke test unw_backtrace -> $n frames, loaded from .deps/lib"

grep -q -E "^/?\.deps/?$" "$repo/.gitignore" 2>/dev/null || echo "fetch-gpu-deps: NOTE: add /.deps/ to .gitignore" >&2
echo "fetch-gpu-deps: done: $(du -sh "$deps/lib" "$deps/include" | awk '{print $2 "=" $1}' | tr '\n' ' ')"
grep -v '^[0-9a-f]\{64\}' "$deps/MANIFEST"
