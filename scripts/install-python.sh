#!/bin/sh
# install-python.sh [PYTHON]: installs the Python package gpuleak and its
# pytest plugin into PYTHON's environment (a virtual environment's python,
# or python3), offline and without pip or a build backend: the package's
# files are copied into its site-packages with the metadata a wheel's
# installation writes (the pytest11 entry point registers the plugin;
# RECORD lets `pip uninstall gpuleak` remove it). Then, in that
# environment, `python -m pytest --gpuleak` runs the plugin. The package
# also remembers where this checkout's `make` puts the shim
# (gpuleak/_installed.py), its last place to look for it.
set -eu
cd "$(dirname "$0")/.."
PY=${1:-python3}
"$PY" - "$PWD/python" "$PWD/build/libgpuleak.so" <<'PYEOF'
import base64, hashlib, os, re, shutil, sys, sysconfig
src, shim = sys.argv[1], sys.argv[2]
with open(os.path.join(src, "pyproject.toml")) as fh:
    version = re.search(r'^version = "([^"]+)"', fh.read(), re.M).group(1)
site = sysconfig.get_paths()["purelib"]
pkg, info = os.path.join(site, "gpuleak"), os.path.join(site, "gpuleak-%s.dist-info" % version)
for old in (pkg, info):
    shutil.rmtree(old, ignore_errors=True)
os.makedirs(pkg)
os.makedirs(info)
files = {}
for name in sorted(os.listdir(os.path.join(src, "gpuleak"))):
    if name.endswith(".py"):
        shutil.copy(os.path.join(src, "gpuleak", name), os.path.join(pkg, name))
        files["gpuleak/" + name] = os.path.join(pkg, name)
with open(os.path.join(pkg, "_installed.py"), "w") as fh:
    fh.write("# Written by scripts/install-python.sh: where the checkout it came from\n"
             "# builds the shim.\nSHIM = %r\n" % shim)
files["gpuleak/_installed.py"] = os.path.join(pkg, "_installed.py")
meta = {
    "METADATA": "Metadata-Version: 2.1\nName: gpuleak\nVersion: %s\n" % version,
    "entry_points.txt": "[pytest11]\ngpuleak = gpuleak.pytest_plugin\n",
    "top_level.txt": "gpuleak\n",
    "INSTALLER": "gpuleak install-python.sh\n",
}
for name, text in meta.items():
    with open(os.path.join(info, name), "w") as fh:
        fh.write(text)
    files["gpuleak-%s.dist-info/%s" % (version, name)] = os.path.join(info, name)
lines = []
for rel, path in files.items():
    data = open(path, "rb").read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    lines.append("%s,sha256=%s,%d" % (rel, digest, len(data)))
lines.append("gpuleak-%s.dist-info/RECORD,," % version)
with open(os.path.join(info, "RECORD"), "w") as fh:
    fh.write("\n".join(lines) + "\n")
print("gpuleak %s installed into %s" % (version, site))
PYEOF
