//! The adz C API: C, C++ and Fortran programs write adz files through the same adaptive
//! pipeline as the `adz` command, with the thesis' jobs (`lwrite`, `lwrite_async`, `lwait`,
//! `llapi_ladvise`): open a writer, advise ranges, write synchronously or asynchronously, wait,
//! close with a summary.
//!
//! The declarations are in `include/adz.h` (hand-written; `tests/header.rs` checks that it
//! declares exactly the functions and constants exported here). Build with
//! `cargo build --release -p adz-capi` and link `target/release/libadz_capi.a` (plus
//! `-lpthread -ldl -lm`) or `libadz_capi.so`.
//!
//! Rules at the boundary: every function returns `ADZ_OK` (0) or a negative error code and
//! leaves a message for `adz_last_error()` (per thread); a null or invalid argument is an
//! error code, never a crash; a Rust panic is caught at the edge and becomes `ADZ_E_INTERNAL`;
//! a closed handle answers `ADZ_E_CLOSED` until it is freed.
//!
//! The logic lives in `adz_core`; this crate only converts arguments and errors.

mod ffi;

pub use ffi::*;
