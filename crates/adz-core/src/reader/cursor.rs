//! [`ReaderCursor`]: `Read + Seek` over a reader.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Deref;

use super::Reader;

/// `Read + Seek` over a [`Reader`] (borrowed or shared). Each cursor has its own position;
/// the reader and its cache are shared.
#[derive(Debug)]
pub struct ReaderCursor<R> {
    reader: R,
    pos: u64,
}

impl<R: Deref<Target = Reader>> ReaderCursor<R> {
    /// A cursor at offset 0.
    pub fn new(reader: R) -> ReaderCursor<R> {
        ReaderCursor { reader, pos: 0 }
    }

    /// The current offset.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl<R: Deref<Target = Reader>> Read for ReaderCursor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.reader.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Deref<Target = Reader>> Seek for ReaderCursor<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.reader.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )),
        }
    }
}
