//! What is in an adz file: version, sizes, ratio, the configurations its frames used.
//! Read from the trailer of a seekable file, or by a forward scan of a stream.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use adz_format::{
    CodecId, CodecSpec, FileHeader, Footer, FrameHeader, IndexEntry, IndexParser, FILE_HEADER_LEN,
    FOOTER_LEN, FRAME_HEADER_LEN, VERSION_MAJOR,
};
use serde::Serialize;

use crate::scan::FrameScanner;
use crate::{Error, Result};

/// The largest piece of an index [`FileInfo::read_seekable`] reads at once.
const INDEX_PIECE: u64 = 1 << 20;

/// Totals for one configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConfigTotals {
    /// Frames that used it.
    pub frames: u64,
    /// Their raw bytes.
    pub raw_bytes: u64,
    /// Their payload bytes.
    pub stored_bytes: u64,
}

/// One frame, for `inspect --frames`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameInfo {
    /// Frame number.
    pub frame: u64,
    /// File offset of its header.
    pub file_offset: u64,
    /// Offset of its first raw byte.
    pub raw_offset: u64,
    /// Raw bytes.
    pub raw_len: u32,
    /// Payload bytes.
    pub stored_len: u32,
    /// Codec, filters, and whether stored raw.
    pub config: String,
    /// xxh3 of its raw data, hex.
    pub raw_checksum: String,
}

/// A summary of an adz file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileInfo {
    /// Format version, e.g. "1.0".
    pub version: String,
    /// Nominal block size.
    pub block_size: u32,
    /// Number of frames.
    pub frames: u64,
    /// Raw bytes.
    pub raw_bytes: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// raw_bytes / file_bytes.
    pub ratio: f64,
    /// Totals per configuration (codec and level; "(stored raw)" where compression did not pay).
    pub configs: BTreeMap<String, ConfigTotals>,
    /// Every frame, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_list: Option<Vec<FrameInfo>>,
}

/// The label frames are counted under: codec and level, and "(stored raw)".
pub fn entry_label(e: &IndexEntry) -> String {
    let codec = CodecId::from_u8(e.codec_id)
        .and_then(|id| CodecSpec::new(id, e.codec_param).ok())
        .map_or_else(|| format!("codec#{}:{}", e.codec_id, e.codec_param), |c| c.to_string());
    if e.stored_raw() {
        format!("{codec} (stored raw)")
    } else {
        codec
    }
}

impl FileInfo {
    fn new(header: &FileHeader, entries: &[IndexEntry], file_bytes: u64) -> FileInfo {
        let mut configs: BTreeMap<String, ConfigTotals> = BTreeMap::new();
        let mut raw_bytes = 0;
        for e in entries {
            let t = configs.entry(entry_label(e)).or_default();
            t.frames += 1;
            t.raw_bytes += u64::from(e.raw_len);
            t.stored_bytes += u64::from(e.stored_len);
            raw_bytes += u64::from(e.raw_len);
        }
        FileInfo {
            version: format!("{VERSION_MAJOR}.{}", header.version_minor),
            block_size: header.block_size,
            frames: entries.len() as u64,
            raw_bytes,
            file_bytes,
            ratio: if raw_bytes == 0 { 1.0 } else { raw_bytes as f64 / file_bytes as f64 },
            configs,
            frame_list: None,
        }
    }

    /// Read the summary of a seekable file from its header and trailer. With `frames`, also
    /// reads every frame header (to list filters) and checks it against the index.
    pub fn read_seekable<R: Read + Seek>(mut r: R, frames: bool) -> Result<FileInfo> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |e| Error::io(what, e)
        };
        let file_len = r.seek(SeekFrom::End(0)).map_err(io("seeking"))?;
        let mut head = vec![0u8; FILE_HEADER_LEN.min(file_len as usize)];
        r.seek(SeekFrom::Start(0)).map_err(io("seeking"))?;
        r.read_exact(&mut head).map_err(io("reading the file header"))?;
        let header = FileHeader::parse(&head)?;
        let tail_len = FOOTER_LEN.min(file_len as usize);
        let mut tail = vec![0u8; tail_len];
        r.seek(SeekFrom::End(-(tail_len as i64))).map_err(io("seeking"))?;
        r.read_exact(&mut tail).map_err(io("reading the footer"))?;
        let footer = Footer::parse(&tail, file_len)?;
        // In bounded pieces, each checked before the next is read: the index may be large,
        // and a footer may lie about it.
        r.seek(SeekFrom::Start(footer.index_offset)).map_err(io("seeking"))?;
        let mut parser = IndexParser::new(&footer);
        let mut piece = vec![0u8; parser.remaining().min(INDEX_PIECE) as usize];
        while parser.remaining() > 0 {
            let n = parser.remaining().min(piece.len() as u64) as usize;
            r.read_exact(&mut piece[..n]).map_err(io("reading the index"))?;
            parser.feed(&piece[..n])?;
        }
        let index = parser.finish()?;
        let mut info = FileInfo::new(&header, index.entries(), file_len);
        if frames {
            let mut list = Vec::with_capacity(index.entries().len());
            let mut buf = [0u8; FRAME_HEADER_LEN];
            for (i, e) in index.entries().iter().enumerate() {
                r.seek(SeekFrom::Start(e.file_offset)).map_err(io("seeking"))?;
                r.read_exact(&mut buf).map_err(io("reading a frame header"))?;
                let h = FrameHeader::parse(&buf, i as u64, e.file_offset)?;
                e.check_frame(&h, i as u64)?;
                list.push(frame_info(i as u64, e.file_offset, &h));
            }
            info.frame_list = Some(list);
        }
        Ok(info)
    }

    /// Read the summary of a stream by scanning it forward (payloads are read, not decoded).
    pub fn scan<R: Read>(r: R, frames: bool) -> Result<FileInfo> {
        let mut scan = FrameScanner::new(r);
        let header = scan.file_header()?;
        let mut list = Vec::new();
        while let Some(f) = scan.next_frame()? {
            if frames {
                list.push(frame_info(f.frame, f.offset, &f.header));
            }
        }
        let mut info = FileInfo::new(&header, scan.frames_seen().entries(), scan.offset());
        if frames {
            info.frame_list = Some(list);
        }
        Ok(info)
    }
}

fn frame_info(frame: u64, file_offset: u64, h: &FrameHeader) -> FrameInfo {
    FrameInfo {
        frame,
        file_offset,
        raw_offset: h.raw_offset,
        raw_len: h.raw_len,
        stored_len: h.stored_len,
        config: h.describe(),
        raw_checksum: format!("{:016x}", h.raw_checksum),
    }
}
