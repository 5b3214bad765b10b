//! Random sequences of operations give the same results on every backend as on a model
//! (a sorted map), including the errors.

use std::collections::BTreeMap;
use std::ops::Range;

use adz_store::{Error, LocalStorage, MemoryStorage, Result, Storage};
use proptest::prelude::*;

/// Names chosen to collide in prefixes but never to be a "directory" of one another.
const NAMES: &[&str] = &["a", "ab", "b", "x/a", "x/b", "x/y/z", "xa"];
const PREFIXES: &[&str] = &["", "a", "x", "x/", "x/y/", "q"];

#[derive(Debug, Clone)]
enum End {
    Commit,
    Abort,
    Drop,
}

#[derive(Debug, Clone)]
enum Op {
    Put(usize, Vec<u8>),
    Upload(usize, Vec<Vec<u8>>, End),
    GetRange(usize, Range<u64>),
    Get(usize),
    GetTail(usize, u64),
    Size(usize),
    Delete(usize),
    List(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    let data = prop::collection::vec(any::<u8>(), 0..300);
    let end = prop_oneof![Just(End::Commit), Just(End::Abort), Just(End::Drop)];
    prop_oneof![
        (name.clone(), data.clone()).prop_map(|(n, d)| Op::Put(n, d)),
        (name.clone(), prop::collection::vec(data, 0..4), end)
            .prop_map(|(n, chunks, end)| Op::Upload(n, chunks, end)),
        (name.clone(), 0..320u64, 0..320u64).prop_map(|(n, a, b)| Op::GetRange(n, a..b)),
        name.clone().prop_map(Op::Get),
        (name.clone(), 0..320u64).prop_map(|(n, len)| Op::GetTail(n, len)),
        name.clone().prop_map(Op::Size),
        name.prop_map(Op::Delete),
        (0..PREFIXES.len()).prop_map(Op::List),
    ]
}

/// What an operation returned, with errors reduced to their variant and fields that must
/// agree between backends.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ok(String),
    NotFound(String),
    OutOfRange(Range<u64>, u64),
    InvalidRange,
    Other(String),
}

fn outcome<T: std::fmt::Debug>(result: Result<T>) -> Outcome {
    match result {
        Ok(value) => Outcome::Ok(format!("{value:?}")),
        Err(Error::NotFound { name }) => Outcome::NotFound(name),
        Err(Error::OutOfRange { range, size, .. }) => Outcome::OutOfRange(range, size),
        Err(Error::InvalidRange { .. }) => Outcome::InvalidRange,
        Err(other) => Outcome::Other(other.to_string()),
    }
}

/// Runs `op` on the model.
fn model_op(model: &mut BTreeMap<String, Vec<u8>>, op: &Op) -> Vec<Outcome> {
    let not_found = |n: usize| Outcome::NotFound(NAMES[n].to_owned());
    let get = |model: &BTreeMap<String, Vec<u8>>, n: usize| model.get(NAMES[n]).cloned();
    match op {
        Op::Put(n, data) => {
            model.insert(NAMES[*n].to_owned(), data.clone());
            vec![Outcome::Ok("()".into())]
        }
        Op::Upload(n, chunks, end) => {
            let before = get(model, *n).map(|d| d.len() as u64);
            let mut out = vec![Outcome::Ok(format!("{before:?}"))];
            if let End::Commit = end {
                let data = chunks.concat();
                out.push(Outcome::Ok(format!("{}", data.len())));
                model.insert(NAMES[*n].to_owned(), data);
            }
            out
        }
        Op::GetRange(n, range) => vec![match get(model, *n) {
            None => not_found(*n),
            Some(_) if range.start > range.end => Outcome::InvalidRange,
            Some(d) if range.end > d.len() as u64 => {
                Outcome::OutOfRange(range.clone(), d.len() as u64)
            }
            Some(d) => Outcome::Ok(format!("{:?}", &d[range.start as usize..range.end as usize])),
        }],
        Op::Get(n) => vec![get(model, *n).map_or(not_found(*n), |d| Outcome::Ok(format!("{d:?}")))],
        Op::GetTail(n, len) => vec![get(model, *n).map_or(not_found(*n), |d| {
            let start = d.len().saturating_sub(*len as usize);
            Outcome::Ok(format!("{}:{:?}", d.len(), &d[start..]))
        })],
        Op::Size(n) => {
            vec![get(model, *n).map_or(not_found(*n), |d| Outcome::Ok(format!("{}", d.len())))]
        }
        Op::Delete(n) => vec![match model.remove(NAMES[*n]) {
            Some(_) => Outcome::Ok("()".into()),
            None => not_found(*n),
        }],
        Op::List(p) => {
            let listed: Vec<_> = model
                .iter()
                .filter(|(name, _)| name.starts_with(PREFIXES[*p]))
                .map(|(name, d)| (name.clone(), d.len() as u64))
                .collect();
            vec![Outcome::Ok(format!("{listed:?}"))]
        }
    }
}

/// Runs `op` on a store, observing the same things as [`model_op`].
fn store_op(store: &dyn Storage, op: &Op) -> Vec<Outcome> {
    match op {
        Op::Put(n, data) => vec![outcome(store.put(NAMES[*n], data))],
        Op::Upload(n, chunks, end) => {
            let name = NAMES[*n];
            let mut upload = store.create(name).unwrap();
            for chunk in chunks {
                upload.append(chunk).unwrap();
            }
            // Mid-upload, readers see the object as it was before.
            let mut out = vec![Outcome::Ok(format!("{:?}", store.size(name).ok()))];
            match end {
                End::Commit => out.push(outcome(upload.commit())),
                End::Abort => upload.abort().unwrap(),
                End::Drop => drop(upload),
            }
            out
        }
        Op::GetRange(n, range) => vec![outcome(store.get_range(NAMES[*n], range.clone()))],
        Op::Get(n) => vec![outcome(store.get(NAMES[*n]))],
        Op::GetTail(n, len) => vec![match store.get_tail(NAMES[*n], *len) {
            Ok(tail) => Outcome::Ok(format!("{}:{:?}", tail.object_size, tail.bytes)),
            Err(e) => outcome::<()>(Err(e)),
        }],
        Op::Size(n) => vec![outcome(store.size(NAMES[*n]))],
        Op::Delete(n) => vec![outcome(store.delete(NAMES[*n]))],
        Op::List(p) => vec![match store.list(PREFIXES[*p]) {
            Ok(list) => {
                let listed: Vec<_> = list.into_iter().map(|m| (m.name, m.size)).collect();
                Outcome::Ok(format!("{listed:?}"))
            }
            Err(e) => outcome::<()>(Err(e)),
        }],
    }
}

fn check(store: &dyn Storage, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    let mut model = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let expected = model_op(&mut model, op);
        let got = store_op(store, op);
        prop_assert_eq!(got, expected, "operation {} of {:?}", i, ops);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn memory_behaves_like_the_model(ops in prop::collection::vec(op(), 1..40)) {
        check(&MemoryStorage::new(), &ops)?;
    }

    #[test]
    fn local_behaves_like_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        check(&LocalStorage::new(dir.path()).unwrap().sync_on_commit(false), &ops)?;
    }
}
