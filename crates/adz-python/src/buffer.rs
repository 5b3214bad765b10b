//! Python buffers as Rust slices, without a copy. The only module of this crate that allows
//! `unsafe`: the buffer protocol hands over a raw pointer.
//!
//! A buffer is pinned by a private `memoryview` of it, cast to bytes: while the memoryview
//! lives, its exporter (a numpy array, a bytearray) keeps the memory where it is and refuses
//! to resize it, and nobody else holds the memoryview, so nobody can `release()` it. The
//! slice is valid for as long as the [`Pinned`] that owns the memoryview.
#![allow(unsafe_code)]

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyMemoryView;

/// A Python buffer's bytes, pinned for as long as this value lives. It can move to other
/// threads: the memoryview is only touched again when it is dropped, and pyo3 defers that
/// reference decrement to a thread holding the GIL.
pub struct Pinned {
    _view: Py<PyAny>,
    ptr: *mut u8,
    len: usize,
    writable: bool,
}

// SAFETY: the bytes stay valid while `_view` lives (see the module docs); the pipeline only
// reads them. The application promises not to change them until the write is waited for,
// as with the C API's asynchronous write.
unsafe impl Send for Pinned {}
// SAFETY: as above.
unsafe impl Sync for Pinned {}

impl Pinned {
    /// Pin the bytes of `obj`, which must support the buffer protocol. A buffer that is not
    /// C-contiguous is copied into a contiguous one first (the only case with a copy).
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Pinned> {
        let py = obj.py();
        let mut view = PyMemoryView::from(obj)?.into_any();
        if !view.getattr("c_contiguous")?.extract::<bool>()? {
            let bytes = view.call_method0("tobytes")?;
            view = PyMemoryView::from(&bytes)?.into_any();
        }
        let view = view.call_method1("cast", ("B",))?;
        let buf = PyBuffer::<u8>::get(&view)?;
        if !buf.is_c_contiguous() {
            return Err(PyValueError::new_err("the buffer is not contiguous"));
        }
        let (ptr, len, writable) = (buf.buf_ptr().cast::<u8>(), buf.len_bytes(), !buf.readonly());
        // The memoryview holds its own export of the buffer; this one can go.
        buf.release(py);
        Ok(Pinned { _view: view.unbind(), ptr, len, writable })
    }

    /// Pin a buffer to write into (`readinto`): it must be writable and C-contiguous, since
    /// the copy [`Pinned::new`] makes of another layout would not reach the caller.
    pub fn new_writable(obj: &Bound<'_, PyAny>) -> PyResult<Pinned> {
        let view = PyMemoryView::from(obj)?.into_any();
        if view.getattr("readonly")?.extract::<bool>()? {
            return Err(PyValueError::new_err(
                "readinto needs a writable buffer; this one is read-only (bytes, a read-only \
                 memoryview or array)",
            ));
        }
        if !view.getattr("c_contiguous")?.extract::<bool>()? {
            return Err(PyValueError::new_err(
                "readinto needs a C-contiguous buffer; this one is not (a strided slice or \
                 a transposed array): read into a contiguous buffer and copy from it",
            ));
        }
        Pinned::new(obj)
    }

    /// The bytes, for writing into (`readinto`); `None` for a read-only buffer.
    pub fn as_mut_slice(&mut self) -> Option<&mut [u8]> {
        if !self.writable {
            return None;
        }
        if self.len == 0 {
            return Some(&mut []);
        }
        // SAFETY: valid and writable for len bytes while the view lives (module docs); &mut
        // self makes this the only slice of it handed out by us.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

impl AsRef<[u8]> for Pinned {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: valid for len bytes while the view lives (module docs).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}
