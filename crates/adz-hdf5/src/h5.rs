//! The few HDF5 functions the filter calls, found at run time rather than linked, so that one
//! plugin serves Debian's libhdf5, h5py's bundled copy and any other HDF5 >= 1.10 (64-bit
//! `hid_t`).
//!
//! By default they are looked up in the process's global scope (`dlsym(RTLD_DEFAULT)`), which
//! holds libhdf5 for a C program or tool linked against it (h5repack, h5dump, netCDF). Python
//! loads h5py's HDF5 with `RTLD_LOCAL`, out of that scope; there [`init`] is given a library
//! whose dependencies include libhdf5 (h5py's `h5z` extension module, as hdf5plugin does) and
//! looks the symbols up through its handle. Without `init`, if the global scope has no HDF5,
//! the first loaded library named `libhdf5*` (not the high-level `_hl`) is used: that is how
//! the plugin finds h5py's or netCDF4-python's bundled HDF5 when loaded from
//! `HDF5_PLUGIN_PATH`.
#![allow(unsafe_code)] // dlopen/dlsym and calls through the pointers they return.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::RwLock;

/// HDF5's `hid_t` (64-bit since 1.10).
pub type Hid = i64;
/// HDF5's `herr_t`.
pub type Herr = c_int;

type GetFilterById2 = unsafe extern "C" fn(
    Hid,
    c_int,
    *mut c_uint,
    *mut usize,
    *mut c_uint,
    usize,
    *mut c_char,
    *mut c_uint,
) -> Herr;
type ModifyFilter = unsafe extern "C" fn(Hid, c_int, c_uint, usize, *const c_uint) -> Herr;
type TGetSize = unsafe extern "C" fn(Hid) -> usize;
type TGetClass = unsafe extern "C" fn(Hid) -> c_int;
type PGetChunk = unsafe extern "C" fn(Hid, c_int, *mut u64) -> c_int;
type GetLibversion = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_uint) -> Herr;
type AllocateMemory = unsafe extern "C" fn(usize, bool) -> *mut c_void;
type FreeMemory = unsafe extern "C" fn(*mut c_void) -> Herr;

/// HDF5 functions, each None if the library did not have it.
#[derive(Clone, Copy, Default)]
pub struct Api {
    get_filter_by_id2: Option<GetFilterById2>,
    modify_filter: Option<ModifyFilter>,
    tget_size: Option<TGetSize>,
    tget_class: Option<TGetClass>,
    pget_chunk: Option<PGetChunk>,
    allocate: Option<AllocateMemory>,
    free: Option<FreeMemory>,
    /// Why the lookup found no HDF5 (kept for the error message).
    error: Option<&'static str>,
}

static API: RwLock<Option<Api>> = RwLock::new(None);

/// Look the functions up in `handle` (a dlopen handle or `RTLD_DEFAULT`).
fn resolve(handle: *mut c_void) -> Result<Api, String> {
    let sym = |name: &CStr| {
        // SAFETY: `handle` is RTLD_DEFAULT or a live dlopen handle, `name` a C string.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    if let Some(v) = sym(c"H5get_libversion") {
        // SAFETY: H5get_libversion has this signature in every HDF5 release.
        let f: GetLibversion = unsafe { std::mem::transmute::<*mut c_void, GetLibversion>(v) };
        let (mut maj, mut min, mut rel) = (0, 0, 0);
        // SAFETY: three valid out-pointers.
        if unsafe { f(&mut maj, &mut min, &mut rel) } >= 0 && (maj, min) < (1, 10) {
            return Err(format!("HDF5 {maj}.{min}.{rel}: the adz filter needs 1.10 or later"));
        }
    } else {
        return Err("no HDF5 library found (H5get_libversion)".into());
    }
    macro_rules! get {
        ($name:literal, $ty:ty) => {
            // SAFETY: the symbol is HDF5's function of that name, whose C signature `$ty`
            // transcribes (HDF5 >= 1.10, checked above).
            sym($name).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
        };
    }
    Ok(Api {
        get_filter_by_id2: get!(c"H5Pget_filter_by_id2", GetFilterById2),
        modify_filter: get!(c"H5Pmodify_filter", ModifyFilter),
        tget_size: get!(c"H5Tget_size", TGetSize),
        tget_class: get!(c"H5Tget_class", TGetClass),
        pget_chunk: get!(c"H5Pget_chunk", PGetChunk),
        allocate: get!(c"H5allocate_memory", AllocateMemory),
        free: get!(c"H5free_memory", FreeMemory),
        error: None,
    })
}

/// Take HDF5's functions from the library at `path` and its dependencies (None: from the
/// process's global scope). Replaces an earlier lookup.
pub fn init(path: Option<&CStr>) -> Result<(), String> {
    let handle = match path {
        Some(p) => {
            // SAFETY: `p` is a C string; the handle is kept open for the process's life (the
            // pointers found through it must stay valid).
            let h = unsafe { libc::dlopen(p.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
            if h.is_null() {
                return Err(format!("cannot dlopen {p:?}"));
            }
            h
        }
        None => libc::RTLD_DEFAULT,
    };
    let api = resolve(handle)?;
    *API.write().unwrap_or_else(|p| p.into_inner()) = Some(api);
    Ok(())
}

/// Is `name` (a loaded object's path) an HDF5 core library: `libhdf5.so.*`,
/// `libhdf5_serial.so.*` (Debian), `libhdf5-<hash>.so.*` (auditwheel's copies in h5py.libs,
/// netcdf4.libs), but not the high-level library (`_hl`)?
pub fn is_hdf5_library(name: &[u8]) -> bool {
    let base = name.rsplit(|b| *b == b'/').next().unwrap_or(name);
    let Some(rest) = base.strip_prefix(b"libhdf5") else { return false };
    let stem = rest.split(|b| *b == b'.').next().unwrap_or(rest);
    !stem.windows(3).any(|w| w == b"_hl") && matches!(rest.first(), Some(b'.' | b'-' | b'_'))
}

/// The paths of the loaded objects that are HDF5 core libraries, in load order.
fn loaded_hdf5_libraries() -> Vec<Vec<u8>> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `data`, a Vec<Vec<u8>>.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Vec<Vec<u8>>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: dlpi_name is a NUL-terminated path (empty for the executable).
            let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
            if is_hdf5_library(name) {
                found.push(name.to_vec());
            }
        }
        0
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    // SAFETY: `each` only reads the info it is given and pushes to `found`, which outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut found).cast()) };
    found
}

/// HDF5's functions from an already loaded `libhdf5*` (no global one: a Python process).
fn resolve_loaded() -> Result<Api, String> {
    for name in loaded_hdf5_libraries() {
        let Ok(c) = std::ffi::CString::new(name) else { continue };
        // SAFETY: a C string; RTLD_NOLOAD only returns a handle to a library already loaded
        // (whose count it raises, so the handle stays valid for the process's life).
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if !h.is_null() {
            if let Ok(api) = resolve(h) {
                return Ok(api);
            }
        }
    }
    Err("no HDF5 library found (H5get_libversion) in the process".into())
}

/// The functions: those [`init`] found, or a lookup on first use in the global scope, then in
/// the loaded `libhdf5*` libraries (empty if neither has HDF5).
fn api() -> Api {
    if let Some(a) = *API.read().unwrap_or_else(|p| p.into_inner()) {
        return a;
    }
    let a = resolve(libc::RTLD_DEFAULT).or_else(|_| resolve_loaded()).unwrap_or_else(|e| Api {
        // Leaked once per process at most: the lookup is cached.
        error: Some(Box::leak(e.into_boxed_str())),
        ..Api::default()
    });
    *API.write().unwrap_or_else(|p| p.into_inner()) = Some(a);
    a
}

/// The dataset's element size, type class and chunk size in bytes, as far as HDF5 tells them
/// (0 for what it does not).
pub fn dataset_shape(dcpl: Hid, type_id: Hid) -> (usize, c_int, u64) {
    let a = api();
    // SAFETY: HDF5 gave set_local these ids; the functions only read them.
    let size = a.tget_size.map_or(0, |f| unsafe { f(type_id) });
    // SAFETY: as above. HDF5's H5T_class_t is an int-sized enum, -1 on error.
    let class = a.tget_class.map_or(-1, |f| unsafe { f(type_id) });
    let mut dims = [0u64; 32]; // H5S_MAX_RANK
                               // SAFETY: `dims` has room for H5S_MAX_RANK (32) dimensions, the most HDF5 writes.
    let rank = a.pget_chunk.map_or(-1, |f| unsafe { f(dcpl, 32, dims.as_mut_ptr()) });
    let chunk = if rank > 0 {
        dims[..rank as usize]
            .iter()
            .try_fold(size as u64, |acc, d| acc.checked_mul(*d))
            .filter(|b| *b <= u64::from(u32::MAX))
            .unwrap_or(0)
    } else {
        0
    };
    (size, class, chunk)
}

/// This filter's `cd_values` on `dcpl` (up to `max`), with its flags.
pub fn get_filter(dcpl: Hid, id: c_int, max: usize) -> Result<(c_uint, Vec<c_uint>), String> {
    let a = api();
    let f = a.get_filter_by_id2.ok_or_else(|| {
        a.error.map_or("H5Pget_filter_by_id2 not found in this HDF5".to_owned(), str::to_owned)
    })?;
    let (mut flags, mut n) = (0 as c_uint, max);
    let mut cd = vec![0 as c_uint; max];
    // SAFETY: `cd` holds `n` words and HDF5 writes at most `n`; no name is asked for.
    let r = unsafe {
        f(
            dcpl,
            id,
            &mut flags,
            &mut n,
            cd.as_mut_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err("H5Pget_filter_by_id2 failed".into());
    }
    // HDF5 reports how many values the filter has, which may be more than fit.
    cd.truncate(n.min(max));
    Ok((flags, cd))
}

/// Replace this filter's `cd_values` on `dcpl`.
pub fn modify_filter(dcpl: Hid, id: c_int, flags: c_uint, cd: &[c_uint]) -> bool {
    let Some(f) = api().modify_filter else { return false };
    // SAFETY: `cd` is a live slice of `cd.len()` words that HDF5 copies.
    unsafe { f(dcpl, id, flags, cd.len(), cd.as_ptr()) >= 0 }
}

/// Memory for a buffer HDF5 will own: H5allocate_memory when this HDF5 has it (so that a
/// library built with its own allocator frees it correctly), else malloc. Null on failure.
pub fn allocate(n: usize) -> *mut c_void {
    match api().allocate {
        // SAFETY: H5allocate_memory(size, clear) returns a new buffer or null.
        Some(f) => unsafe { f(n.max(1), false) },
        // SAFETY: malloc of a non-zero size.
        None => unsafe { libc::malloc(n.max(1)) },
    }
}

/// Free a buffer HDF5 allocated (the filter's input), the way [`allocate`] allocates.
///
/// # Safety
/// `p` must be a buffer HDF5 handed to the filter to replace, not used afterwards.
pub unsafe fn free(p: *mut c_void) {
    match api().free {
        // SAFETY: the caller's contract; H5free_memory matches HDF5's allocator.
        Some(f) => unsafe {
            f(p);
        },
        // SAFETY: without H5free_memory the library's allocator is malloc (HDF5 < 1.8.15).
        None => unsafe { libc::free(p) },
    }
}
