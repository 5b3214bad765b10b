//! `adz recompress --dry-run`: what a recompression would save, from a sample of the frames.

use super::*;

/// Estimate what [`recompress`] would do, from a sample of the frames it would re-encode
/// (evenly spread, about `sample_bytes` raw bytes, at least one frame), without writing
/// anything: the report has `estimated` set, and its sizes and CPU seconds are scaled up from
/// the sample.
pub fn estimate(
    store: &Arc<dyn Storage>,
    name: &str,
    opts: &RecompressOptions,
    sample_bytes: u64,
) -> Result<RecompressReport, RecompressError> {
    check(opts)?;
    let started = Instant::now();
    let read_err = |source: Error| read_error(name, source);
    let (reader, mut report) = open_unchanged(store, name, opts)?;
    let entries = reader.index().entries();
    let todo: Vec<(usize, &IndexEntry)> =
        entries.iter().enumerate().filter(|(_, e)| !frame_done(e, opts.target)).collect();
    report.skipped = todo.is_empty();
    report.estimated = true;
    if todo.is_empty() {
        return Ok(report);
    }
    let todo_raw: u64 = todo.iter().map(|(_, e)| u64::from(e.raw_len)).sum();
    let step = (todo_raw / sample_bytes.max(1)).max(1) as usize;
    let step = step.min(todo.len());
    let mut w = Worker::new();
    let (mut s_raw, mut s_old, mut s_new, mut s_kept, mut s_probed) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let t0 = cpu_time::ThreadTime::now();
    for &(i, e) in todo.iter().step_by(step) {
        let bytes = store.get_range(name, e.file_range()).map_err(|e| read_err(e.into()))?;
        let h =
            FrameHeader::parse(&bytes, i as u64, e.file_offset).map_err(|e| read_err(e.into()))?;
        let job = Job {
            seq: i as u64,
            offset: e.file_offset,
            header: h,
            payload: bytes[FRAME_HEADER_LEN..].to_vec(),
        };
        let d = w.process(job, opts, name)?;
        s_raw += u64::from(e.raw_len);
        s_old += u64::from(e.stored_len);
        s_new += d.bytes.len() as u64 - FRAME_HEADER_LEN as u64;
        s_kept += u64::from(d.recoded);
        s_probed += u64::from(d.probed);
    }
    let cpu = t0.elapsed().as_secs_f64();
    let n_sampled = todo.iter().step_by(step).count() as f64;
    let scale = todo_raw as f64 / s_raw.max(1) as f64;
    let todo_stored: u64 = todo.iter().map(|(_, e)| u64::from(e.stored_len)).sum();
    let new_stored = todo_stored as f64 * s_new as f64 / s_old.max(1) as f64;
    report.bytes_after = report.bytes_before - todo_stored + new_stored.round() as u64;
    report.recoded = (todo.len() as f64 * s_kept as f64 / n_sampled).round() as u64;
    report.decoded = todo.len() as u64;
    report.probed = (todo.len() as f64 * s_probed as f64 / n_sampled).round() as u64;
    report.copied = report.frames - report.recoded;
    report.cpu_seconds = cpu * scale;
    report.skipped = false;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
