//! Any bytes at all, through every reading path. Only a panic (or a crash) is a failure.
#![no_main]

use std::io::Cursor;

use adz_core::{decode_stream, verify_stream, FileInfo};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_stream(data, std::io::sink(), |_| {});
    let _ = verify_stream(data, |_| {});
    let _ = FileInfo::read_seekable(Cursor::new(data), true);
    let _ = FileInfo::scan(data, true);
});
