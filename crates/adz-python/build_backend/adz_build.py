"""The package's PEP 517 build backend: maturin's, after putting the standalone HDF5 filter
plugin into the package.

`pip install ./crates/adz-python` (and `pip wheel`, `python -m build`) then ship
`adz/plugins/libadz_hdf5.so` with no copy step by hand: the plugin is built with
`cargo build --release -p adz-hdf5` in the workspace's own target directory, before maturin
runs (not nested inside it), so the two builds share every compiled dependency
(docs/decisions/0047). Debug info is stripped (1.7 MB instead of 25 MB). Set
ADZ_NO_HDF5_PLUGIN=1 to build without the plugin (then `import adz.hdf5` still registers the
filter with h5py; only HDF5_PLUGIN_PATH users miss it).
"""

import json
import os
import shutil
import subprocess

import maturin
from maturin import (  # noqa: F401  (the hooks this backend passes through unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGINS = os.path.join(HERE, "python", "adz", "plugins")


def _plugin():
    """Build libadz_hdf5.so and copy it into python/adz/plugins/."""
    if os.environ.get("ADZ_NO_HDF5_PLUGIN"):
        return
    cargo = os.environ.get("CARGO", "cargo")
    out = subprocess.run(
        [cargo, "build", "--release", "-p", "adz-hdf5", "--message-format=json-render-diagnostics"],
        cwd=HERE, check=True, stdout=subprocess.PIPE, text=True)
    built = None
    for line in out.stdout.splitlines():
        msg = json.loads(line)
        target = msg.get("target", {})
        if (msg.get("reason") == "compiler-artifact" and target.get("name") == "adz_hdf5"
                and "cdylib" in target.get("kind", [])):
            built = next((f for f in msg["filenames"] if f.endswith(".so")), built)
    if built is None:
        raise RuntimeError("cargo built no libadz_hdf5.so")
    os.makedirs(PLUGINS, exist_ok=True)
    dst = os.path.join(PLUGINS, "libadz_hdf5.so")
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, "--strip-debug", "-o", dst, built], check=True)
    else:
        shutil.copyfile(built, dst)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _plugin()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _plugin()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
