//! One multipart upload to S3: parts sent while the writer goes on, a bounded number in
//! flight (see the [module docs](super)).

use std::sync::Mutex;

use super::*;
use crate::Transfer;

/// What one request (one part in flight) of a single client's upload plausibly carries,
/// bytes/s: AWS's guideline for S3 is one concurrent request per 85-90 MB/s of throughput
/// wanted ("Performance guidelines for Amazon S3", horizontal scaling of connections). A
/// writer uses it to bound the link it does not know yet ([`Upload::rate_ceiling`]); erring low
/// on a faster store costs little, because there a part's answer, which measures the link,
/// comes soon.
pub const REQUEST_RATE: f64 = 90e6;

/// The parts' requests as the link saw them: how many are active, and the integral of that
/// count over time, from which a finished part learns how many shared the link with it.
#[derive(Debug)]
struct Flights {
    active: u32,
    last: Instant,
    /// Seconds x requests active, since the upload began.
    area: f64,
    /// Parts finished and not yet taken by [`Upload::take_transfers`].
    done: Vec<Transfer>,
}

impl Flights {
    /// Brings `area` up to `now`.
    fn tick(&mut self, now: Instant) {
        self.area +=
            f64::from(self.active) * now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
    }

    /// A request starts: the area at its start.
    fn begin(this: &Mutex<Flights>) -> (Instant, f64) {
        let mut f = this.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        f.tick(now);
        f.active += 1;
        (now, f.area)
    }

    /// The request begun at `start` (area `area0`) ended; `bytes`: it sent a part.
    fn end(this: &Mutex<Flights>, (start, area0): (Instant, f64), bytes: Option<u64>) {
        let mut f = this.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        f.tick(now);
        f.active = f.active.saturating_sub(1);
        let duration = now.saturating_duration_since(start);
        let Some(bytes) = bytes else { return };
        let secs = duration.as_secs_f64();
        let in_flight = if secs > 0.0 { ((f.area - area0) / secs).max(1.0) } else { 1.0 };
        f.done.push(Transfer { bytes, duration, in_flight });
    }
}

/// An upload to S3; see the [module docs](super).
pub(super) struct S3Upload {
    shared: Arc<Shared>,
    path: Path,
    name: String,
    sizes: PartSizes,
    /// The part being filled.
    buf: Vec<u8>,
    written: u64,
    /// The multipart upload id, once the first full part went out.
    multipart: Option<String>,
    next_part: usize,
    /// Parts sent and not yet acknowledged, oldest first.
    in_flight: VecDeque<JoinHandle<Result<PartId>>>,
    /// Acknowledged parts, in part order.
    done: Vec<PartId>,
    /// A part failed: the upload can only be aborted.
    failed: bool,
    /// The parts' requests, timed for [`Upload::take_transfers`].
    flights: Arc<Mutex<Flights>>,
}

impl fmt::Debug for S3Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Upload")
            .field("bucket", &self.shared.bucket)
            .field("name", &self.name)
            .field("written", &self.written)
            .field("parts_sent", &self.next_part)
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

impl S3Upload {
    /// An upload of object `name` (at `path`) in parts of `sizes`; nothing is sent yet.
    pub(super) fn new(shared: Arc<Shared>, path: Path, name: &str, sizes: PartSizes) -> S3Upload {
        S3Upload {
            shared,
            path,
            name: name.to_owned(),
            sizes,
            buf: Vec::new(),
            written: 0,
            multipart: None,
            next_part: 0,
            in_flight: VecDeque::new(),
            done: Vec::new(),
            failed: false,
            flights: Arc::new(Mutex::new(Flights {
                active: 0,
                last: Instant::now(),
                area: 0.0,
                done: Vec::new(),
            })),
        }
    }

    fn fail(&mut self, err: Error) -> Error {
        self.failed = true;
        err
    }

    /// Waits for the oldest part in flight.
    fn wait_oldest(&mut self) -> Result<()> {
        let Some(handle) = self.in_flight.pop_front() else { return Ok(()) };
        match self.shared.block_on(handle) {
            Ok(Ok(part)) => {
                self.done.push(part);
                Ok(())
            }
            Ok(Err(e)) => Err(self.fail(e)),
            Err(join) => Err(self.fail(Error::Generic { store: "s3", source: join.into() })),
        }
    }

    /// Sends `data` as the next part, after waiting for room among the parts in flight.
    fn send_part(&mut self, data: Vec<u8>) -> Result<()> {
        if self.multipart.is_none() {
            let (client, p, name) = (&self.shared.client, &self.path, &self.name);
            let rt = &self.shared;
            let id = self.shared.config.retry.run("start upload", name, || {
                rt.block_on(client.create_multipart(p))
                    .map_err(|e| remote_error("start upload", name, e))
            });
            self.multipart = Some(id.map_err(|e| self.fail(e))?);
        }
        while self.in_flight.len() >= self.shared.config.streams.max(1) {
            self.wait_oldest()?;
        }
        let client = Arc::clone(&self.shared.client);
        let policy = self.shared.config.retry.clone();
        let (p, name) = (self.path.clone(), self.name.clone());
        let id = self.multipart.clone().expect("set above");
        let index = self.next_part;
        let bytes = data.len() as u64;
        let payload = PutPayload::from(data);
        let flights = Arc::clone(&self.flights);
        self.in_flight.push_back(self.shared.runtime.spawn(async move {
            let started = Instant::now();
            for attempt in 1.. {
                // Each attempt is timed; only one that sent the part is reported.
                let begun = Flights::begin(&flights);
                let sent = client.put_part(&p, &id, index, payload.clone()).await;
                Flights::end(&flights, begun, sent.as_ref().ok().map(|_| bytes));
                match sent {
                    Ok(part) => return Ok(part),
                    Err(e) => {
                        let err = remote_error("upload part", &name, e);
                        let pause = policy.next("upload part", &name, attempt, started, err)?;
                        tokio::time::sleep(pause).await;
                    }
                }
            }
            unreachable!("the policy ends the loop")
        }));
        self.next_part += 1;
        Ok(())
    }

    fn abort_remote(&mut self) -> Result<()> {
        for handle in self.in_flight.drain(..) {
            handle.abort();
        }
        let Some(id) = self.multipart.take() else { return Ok(()) };
        let (client, p, name) = (&self.shared.client, &self.path, &self.name);
        let rt = &self.shared;
        self.shared.config.retry.run("abort upload", name, || {
            rt.block_on(client.abort_multipart(p, &id))
                .map_err(|e| remote_error("abort upload", name, e))
        })
    }

    fn finish(&mut self) -> Result<u64> {
        if self.failed {
            return Err(Error::Generic {
                store: "s3",
                source: format!("upload of {:?} failed earlier; it cannot be committed", self.name)
                    .into(),
            });
        }
        if self.multipart.is_none() {
            // Smaller than one part: one PUT, atomic like a completed multipart upload.
            let payload = PutPayload::from(std::mem::take(&mut self.buf));
            let (client, p, name) = (&self.shared.client, &self.path, &self.name);
            let rt = &self.shared;
            self.shared.config.retry.run("put", name, || {
                rt.block_on(client.put(p, payload.clone()))
                    .map_err(|e| remote_error("put", name, e))
            })?;
            return Ok(self.written);
        }
        if !self.buf.is_empty() {
            let last = std::mem::take(&mut self.buf);
            self.send_part(last)?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        let id = self.multipart.clone().expect("checked above");
        let parts = std::mem::take(&mut self.done);
        let (client, p) = (&self.shared.client, &self.path);
        let result = self.shared.block_on(client.complete_multipart(p, &id, parts));
        match result {
            Ok(_) => {
                self.multipart = None;
                Ok(self.written)
            }
            Err(e) => Err(self.fail(remote_error("complete upload", &self.name, e))),
        }
    }
}

impl Upload for S3Upload {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if self.failed {
            return Err(Error::Generic {
                store: "s3",
                source: format!("upload of {:?} failed earlier", self.name).into(),
            });
        }
        while !data.is_empty() {
            let part = self.sizes.size(self.next_part);
            if self.next_part >= MAX_PARTS {
                return Err(self.fail(config_error(format!(
                    "{:?} is larger than 10,000 parts can hold; set a larger part size",
                    self.name
                ))));
            }
            let room = (part as usize).saturating_sub(self.buf.len());
            let take = room.min(data.len());
            if self.buf.capacity() == 0 && take > 0 {
                // One allocation per part, not a doubling series that ends at twice the size.
                self.buf.reserve_exact(part as usize);
            }
            self.buf.extend_from_slice(&data[..take]);
            self.written += take as u64;
            data = &data[take..];
            if self.buf.len() as u64 >= part {
                let full = std::mem::take(&mut self.buf);
                self.send_part(full)?;
            }
        }
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Every part sent: its bytes, its request's time, and how many parts shared the link.
    fn take_transfers(&mut self, out: &mut Vec<Transfer>) -> bool {
        let mut f = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut f.done);
        true
    }

    /// The parts in flight ([`S3Config::streams`]) times [`REQUEST_RATE`].
    fn rate_ceiling(&self) -> Option<f64> {
        Some(self.shared.config.streams.max(1) as f64 * REQUEST_RATE)
    }

    fn commit(mut self: Box<Self>) -> Result<u64> {
        match self.finish() {
            Ok(n) => Ok(n),
            Err(e) => {
                let _ = self.abort_remote();
                Err(e)
            }
        }
    }

    fn abort(mut self: Box<Self>) -> Result<()> {
        self.abort_remote()
    }
}

impl Drop for S3Upload {
    fn drop(&mut self) {
        // Not committed (or commit failed): no object may appear.
        let _ = self.abort_remote();
    }
}
