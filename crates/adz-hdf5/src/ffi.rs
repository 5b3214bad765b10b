//! The C side: the plugin's two exported functions, the filter class and its callbacks. No
//! panic crosses into HDF5: each callback runs under `catch_unwind` and fails instead.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::h5::{self, Herr, Hid};
use crate::{Error, Params, CD_WORDS, FILTER_ID};

/// HDF5's `H5Z_class2_t`.
#[repr(C)]
pub struct H5ZClass2 {
    version: c_int,
    id: c_int,
    encoder_present: c_uint,
    decoder_present: c_uint,
    name: *const c_char,
    can_apply: Option<unsafe extern "C" fn(Hid, Hid, Hid) -> c_int>,
    set_local: Option<unsafe extern "C" fn(Hid, Hid, Hid) -> Herr>,
    filter: Option<FilterFn>,
}

type FilterFn = unsafe extern "C" fn(
    c_uint,
    usize,
    *const c_uint,
    usize,
    *mut usize,
    *mut *mut c_void,
) -> usize;

// SAFETY: the only pointer is to a static C string; the struct is never written.
unsafe impl Sync for H5ZClass2 {}

/// `H5Z_CLASS_T_VERS`.
const CLASS_VERSION: c_int = 1;
/// `H5Z_FLAG_REVERSE`: the filter is asked to decode.
const FLAG_REVERSE: c_uint = 0x0100;
/// `H5PL_TYPE_FILTER`.
const PLUGIN_TYPE_FILTER: c_int = 0;

static CLASS: H5ZClass2 = H5ZClass2 {
    version: CLASS_VERSION,
    id: FILTER_ID as c_int,
    encoder_present: 1,
    decoder_present: 1,
    name: c"adz".as_ptr(),
    can_apply: None,
    set_local: Some(set_local),
    filter: Some(filter),
};

/// HDF5 asks what kind of plugin this is: a filter.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    PLUGIN_TYPE_FILTER
}

/// HDF5 asks for the filter class (`H5Z_class2_t`); h5py's `register_filter` takes its address.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    (&raw const CLASS).cast()
}

/// Take HDF5's functions from the library `libname` and its dependencies (null: the process's
/// global scope), as hdf5plugin's `init_filter` does. 0 on success, -1 on failure.
///
/// # Safety
/// `libname` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn adz_hdf5_init(libname: *const c_char) -> c_int {
    let name = if libname.is_null() {
        None
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        Some(unsafe { CStr::from_ptr(libname) })
    };
    guarded(-1, || match h5::init(name) {
        Ok(()) => 0,
        Err(e) => {
            set_error(e);
            -1
        }
    })
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Why the filter last failed on this thread (empty: it has not).
pub fn last_error() -> String {
    LAST_ERROR.with(|e| e.borrow().clone())
}

fn set_error(msg: impl Into<String>) {
    let msg = msg.into();
    if std::env::var_os("ADZ_HDF5_DEBUG").is_some() {
        eprintln!("adz hdf5 filter: {msg}");
    }
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

/// Run `f`, turning a panic into `failed`.
fn guarded<T>(failed: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_error("internal error (panic) in the adz filter");
        failed
    })
}

/// Records the dataset's element size, type class and chunk size in `cd_values` (words 7-9).
unsafe extern "C" fn set_local(dcpl: Hid, type_id: Hid, _space: Hid) -> Herr {
    guarded(-1, || {
        let id = FILTER_ID as c_int;
        let (flags, cd) = match h5::get_filter(dcpl, id, CD_WORDS + 1) {
            Ok(v) => v,
            Err(e) => {
                set_error(format!("set_local: cannot read the filter's cd_values: {e}"));
                return -1;
            }
        };
        let mut p = match Params::from_cd(&cd) {
            Ok(p) => p,
            Err(e) => {
                set_error(e.to_string());
                return -1;
            }
        };
        let (size, class, chunk) = h5::dataset_shape(dcpl, type_id);
        p.elem_size = u32::try_from(size).unwrap_or(0);
        p.type_class = u32::try_from(class + 1).unwrap_or(0);
        p.chunk_bytes = u32::try_from(chunk).unwrap_or(0);
        match p.to_cd() {
            Ok(cd) if h5::modify_filter(dcpl, id, flags, &cd) => 0,
            Ok(_) => {
                set_error("set_local: H5Pmodify_filter failed");
                -1
            }
            Err(e) => {
                set_error(e.to_string());
                -1
            }
        }
    })
}

/// The filter: encodes a chunk into frames, or (with `H5Z_FLAG_REVERSE`) decodes them. Returns
/// the new length, 0 on failure (HDF5 then fails the write or read; `*buf` is untouched).
unsafe extern "C" fn filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    if buf.is_null() || buf_size.is_null() {
        return 0;
    }
    let cd: &[c_uint] = if cd_values.is_null() || cd_nelmts == 0 {
        &[]
    } else {
        // SAFETY: HDF5 passes its `cd_nelmts` stored values.
        unsafe { std::slice::from_raw_parts(cd_values, cd_nelmts) }
    };
    // SAFETY: `*buf` is HDF5's buffer with at least `nbytes` valid bytes.
    let input: &[u8] = unsafe { std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes) };
    let result = guarded(Err(Error::Damaged("panic".into())), || {
        if flags & FLAG_REVERSE != 0 {
            decode(cd, input)
        } else {
            encode(cd, input)
        }
    });
    match result {
        Ok((out, len)) => {
            // SAFETY: the input buffer is HDF5's, replaced by `out`, and no longer used.
            unsafe {
                h5::free(*buf);
                *buf = out;
                *buf_size = len;
            }
            len
        }
        Err(e) => {
            set_error(e.to_string());
            0
        }
    }
}

/// A new HDF5-owned buffer of `len` bytes filled by `fill`; freed again if `fill` fails.
fn with_buffer(
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> crate::Result<()>,
) -> crate::Result<(*mut c_void, usize)> {
    let p = h5::allocate(len);
    if p.is_null() {
        return Err(Error::Params(format!("cannot allocate {len} bytes")));
    }
    // SAFETY: `p` is a fresh allocation of at least `len` bytes, not aliased.
    let out = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
    match fill(out) {
        Ok(()) => Ok((p, len)),
        Err(e) => {
            // SAFETY: `p` came from `allocate` and is not used afterwards.
            unsafe { h5::free(p) };
            Err(e)
        }
    }
}

fn encode(cd: &[c_uint], input: &[u8]) -> crate::Result<(*mut c_void, usize)> {
    let p = Params::from_cd(cd)?;
    OUT.with(|out| {
        let mut out = out.borrow_mut();
        // OUT keeps its length across chunks: not zeroed for every chunk.
        let end = crate::encode_chunk_at(&p, input, &mut out, 0)?;
        with_buffer(end, |dst| {
            dst.copy_from_slice(&out[..end]);
            Ok(())
        })
    })
}

fn decode(cd: &[c_uint], input: &[u8]) -> crate::Result<(*mut c_void, usize)> {
    // Decoding needs only the frames; the recorded chunk size (word 9) checks their total.
    let expect = if cd.first() == Some(&crate::CD_VERSION) { cd.get(9).copied() } else { None };
    let (frames, raw) = crate::chunk_frames(input)?;
    crate::check_len(raw, expect.unwrap_or(0))?;
    with_buffer(raw, |dst| crate::decode_frames(input, &frames, dst))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The class's filter function on a malloc'd buffer, as HDF5 calls it (without HDF5 in
    /// the test process the buffers are malloc/free ones).
    fn call(flags: c_uint, cd: &[c_uint], data: &[u8]) -> Option<Vec<u8>> {
        // SAFETY: H5PLget_plugin_info returns the address of CLASS.
        let class = unsafe { &*H5PLget_plugin_info().cast::<H5ZClass2>() };
        let f = class.filter.expect("a filter function");
        let p = h5::allocate(data.len());
        // SAFETY: `p` has room for `data.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.cast::<u8>(), data.len()) };
        let (mut buf, mut size) = (p, data.len());
        // SAFETY: the arguments are what HDF5 passes: cd_values, a malloc'd buffer, its size.
        let n = unsafe { f(flags, cd.len(), cd.as_ptr(), data.len(), &mut size, &mut buf) };
        // SAFETY: `buf` holds `n` bytes on success; on failure it is the untouched input.
        let out =
            (n > 0).then(|| unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) }.to_vec());
        if n == 0 {
            assert_eq!(buf, p, "a failed call leaves HDF5's buffer in place");
        }
        // SAFETY: `buf` is the filter's output (or the input), owned here now.
        unsafe { h5::free(buf) };
        out
    }

    #[test]
    fn the_class_encodes_decodes_and_fails_on_damage() {
        let raw: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 10).to_le_bytes()).collect();
        // version 1, static zstd:3, shuffle; element size 4, integer, chunk size.
        let cd = [1, 0, 3, 3, 0, 0, 2, 4, 1, raw.len() as c_uint];
        let enc = call(0, &cd, &raw).expect("encodes");
        assert!(enc.len() < raw.len() / 4);
        assert_eq!(crate::describe_chunk(&enc).unwrap(), ["zstd:3 shuffle:4"]);
        assert_eq!(call(FLAG_REVERSE, &cd, &enc).expect("decodes"), raw);
        let mut bad = enc.clone();
        bad[enc.len() / 2] ^= 1;
        assert_eq!(call(FLAG_REVERSE, &cd, &bad), None, "damaged payload");
        assert!(last_error().contains("checksum"), "{}", last_error());
        // The recorded chunk size must match what the frames hold.
        let mut wrong = cd;
        wrong[9] += 1;
        assert_eq!(call(FLAG_REVERSE, &wrong, &enc), None, "chunk size mismatch");
        // An unknown layout version cannot be written.
        assert_eq!(call(0, &[2, 0, 3, 3], &raw), None);
        assert_eq!(H5PLget_plugin_type(), PLUGIN_TYPE_FILTER);
    }
}
