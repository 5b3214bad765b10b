//! The exported functions. The only module of the workspace that allows `unsafe`: it takes
//! raw pointers from C (strings, buffers, handles, out-parameters) and must mark functions
//! `#[no_mangle]`. Every pointer is checked for null before use; every function body runs
//! inside `catch_unwind`, so no panic unwinds into C.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use adz_core::dataset::{Dataset, DatasetError, DatasetReader, Placement};
use adz_core::open::{
    create_writer, is_missing_trailer, open_reader, parse_hint, parse_link, parse_strategy,
    storage_for,
};
use adz_core::{Error, Reader, ReaderOptions, WriteHandle, WriteOptions, Writer};

/// Success.
pub const ADZ_OK: c_int = 0;
/// A bad argument: a null pointer, text that does not parse, an impossible value.
pub const ADZ_E_ARG: c_int = -1;
/// The handle was closed (`adz_writer_close`); only `..._free` is allowed on it now.
pub const ADZ_E_CLOSED: c_int = -2;
/// Reading or writing storage failed.
pub const ADZ_E_IO: c_int = -3;
/// The file is damaged or not an adz file.
pub const ADZ_E_CORRUPT: c_int = -4;
/// The write failed (a storage error on the way, say); nothing was committed, the writer
/// can only be freed.
pub const ADZ_E_WRITE_FAILED: c_int = -5;
/// Not supported by this build (kept so that codes stay stable; no function returns it now).
pub const ADZ_E_UNSUPPORTED: c_int = -6;
/// No such file or object.
pub const ADZ_E_NOT_FOUND: c_int = -7;
/// A dataset commit lost to a concurrent commit of the same dataset (or its `base` was not
/// the latest version); nothing was committed, retry the commit.
pub const ADZ_E_CONFLICT: c_int = -8;
/// A dataset commit was told to expect a writer whose part is not there (it died, or has not
/// closed its part yet); nothing was committed. The message names the writer.
pub const ADZ_E_MISSING_PART: c_int = -9;
/// Two parts of a dataset claim the same bytes (wrong part offsets); nothing was committed.
/// The message names both parts.
pub const ADZ_E_OVERLAP: c_int = -10;
/// A bug in adz (a caught panic). The message says where.
pub const ADZ_E_INTERNAL: c_int = -99;

/// `part_offset` of `adz_dataset_part_open` for a part appended at commit, after the placed
/// parts, in writer id order.
pub const ADZ_PART_APPEND: u64 = u64::MAX;

/// What a write did, filled in by `adz_writer_close`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AdzSummary {
    /// Raw bytes written by the application.
    pub raw_bytes: u64,
    /// Bytes of the adz file.
    pub stored_bytes: u64,
    /// Frames (blocks) in the file.
    pub frames: u64,
    /// Wall time from open to close, seconds.
    pub seconds: f64,
    /// The link speed the controller used at the end (given or measured), bytes/s; 0 if
    /// unknown.
    pub link_bytes_per_sec: f64,
    /// Time the storage was busy, seconds.
    pub sink_seconds: f64,
}

/// An open writer (`adz_writer` in C), from `adz_writer_open`.
pub struct AdzWriter {
    state: Mutex<WriterState>,
}

enum WriterState {
    Open { writer: Box<Writer>, pending: Vec<Weak<AdzWrite>> },
    Closed,
}

/// An asynchronous write in progress (`adz_write` in C), from `adz_writer_write_async`.
pub struct AdzWrite {
    state: Mutex<AsyncState>,
}

enum AsyncState {
    Pending(WriteHandle<CallerBuffer>),
    Done(c_int, String),
}

/// A random-access reader (`adz_reader` in C), from `adz_reader_open` or `adz_dataset_open`
/// (a file, or a dataset read as one file). Several threads may `adz_reader_pread` on one
/// handle at once and share its cache (adz-core's `Reader` and `DatasetReader` are `Sync`).
pub struct AdzReader {
    reader: Source,
}

/// What a reader reads: one adz file, or a committed dataset read as one file.
enum Source {
    File(Reader),
    Dataset(DatasetReader),
}

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(r) => r.len(),
            Source::Dataset(r) => r.len(),
        }
    }

    fn read_at(&self, offset: u64, out: &mut [u8]) -> Result<usize, Failure> {
        match self {
            Source::File(r) => r.read_at(offset, out).map_err(fail),
            Source::Dataset(r) => r.read_at(offset, out).map_err(fail_dataset),
        }
    }
}

/// A buffer owned by the C caller, who promises (as with `lwrite_async`) to keep it valid and
/// unchanged until the write is waited for.
struct CallerBuffer {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pipeline only reads the buffer; the caller keeps it alive and unmodified until
// `adz_write_wait` (or `adz_writer_close`, which waits for every block) returns.
unsafe impl Send for CallerBuffer {}
// SAFETY: as above; shared reads of bytes nobody writes are sound.
unsafe impl Sync for CallerBuffer {}

impl AsRef<[u8]> for CallerBuffer {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: ptr is non-null (checked at the call) and valid for len bytes by the
        // caller's promise above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

type Failure = (c_int, String);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Run `f` at the boundary: its error becomes a code and a message, a panic becomes
/// `ADZ_E_INTERNAL`.
fn guard(f: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => {
            set_last_error("");
            code
        }
        Ok(Err((code, msg))) => {
            set_last_error(&msg);
            code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".to_owned());
            set_last_error(&format!("internal error (a bug in adz): {what}"));
            ADZ_E_INTERNAL
        }
    }
}

fn arg(msg: impl Into<String>) -> Failure {
    (ADZ_E_ARG, msg.into())
}

fn code_of(e: &Error) -> c_int {
    match e {
        Error::Format(_) | Error::Codec { .. } => ADZ_E_CORRUPT,
        Error::Store(adz_core::store::Error::NotFound { .. }) => ADZ_E_NOT_FOUND,
        Error::Store(adz_core::store::Error::InvalidName { .. })
        | Error::Config(_)
        | Error::Limit { .. } => ADZ_E_ARG,
        Error::Pipeline(_) => ADZ_E_WRITE_FAILED,
        _ => ADZ_E_IO,
    }
}

fn code_of_dataset(e: &DatasetError) -> c_int {
    match e {
        DatasetError::NotFound { .. } | DatasetError::Gap { .. } => ADZ_E_NOT_FOUND,
        DatasetError::InvalidId { .. } | DatasetError::RangeTooLarge { .. } => ADZ_E_ARG,
        DatasetError::Overlap { .. } => ADZ_E_OVERLAP,
        DatasetError::CommitConflict { .. } => ADZ_E_CONFLICT,
        DatasetError::MissingPart { .. } => ADZ_E_MISSING_PART,
        DatasetError::PartMismatch { .. } | DatasetError::BadManifest { .. } => ADZ_E_CORRUPT,
        DatasetError::Part { source, .. } => code_of(source),
        DatasetError::Core(e) => code_of(e),
        DatasetError::Store(adz_core::store::Error::NotFound { .. }) => ADZ_E_NOT_FOUND,
        DatasetError::Store(adz_core::store::Error::InvalidName { .. }) => ADZ_E_ARG,
        _ => ADZ_E_IO,
    }
}

/// A dataset error as a code and its message with every cause.
fn fail_dataset(e: DatasetError) -> Failure {
    (code_of_dataset(&e), chain(&e))
}

/// An error and its causes, joined by ": ".
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

fn fail(e: Error) -> Failure {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    (code_of(&e), msg)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A C string argument: `None` for NULL, an error for invalid UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map(Some).map_err(|_| arg(format!("{what} is not valid UTF-8")))
}

/// # Safety
/// `w` is NULL or a pointer returned by `adz_writer_open` and not yet freed.
unsafe fn writer_ref<'a>(w: *mut AdzWriter) -> Result<&'a AdzWriter, Failure> {
    // SAFETY: the caller's contract.
    unsafe { w.as_ref() }.ok_or_else(|| arg("the writer is NULL"))
}

/// Open a writer on `path`: a local path or `file://` URL, or `s3://bucket/key` when the
/// library is built with the cargo feature `s3` (configured from `AWS_ENDPOINT_URL`,
/// `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`).
/// `strategy`: NULL for `throughput`, or `keep-pace`, `prolong=F`, `archive`,
/// `static=zstd:3` ...; `link`: NULL for `auto`, or `1GbE`, `500MB/s` ...; `threads`: 0 for
/// one per core, at most 1024 (more is `ADZ_E_ARG`, and nothing is created). Nothing appears
/// under `path` until `adz_writer_close` succeeds.
///
/// # Safety
/// `path`, `strategy` and `link` are NULL or NUL-terminated strings; `out` is NULL or
/// points to writable memory for one pointer.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_open(
    path: *const c_char,
    strategy: *const c_char,
    link: *const c_char,
    threads: u32,
    out: *mut *mut AdzWriter,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(arg("out is NULL"));
        }
        // SAFETY: out is non-null and writable by the caller's contract.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller's contract for the strings.
        let path = unsafe { opt_str(path, "path") }?.ok_or_else(|| arg("path is NULL"))?;
        // SAFETY: as above.
        let opts = unsafe { write_options(strategy, link, threads) }?;
        let writer = create_writer(path, opts).map_err(|e| {
            let (code, msg) = fail(e);
            (code, format!("cannot create {path}: {msg}"))
        })?;
        // SAFETY: checked non-null above.
        unsafe { *out = new_writer(writer) };
        Ok(ADZ_OK)
    })
}

/// The options of `adz_writer_open` and `adz_dataset_part_open`.
///
/// # Safety
/// `strategy` and `link` are NULL or NUL-terminated strings.
unsafe fn write_options(
    strategy: *const c_char,
    link: *const c_char,
    threads: u32,
) -> Result<WriteOptions, Failure> {
    let mut opts = WriteOptions { threads: threads as usize, ..WriteOptions::default() };
    // SAFETY: the caller's contract.
    if let Some(s) = unsafe { opt_str(strategy, "strategy") }? {
        opts.strategy = parse_strategy(s).map_err(|e| arg(e.0))?;
    }
    // SAFETY: the caller's contract.
    if let Some(l) = unsafe { opt_str(link, "link") }? {
        opts.link = parse_link(l).map_err(|e| arg(e.0))?;
    }
    Ok(opts)
}

fn new_writer(writer: Writer) -> *mut AdzWriter {
    Box::into_raw(Box::new(AdzWriter {
        state: Mutex::new(WriterState::Open { writer: Box::new(writer), pending: Vec::new() }),
    }))
}

/// Open writer `id`'s part of the dataset `dataset` (a local path or `s3://bucket/key`, as
/// for `adz_writer_open`): an adz file under `dataset.parts/`, written through the adaptive
/// pipeline with every `adz_writer_*` function (write, write_async, advise, wait_all, close,
/// free). `id`: 1-64 ASCII letters, digits, `_` and `-`, unique among the dataset's writers
/// (`"r7"` for rank 7). `part_offset`: the part's first byte in the dataset (an MPI rank's
/// displacement), or `ADZ_PART_APPEND` to place it at commit after the placed parts, in id
/// order. `strategy`, `link`, `threads` as for `adz_writer_open`. The part is finished by
/// `adz_writer_close`, and is in the dataset only after an `adz_dataset_commit`.
///
/// # Safety
/// `dataset`, `id`, `strategy` and `link` are NULL or NUL-terminated strings; `out` is NULL
/// or points to writable memory for one pointer.
#[no_mangle]
pub unsafe extern "C" fn adz_dataset_part_open(
    dataset: *const c_char,
    id: *const c_char,
    part_offset: u64,
    strategy: *const c_char,
    link: *const c_char,
    threads: u32,
    out: *mut *mut AdzWriter,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(arg("out is NULL"));
        }
        // SAFETY: out is non-null and writable by the caller's contract.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller's contract for the strings.
        let dataset =
            unsafe { opt_str(dataset, "dataset") }?.ok_or_else(|| arg("dataset is NULL"))?;
        // SAFETY: as above.
        let id = unsafe { opt_str(id, "id") }?.ok_or_else(|| arg("id is NULL"))?;
        // SAFETY: as above.
        let opts = unsafe { write_options(strategy, link, threads) }?;
        let placement = match part_offset {
            ADZ_PART_APPEND => Placement::Append,
            at => Placement::At(at),
        };
        let (store, ds) = storage_for(dataset).map_err(fail)?;
        let name = adz_core::dataset::part_name(&ds, id, placement).map_err(fail_dataset)?;
        let w = Writer::create(&*store, &name, opts).map_err(|e| {
            let (code, msg) = fail(e);
            (code, format!("cannot create part {id} of {dataset}: {msg}"))
        })?;
        // SAFETY: checked non-null above.
        unsafe { *out = new_writer(w) };
        Ok(ADZ_OK)
    })
}

/// Commit the dataset `dataset`: its next version lists the parts, and readers see it at
/// once, whole (never part of it). Call it once, after every writer has closed its part (rank
/// 0 after a barrier). With `ids` (an array of `n_ids` writer ids), the version lists exactly
/// those writers' parts, and a writer with no finished part fails the commit with
/// `ADZ_E_MISSING_PART`, naming it; with `ids` NULL (`n_ids` 0) it lists every part found
/// under `dataset.parts/`. Parts that overlap are `ADZ_E_OVERLAP`; a commit that lost to a
/// concurrent one is `ADZ_E_CONFLICT`. On any error nothing was committed. Sets `*version`
/// (if not NULL) to the version committed (1 for the first).
///
/// # Safety
/// `dataset` is NULL or a NUL-terminated string; `ids` is NULL or points to `n_ids` pointers,
/// each NULL or a NUL-terminated string; `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_dataset_commit(
    dataset: *const c_char,
    ids: *const *const c_char,
    n_ids: usize,
    version: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let dataset =
            unsafe { opt_str(dataset, "dataset") }?.ok_or_else(|| arg("dataset is NULL"))?;
        let list = if ids.is_null() {
            if n_ids != 0 {
                return Err(arg(format!("ids is NULL but n_ids is {n_ids}")));
            }
            None
        } else {
            if n_ids == 0 {
                return Err(arg("ids is given but n_ids is 0: pass NULL to commit every part"));
            }
            // SAFETY: ids is non-null and points to n_ids pointers by the caller's contract.
            let ptrs = unsafe { std::slice::from_raw_parts(ids, n_ids) };
            let mut list = Vec::with_capacity(n_ids);
            for (i, &p) in ptrs.iter().enumerate() {
                // SAFETY: each is NULL or NUL-terminated by the caller's contract.
                let id = unsafe { opt_str(p, "an id") }?
                    .ok_or_else(|| arg(format!("ids[{i}] is NULL")))?;
                list.push(id);
            }
            Some(list)
        };
        let (store, ds) = storage_for(dataset).map_err(fail)?;
        let m = match &list {
            Some(ids) => Dataset::commit_writers(&*store, &ds, None, ids),
            None => Dataset::commit(&*store, &ds, None),
        }
        .map_err(|e| {
            let (code, msg) = fail_dataset(e);
            (code, format!("commit of {dataset}: {msg}"))
        })?;
        // SAFETY: the caller's contract.
        if let Some(v) = unsafe { version.as_mut() } {
            *v = m.version;
        }
        Ok(ADZ_OK)
    })
}

/// Run `f` on an open writer. A failed write leaves the writer unusable but not closed.
///
/// # Safety
/// As [`writer_ref`].
unsafe fn with_writer(
    w: *mut AdzWriter,
    f: impl FnOnce(&mut Writer, &mut Vec<Weak<AdzWrite>>) -> Result<c_int, Failure>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { writer_ref(w) }?;
        let mut st = lock(&w.state);
        match &mut *st {
            WriterState::Open { writer, pending } => f(writer, pending),
            WriterState::Closed => Err((ADZ_E_CLOSED, "the writer is closed".to_owned())),
        }
    })
}

/// Give a hint for the raw bytes `start..end` not yet written: `no-compress`, `write-once`,
/// `hot`, `dtype=f64` (f32, i16, u32, ...), `filters=LIST` (the filters to apply, in order:
/// `filters=xor:8,shuffle:8`, `filters=bitshuffle:4`, `filters=none`; docs/FILTERS.md).
/// `adz_writer_advise(w, 0, UINT64_MAX, "dtype=f64")` before the first write covers the whole
/// file.
///
/// # Safety
/// `w` is NULL or a live writer; `hint` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_advise(
    w: *mut AdzWriter,
    start: u64,
    end: u64,
    hint: *const c_char,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        with_writer(w, |writer, _| {
            let h = opt_str(hint, "hint")?.ok_or_else(|| arg("hint is NULL"))?;
            let (range, hint) = parse_hint(h).map_err(|e| arg(e.0))?;
            if range.is_some() {
                return Err(arg("give the range as start and end, not in the hint text"));
            }
            writer.advise(start..end, hint).map_err(fail)?;
            Ok(ADZ_OK)
        })
    }
}

/// Write `len` bytes from `buf`. Returns once they are in the pipeline's buffers (the caller
/// may reuse `buf` at once); compression and storage go on in the background.
///
/// # Safety
/// `w` is NULL or a live writer; `buf` is NULL (only with `len` 0) or valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_write(
    w: *mut AdzWriter,
    buf: *const std::ffi::c_void,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        with_writer(w, |writer, _| {
            if len == 0 {
                return Ok(ADZ_OK);
            }
            if buf.is_null() {
                return Err(arg("buf is NULL"));
            }
            // SAFETY: non-null and valid for len bytes by the caller's contract.
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), len);
            writer.write(data).map_err(fail)?;
            Ok(ADZ_OK)
        })
    }
}

/// Write `len` bytes from `buf` asynchronously: returns at once with a handle in `*out`. The
/// blocks are compressed straight from `buf` (no copy): keep it valid and unchanged until
/// `adz_write_wait` on the handle (or `adz_writer_wait_all`, or `adz_writer_close`) returns.
/// Free the handle with `adz_write_free`.
///
/// # Safety
/// `w` is NULL or a live writer; `buf` is NULL (only with `len` 0) or valid for `len` bytes
/// until the write is waited for; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_write_async(
    w: *mut AdzWriter,
    buf: *const std::ffi::c_void,
    len: usize,
    out: *mut *mut AdzWrite,
) -> c_int {
    if out.is_null() {
        return guard(|| Err(arg("out is NULL")));
    }
    // SAFETY: out is non-null and writable by the caller's contract.
    unsafe { *out = std::ptr::null_mut() };
    // SAFETY: the caller's contract.
    unsafe {
        with_writer(w, |writer, pending| {
            if buf.is_null() && len != 0 {
                return Err(arg("buf is NULL"));
            }
            let handle =
                writer.write_async(CallerBuffer { ptr: buf.cast::<u8>(), len }).map_err(fail)?;
            let state = Arc::new(AdzWrite { state: Mutex::new(AsyncState::Pending(handle)) });
            pending.retain(|p| p.strong_count() > 0);
            pending.push(Arc::downgrade(&state));
            *out = Arc::into_raw(state).cast_mut();
            Ok(ADZ_OK)
        })
    }
}

fn wait_one(h: &AdzWrite) -> Result<c_int, Failure> {
    let mut st = lock(&h.state);
    if let AsyncState::Pending(_) = &*st {
        let AsyncState::Pending(handle) =
            std::mem::replace(&mut *st, AsyncState::Done(ADZ_OK, String::new()))
        else {
            return Ok(ADZ_OK);
        };
        if let Err(e) = handle.wait() {
            let (code, msg) = fail(e);
            *st = AsyncState::Done(code, msg);
        }
    }
    match &*st {
        AsyncState::Done(ADZ_OK, _) => Ok(ADZ_OK),
        AsyncState::Done(code, msg) => Err((*code, msg.clone())),
        AsyncState::Pending(_) => Ok(ADZ_OK),
    }
}

/// Wait until every block of the asynchronous write `h` is compressed: its buffer may then be
/// reused or freed. Waiting again returns the same result.
///
/// # Safety
/// `h` is NULL or a handle from `adz_writer_write_async` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn adz_write_wait(h: *mut AdzWrite) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { h.as_ref() }.ok_or_else(|| arg("the write handle is NULL"))?;
        wait_one(h)
    })
}

/// 1 if the asynchronous write `h` is finished (its buffer is free), 0 if not, or a negative
/// error code. Never blocks.
///
/// # Safety
/// As `adz_write_wait`.
#[no_mangle]
pub unsafe extern "C" fn adz_write_done(h: *mut AdzWrite) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { h.as_ref() }.ok_or_else(|| arg("the write handle is NULL"))?;
        match &*lock(&h.state) {
            AsyncState::Pending(handle) => Ok(c_int::from(handle.is_done())),
            AsyncState::Done(ADZ_OK, _) => Ok(1),
            AsyncState::Done(code, msg) => Err((*code, msg.clone())),
        }
    })
}

/// Free an asynchronous write handle. A write not yet waited for goes on (the writer's close
/// waits for it). NULL is ignored.
///
/// # Safety
/// `h` is NULL or a handle from `adz_writer_write_async` not yet freed; it is invalid after.
#[no_mangle]
pub unsafe extern "C" fn adz_write_free(h: *mut AdzWrite) {
    if h.is_null() {
        return;
    }
    guard(|| {
        // SAFETY: h came from Arc::into_raw in adz_writer_write_async and is freed once.
        drop(unsafe { Arc::from_raw(h.cast_const()) });
        Ok(ADZ_OK)
    });
}

/// Wait for every asynchronous write of `w` issued so far. Returns the first error.
///
/// # Safety
/// `w` is NULL or a live writer.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_wait_all(w: *mut AdzWriter) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { writer_ref(w) }?;
        let handles: Vec<Arc<AdzWrite>> = match &mut *lock(&w.state) {
            WriterState::Open { pending, .. } => {
                let live = pending.iter().filter_map(Weak::upgrade).collect();
                pending.clear();
                live
            }
            WriterState::Closed => return Err((ADZ_E_CLOSED, "the writer is closed".to_owned())),
        };
        // Not under the writer's lock: a write on another thread may go on meanwhile.
        let mut first = Ok(ADZ_OK);
        for h in handles {
            let r = wait_one(&h);
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// Finish the file: write the last block and the index, wait for storage, and commit (the
/// file appears under its name only now). Fills `*summary` if it is not NULL. The writer is
/// closed afterwards, whether this succeeded or not: free it with `adz_writer_free`.
///
/// # Safety
/// `w` is NULL or a live writer; `summary` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_close(w: *mut AdzWriter, summary: *mut AdzSummary) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { writer_ref(w) }?;
        let st = std::mem::replace(&mut *lock(&w.state), WriterState::Closed);
        let WriterState::Open { writer, .. } = st else {
            return Err((ADZ_E_CLOSED, "the writer is already closed".to_owned()));
        };
        let s = writer.finish().map_err(fail)?;
        // SAFETY: the caller's contract.
        if let Some(out) = unsafe { summary.as_mut() } {
            *out = AdzSummary {
                raw_bytes: s.raw_bytes,
                stored_bytes: s.stored_bytes,
                frames: s.frames,
                seconds: s.seconds,
                link_bytes_per_sec: s.link.unwrap_or(0.0),
                sink_seconds: s.sink_seconds,
            };
        }
        Ok(ADZ_OK)
    })
}

/// Free a writer. If it was not closed, the write is aborted: nothing is committed and no
/// temporary file is left. NULL is ignored.
///
/// # Safety
/// `w` is NULL or a pointer from `adz_writer_open` not yet freed; it is invalid after.
#[no_mangle]
pub unsafe extern "C" fn adz_writer_free(w: *mut AdzWriter) {
    if w.is_null() {
        return;
    }
    guard(|| {
        // SAFETY: w came from Box::into_raw in adz_writer_open and is freed once.
        let w = unsafe { Box::from_raw(w) };
        let st = std::mem::replace(&mut *lock(&w.state), WriterState::Closed);
        if let WriterState::Open { writer, .. } = st {
            // Best effort: an abort that cannot delete the temporary file leaves only that.
            let _ = writer.abort();
        }
        Ok(ADZ_OK)
    });
}

/// Open the adz file `path` for random-access reads: reads its trailer (one request) and
/// checks it. A file whose trailer is missing or damaged (its writer died) is
/// `ADZ_E_CORRUPT`, and the message names `adz recover`, which salvages its frames.
/// When there is no file or object `path` but a committed dataset of that name, the reader
/// reads the dataset as one file (as `adz_dataset_open`). `*out` is set to NULL on failure.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_reader_open(path: *const c_char, out: *mut *mut AdzReader) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(arg("out is NULL"));
        }
        // SAFETY: the caller's contract.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller's contract.
        let path = unsafe { opt_str(path, "path") }?.ok_or_else(|| arg("path is NULL"))?;
        let reader = match open_reader(path, ReaderOptions::default()) {
            Ok(r) => Source::File(r),
            Err(e @ Error::Store(adz_core::store::Error::NotFound { .. })) => {
                match open_dataset(path, false)? {
                    Some(r) => r,
                    None => return Err(fail(e)),
                }
            }
            Err(e) => {
                let hint = is_missing_trailer(&e);
                let (code, mut msg) = fail(e);
                if hint {
                    msg.push_str(&format!(
                        "; if its writer died, `adz recover {path} OUT` keeps its complete frames"
                    ));
                }
                return Err((code, msg));
            }
        };
        let r = Box::new(AdzReader { reader });
        // SAFETY: out is non-null and writable by the caller's contract.
        unsafe { *out = Box::into_raw(r) };
        Ok(ADZ_OK)
    })
}

/// The committed dataset `path` as a reader source; with `required` false, `None` when it has
/// no committed version.
fn open_dataset(path: &str, required: bool) -> Result<Option<Source>, Failure> {
    let (store, name) = storage_for(path).map_err(fail)?;
    if !required && Dataset::latest_version(&*store, &name).unwrap_or(0) == 0 {
        return Ok(None);
    }
    let r = DatasetReader::open(store, &name, ReaderOptions::default()).map_err(fail_dataset)?;
    Ok(Some(Source::Dataset(r)))
}

/// Open the committed dataset `dataset` (its latest version) as one file for random-access
/// reads with `adz_reader_size`, `adz_reader_pread` and `adz_reader_free`: one listing and
/// one manifest read now; a read opens only the parts its range touches, and decodes only
/// their frames it needs. No committed version is `ADZ_E_NOT_FOUND`. A read of bytes in no
/// part (a gap) is `ADZ_E_NOT_FOUND`; a damaged or replaced part is `ADZ_E_CORRUPT` for the
/// ranges that touch it, with a message naming the part (and the frame), while other ranges
/// read. `*out` is set to NULL on failure.
///
/// # Safety
/// `dataset` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_dataset_open(
    dataset: *const c_char,
    out: *mut *mut AdzReader,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(arg("out is NULL"));
        }
        // SAFETY: the caller's contract.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller's contract.
        let path = unsafe { opt_str(dataset, "dataset") }?.ok_or_else(|| arg("dataset is NULL"))?;
        let Some(reader) = open_dataset(path, true)? else {
            return Err((ADZ_E_NOT_FOUND, format!("{path}: no committed dataset")));
        };
        // SAFETY: out is non-null and writable by the caller's contract.
        unsafe { *out = Box::into_raw(Box::new(AdzReader { reader })) };
        Ok(ADZ_OK)
    })
}

/// The raw (decompressed) size of the file in `*size`.
///
/// # Safety
/// `r` is NULL or a live reader; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_reader_size(r: *const AdzReader, size: *mut u64) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { r.as_ref() }.ok_or_else(|| arg("the reader is NULL"))?;
        // SAFETY: the caller's contract.
        let size = unsafe { size.as_mut() }.ok_or_else(|| arg("size is NULL"))?;
        *size = r.reader.len();
        Ok(ADZ_OK)
    })
}

/// Read up to `len` bytes at raw offset `offset` into `buf`; `*got` is set to the bytes read
/// (fewer only at the end of the data, 0 at or past it). Decodes only the frames the range
/// overlaps and checks every checksum: on `ADZ_E_CORRUPT` nothing in `buf` is to be used.
/// Safe to call from several threads at once on one reader.
///
/// # Safety
/// `r` is NULL or a live reader; `buf` valid for `len` bytes; `got` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn adz_reader_pread(
    r: *const AdzReader,
    buf: *mut std::ffi::c_void,
    len: usize,
    offset: u64,
    got: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { r.as_ref() }.ok_or_else(|| arg("the reader is NULL"))?;
        if buf.is_null() && len != 0 {
            return Err(arg("buf is NULL"));
        }
        // SAFETY: the caller's contract.
        let got = unsafe { got.as_mut() }.ok_or_else(|| arg("got is NULL"))?;
        *got = 0;
        if len == 0 {
            return Ok(ADZ_OK);
        }
        // SAFETY: buf is non-null and valid for len writable bytes by the caller's contract.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        *got = r.reader.read_at(offset, out)?;
        Ok(ADZ_OK)
    })
}

/// Free a reader. NULL is ignored.
///
/// # Safety
/// `r` is NULL or a pointer from `adz_reader_open` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn adz_reader_free(r: *mut AdzReader) {
    if r.is_null() {
        return;
    }
    guard(|| {
        // SAFETY: r came from Box::into_raw and is freed once.
        drop(unsafe { Box::from_raw(r) });
        Ok(ADZ_OK)
    });
}

/// The message of the last failed call on this thread ("" after a success). The pointer is
/// valid until the next adz call on this thread.
#[no_mangle]
pub extern "C" fn adz_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The name of an error code (`"ADZ_E_ARG"`), or `"unknown"`.
#[no_mangle]
pub extern "C" fn adz_error_name(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        ADZ_OK => c"ADZ_OK",
        ADZ_E_ARG => c"ADZ_E_ARG",
        ADZ_E_CLOSED => c"ADZ_E_CLOSED",
        ADZ_E_IO => c"ADZ_E_IO",
        ADZ_E_CORRUPT => c"ADZ_E_CORRUPT",
        ADZ_E_WRITE_FAILED => c"ADZ_E_WRITE_FAILED",
        ADZ_E_UNSUPPORTED => c"ADZ_E_UNSUPPORTED",
        ADZ_E_NOT_FOUND => c"ADZ_E_NOT_FOUND",
        ADZ_E_CONFLICT => c"ADZ_E_CONFLICT",
        ADZ_E_MISSING_PART => c"ADZ_E_MISSING_PART",
        ADZ_E_OVERLAP => c"ADZ_E_OVERLAP",
        ADZ_E_INTERNAL => c"ADZ_E_INTERNAL",
        _ => c"unknown",
    };
    s.as_ptr()
}

/// The library's version (`"0.1.0"`).
#[no_mangle]
pub extern "C" fn adz_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests;
