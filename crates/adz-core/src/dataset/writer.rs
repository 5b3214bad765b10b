//! One writer's part of a dataset, written through the adaptive pipeline.

use super::*;

/// Writes one part of a dataset through the adaptive [`Writer`]. Nothing is visible until
/// [`finish`](Self::finish); the part is not in the dataset until a [`Dataset::commit`].
#[derive(Debug)]
pub struct DatasetWriter {
    writer: Writer,
    name: String,
}

impl DatasetWriter {
    /// Starts writer `id`'s part of `dataset` (an id of 1-64 ASCII letters, digits, `_`, `-`,
    /// unique among the dataset's writers: a rank number, a host name).
    pub fn create(
        storage: &dyn Storage,
        dataset: &str,
        id: &str,
        placement: Placement,
        opts: WriteOptions,
    ) -> Result<DatasetWriter> {
        let name = part_name(dataset, id, placement)?;
        let writer = Writer::create(storage, &name, opts)?;
        Ok(DatasetWriter { writer, name })
    }

    /// As [`create`](Self::create), with the part's upload passed through `wrap` first
    /// (paced to a simulated link, say: `adz dataset write --throttle`).
    pub fn create_wrapped(
        storage: &dyn Storage,
        dataset: &str,
        id: &str,
        placement: Placement,
        opts: WriteOptions,
        wrap: impl FnOnce(Box<dyn adz_store::Upload>) -> Box<dyn adz_store::Upload>,
    ) -> Result<DatasetWriter> {
        let name = part_name(dataset, id, placement)?;
        opts.check()?;
        let writer = Writer::with_upload(wrap(storage.create(&name)?), opts)?;
        Ok(DatasetWriter { writer, name })
    }

    /// Appends raw bytes to the part.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.writer.write(data)?)
    }

    /// The part's object name.
    pub fn part_name(&self) -> &str {
        &self.name
    }

    /// Finishes and publishes the part.
    pub fn finish(self) -> Result<WriteSummary> {
        Ok(self.writer.finish()?)
    }
}
