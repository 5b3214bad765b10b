"""The earlier benchmark's readers, filters and throttled writer
(../2026-11-27-hdf5-real/bench.py), loaded once for this folder's scripts as `bench`."""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "hdf5real", os.path.join(HERE, "..", "2026-11-27-hdf5-real", "bench.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
