//! The [`Writer`]'s ends: `finish` (the last block, the trailer, the commit and the
//! summary), `abort`, `abandon` and drop (what is kept for recovery), and stopping the
//! pipeline's threads.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::sequencer::Sequenced;
use super::shared::lock;
use super::writer::{settled_interval, Writer};
use crate::error::{Error, PipelineError, Result};
use crate::summary::WriteSummary;

impl Writer {
    /// Write the last block and the trailer, wait for everything to reach storage, and commit.
    /// On any error nothing is committed.
    pub fn finish(mut self) -> Result<WriteSummary> {
        if let Some(buf) = self.pending.take() {
            if !buf.is_empty() {
                self.emit(buf);
            }
        }
        self.run_prediction();
        self.close();
        let sequenced = self.join();
        self.shared.check()?;
        let Some(mut s) = sequenced else {
            return Err(Error::Pipeline(PipelineError::new(
                "the sequencer stopped without a result",
            )));
        };
        let trailer = s.trailer.encode(s.file_offset);
        let t0 = Instant::now();
        let result = s.upload.append(&trailer).and_then(|()| s.upload.commit());
        s.sink_busy += t0.elapsed();
        let stored = result?;
        let status = lock(&self.shared.dispatch).controller.status();
        Ok(WriteSummary {
            raw_bytes: s.trailer.raw_size(),
            stored_bytes: stored,
            frames: s.trailer.entries().len() as u64,
            configs: s.configs,
            seconds: self.started.elapsed().as_secs_f64(),
            link: status.link,
            link_interval: settled_interval(&status),
            sink_seconds: s.sink_busy.as_secs_f64(),
            strategy: self.strategy.to_string(),
            predict_bytes: self.start.predict_bytes(),
            predict_start: self.prediction().map(|p| p.start.to_string()),
            shadows: self.shared.shadows.load(Ordering::Relaxed),
            shadow_share: {
                let block = self.shared.block_ns.load(Ordering::Relaxed) as f64;
                let shadow = self.shared.shadow_ns.load(Ordering::Relaxed) as f64;
                if block > 0.0 {
                    shadow / block
                } else {
                    0.0
                }
            },
        })
    }

    /// Stop and discard everything: nothing is committed and nothing is kept for recovery
    /// (unlike dropping the writer, which keeps what was written where storage can).
    pub fn abort(mut self) -> Result<()> {
        self.shared.fail("the writer was aborted".to_owned());
        match self.join() {
            Some(s) => s.upload.abort().map_err(Error::from),
            None => Ok(()),
        }
    }

    /// Stop without committing, and keep the frames of the complete blocks written so far
    /// for recovery (`adz recover`) where the storage can ([`Upload::abandon`]: a local
    /// file's temporary file stays), as after a killed process, if there is at least one;
    /// otherwise (and after a write error) the upload is aborted and nothing is left.
    /// Dropping the writer does the same; this says what was kept.
    pub fn abandon(mut self) -> Result<Option<Abandoned>> {
        self.stop_and_keep()
    }

    fn stop_and_keep(&mut self) -> Result<Option<Abandoned>> {
        if self.sequencer.is_none() {
            return Ok(None);
        }
        let failed_before = self.shared.check().is_err();
        if !failed_before {
            // The blocks already handed over are written (a bounded wait: at most `buffers`
            // of them); the partial block pending is dropped.
            self.run_prediction();
            self.close();
        }
        let sequenced = self.join();
        self.shared.fail("the writer was dropped before finish");
        let Some(s) = sequenced else { return Ok(None) };
        let frames = s.trailer.entries().len() as u64;
        if failed_before || frames == 0 {
            s.upload.abort()?;
            return Ok(None);
        }
        let raw_bytes = s.trailer.raw_size();
        Ok(s.upload.abandon()?.map(|location| Abandoned { location, frames, raw_bytes }))
    }

    pub(super) fn close(&mut self) {
        lock(&self.shared.dispatch).closed = true;
        self.shared.work.notify_all();
    }

    pub(super) fn join(&mut self) -> Option<Sequenced> {
        for w in self.workers.drain(..) {
            if w.join().is_err() {
                self.shared.fail("a compression worker panicked".to_owned());
            }
        }
        self.done_tx.take();
        let s = self.sequencer.take()?;
        match s.join() {
            Ok(r) => r,
            Err(_) => {
                self.shared.fail("the sequencer panicked".to_owned());
                None
            }
        }
    }
}

impl Drop for Writer {
    /// A writer dropped without `finish` or `abort` (a panic, an early return) does what
    /// [`Writer::abandon`] does: commit nothing, keep the complete frames for recovery.
    fn drop(&mut self) {
        let _ = self.stop_and_keep();
    }
}

/// What [`Writer::abandon`] kept for recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Abandoned {
    /// Where the bytes are (for a local file, the path of its temporary file).
    pub location: String,
    /// Complete frames written there.
    pub frames: u64,
    /// Raw bytes those frames hold.
    pub raw_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::static_opts;
    use adz_store::{Storage, Upload};

    fn files_in(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn abandon_keeps_complete_frames_and_nothing_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = adz_store::LocalStorage::new(dir.path()).unwrap().sync_on_commit(false);
        let mut w = Writer::create(&store, "a.adz", static_opts(4096)).unwrap();
        w.write(b"less than a block").unwrap();
        assert_eq!(w.abandon().unwrap(), None);
        assert!(files_in(dir.path()).is_empty(), "a header alone is not kept");

        // Dropped the same way.
        let mut w = Writer::create(&store, "a.adz", static_opts(4096)).unwrap();
        w.write(b"less than a block").unwrap();
        drop(w);
        assert!(files_in(dir.path()).is_empty());

        let data: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 7) as u8).collect();
        let mut w = Writer::create(&store, "b.adz", static_opts(4096)).unwrap();
        w.write(&data).unwrap();
        let kept = w.abandon().unwrap().expect("complete frames are kept");
        assert_eq!((kept.frames, kept.raw_bytes), (3, 3 * 4096));
        assert_eq!(files_in(dir.path()).len(), 1);
        assert!(kept.location.contains(".b.adz.adz-tmp-"), "{}", kept.location);
        let saved = adz_store::MemoryStorage::new();
        let file = std::fs::File::open(&kept.location).unwrap();
        let report = crate::recover_stream(file, saved.create("s.adz").unwrap()).unwrap();
        assert_eq!(report.raw_bytes_kept, 3 * 4096);
    }

    /// An upload that fails with "no space" once it holds `room` bytes.
    #[derive(Debug)]
    struct FullDisk {
        room: u64,
        written: u64,
    }

    impl Upload for FullDisk {
        fn append(&mut self, data: &[u8]) -> adz_store::Result<()> {
            if self.written + data.len() as u64 > self.room {
                let source = std::io::Error::from_raw_os_error(28); // ENOSPC
                return Err(adz_store::Error::Io { op: "append to", name: "o.adz".into(), source });
            }
            self.written += data.len() as u64;
            Ok(())
        }
        fn bytes_written(&self) -> u64 {
            self.written
        }
        fn commit(self: Box<Self>) -> adz_store::Result<u64> {
            Ok(self.written)
        }
        fn abort(self: Box<Self>) -> adz_store::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_sink_error_keeps_its_cause_in_the_chain_once() {
        let upload = Box::new(FullDisk { room: 10_000, written: 0 });
        let mut w = Writer::with_upload(upload, static_opts(4096)).unwrap();
        let data: Vec<u8> =
            (0..1_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8).collect();
        let e = match w.write(&data) {
            Err(e) => e,
            Ok(()) => w.finish().unwrap_err(),
        };
        assert!(matches!(e, Error::Pipeline(_)), "{e:?}");
        let mut chain = Vec::new();
        let mut c: Option<&dyn std::error::Error> = Some(&e);
        while let Some(x) = c {
            chain.push(x.to_string());
            c = x.source();
        }
        let all = chain.join(": ");
        assert!(chain[0].starts_with("write failed: writing frame"), "{all}");
        assert!(chain.last().unwrap().contains("No space left on device"), "{all}");
        assert_eq!(all.matches("No space left").count(), 1, "{all}");
        assert!(all.contains("append to \"o.adz\" failed"), "{all}");
    }
}
