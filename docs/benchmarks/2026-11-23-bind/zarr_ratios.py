import os, shutil, sys
import numpy as np, numcodecs, zarr
import adz.numcodecs
a = np.fromfile(sys.argv[1], dtype=np.float64).reshape(-1, 1024)
codecs = {
    "adz `Adz()` (static=zstd:3, shuffle from dtype)": adz.numcodecs.Adz(),
    "adz `Adz(strategy='static=zstd:9')`": adz.numcodecs.Adz(strategy="static=zstd:9"),
    "adz `Adz(strategy='static=lz4')`": adz.numcodecs.Adz(strategy="static=lz4"),
    "adz `Adz(dtype='u1')` (zstd:3, no shuffle)": adz.numcodecs.Adz(dtype="u1"),
    "Blosc zstd:5 shuffle": numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "Blosc lz4:5 shuffle (zarr 2 default)": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
}
print("| codec | stored bytes | ratio |\n|---|---|---|")
for name, codec in codecs.items():
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "z.zarr")
    shutil.rmtree(path, ignore_errors=True)
    z = zarr.create_array(store=path, shape=a.shape, chunks=(1024, 1024), dtype=a.dtype, compressors=codec, zarr_format=2)
    z[:] = a
    assert np.array_equal(zarr.open_array(path, mode="r")[:], a)
    stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs if not f.startswith("."))
    print(f"| {name} | {stored} | {a.nbytes / stored:.3f} |")
