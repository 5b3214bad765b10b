use super::*;
use std::ptr::null_mut;

fn last() -> String {
    // SAFETY: adz_last_error returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(adz_last_error()) }.to_string_lossy().into_owned()
}

/// `n` reads of `r` at pseudo-random offsets (some past the end) and lengths up to `max`
/// equal `data`'s bytes there.
fn random_reads_equal(r: *mut AdzReader, data: &[u8], n: usize, max: usize, seed: u64) {
    let mut buf = vec![0u8; max];
    let mut x = seed;
    for _ in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let off = (x >> 33) % (data.len() as u64 + 100);
        let len = ((x >> 13) % max as u64) as usize;
        let mut got = usize::MAX;
        // SAFETY: `r` is an open reader and `buf` holds `len` bytes.
        let code = unsafe { adz_reader_pread(r, buf.as_mut_ptr().cast(), len, off, &mut got) };
        assert_eq!(code, ADZ_OK);
        let from = (off as usize).min(data.len());
        assert!(buf[..got] == data[from..(from + len).min(data.len())], "at {off} len {len}");
    }
}

#[test]
fn write_sync_and_async_then_close_commits_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = CString::new(dir.path().join("o.adz").to_str().unwrap()).unwrap();
    let mut w = null_mut();
    // SAFETY: valid arguments throughout.
    unsafe {
        assert_eq!(
            adz_writer_open(path.as_ptr(), c"static=zstd:1".as_ptr(), null_mut(), 2, &mut w),
            ADZ_OK
        );
        assert_eq!(adz_writer_advise(w, 0, u64::MAX, c"dtype=f64".as_ptr()), ADZ_OK);
        let a = vec![3u8; 3 << 20];
        assert_eq!(adz_writer_write(w, a.as_ptr().cast(), a.len()), ADZ_OK);
        let mut h = null_mut();
        assert_eq!(adz_writer_write_async(w, a.as_ptr().cast(), a.len(), &mut h), ADZ_OK);
        assert!(!dir.path().join("o.adz").exists(), "visible before close");
        assert_eq!(adz_write_wait(h), ADZ_OK);
        assert_eq!(adz_write_done(h), 1);
        adz_write_free(h);
        assert_eq!(adz_writer_wait_all(w), ADZ_OK);
        let mut s = AdzSummary::default();
        assert_eq!(adz_writer_close(w, &mut s), ADZ_OK);
        assert_eq!(s.raw_bytes, 6 << 20);
        assert_eq!(adz_writer_write(w, a.as_ptr().cast(), 1), ADZ_E_CLOSED);
        assert!(last().contains("closed"));
        assert_eq!(adz_writer_close(w, null_mut()), ADZ_E_CLOSED);
        adz_writer_free(w);
    }
    let file = std::fs::read(dir.path().join("o.adz")).unwrap();
    let back = adz_core::open::decompress_slice(&file, None).unwrap();
    assert_eq!(back, vec![3u8; 6 << 20]);
}

/// A `filters=` hint names the filters by their names, bitshuffle included, and each frame
/// records them; a filter name the format does not have is an argument error.
#[test]
fn advise_takes_filter_lists_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = CString::new(dir.path().join("f.adz").to_str().unwrap()).unwrap();
    let data: Vec<u8> =
        (0..300_000u32).flat_map(|i| (1000.0 + (i / 64) as f32 * 0.5).to_le_bytes()).collect();
    let mut w = null_mut();
    // SAFETY: valid arguments throughout.
    unsafe {
        assert_eq!(
            adz_writer_open(path.as_ptr(), c"static=lz4:1".as_ptr(), null_mut(), 2, &mut w),
            ADZ_OK
        );
        assert_eq!(adz_writer_advise(w, 0, 10, c"filters=bitshufle:4".as_ptr()), ADZ_E_ARG);
        assert!(last().contains("bitshuffle"), "{}", last());
        assert_eq!(
            adz_writer_advise(w, 0, u64::MAX, c"filters=xor:4,bitshuffle:4".as_ptr()),
            ADZ_OK
        );
        assert_eq!(adz_writer_write(w, data.as_ptr().cast(), data.len()), ADZ_OK);
        assert_eq!(adz_writer_close(w, null_mut()), ADZ_OK);
        adz_writer_free(w);
    }
    let file = std::fs::read(dir.path().join("f.adz")).unwrap();
    assert_eq!(adz_core::open::decompress_slice(&file, None).unwrap(), data);
    let info = adz_core::FileInfo::read_seekable(std::io::Cursor::new(&file), true).unwrap();
    let configs: Vec<String> = info.frame_list.unwrap().into_iter().map(|f| f.config).collect();
    assert!(configs.iter().all(|c| c == "lz4:1 xor:4,bitshuffle:4"), "{configs:?}");
}

#[test]
fn reader_preads_random_ranges_and_refuses_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.adz");
    let data: Vec<u8> =
        (0..2_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let opts = WriteOptions { threads: 2, block_size: 65536, ..Default::default() };
    std::fs::write(&file, adz_core::open::compress_to_vec(&data, opts).unwrap()).unwrap();
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let mut r = null_mut();
    // SAFETY: valid arguments throughout.
    unsafe {
        assert_eq!(adz_reader_open(path.as_ptr(), &mut r), ADZ_OK);
        let mut size = 0;
        assert_eq!(adz_reader_size(r, &mut size), ADZ_OK);
        assert_eq!(size, data.len() as u64);
        random_reads_equal(r, &data, 100, 300_000, 12345);
        let mut buf = vec![0u8; 8];
        let mut got = 1;
        assert_eq!(adz_reader_pread(r, null_mut(), 0, 5, &mut got), ADZ_OK);
        assert_eq!(got, 0);
        assert_eq!(adz_reader_pread(r, null_mut(), 5, 5, &mut got), ADZ_E_ARG);
        assert_eq!(adz_reader_pread(r, buf.as_mut_ptr().cast(), 5, 5, null_mut()), ADZ_E_ARG);
        adz_reader_free(r);
    }
    // The trailer cut off: ADZ_E_CORRUPT, and the message says how to salvage it.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(adz_reader_open(path.as_ptr(), &mut r), ADZ_E_CORRUPT);
    }
    assert!(r.is_null());
    assert!(last().contains("adz recover"), "{}", last());
    // A damaged frame: the pread that needs it fails, others still read.
    let mut bad = bytes.clone();
    bad[5000] ^= 0x10;
    std::fs::write(&file, &bad).unwrap();
    let mut buf = vec![0u8; 1000];
    let mut got = 0;
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(adz_reader_open(path.as_ptr(), &mut r), ADZ_OK);
        assert_eq!(adz_reader_pread(r, buf.as_mut_ptr().cast(), 1000, 0, &mut got), ADZ_E_CORRUPT);
        assert_eq!(got, 0);
        assert_eq!(adz_reader_pread(r, buf.as_mut_ptr().cast(), 1000, 1_500_000, &mut got), ADZ_OK);
        assert_eq!(&buf[..got], &data[1_500_000..1_501_000]);
        adz_reader_free(r);
    }
}

/// Writes rank `r`'s part of `ds` (distinct bytes, `len` of them) at `offset`.
unsafe fn write_part(ds: &CStr, r: usize, offset: u64, data: &[u8]) {
    let id = CString::new(format!("r{r}")).unwrap();
    let mut w = null_mut();
    // SAFETY: valid arguments.
    unsafe {
        let rc = adz_dataset_part_open(
            ds.as_ptr(),
            id.as_ptr(),
            offset,
            c"static=zstd:1".as_ptr(),
            null_mut(),
            1,
            &mut w,
        );
        assert_eq!(rc, ADZ_OK, "{}", last());
        assert_eq!(adz_writer_write(w, data.as_ptr().cast(), data.len()), ADZ_OK);
        assert_eq!(adz_writer_close(w, null_mut()), ADZ_OK, "{}", last());
        adz_writer_free(w);
    }
}

#[test]
fn dataset_parts_commit_and_read_as_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let ds = CString::new(dir.path().join("ckpt").to_str().unwrap()).unwrap();
    let datas: Vec<Vec<u8>> = (0..4u32)
        .map(|r| (0..300_000u32 + r * 7).map(|i| ((i / 5) as u8) ^ (r as u8 * 41)).collect())
        .collect();
    let all = datas.concat();
    let mut offset = 0;
    // SAFETY: valid arguments throughout, NULLs where tested.
    unsafe {
        for (r, d) in datas.iter().enumerate().rev() {
            let at = datas[..r].iter().map(|d| d.len() as u64).sum();
            if r == 3 {
                write_part(&ds, r, ADZ_PART_APPEND, d);
            } else {
                write_part(&ds, r, at, d);
            }
            offset += d.len();
        }
        assert_eq!(offset, all.len());
        let mut r = null_mut();
        assert_eq!(adz_dataset_open(ds.as_ptr(), &mut r), ADZ_E_NOT_FOUND);
        assert!(last().contains("no committed dataset"), "{}", last());
        let ids = [c"r0".as_ptr(), c"r1".as_ptr(), c"r2".as_ptr(), c"r3".as_ptr(), c"r4".as_ptr()];
        let mut v = 0u64;
        assert_eq!(adz_dataset_commit(ds.as_ptr(), ids.as_ptr(), 5, &mut v), ADZ_E_MISSING_PART);
        assert!(last().contains("\"r4\""), "{}", last());
        assert_eq!(v, 0);
        assert_eq!(adz_dataset_commit(ds.as_ptr(), ids.as_ptr(), 4, &mut v), ADZ_OK, "{}", last());
        assert_eq!(v, 1);
        for open in [adz_dataset_open, adz_reader_open] {
            assert_eq!(open(ds.as_ptr(), &mut r), ADZ_OK, "{}", last());
            let mut size = 0;
            assert_eq!(adz_reader_size(r, &mut size), ADZ_OK);
            assert_eq!(size, all.len() as u64);
            random_reads_equal(r, &all, 50, 700_000, 99);
            adz_reader_free(r);
        }
        // Discovery: version 2 lists every part found.
        assert_eq!(adz_dataset_commit(ds.as_ptr(), null_mut(), 0, &mut v), ADZ_OK);
        assert_eq!(v, 2);
        // An overlapping part: refused by name, nothing committed.
        write_part(&ds, 9, 10, b"overlap");
        assert_eq!(adz_dataset_commit(ds.as_ptr(), null_mut(), 0, &mut v), ADZ_E_OVERLAP);
        assert!(last().contains("r9.at-10.adz"), "{}", last());
    }
}

#[test]
fn dataset_bad_arguments_are_codes() {
    let dir = tempfile::tempdir().unwrap();
    let ds = CString::new(dir.path().join("d").to_str().unwrap()).unwrap();
    let mut w = null_mut();
    let mut r = null_mut();
    // SAFETY: NULLs and bad values are what is tested; the rest is valid.
    unsafe {
        let open = |ds: *const c_char, id: *const c_char, w: *mut *mut AdzWriter| {
            adz_dataset_part_open(ds, id, 0, null_mut(), null_mut(), 1, w)
        };
        assert_eq!(open(null_mut(), c"r0".as_ptr(), &mut w), ADZ_E_ARG);
        assert!(last().contains("dataset is NULL"));
        assert_eq!(open(ds.as_ptr(), null_mut(), &mut w), ADZ_E_ARG);
        assert_eq!(open(ds.as_ptr(), c"r0".as_ptr(), null_mut()), ADZ_E_ARG);
        assert_eq!(open(ds.as_ptr(), c"a/b".as_ptr(), &mut w), ADZ_E_ARG);
        assert!(last().contains("writer id"), "{}", last());
        assert!(w.is_null());
        assert_eq!(
            adz_dataset_part_open(
                ds.as_ptr(),
                c"r0".as_ptr(),
                0,
                c"x".as_ptr(),
                null_mut(),
                1,
                &mut w
            ),
            ADZ_E_ARG
        );
        assert_eq!(adz_dataset_commit(null_mut(), null_mut(), 0, null_mut()), ADZ_E_ARG);
        assert_eq!(adz_dataset_commit(ds.as_ptr(), null_mut(), 3, null_mut()), ADZ_E_ARG);
        let ids = [c"r0".as_ptr(), std::ptr::null()];
        assert_eq!(adz_dataset_commit(ds.as_ptr(), ids.as_ptr(), 2, null_mut()), ADZ_E_ARG);
        assert!(last().contains("ids[1] is NULL"), "{}", last());
        assert_eq!(adz_dataset_commit(ds.as_ptr(), ids.as_ptr(), 0, null_mut()), ADZ_E_ARG);
        assert_eq!(
            adz_dataset_commit(ds.as_ptr(), ids.as_ptr(), 1, null_mut()),
            ADZ_E_MISSING_PART
        );
        assert_eq!(adz_dataset_open(null_mut(), &mut r), ADZ_E_ARG);
        assert_eq!(adz_dataset_open(ds.as_ptr(), null_mut()), ADZ_E_ARG);
        assert_eq!(adz_reader_open(ds.as_ptr(), &mut r), ADZ_E_NOT_FOUND);
        assert!(r.is_null());
        let name = CStr::from_ptr(adz_error_name(ADZ_E_MISSING_PART));
        assert_eq!(name.to_str().unwrap(), "ADZ_E_MISSING_PART");
    }
}

#[test]
fn bad_arguments_are_codes_with_messages() {
    let mut w = null_mut();
    // SAFETY: null pointers are what is being tested; the rest is valid.
    unsafe {
        assert_eq!(adz_writer_open(null_mut(), null_mut(), null_mut(), 0, &mut w), ADZ_E_ARG);
        assert!(last().contains("path"));
        assert_eq!(
            adz_writer_open(c"x.adz".as_ptr(), null_mut(), null_mut(), 0, null_mut()),
            ADZ_E_ARG
        );
        assert_eq!(
            adz_writer_open(c"x.adz".as_ptr(), c"fastest".as_ptr(), null_mut(), 0, &mut w),
            ADZ_E_ARG
        );
        assert!(last().contains("throughput"), "{}", last());
        assert!(w.is_null());
        assert_eq!(
            adz_writer_open(c"/nonexistent-dir/x.adz".as_ptr(), null_mut(), null_mut(), 1, &mut w),
            ADZ_E_IO
        );
        // Options out of range are refused before anything is created or allocated.
        let dir = tempfile::tempdir().unwrap();
        let path = CString::new(dir.path().join("x.adz").to_str().unwrap()).unwrap();
        assert_eq!(
            adz_writer_open(path.as_ptr(), null_mut(), null_mut(), 100_000, &mut w),
            ADZ_E_ARG
        );
        assert!(last().contains("threads 100000"), "{}", last());
        assert!(w.is_null());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert_eq!(adz_writer_write(null_mut(), null_mut(), 0), ADZ_E_ARG);
        assert_eq!(adz_write_wait(null_mut()), ADZ_E_ARG);
        assert_eq!(adz_writer_close(null_mut(), null_mut()), ADZ_E_ARG);
        adz_writer_free(null_mut());
        adz_write_free(null_mut());
        let mut r = null_mut();
        assert_eq!(adz_reader_open(c"no-such-file.adz".as_ptr(), &mut r), ADZ_E_NOT_FOUND);
        assert!(r.is_null());
        assert_eq!(adz_reader_open(null_mut(), &mut r), ADZ_E_ARG);
        let mut got = 7usize;
        assert_eq!(adz_reader_pread(null_mut(), null_mut(), 0, 0, &mut got), ADZ_E_ARG);
        let mut size = 0u64;
        assert_eq!(adz_reader_size(null_mut(), &mut size), ADZ_E_ARG);
        let name = CStr::from_ptr(adz_error_name(ADZ_E_CLOSED));
        assert_eq!(name.to_str().unwrap(), "ADZ_E_CLOSED");
    }
}
