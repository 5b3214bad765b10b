//! The handle of an asynchronous write ([`Writer::write_async`](crate::Writer::write_async)):
//! the caller's buffer comes back through it once every block of it is compressed.

use std::sync::Arc;

use super::shared::{lock, AsyncState, Shared};
use crate::error::{Error, PipelineError, Result};

/// An asynchronous write in progress.
pub struct WriteHandle<B> {
    data: Option<Arc<B>>,
    state: Arc<AsyncState>,
    shared: Arc<Shared>,
}

impl<B> std::fmt::Debug for WriteHandle<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteHandle").field("done", &self.is_done()).finish()
    }
}

impl<B> WriteHandle<B> {
    /// The handle of a write of `data`, whose blocks count down `state`.
    pub(super) fn new(data: Arc<B>, state: Arc<AsyncState>, shared: Arc<Shared>) -> Self {
        WriteHandle { data: Some(data), state, shared }
    }

    /// True once every block of the write has been compressed.
    pub fn is_done(&self) -> bool {
        *lock(&self.state.remaining) == 0
    }

    /// Wait until every block of the write has been compressed, and get the buffer back.
    pub fn wait(mut self) -> Result<B> {
        let mut n = lock(&self.state.remaining);
        while *n > 0 {
            n = self.state.cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        drop(n);
        self.shared.check()?;
        let arc = self.data.take().expect("data present until wait");
        // Every block's reference was dropped before its count (see SharedSlice); the
        // writer's pending copy never references the buffer.
        Arc::try_unwrap(arc)
            .map_err(|_| Error::Pipeline(PipelineError::new("the buffer is still referenced")))
    }
}
