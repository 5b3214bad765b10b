//! Objects as files under a root directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{validate_name, validate_prefix, Error, ObjectMeta, Result, Storage, Tail, Upload};

/// Marks the files of uploads in progress: `.{file name}.adz-tmp-{pid}-{counter}`. A killed
/// writer of an adz file leaves one; `adz recover` salvages its complete frames.
const TEMP_MARKER: &str = ".adz-tmp-";

/// Marks the files of uploads in progress whose bytes are not an adz file (a decompressed
/// output): `.{file name}.adz-incomplete-{pid}-{counter}`. Nothing in one can be recovered.
const INCOMPLETE_MARKER: &str = ".adz-incomplete-";

/// Makes temporary names unique among the uploads of this process (the pid makes them unique
/// between processes), however many `LocalStorage` values point at the same directory.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A store that keeps each object as a file under a root directory.
///
/// Object `"a/b.adz"` is the file `{root}/a/b.adz`; directories are created as needed and
/// never removed. An upload writes to a temporary file next to the final one (same directory,
/// so the rename is atomic), named `.{file name}.adz-tmp-{pid}-{counter}`. Commit flushes and
/// fsyncs the file, renames it over the final name and fsyncs the directory, so that after a
/// crash the object is either complete or absent (or, if it existed, the old version).
/// Creating an object that exists replaces it on commit, as writing a file would; until then
/// readers see the old file.
///
/// Temporary files are never listed, and names whose last segment looks like one are
/// rejected. A process that is killed mid-upload leaves its temporary file behind; it is
/// harmless, and can be removed by name pattern.
///
/// ```
/// use adz_store::{LocalStorage, Storage};
///
/// let dir = tempfile::tempdir()?;
/// let (store, name) = LocalStorage::for_path(dir.path().join("out.adz"))?;
/// assert_eq!(name, "out.adz");
/// store.put(&name, b"data")?;
/// assert_eq!(std::fs::read(dir.path().join("out.adz"))?, b"data");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
    sync: bool,
    recoverable: bool,
    write_back: Option<u64>,
}

impl LocalStorage {
    /// A store rooted at `root`, which must be an existing directory.
    pub fn new(root: impl Into<PathBuf>) -> Result<LocalStorage> {
        let root = root.into();
        let open_error =
            |source| Error::io("open storage root", &root.display().to_string(), source);
        let meta = fs::metadata(&root).map_err(open_error)?;
        if !meta.is_dir() {
            return Err(open_error(io::Error::new(
                io::ErrorKind::NotADirectory,
                "the storage root is not a directory",
            )));
        }
        Ok(LocalStorage { root, sync: true, recoverable: true, write_back: None })
    }

    /// Splits a file path into a store rooted at its directory and the object name of the
    /// file, so that a command line tool can write `/some/dir/out.adz` through the
    /// [`Storage`] trait. A path with no directory part is relative to the current directory.
    pub fn for_path(path: impl AsRef<Path>) -> Result<(LocalStorage, String)> {
        let path = path.as_ref();
        let invalid = |reason| Err(Error::InvalidName { name: path.display().to_string(), reason });
        let Some(file_name) = path.file_name() else {
            return invalid("the path does not end in a file name");
        };
        let Some(name) = file_name.to_str() else {
            return invalid("the file name is not valid UTF-8");
        };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let store = LocalStorage::new(dir)?;
        store.path(name)?;
        Ok((store, name.to_owned()))
    }

    /// Whether commit fsyncs the file and its directory (the default). Turning it off trades
    /// durability for speed, for tests and benchmarks that do not measure the disk.
    pub fn sync_on_commit(mut self, sync: bool) -> LocalStorage {
        self.sync = sync;
        self
    }

    /// Make uploads flush their data to the disk (`fdatasync`) after every `every` bytes
    /// appended (None, the default: only at commit). An append then takes as long as the disk
    /// needs for the data, not the page cache, so that a writer that measures its output's
    /// speed (`--link auto`) measures the disk; the page cache otherwise takes gigabytes at
    /// memory speed and writes them back later. 0 is taken as None.
    pub fn write_back(mut self, every: Option<u64>) -> LocalStorage {
        self.write_back = every.filter(|&n| n > 0);
        self
    }

    /// Whether uploads write adz files, whose temporary files are named for recovery (the
    /// default: `.{name}.adz-tmp-{pid}-{n}`, which `adz recover` salvages after a crash), or
    /// other bytes (a decompressed output: `.{name}.adz-incomplete-{pid}-{n}`, which holds
    /// nothing to salvage and can be deleted).
    pub fn recoverable_temporaries(mut self, recoverable: bool) -> LocalStorage {
        self.recoverable = recoverable;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of the file that holds object `name`.
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        validate_name(name)?;
        if name.rsplit('/').next().is_some_and(is_temp_file_name) {
            return Err(Error::InvalidName {
                name: name.to_owned(),
                reason: "names like `.{name}.adz-tmp-*` (or `.adz-incomplete-*`) are reserved for uploads in progress",
            });
        }
        Ok(name.split('/').fold(self.root.clone(), |path, segment| path.join(segment)))
    }

    /// Opens object `name` for reading and returns the file with its size.
    fn open(&self, op: &'static str, name: &str) -> Result<(File, u64)> {
        let path = self.path(name)?;
        let file = File::open(&path).map_err(|e| Error::from_io_on_object(op, name, e))?;
        let meta = file.metadata().map_err(|e| Error::io(op, name, e))?;
        // A directory is not an object, even though it can be opened.
        if !meta.is_file() {
            return Err(Error::NotFound { name: name.to_owned() });
        }
        Ok((file, meta.len()))
    }

    /// Walks `dir`, whose object name prefix is `dir_name` (empty or ending in `/`), and
    /// collects the files whose names start with `prefix`.
    fn walk(
        &self,
        dir: &Path,
        dir_name: &str,
        prefix: &str,
        out: &mut Vec<ObjectMeta>,
    ) -> Result<()> {
        let list_error = |e| Error::io("list", prefix, e);
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            // The prefix names a directory that does not exist: no objects.
            Err(e)
                if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) =>
            {
                return Ok(())
            }
            Err(e) => return Err(list_error(e)),
        };
        for entry in entries {
            let entry = entry.map_err(list_error)?;
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else { continue };
            let name = format!("{dir_name}{file_name}");
            let file_type = entry.file_type().map_err(list_error)?;
            if file_type.is_dir() {
                let dir_name = name + "/";
                if dir_name.starts_with(prefix) || prefix.starts_with(&dir_name) {
                    self.walk(&entry.path(), &dir_name, prefix, out)?;
                }
                continue;
            }
            if !name.starts_with(prefix)
                || is_temp_file_name(file_name)
                || validate_name(&name).is_err()
            {
                continue;
            }
            // Follows symbolic links to files; a link to a directory is not walked, which
            // also keeps link cycles out. An entry that vanished since read_dir is skipped.
            match fs::metadata(entry.path()) {
                Ok(meta) if meta.is_file() => {
                    let m = ObjectMeta::new(name, meta.len());
                    out.push(match meta.modified() {
                        Ok(t) => m.with_modified(t),
                        Err(_) => m,
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(list_error(e)),
            }
        }
        Ok(())
    }
}

fn is_temp_file_name(file_name: &str) -> bool {
    file_name.starts_with('.')
        && (file_name.contains(TEMP_MARKER) || file_name.contains(INCOMPLETE_MARKER))
}

fn len_usize(op: &'static str, name: &str, len: u64) -> Result<usize> {
    usize::try_from(len).map_err(|_| {
        Error::io(
            op,
            name,
            io::Error::new(io::ErrorKind::OutOfMemory, "range too large for memory"),
        )
    })
}

fn read_at(
    op: &'static str,
    name: &str,
    file: &mut File,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let mut bytes = vec![0; len_usize(op, name, len)?];
    file.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(op, name, e))?;
    file.read_exact(&mut bytes).map_err(|e| Error::io(op, name, e))?;
    Ok(bytes)
}

impl Storage for LocalStorage {
    fn create(&self, name: &str) -> Result<Box<dyn Upload>> {
        let final_path = self.path(name)?;
        let dir = final_path.parent().expect("an object path is below the root").to_path_buf();
        let file_name = final_path.file_name().expect("an object path ends in its name");
        let file_name = file_name.to_str().expect("object names are UTF-8");

        // Fail now rather than at the rename after the whole object was written.
        if final_path.is_dir() {
            let exists = io::Error::new(
                io::ErrorKind::IsADirectory,
                "objects exist below this name, so it is a directory and cannot be a file",
            );
            return Err(Error::io("create", name, exists));
        }
        let new_dirs = !dir.is_dir();
        if new_dirs {
            fs::create_dir_all(&dir).map_err(|e| Error::io("create", name, e))?;
        }

        // A stale file from an earlier process with the same pid can hold a name; skip it.
        let mut attempts = 0;
        let (file, temp_path) = loop {
            let counter = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let marker = if self.recoverable { TEMP_MARKER } else { INCOMPLETE_MARKER };
            let temp_name = format!(".{file_name}{marker}{}-{counter}", std::process::id());
            let temp_path = dir.join(temp_name);
            match OpenOptions::new().write(true).create_new(true).open(&temp_path) {
                Ok(file) => break (file, temp_path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => {
                    attempts += 1
                }
                Err(e) => return Err(Error::io("create", name, e)),
            }
        };

        Ok(Box::new(LocalUpload {
            name: name.to_owned(),
            write_back: self.write_back,
            synced: 0,
            file: Some(BufWriter::new(file)),
            temp_path,
            final_path,
            // Directories created for this object must be synced up to the root too, or a
            // crash could lose the entry of a new directory and the object with it.
            sync_dirs: match (self.sync, new_dirs) {
                (false, _) => SyncDirs::None,
                (true, false) => SyncDirs::Parent,
                (true, true) => SyncDirs::UpTo(self.root.clone()),
            },
            written: 0,
        }))
    }

    fn get_range(&self, name: &str, range: Range<u64>) -> Result<Vec<u8>> {
        let (mut file, size) = self.open("read", name)?;
        Error::check_range(name, &range, size)?;
        read_at("read", name, &mut file, range.start, range.end - range.start)
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        // One open file: atomic even if the object is replaced meanwhile.
        let (file, size) = self.open("read", name)?;
        let mut bytes = Vec::with_capacity(len_usize("read", name, size)?);
        file.take(size).read_to_end(&mut bytes).map_err(|e| Error::io("read", name, e))?;
        if bytes.len() as u64 != size {
            let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while read");
            return Err(Error::io("read", name, eof));
        }
        Ok(bytes)
    }

    fn get_tail(&self, name: &str, max_len: u64) -> Result<Tail> {
        let (mut file, object_size) = self.open("read", name)?;
        let len = max_len.min(object_size);
        let bytes = read_at("read", name, &mut file, object_size - len, len)?;
        Ok(Tail { object_size, bytes })
    }

    fn size(&self, name: &str) -> Result<u64> {
        let meta = fs::metadata(self.path(name)?)
            .map_err(|e| Error::from_io_on_object("size", name, e))?;
        if !meta.is_file() {
            return Err(Error::NotFound { name: name.to_owned() });
        }
        Ok(meta.len())
    }

    fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name)?;
        if path.is_dir() {
            return Err(Error::NotFound { name: name.to_owned() });
        }
        fs::remove_file(path).map_err(|e| Error::from_io_on_object("delete", name, e))
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        // Start at the deepest directory the prefix names instead of walking the whole tree.
        let (dir_name, dir) = match prefix.rsplit_once('/') {
            Some((dirs, _)) => {
                (format!("{dirs}/"), dirs.split('/').fold(self.root.clone(), |p, s| p.join(s)))
            }
            None => (String::new(), self.root.clone()),
        };
        let mut out = Vec::new();
        self.walk(&dir, &dir_name, prefix, &mut out)?;
        out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

/// Which directories a commit fsyncs after the rename.
#[derive(Debug)]
enum SyncDirs {
    /// None: syncing is turned off.
    None,
    /// The directory that holds the file.
    Parent,
    /// Every directory from the one holding the file up to this root, because the upload
    /// created some of them.
    UpTo(PathBuf),
}

/// An upload to a [`LocalStorage`]: a temporary file until commit.
#[derive(Debug)]
struct LocalUpload {
    name: String,
    /// Flush to the disk after every this many bytes ([`LocalStorage::write_back`]).
    write_back: Option<u64>,
    /// Bytes written when the data was last flushed to the disk.
    synced: u64,
    /// `None` once committed or aborted.
    file: Option<BufWriter<File>>,
    temp_path: PathBuf,
    final_path: PathBuf,
    sync_dirs: SyncDirs,
    written: u64,
}

impl LocalUpload {
    fn publish(&mut self, file: BufWriter<File>) -> Result<()> {
        let file =
            file.into_inner().map_err(|e| Error::io("commit", &self.name, e.into_error()))?;
        if !matches!(self.sync_dirs, SyncDirs::None) {
            file.sync_all().map_err(|e| Error::io("sync", &self.name, e))?;
        }
        drop(file);
        fs::rename(&self.temp_path, &self.final_path)
            .map_err(|e| Error::io("commit", &self.name, e))?;
        let dir = self.final_path.parent().expect("an object path is below the root");
        let sync_dir_error = |e| Error::io("sync directory of", &self.name, e);
        match &self.sync_dirs {
            SyncDirs::None => {}
            SyncDirs::Parent => sync_dir(dir).map_err(sync_dir_error)?,
            SyncDirs::UpTo(root) => {
                for dir in dir.ancestors().take_while(|d| d.starts_with(root)) {
                    sync_dir(dir).map_err(sync_dir_error)?;
                }
            }
        }
        Ok(())
    }
}

impl Upload for LocalUpload {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let Some(file) = &mut self.file else {
            unreachable!("commit and abort consume the upload")
        };
        file.write_all(data).map_err(|e| Error::io("append to", &self.name, e))?;
        self.written += data.len() as u64;
        if self.write_back.is_some_and(|n| self.written - self.synced >= n) {
            file.flush().map_err(|e| Error::io("append to", &self.name, e))?;
            file.get_ref().sync_data().map_err(|e| Error::io("sync", &self.name, e))?;
            self.synced = self.written;
        }
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    fn temporary_path(&self) -> Option<&Path> {
        Some(&self.temp_path)
    }

    fn commit(mut self: Box<Self>) -> Result<u64> {
        let file = self.file.take().expect("commit and abort consume the upload");
        if let Err(err) = self.publish(file) {
            // Best effort: if the rename happened, the temporary file is gone anyway.
            let _ = fs::remove_file(&self.temp_path);
            return Err(err);
        }
        Ok(self.written)
    }

    fn abandon(mut self: Box<Self>) -> Result<Option<String>> {
        let file = self.file.take().expect("commit and abort consume the upload");
        // Flushed and synced like a commit, but left under the temporary name.
        let file =
            file.into_inner().map_err(|e| Error::io("abandon", &self.name, e.into_error()))?;
        if !matches!(self.sync_dirs, SyncDirs::None) {
            file.sync_data().map_err(|e| Error::io("sync", &self.name, e))?;
        }
        Ok(Some(self.temp_path.display().to_string()))
    }

    fn abort(mut self: Box<Self>) -> Result<()> {
        drop(self.file.take());
        fs::remove_file(&self.temp_path).map_err(|e| Error::io("abort", &self.name, e))
    }
}

impl Drop for LocalUpload {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.temp_path);
        }
    }
}

/// Makes a rename or a new directory entry in `dir` durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Windows cannot open a directory as a file; NTFS journals renames itself.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn upload_writes_a_temp_file_next_to_the_final_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap();
        let mut upload = store.create("sub/out.adz").unwrap();
        upload.append(b"abc").unwrap();

        let files = files_in(&dir.path().join("sub"));
        assert_eq!(files.len(), 1);
        let pid = std::process::id();
        assert!(files[0].starts_with(&format!(".out.adz.adz-tmp-{pid}-")), "{files:?}");
        assert!(store.list("").unwrap().is_empty(), "temp files are not objects");
        assert!(matches!(store.size("sub/out.adz"), Err(Error::NotFound { .. })));

        assert_eq!(upload.commit().unwrap(), 3);
        assert_eq!(files_in(&dir.path().join("sub")), ["out.adz"]);
        assert_eq!(fs::read(dir.path().join("sub/out.adz")).unwrap(), b"abc");
    }

    #[test]
    fn write_back_flushes_to_the_disk_every_n_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let on_disk = || -> u64 {
            let f = files_in(dir.path());
            fs::metadata(dir.path().join(&f[0])).unwrap().len()
        };
        // Without it the BufWriter keeps small appends until commit.
        let mut plain = LocalStorage::new(dir.path()).unwrap().create("a").unwrap();
        plain.append(&[1; 60]).unwrap();
        plain.append(&[1; 60]).unwrap();
        assert_eq!(on_disk(), 0);
        plain.abort().unwrap();

        let store = LocalStorage::new(dir.path()).unwrap().write_back(Some(100));
        let mut upload = store.create("a").unwrap();
        upload.append(&[1; 60]).unwrap();
        assert_eq!(on_disk(), 0, "below the threshold");
        upload.append(&[2; 60]).unwrap();
        assert_eq!(on_disk(), 120, "flushed at 100 bytes");
        upload.append(&[3; 60]).unwrap();
        assert_eq!(on_disk(), 120, "60 bytes since");
        upload.append(&[4; 60]).unwrap();
        assert_eq!(on_disk(), 240);
        assert_eq!(upload.commit().unwrap(), 240);
        assert_eq!(fs::read(dir.path().join("a")).unwrap().len(), 240);
    }

    #[test]
    fn drop_and_abort_remove_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap();
        let mut upload = store.create("a").unwrap();
        upload.append(b"abc").unwrap();
        drop(upload);
        assert!(files_in(dir.path()).is_empty());

        let upload = store.create("a").unwrap();
        upload.abort().unwrap();
        assert!(files_in(dir.path()).is_empty());
    }

    #[test]
    fn abandon_keeps_the_flushed_temp_file_and_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap();
        let mut upload = store.create("a.adz").unwrap();
        upload.append(b"abc").unwrap(); // still in the BufWriter
        let kept = upload.abandon().unwrap().expect("a local store keeps partial uploads");
        assert!(matches!(store.size("a.adz"), Err(Error::NotFound { .. })));
        assert!(store.list("").unwrap().is_empty());
        let files = files_in(dir.path());
        assert_eq!(files.len(), 1);
        assert!(kept.ends_with(&files[0]) && files[0].starts_with(".a.adz.adz-tmp-"), "{kept}");
        assert_eq!(fs::read(&kept).unwrap(), b"abc");
    }

    #[test]
    fn outputs_that_are_not_adz_files_get_a_temporary_name_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap().recoverable_temporaries(false);
        let mut upload = store.create("out.bin").unwrap();
        upload.append(b"abc").unwrap();
        let files = files_in(dir.path());
        assert!(files[0].starts_with(".out.bin.adz-incomplete-"), "{files:?}");
        assert_eq!(upload.temporary_path(), Some(dir.path().join(&files[0]).as_path()));
        assert!(store.list("").unwrap().is_empty(), "not an object");
        assert!(matches!(store.size(&files[0]), Err(Error::InvalidName { .. })), "reserved");
        drop(upload);
        assert!(files_in(dir.path()).is_empty());
    }

    #[test]
    fn overwrite_keeps_the_old_file_until_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap().sync_on_commit(false);
        store.put("a", b"old").unwrap();
        let mut upload = store.create("a").unwrap();
        upload.append(b"new!").unwrap();
        assert_eq!(store.get("a").unwrap(), b"old");
        upload.commit().unwrap();
        assert_eq!(store.get("a").unwrap(), b"new!");
    }

    #[test]
    fn names_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path().join("root").as_path()).err();
        assert!(matches!(store, Some(Error::Io { op: "open storage root", .. })), "{store:?}");

        let store = LocalStorage::new(dir.path()).unwrap();
        for name in ["../escape", "/etc/passwd", "a/../../b", "a/.a.adz-tmp-1-2"] {
            assert!(matches!(store.create(name), Err(Error::InvalidName { .. })), "{name}");
            assert!(matches!(store.size(name), Err(Error::InvalidName { .. })), "{name}");
        }
        assert!(matches!(store.list("../"), Err(Error::InvalidName { .. })));
        assert_eq!(store.path("a/b").unwrap(), dir.path().join("a").join("b"));
    }

    #[test]
    fn for_path_splits_directory_and_name() {
        let dir = tempfile::tempdir().unwrap();
        let (store, name) = LocalStorage::for_path(dir.path().join("x.adz")).unwrap();
        assert_eq!((store.root(), name.as_str()), (dir.path(), "x.adz"));

        let (store, name) = LocalStorage::for_path("x.adz").unwrap();
        assert_eq!((store.root(), name.as_str()), (Path::new("."), "x.adz"));

        assert!(matches!(LocalStorage::for_path("/"), Err(Error::InvalidName { .. })));
        let missing = dir.path().join("missing/x.adz");
        assert!(matches!(LocalStorage::for_path(missing), Err(Error::Io { .. })));
        let file = dir.path().join("file");
        fs::write(&file, b"").unwrap();
        assert!(matches!(LocalStorage::new(file), Err(Error::Io { .. })));
    }

    #[test]
    fn directories_are_not_objects() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap();
        store.put("d/x", b"1").unwrap();
        assert!(matches!(store.size("d"), Err(Error::NotFound { .. })));
        assert!(matches!(store.get_range("d", 0..0), Err(Error::NotFound { .. })));
        assert!(matches!(store.delete("d"), Err(Error::NotFound { .. })));
        // A prefix below a file is simply empty.
        assert!(store.list("d/x/").unwrap().is_empty());
        // A file system cannot hold both "d" and "d/x", nor "d/x" and "d/x/y".
        let err = store.create("d").unwrap_err();
        assert!(matches!(&err, Error::Io { op: "create", name, .. } if name == "d"), "{err:?}");
        assert!(matches!(store.create("d/x/y"), Err(Error::Io { op: "create", .. })));
        assert_eq!(files_in(&dir.path().join("d")), ["x"], "failed creates leave nothing");
    }

    #[test]
    fn list_walks_only_what_the_prefix_allows() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap().sync_on_commit(false);
        for name in ["a/b/c", "a/bc", "a/bd/e", "a-b", "ab", "b"] {
            store.put(name, name.as_bytes()).unwrap();
        }
        fs::write(dir.path().join("a/.x.adz-tmp-99-1"), b"stale").unwrap();
        let names = |prefix| -> Vec<String> {
            store.list(prefix).unwrap().into_iter().map(|m| m.name).collect()
        };
        assert_eq!(names(""), ["a-b", "a/b/c", "a/bc", "a/bd/e", "ab", "b"]);
        assert_eq!(names("a"), ["a-b", "a/b/c", "a/bc", "a/bd/e", "ab"]);
        assert_eq!(names("a/b"), ["a/b/c", "a/bc", "a/bd/e"]);
        assert_eq!(names("a/b/"), ["a/b/c"]);
        assert_eq!(names("a/bd/e"), ["a/bd/e"]);
        assert!(names("c").is_empty());
        assert_eq!(store.list("a/b/").unwrap()[0].size, 5);
    }
}
