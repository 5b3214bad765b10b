//! The commit that joins the parts into a manifest version, and the garbage collection of
//! what no manifest lists.

use super::*;

/// What [`Dataset::gc`] removed (or, with `dry_run`, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GcReport {
    /// Parts not in the latest manifest.
    pub parts: Vec<String>,
    /// Manifests older than the latest, and candidates of decided versions.
    pub manifests: Vec<String>,
}

/// How [`Dataset::gc`] works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcOptions {
    /// List what would be removed, remove nothing.
    pub dry_run: bool,
    /// Also remove candidates of the next version: those of a commit that died (which block
    /// every later commit), but also those of a commit running now, which would break the
    /// commit protocol. Only when no commit is running.
    pub stale_candidates: bool,
}

impl GcOptions {
    /// Listing only.
    pub fn dry_run() -> GcOptions {
        GcOptions { dry_run: true, ..Default::default() }
    }
}

/// Operations on a dataset as a whole: commit, load, garbage collection.
#[derive(Debug, Clone, Copy)]
pub struct Dataset;

static TOKEN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Times a commit that saw only rival candidates tries again before it gives up.
const CLAIM_ATTEMPTS: u32 = 6;

/// A random wait before claim attempt `n` (1..): up to 2^n x 8 ms, about 1 s in all at most.
fn backoff(n: u32) -> std::time::Duration {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(n);
    std::time::Duration::from_micros(1000 + h.finish() % (8000u64 << n.min(CLAIM_ATTEMPTS)))
}

/// A name no other commit uses: the pid, a per-process counter and a random number.
fn unique_token() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(TOKEN_COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:x}-{:016x}", std::process::id(), h.finish())
}

impl Dataset {
    /// The latest committed version, 0 if none.
    pub fn latest_version(storage: &dyn Storage, dataset: &str) -> Result<u64> {
        let prefix = format!("{}v", manifest_prefix(dataset));
        Ok(storage
            .list(&prefix)?
            .iter()
            .filter_map(|o| parse_version(&prefix, &o.name))
            .max()
            .unwrap_or(0))
    }

    /// Loads the latest manifest; `None` when nothing was committed.
    pub fn latest(storage: &dyn Storage, dataset: &str) -> Result<Option<Manifest>> {
        match Dataset::latest_version(storage, dataset)? {
            0 => Ok(None),
            v => Dataset::load(storage, dataset, v).map(Some),
        }
    }

    /// Loads manifest `version` and checks it.
    pub fn load(storage: &dyn Storage, dataset: &str, version: u64) -> Result<Manifest> {
        let name = manifest_name(dataset, version);
        let size = storage.size(&name)?;
        if size > MAX_MANIFEST_BYTES {
            return Err(DatasetError::BadManifest {
                name,
                reason: format!("{size} bytes, above the limit of {MAX_MANIFEST_BYTES}"),
            });
        }
        let bytes = storage.get(&name)?;
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| DatasetError::BadManifest { name: name.clone(), reason: e.to_string() })?;
        manifest.check(&name, dataset, version)?;
        Ok(manifest)
    }

    /// The parts written so far (committed or not), as a manifest would list them, checked:
    /// each opens as an adz file, placed parts do not overlap.
    pub fn collect(storage: &dyn Storage, dataset: &str) -> Result<Vec<PartEntry>> {
        Dataset::collect_of(storage, dataset, None)
    }

    /// As [`collect`](Self::collect), only the parts of the writers `ids` (all when `None`);
    /// fails with [`DatasetError::MissingPart`] naming a writer of `ids` with no part.
    fn collect_of(
        storage: &dyn Storage,
        dataset: &str,
        ids: Option<&BTreeSet<&str>>,
    ) -> Result<Vec<PartEntry>> {
        let mut found = Vec::new();
        let mut seen = BTreeSet::new();
        for object in storage.list(&parts_prefix(dataset))? {
            let Some((id, placement)) = parse_part_name(dataset, &object.name) else { continue };
            if ids.is_some_and(|ids| !ids.contains(id)) {
                continue;
            }
            seen.insert(id.to_owned());
            found.push((object.name.clone(), placement));
        }
        if let Some(missing) = ids.into_iter().flatten().find(|id| !seen.contains(**id)) {
            return Err(DatasetError::MissingPart {
                dataset: dataset.to_owned(),
                id: (*missing).to_owned(),
            });
        }
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        let mut placed = Vec::new();
        let mut appended = Vec::new();
        for (entry, (_, placement)) in describe_parts(storage, &names)?.into_iter().zip(&found) {
            match *placement {
                Placement::At(offset) => placed.push(PartEntry { offset, ..entry }),
                Placement::Append => appended.push(entry),
            }
        }
        placed.sort_by(|a, b| (a.offset, a.len, &a.name).cmp(&(b.offset, b.len, &b.name)));
        let mut end = 0u64;
        let mut last: Option<&PartEntry> = None;
        for p in placed.iter().filter(|p| p.len > 0) {
            if let Some(prev) = last.filter(|prev| p.offset < prev.offset + prev.len) {
                return Err(DatasetError::Overlap {
                    first: prev.name.clone(),
                    first_range: prev.range(),
                    second: p.name.clone(),
                    second_range: p.range(),
                });
            }
            end = end.max(p.offset.checked_add(p.len).ok_or_else(|| DatasetError::Overlap {
                first: p.name.clone(),
                first_range: p.offset..u64::MAX,
                second: "the end of the 64-bit byte space".to_owned(),
                second_range: u64::MAX..u64::MAX,
            })?);
            last = Some(p);
        }
        // In byte order of the id (not of the name: `a-b.append` sorts before `a.append`).
        appended.sort_by(|a, b| {
            let id = |n: &str| n.trim_end_matches(".append.adz").to_owned();
            id(&a.name).cmp(&id(&b.name))
        });
        for mut p in appended {
            p.offset = end;
            end += p.len;
            placed.push(p);
        }
        Ok(placed)
    }

    /// Commits every part written so far as the next version and returns its manifest.
    ///
    /// With `base: Some(b)`, the commit succeeds only if the latest version is `b` (0: no
    /// dataset yet), like a compare-and-swap. Fails with [`DatasetError::CommitConflict`] when
    /// another commit took the version, [`DatasetError::Overlap`] when parts overlap; then
    /// nothing was committed. Where the store has [`Storage::put_if_absent`] the version is
    /// created with it; elsewhere it is claimed with candidates (the [module docs](super)).
    pub fn commit(storage: &dyn Storage, dataset: &str, base: Option<u64>) -> Result<Manifest> {
        Dataset::commit_inner(storage, dataset, base, None)
    }

    /// Commits the parts of exactly the writers `ids` (an MPI job's ranks, say) as the next
    /// version, as [`commit`](Self::commit) does. Parts of other writers (left by an earlier
    /// run) are not listed; a writer of `ids` with no finished part fails the commit with
    /// [`DatasetError::MissingPart`], and nothing is committed.
    pub fn commit_writers(
        storage: &dyn Storage,
        dataset: &str,
        base: Option<u64>,
        ids: &[&str],
    ) -> Result<Manifest> {
        for id in ids {
            check_id(id)?;
        }
        let ids: BTreeSet<&str> = ids.iter().copied().collect();
        Dataset::commit_inner(storage, dataset, base, Some(&ids))
    }

    fn commit_inner(
        storage: &dyn Storage,
        dataset: &str,
        base: Option<u64>,
        ids: Option<&BTreeSet<&str>>,
    ) -> Result<Manifest> {
        adz_store::validate_name(dataset)?;
        let latest = Dataset::latest_version(storage, dataset)?;
        if let Some(base) = base.filter(|&b| b != latest) {
            return Err(DatasetError::CommitConflict {
                dataset: dataset.to_owned(),
                version: base + 1,
                why: format!("the latest version is {latest}, not {base}"),
            });
        }
        let version = latest + 1;
        let parts = Dataset::collect_of(storage, dataset, ids)?;
        let len = parts.iter().map(|p| p.offset + p.len).max().unwrap_or(0);
        let manifest = Manifest {
            kind: MANIFEST_KIND.to_owned(),
            format: MANIFEST_FORMAT,
            dataset: dataset.to_owned(),
            version,
            len,
            parts,
            commit: unique_token(),
        };
        let bytes =
            serde_json::to_vec_pretty(&manifest).map_err(|e| DatasetError::BadManifest {
                name: manifest_name(dataset, version),
                reason: e.to_string(),
            })?;

        let conflict = |why: String| DatasetError::CommitConflict {
            dataset: dataset.to_owned(),
            version,
            why,
        };
        let vname = manifest_name(dataset, version);
        match storage.put_if_absent(&vname, &bytes) {
            Ok(()) => return Ok(manifest),
            Err(adz_store::Error::AlreadyExists { .. }) => {
                // Ours if a retry of our own put found it (its answer was lost), else a rival's.
                return match storage.get(&vname) {
                    Ok(there) if there == bytes => Ok(manifest),
                    Ok(_) => Err(conflict(format!("another commit created {vname}"))),
                    Err(e) => Err(e.into()),
                };
            }
            Err(adz_store::Error::Unsupported { .. }) => {}
            Err(e) => return Err(e.into()),
        }

        // No conditional put: claim the version with a candidate under a unique name, then look
        // for rivals. When rivals' candidates are all there is (each may have seen the others),
        // everyone backs off for a random while and tries again, so one of them usually wins.
        let candidates = candidate_prefix(dataset, version);
        let mut attempt = 0;
        loop {
            let mine = format!("{candidates}{}", unique_token());
            storage.put(&mine, &bytes)?;
            let rivals = match storage.list(&candidates) {
                Ok(list) => list.into_iter().filter(|o| o.name != mine).count(),
                Err(e) => {
                    let _ = storage.delete(&mine);
                    return Err(e.into());
                }
            };
            let committed = match Dataset::latest_version(storage, dataset) {
                Ok(v) => v,
                Err(e) => {
                    let _ = storage.delete(&mine);
                    return Err(e);
                }
            };
            if committed >= version || rivals > 0 {
                let _ = storage.delete(&mine);
                if committed >= version {
                    return Err(conflict(format!("version {committed} is committed")));
                }
                if attempt == CLAIM_ATTEMPTS {
                    return Err(conflict(format!(
                        "{rivals} other candidate(s) for it under {candidates}* after \
                         {CLAIM_ATTEMPTS} tries; `adz dataset gc --stale-candidates` removes \
                         those of a commit that died"
                    )));
                }
                attempt += 1;
                std::thread::sleep(backoff(attempt));
                continue;
            }
            storage.put(&vname, &bytes)?;
            // The committed version now decides; the candidate is no longer needed.
            let _ = storage.delete(&mine);
            return Ok(manifest);
        }
    }

    /// Removes the parts the latest manifest does not list (those of writers that died or
    /// were never committed), the older manifests, and candidates of versions already decided.
    /// Run it when no writer is writing: a part finished after the latest commit is removed
    /// too. Readers of an older version lose it.
    pub fn gc(storage: &dyn Storage, dataset: &str, opts: GcOptions) -> Result<GcReport> {
        let latest = Dataset::latest(storage, dataset)?;
        let version = latest.as_ref().map_or(0, |m| m.version);
        let keep: BTreeSet<&str> =
            latest.iter().flat_map(|m| m.parts.iter().map(|p| p.name.as_str())).collect();
        let mut report = GcReport::default();
        for o in storage.list(&parts_prefix(dataset))? {
            if !keep.contains(o.name.as_str()) {
                report.parts.push(o.name);
            }
        }
        let mprefix = manifest_prefix(dataset);
        for o in storage.list(&mprefix)? {
            let rest = &o.name[mprefix.len()..];
            let v = rest
                .strip_prefix('v')
                .map(|d| (d, false))
                .or(rest.strip_prefix('c').map(|d| (d, true)));
            let Some((d, candidate)) = v else { continue };
            let Some(n) = d.get(..20).and_then(|d| d.parse::<u64>().ok()) else { continue };
            let old = if candidate {
                n <= version || (opts.stale_candidates && n == version + 1)
            } else {
                n < version && d.len() == 20
            };
            if old {
                report.manifests.push(o.name);
            }
        }
        if !opts.dry_run {
            for name in report.parts.iter().chain(&report.manifests) {
                match storage.delete(name) {
                    Ok(()) | Err(adz_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(report)
    }
}

/// Reads a part's trailer: its raw length, stored size and index checksum, the index read
/// whole and checked against its checksum (as [`Reader::open`] does).
/// Parts whose footers and indexes a commit reads at once: a store's request latency
/// (10-20 ms a GET on S3), not its bandwidth, bounds a commit of many parts.
const DESCRIBE_IN_FLIGHT: usize = 32;

/// [`describe_part`] of every part of `names`, in order, [`DESCRIBE_IN_FLIGHT`] at a time; the
/// error of the first part (in `names`' order) that fails.
fn describe_parts(storage: &dyn Storage, names: &[&str]) -> Result<Vec<PartEntry>> {
    let next = AtomicU64::new(0);
    let slots: Vec<Mutex<Option<Result<PartEntry>>>> =
        names.iter().map(|_| Mutex::new(None)).collect();
    let workers = names.len().min(DESCRIBE_IN_FLIGHT);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(name) = names.get(i) else { break };
                let entry = describe_part(storage, name);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(entry);
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every part was described")
        })
        .collect()
}

fn describe_part(storage: &dyn Storage, name: &str) -> Result<PartEntry> {
    let part_err = |source: crate::Error| DatasetError::part_failed(name, 0..0, source);
    let f = read_footer(storage, name)?;
    // In pieces, each checked before the next is asked for (as `Reader::open` does), so a
    // footer that lies about its index costs one piece.
    let mut parser = IndexParser::new(&f.footer);
    let mut at = f.footer.index_offset;
    while at < f.object_size {
        let end = f.object_size.min(at + INDEX_PIECE);
        let piece = storage.get_range(name, at..end)?;
        parser.feed(&piece).map_err(|e| part_err(e.into()))?;
        at = end;
    }
    let index = parser.finish().map_err(|e| part_err(e.into()))?;
    Ok(PartEntry {
        name: name.to_owned(),
        offset: 0,
        len: index.raw_size(),
        stored: f.object_size,
        index_checksum: format!("{:016x}", f.footer.index_checksum),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStorage;

    fn part(store: &dyn Storage, id: &str, at: Placement, data: &[u8]) {
        let mut w = DatasetWriter::create(store, "ds", id, at, WriteOptions::default()).unwrap();
        w.write(data).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn a_commit_of_given_writers_lists_only_theirs_and_refuses_a_missing_one() {
        let store = MemoryStorage::new();
        part(&store, "r0", Placement::At(0), b"aaaa");
        part(&store, "r1", Placement::At(4), b"bb");
        // A part of an earlier run at an overlapping offset, under another id: not listed.
        part(&store, "old", Placement::At(2), b"zzzzzz");
        let e = Dataset::commit_writers(&store, "ds", None, &["r0", "r1", "r2"]).unwrap_err();
        assert!(matches!(&e, DatasetError::MissingPart { id, .. } if id == "r2"), "{e}");
        assert!(
            e.to_string().contains("\"r2\"") && e.to_string().contains("nothing was committed")
        );
        assert_eq!(Dataset::latest_version(&store, "ds").unwrap(), 0);
        let e = Dataset::commit_writers(&store, "ds", None, &["r0", "bad/id"]).unwrap_err();
        assert!(matches!(e, DatasetError::InvalidId { .. }), "{e}");

        let m = Dataset::commit_writers(&store, "ds", None, &["r1", "r0", "r0"]).unwrap();
        assert_eq!((m.version, m.len, m.parts.len()), (1, 6, 2));
        assert!(m.parts.iter().all(|p| !p.name.contains("old")));
        // Without ids, every part is collected: the old one overlaps.
        let e = Dataset::commit(&store, "ds", None).unwrap_err();
        assert!(matches!(e, DatasetError::Overlap { .. }), "{e}");
    }
}
