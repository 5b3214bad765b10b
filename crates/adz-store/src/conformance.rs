//! The behaviour every [`Storage`] backend must have, as functions that panic on a deviation.
//!
//! Each backend's tests call [`run_all`] (or the functions one by one) on a fresh store;
//! enable the `conformance` feature to get this module:
//!
//! ```
//! adz_store::conformance::run_all(&adz_store::MemoryStorage::new());
//! ```
//!
//! Every function works under its own prefix, `adz-conformance/{function}/`, removes what it
//! finds there first and what it wrote when it passes, so the suite can run against a shared
//! bucket. Functions do not assume that they are alone in the store.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use crate::{Error, Result, Storage};

/// Runs every check.
pub fn run_all(store: &dyn Storage) {
    put_get_roundtrip(store);
    empty_object(store);
    ranged_reads(store);
    get_tail(store);
    out_of_range_is_error(store);
    get_missing_is_not_found(store);
    invalid_names_are_rejected(store);
    upload_commit_visible_only_after_commit(store);
    abort_leaves_nothing(store);
    drop_without_commit_aborts(store);
    abandon_publishes_nothing(store);
    overwrite(store);
    delete(store);
    list_prefix(store);
    list_with_delimiter(store);
    copy(store);
    many_small_appends(store);
    concurrent_readers(store);
    concurrent_uploads(store);
    readers_never_see_a_mix_of_versions(store);
}

/// Deterministic bytes that differ between `seed`s and at every offset, so that a read from
/// the wrong place or the wrong object is caught.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The prefix of `test`, emptied of objects from an earlier run.
fn fresh_prefix(store: &dyn Storage, test: &str) -> String {
    let prefix = format!("adz-conformance/{test}/");
    clean(store, &prefix);
    prefix
}

fn clean(store: &dyn Storage, prefix: &str) {
    for meta in store.list(prefix).expect("list") {
        match store.delete(&meta.name) {
            Ok(()) | Err(Error::NotFound { .. }) => {}
            Err(e) => panic!("cannot delete {:?}: {e}", meta.name),
        }
    }
}

#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(result: Result<T>, name: &str) {
    match result {
        Err(Error::NotFound { name: n }) => assert_eq!(n, name, "NotFound names the object"),
        other => panic!("expected NotFound for {name:?}, got {other:?}"),
    }
}

fn names(store: &dyn Storage, prefix: &str) -> Vec<String> {
    store.list(prefix).expect("list").into_iter().map(|meta| meta.name).collect()
}

/// `put` then `get`, `size` and `list` give back the same bytes and size.
pub fn put_get_roundtrip(store: &dyn Storage) {
    let p = fresh_prefix(store, "put_get_roundtrip");
    let name = format!("{p}sub/dir/object.adz");
    let data = pattern(300_000, 1);
    store.put(&name, &data).expect("put");
    assert_eq!(store.get(&name).expect("get"), data);
    assert_eq!(store.size(&name).expect("size"), data.len() as u64);
    let listed = store.list(&p).expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].name.as_str(), listed[0].size), (name.as_str(), data.len() as u64));
    clean(store, &p);
}

/// Objects of zero bytes exist, have size 0 and read as empty.
pub fn empty_object(store: &dyn Storage) {
    let p = fresh_prefix(store, "empty_object");
    let name = format!("{p}empty");
    assert_eq!(store.create(&name).expect("create").commit().expect("commit"), 0);
    assert_eq!(store.size(&name).expect("size"), 0);
    assert_eq!(store.get(&name).expect("get"), b"");
    assert_eq!(store.get_range(&name, 0..0).expect("get_range"), b"");
    let tail = store.get_tail(&name, 10).expect("get_tail");
    assert_eq!((tail.object_size, tail.bytes.len()), (0, 0));
    assert_eq!(names(store, &p), [name]);
    clean(store, &p);
}

/// Ranges at the start, middle and end read exactly those bytes.
pub fn ranged_reads(store: &dyn Storage) {
    let p = fresh_prefix(store, "ranged_reads");
    let name = format!("{p}object");
    let data = pattern(100_000, 2);
    store.put(&name, &data).expect("put");
    let ranges: [Range<u64>; 7] =
        [0..1, 0..100_000, 1..2, 99_999..100_000, 4096..8192, 12_345..67_890, 50_000..50_000];
    for range in ranges {
        let got = store.get_range(&name, range.clone()).expect("get_range");
        assert_eq!(got, data[range.start as usize..range.end as usize], "range {range:?}");
    }
    clean(store, &p);
}

/// `get_tail` returns the last bytes and the object size, or the whole object if shorter.
pub fn get_tail(store: &dyn Storage) {
    let p = fresh_prefix(store, "get_tail");
    let name = format!("{p}object");
    let data = pattern(10_000, 3);
    store.put(&name, &data).expect("put");
    for max_len in [0, 1, 40, 9_999, 10_000, 10_001, u64::MAX] {
        let tail = store.get_tail(&name, max_len).expect("get_tail");
        let expected_len = max_len.min(10_000) as usize;
        assert_eq!(tail.object_size, 10_000, "max_len {max_len}");
        assert_eq!(tail.bytes, data[10_000 - expected_len..], "max_len {max_len}");
        assert_eq!(tail.offset(), (10_000 - expected_len) as u64);
    }
    assert_not_found(store.get_tail(&format!("{p}missing"), 10), &format!("{p}missing"));
    clean(store, &p);
}

/// A range past the end is an error that says so, never a short read.
pub fn out_of_range_is_error(store: &dyn Storage) {
    let p = fresh_prefix(store, "out_of_range_is_error");
    let name = format!("{p}object");
    store.put(&name, &pattern(1000, 4)).expect("put");
    for range in [0..1001, 999..1001, 1000..1001, 1001..1001, 5000..6000, 0..u64::MAX] {
        match store.get_range(&name, range.clone()) {
            Err(Error::OutOfRange { name: n, range: r, size }) => {
                assert_eq!((n.as_str(), r, size), (name.as_str(), range, 1000));
            }
            other => {
                panic!("range {range:?} of a 1000-byte object: expected OutOfRange, got {other:?}")
            }
        }
    }
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 10..5;
    assert!(
        matches!(store.get_range(&name, reversed), Err(Error::InvalidRange { .. })),
        "a reversed range is an error"
    );
    clean(store, &p);
}

/// Reading, sizing or deleting a missing object is `NotFound`, naming the object.
pub fn get_missing_is_not_found(store: &dyn Storage) {
    let p = fresh_prefix(store, "get_missing_is_not_found");
    let name = format!("{p}missing");
    assert_not_found(store.get(&name), &name);
    assert_not_found(store.get_range(&name, 0..1), &name);
    assert_not_found(store.size(&name), &name);
    assert_not_found(store.delete(&name), &name);
    // A "directory" is not an object.
    store.put(&format!("{p}dir/object"), b"x").expect("put");
    assert_not_found(store.size(&format!("{p}dir")), &format!("{p}dir"));
    assert_not_found(store.get(&format!("{p}dir")), &format!("{p}dir"));
    clean(store, &p);
}

/// Names that are not relative `/`-separated paths are refused by every operation.
pub fn invalid_names_are_rejected(store: &dyn Storage) {
    for name in ["", "/abs", "a/../b", "..", "a//b", "a/", "./a", "a\\b"] {
        let invalid = |what: &str, result: Result<()>| match result {
            Err(Error::InvalidName { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{what}({name:?}): expected InvalidName, got {other:?}"),
        };
        invalid("create", store.create(name).map(drop));
        invalid("put", store.put(name, b"x"));
        invalid("get_range", store.get_range(name, 0..0).map(drop));
        invalid("size", store.size(name).map(drop));
        invalid("delete", store.delete(name));
    }
    for prefix in ["/", "../", "a/../"] {
        assert!(
            matches!(store.list(prefix), Err(Error::InvalidName { .. })),
            "list({prefix:?}) must be refused"
        );
    }
}

/// An upload is invisible (to get, size and list) until commit, then complete.
pub fn upload_commit_visible_only_after_commit(store: &dyn Storage) {
    let p = fresh_prefix(store, "upload_commit_visible_only_after_commit");
    let name = format!("{p}object");
    let data = pattern(2_500_000, 5);
    let mut upload = store.create(&name).expect("create");
    for chunk in data.chunks(1 << 20) {
        upload.append(chunk).expect("append");
        assert_not_found(store.size(&name), &name);
        assert_not_found(store.get(&name), &name);
        assert!(names(store, &p).is_empty(), "an upload in progress is listed");
    }
    assert_eq!(upload.bytes_written(), data.len() as u64);
    assert_eq!(upload.commit().expect("commit"), data.len() as u64);
    assert_eq!(store.size(&name).expect("size"), data.len() as u64);
    assert_eq!(store.get(&name).expect("get"), data);
    clean(store, &p);
}

/// `abort` leaves nothing under the name, and an object that was there stays as it was.
pub fn abort_leaves_nothing(store: &dyn Storage) {
    let p = fresh_prefix(store, "abort_leaves_nothing");
    let name = format!("{p}object");
    let mut upload = store.create(&name).expect("create");
    upload.append(&pattern(1000, 6)).expect("append");
    upload.abort().expect("abort");
    assert_not_found(store.size(&name), &name);
    assert!(names(store, &p).is_empty(), "an aborted upload left {:?}", names(store, &p));

    let old = pattern(500, 7);
    store.put(&name, &old).expect("put");
    let mut upload = store.create(&name).expect("create");
    upload.append(&pattern(1000, 8)).expect("append");
    upload.abort().expect("abort");
    assert_eq!(store.get(&name).expect("get"), old, "abort changed the existing object");
    assert_eq!(names(store, &p), [name]);
    clean(store, &p);
}

/// Dropping an upload without commit or abort aborts it.
pub fn drop_without_commit_aborts(store: &dyn Storage) {
    let p = fresh_prefix(store, "drop_without_commit_aborts");
    let name = format!("{p}object");
    let mut upload = store.create(&name).expect("create");
    upload.append(&pattern(1000, 9)).expect("append");
    drop(upload);
    assert_not_found(store.size(&name), &name);
    assert!(names(store, &p).is_empty(), "a dropped upload left {:?}", names(store, &p));
    // The name is free for a new upload.
    store.put(&name, b"after").expect("put");
    assert_eq!(store.get(&name).expect("get"), b"after");
    clean(store, &p);
}

/// An abandoned upload (kept for recovery where the backend can) publishes nothing and leaves
/// an existing object as it was.
pub fn abandon_publishes_nothing(store: &dyn Storage) {
    let p = fresh_prefix(store, "abandon_publishes_nothing");
    let name = format!("{p}object");
    let mut upload = store.create(&name).expect("create");
    upload.append(&pattern(1000, 30)).expect("append");
    upload.abandon().expect("abandon");
    assert_not_found(store.size(&name), &name);
    assert!(names(store, &p).is_empty(), "an abandoned upload is listed: {:?}", names(store, &p));
    let old = pattern(500, 31);
    store.put(&name, &old).expect("put");
    let mut upload = store.create(&name).expect("create");
    upload.append(&pattern(1000, 32)).expect("append");
    upload.abandon().expect("abandon");
    assert_eq!(store.get(&name).expect("get"), old, "abandon changed the existing object");
    clean(store, &p);
}

/// Creating an existing object replaces it on commit; until then readers see the old one.
pub fn overwrite(store: &dyn Storage) {
    let p = fresh_prefix(store, "overwrite");
    let name = format!("{p}object");
    let old = pattern(5000, 10);
    let new = pattern(3000, 11);
    store.put(&name, &old).expect("put");
    let mut upload = store.create(&name).expect("create");
    upload.append(&new).expect("append");
    assert_eq!(store.get(&name).expect("get"), old, "the old object is replaced before commit");
    upload.commit().expect("commit");
    assert_eq!(store.get(&name).expect("get"), new);
    assert_eq!(store.size(&name).expect("size"), 3000);
    store.put(&name, b"put replaces too").expect("put");
    assert_eq!(store.get(&name).expect("get"), b"put replaces too");
    assert_eq!(names(store, &p), [name]);
    clean(store, &p);
}

/// `delete` removes exactly one object.
pub fn delete(store: &dyn Storage) {
    let p = fresh_prefix(store, "delete");
    let (a, b) = (format!("{p}a"), format!("{p}b"));
    store.put(&a, b"a").expect("put");
    store.put(&b, b"b").expect("put");
    store.delete(&a).expect("delete");
    assert_not_found(store.get(&a), &a);
    assert_not_found(store.delete(&a), &a);
    assert_eq!(store.get(&b).expect("get"), b"b");
    assert_eq!(names(store, &p), [b]);
    clean(store, &p);
}

/// `list` is a plain string prefix match, sorted by name, with sizes.
pub fn list_prefix(store: &dyn Storage) {
    let p = fresh_prefix(store, "list_prefix");
    // No name is a "directory" of another ("a" and "a/b"): a file system cannot hold both.
    let all = ["a-b", "a.x", "a/b", "a/bc", "a/c/d", "ab", "b/a"];
    // Written out of order, so that sorting is the store's doing.
    for (i, name) in all.iter().enumerate().rev() {
        store.put(&format!("{p}{name}"), &pattern(i + 1, i as u64)).expect("put");
    }
    let listed = |prefix: &str| -> Vec<String> {
        names(store, &format!("{p}{prefix}")).into_iter().map(|n| n[p.len()..].to_owned()).collect()
    };
    assert_eq!(listed(""), all);
    assert_eq!(listed("a"), ["a-b", "a.x", "a/b", "a/bc", "a/c/d", "ab"]);
    assert_eq!(listed("a/"), ["a/b", "a/bc", "a/c/d"]);
    assert_eq!(listed("a/b"), ["a/b", "a/bc"]);
    assert_eq!(listed("a/c/"), ["a/c/d"]);
    assert_eq!(listed("a/c/d"), ["a/c/d"]);
    assert_eq!(listed("b"), ["b/a"]);
    assert!(listed("c").is_empty());
    assert!(listed("a/b/").is_empty(), "a prefix below an object lists nothing");
    let sizes: Vec<u64> = store.list(&p).expect("list").iter().map(|m| m.size).collect();
    assert_eq!(sizes, [1, 2, 3, 4, 5, 6, 7]);
    clean(store, &p);
    assert!(names(store, &p).is_empty());
}

/// `copy` makes a second object with the same bytes, replaces one that was there, leaves the
/// source, and fails with `NotFound` naming a missing source without creating the target.
pub fn copy(store: &dyn Storage) {
    let p = fresh_prefix(store, "copy");
    let (a, b, c) = (format!("{p}a"), format!("{p}sub/b"), format!("{p}c"));
    let data = pattern(200_000, 7);
    store.put(&a, &data).expect("put");
    store.copy(&a, &b).expect("copy");
    assert_eq!(store.get(&b).expect("get the copy"), data);
    assert_eq!(store.get(&a).expect("get the source"), data, "the source stays");

    let other = pattern(1_000, 8);
    store.put(&c, &other).expect("put");
    store.copy(&c, &b).expect("copy over an object");
    assert_eq!(store.get(&b).expect("get"), other, "the copy replaced the old object");
    assert_eq!(store.size(&b).expect("size"), other.len() as u64);

    store.copy(&a, &a).expect("copy onto itself");
    assert_eq!(store.get(&a).expect("get"), data);

    let missing = format!("{p}missing");
    assert_not_found(store.copy(&missing, &format!("{p}d")), &missing);
    assert_not_found(store.size(&format!("{p}d")), &format!("{p}d"));
    assert_eq!(names(store, &p), [a, c, b]);
    clean(store, &p);
}

/// `list_with_delimiter` lists one level: the objects directly below and each common prefix
/// once, sorted, with sizes.
pub fn list_with_delimiter(store: &dyn Storage) {
    let p = fresh_prefix(store, "list_with_delimiter");
    let all = ["a-b", "a.x", "a/b", "a/bc", "a/c/d", "a/c/e/f", "ab", "b/a"];
    for (i, name) in all.iter().enumerate().rev() {
        store.put(&format!("{p}{name}"), &pattern(i + 1, i as u64)).expect("put");
    }
    let level = |prefix: &str| -> (Vec<(String, u64)>, Vec<String>) {
        let l = store.list_with_delimiter(&format!("{p}{prefix}")).expect("list_with_delimiter");
        let objects = l.objects.iter().map(|o| (o.name[p.len()..].to_owned(), o.size)).collect();
        (objects, l.prefixes.iter().map(|x| x[p.len()..].to_owned()).collect())
    };
    let o = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    };
    assert_eq!(
        level(""),
        (o(&[("a-b", 1), ("a.x", 2), ("ab", 7)]), vec!["a/".into(), "b/".into()])
    );
    assert_eq!(level("a/"), (o(&[("a/b", 3), ("a/bc", 4)]), vec!["a/c/".to_owned()]));
    assert_eq!(level("a/c/"), (o(&[("a/c/d", 5)]), vec!["a/c/e/".to_owned()]));
    assert_eq!(level("a/c/e/"), (o(&[("a/c/e/f", 6)]), vec![]));
    assert_eq!(level("c/"), (vec![], vec![]));
    clean(store, &p);
}

/// Many small appends (headers, tiny frames) add up to exactly the bytes appended.
pub fn many_small_appends(store: &dyn Storage) {
    let p = fresh_prefix(store, "many_small_appends");
    let name = format!("{p}object");
    let data = pattern(100_000, 12);
    let mut upload = store.create(&name).expect("create");
    let mut offset = 0;
    for len in (0..).map(|i| i % 97) {
        if offset == data.len() {
            break;
        }
        let end = (offset + len).min(data.len());
        upload.append(&data[offset..end]).expect("append");
        offset = end;
        assert_eq!(upload.bytes_written(), offset as u64);
    }
    assert_eq!(upload.commit().expect("commit"), data.len() as u64);
    assert_eq!(store.get(&name).expect("get"), data);
    clean(store, &p);
}

/// Many threads reading ranges of one object at once each get their own bytes.
pub fn concurrent_readers(store: &dyn Storage) {
    let p = fresh_prefix(store, "concurrent_readers");
    let name = format!("{p}object");
    let data = pattern(1_000_003, 13);
    store.put(&name, &data).expect("put");
    thread::scope(|s| {
        for t in 0..8u64 {
            let (name, data) = (&name, &data);
            s.spawn(move || {
                let state = pattern(8 * 64, t);
                for chunk in state.chunks(8) {
                    let x = u64::from_le_bytes(chunk.try_into().unwrap());
                    let start = x % data.len() as u64;
                    let len = (x >> 32) % 65_536;
                    let end = (start + len).min(data.len() as u64);
                    let got = store.get_range(name, start..end).expect("get_range");
                    assert!(got == data[start as usize..end as usize], "range {start}..{end}");
                }
                let tail = store.get_tail(name, 40).expect("get_tail");
                assert_eq!(tail.bytes, data[data.len() - 40..]);
            });
        }
    });
    clean(store, &p);
}

/// Uploads from many threads at once, to different names and to one name, do not mix.
pub fn concurrent_uploads(store: &dyn Storage) {
    let p = fresh_prefix(store, "concurrent_uploads");
    let shared = format!("{p}shared");
    thread::scope(|s| {
        for t in 0..8u64 {
            let (p, shared) = (&p, &shared);
            s.spawn(move || {
                let own = format!("{p}own-{t}");
                let mut a = store.create(&own).expect("create");
                let mut b = store.create(shared).expect("create");
                let data = pattern(100_000 + t as usize, t);
                for chunk in data.chunks(7_000) {
                    a.append(chunk).expect("append");
                    b.append(chunk).expect("append");
                }
                a.commit().expect("commit");
                b.commit().expect("commit");
            });
        }
    });
    for t in 0..8u64 {
        let data = pattern(100_000 + t as usize, t);
        assert!(store.get(&format!("{p}own-{t}")).expect("get") == data, "object own-{t}");
    }
    // The last commit wins, whole.
    let got = store.get(&shared).expect("get");
    let t = got.len() - 100_000;
    assert!(t < 8 && got == pattern(100_000 + t, t as u64), "the shared object is a mix");
    assert_eq!(names(store, &p).len(), 9);
    clean(store, &p);
}

/// While an object is replaced again and again, every ranged read of the whole object sees
/// one version, never a mix.
pub fn readers_never_see_a_mix_of_versions(store: &dyn Storage) {
    let p = fresh_prefix(store, "readers_never_see_a_mix_of_versions");
    let name = format!("{p}object");
    const LEN: u64 = 64 * 1024;
    store.put(&name, &[0; LEN as usize]).expect("put");
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            for version in 1..=30u8 {
                let mut upload = store.create(&name).expect("create");
                for _ in 0..4 {
                    upload.append(&[version; LEN as usize / 4]).expect("append");
                }
                upload.commit().expect("commit");
            }
            done.store(true, Ordering::Relaxed);
        });
        for _ in 0..4 {
            s.spawn(|| loop {
                let finished = done.load(Ordering::Relaxed);
                let got = store.get_range(&name, 0..LEN).expect("get_range");
                assert!(got.iter().all(|&b| b == got[0]), "read a mix of versions");
                if finished {
                    break;
                }
            });
        }
    });
    assert_eq!(store.get(&name).expect("get"), [30; LEN as usize]);
    clean(store, &p);
}

/// The bucket of the test S3 server given by the environment (`AWS_ENDPOINT_URL`, on loopback
/// only; `ADZ_S3_BUCKET`, default `adz-test`), or None after saying why the caller should skip.
/// With `ADZ_REQUIRE_S3=1` (as `make s3-test` sets) a missing server fails instead.
pub fn s3_test_bucket() -> Option<String> {
    let required = std::env::var("ADZ_REQUIRE_S3").is_ok_and(|v| v == "1");
    let skip = |why: &str| {
        assert!(!required, "ADZ_REQUIRE_S3=1 but {why}");
        eprintln!("skipping S3 test: {why} (run `make s3-test` to start MinIO)");
        None
    };
    let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") else {
        return skip("AWS_ENDPOINT_URL is not set");
    };
    if !endpoint.starts_with("http://127.0.0.1:") && !endpoint.starts_with("http://localhost:") {
        return skip("AWS_ENDPOINT_URL is not on loopback; these tests only use 127.0.0.1");
    }
    Some(std::env::var("ADZ_S3_BUCKET").unwrap_or_else(|_| "adz-test".to_owned()))
}
