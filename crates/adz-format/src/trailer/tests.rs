use super::*;
use crate::spec::{CodecSpec, Filters};

fn file_with(frames: &[(u32, u32)]) -> (Vec<u8>, TrailerBuilder) {
    // Build the layout only (payload bytes are zeros): enough for the index checks.
    let mut file = vec![0u8; FILE_HEADER_LEN];
    let mut t = TrailerBuilder::new();
    let mut raw = 0;
    for &(raw_len, stored_len) in frames {
        let h =
            FrameHeader::new(CodecSpec::NONE, Filters::NONE, false, raw_len, stored_len, raw, 7, 8);
        t.push(&h, file.len() as u64);
        file.extend_from_slice(&h.encode());
        file.resize(file.len() + stored_len as usize, 0);
        raw += u64::from(raw_len);
    }
    let off = file.len() as u64;
    file.extend_from_slice(&t.encode(off));
    (file, t)
}

fn parse_file(file: &[u8]) -> Result<Index> {
    let footer = Footer::parse(&file[file.len() - FOOTER_LEN..], file.len() as u64)?;
    Index::parse(&file[footer.index_offset as usize..], &footer)
}

#[test]
fn round_trip_and_lookup() {
    let (file, t) = file_with(&[(100, 50), (100, 100), (30, 10)]);
    let idx = parse_file(&file).unwrap();
    assert_eq!(idx.entries(), t.entries());
    assert_eq!(idx.raw_size(), 230);
    assert_eq!(idx.frames_for(0..1), 0..1);
    assert_eq!(idx.frames_for(99..101), 0..2);
    assert_eq!(idx.frames_for(100..200), 1..2);
    assert_eq!(idx.frames_for(150..230), 1..3);
    assert_eq!(idx.frames_for(229..10_000), 2..3);
    assert_eq!(idx.frames_for(230..231), 0..0);
    assert_eq!(idx.frames_for(5..5), 0..0);
}

#[test]
fn empty_file_has_empty_index() {
    let (file, _) = file_with(&[]);
    assert_eq!(file.len(), FILE_HEADER_LEN + INDEX_HEADER_LEN + FOOTER_LEN);
    let idx = parse_file(&file).unwrap();
    assert!(idx.entries().is_empty());
    assert_eq!(idx.frames_for(0..10), 0..0);
}

#[test]
fn footer_checks() {
    let (file, _) = file_with(&[(10, 10)]);
    let n = file.len();
    let foot = |f: &[u8]| Footer::parse(&f[f.len() - FOOTER_LEN..], f.len() as u64);
    // Wrong magic.
    let mut f = file.clone();
    f[n - 1] ^= 1;
    assert!(matches!(foot(&f), Err(Error::BadMagic { .. })));
    // Index offset pointing elsewhere.
    let mut f = file.clone();
    f[n - FOOTER_LEN] ^= 4;
    assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
    // A frame count that would need a huge index (and would overflow).
    let mut f = file.clone();
    f[n - FOOTER_LEN + F_FRAME_COUNT..][..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(foot(&f), Err(Error::BadField { field: "frame_count", .. })));
    let mut f = file.clone();
    f[n - FOOTER_LEN + F_FRAME_COUNT..][..8].copy_from_slice(&(MAX_FRAME_COUNT).to_le_bytes());
    assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
    // Index offset inside the header.
    let mut f = file.clone();
    f[n - FOOTER_LEN..][..8].copy_from_slice(&5u64.to_le_bytes());
    assert!(matches!(foot(&f), Err(Error::BadField { field: "index_offset", .. })));
    // Too short to hold a trailer at all.
    assert!(matches!(Footer::parse(&file[..40], 40), Err(Error::Truncated { .. })));
}

/// Rewrite bytes of the trailer and fix its checksum, so the later checks are exercised.
fn resum(file: &mut [u8]) {
    let n = file.len();
    let off = le_u64(&file[n - FOOTER_LEN..], 0) as usize;
    let sum = xxh3(&file[off..n - FOOTER_LEN + F_CHECKSUM]);
    file[n - FOOTER_LEN + F_CHECKSUM..][..8].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn index_checks() {
    let (file, _) = file_with(&[(100, 50), (100, 100)]);
    let off = le_u64(&file[file.len() - FOOTER_LEN..], 0) as usize;
    let e0 = off + INDEX_HEADER_LEN;
    let e1 = e0 + INDEX_ENTRY_LEN;

    let mut f = file.clone();
    f[e0 + E_RAW_CHECKSUM] ^= 1; // no resum
    assert!(matches!(parse_file(&f), Err(Error::Checksum { .. })));

    let case = |patch: &dyn Fn(&mut Vec<u8>)| {
        let mut f = file.clone();
        patch(&mut f);
        resum(&mut f);
        parse_file(&f).unwrap_err()
    };
    assert!(matches!(case(&|f| f[off] = b'X'), Error::BadMagic { .. }));
    assert!(matches!(case(&|f| f[off + 4] = 1), Error::BadField { field: "reserved", .. }));
    assert!(matches!(
        case(&|f| f[off + IDX_COUNT_OFFSET] = 3),
        Error::BadField { field: "frame_count", .. }
    ));
    assert!(matches!(case(&|f| f[e1 + E_FILE_OFFSET] ^= 1), Error::IndexMismatch { frame: 1, .. }));
    assert!(matches!(case(&|f| f[e1 + E_RAW_OFFSET] ^= 1), Error::IndexMismatch { frame: 1, .. }));
    assert!(matches!(case(&|f| f[e0 + E_RESERVED] = 1), Error::IndexMismatch { frame: 0, .. }));
    assert!(matches!(case(&|f| f[e0 + E_FLAGS] = 0x40), Error::IndexMismatch { frame: 0, .. }));
    assert!(matches!(
        case(&|f| f[e0 + E_RAW_LEN..][..4].fill(0)),
        Error::IndexMismatch { frame: 0, .. }
    ));
    assert!(matches!(case(&|f| f[e0 + E_STORED_LEN] = 101), Error::IndexMismatch { frame: 0, .. }));
    assert!(matches!(
        case(&|f| f[e0 + E_FLAGS] = FLAG_STORED_RAW),
        Error::IndexMismatch { frame: 0, .. }
    ));
    // Stored length of the last frame changed: frames no longer end at the index.
    assert!(matches!(case(&|f| f[e1 + E_STORED_LEN] = 99), Error::IndexMismatch { frame: 2, .. }));
    let n = file.len();
    assert!(matches!(
        case(&|f| f[n - FOOTER_LEN + F_RAW_SIZE] ^= 1),
        Error::BadField { field: "raw_size", .. }
    ));
}

#[test]
fn entry_must_match_frame() {
    let h = FrameHeader::new(CodecSpec::NONE, Filters::NONE, false, 10, 10, 0, 1, 2);
    let e = IndexEntry::from_frame(&h, 32);
    assert!(e.check_frame(&h, 0).is_ok());
    let mut other = h;
    other.raw_checksum = 2;
    assert!(matches!(e.check_frame(&other, 4), Err(Error::IndexMismatch { frame: 4, .. })));
}

#[test]
fn parser_accepts_any_piece_sizes() {
    let (file, t) = file_with(&[(100, 50), (100, 100), (30, 10), (7, 7)]);
    let footer = Footer::parse(&file[file.len() - FOOTER_LEN..], file.len() as u64).unwrap();
    let trailer = &file[footer.index_offset as usize..];
    for piece in 1..=trailer.len() {
        let mut p = IndexParser::new(&footer);
        for chunk in trailer.chunks(piece) {
            p.feed(chunk).unwrap();
        }
        assert_eq!(p.remaining(), 0);
        assert_eq!(p.finish().unwrap().entries(), t.entries(), "pieces of {piece}");
    }
    // Fewer bytes than the trailer: truncated; more: refused.
    let mut p = IndexParser::new(&footer);
    p.feed(&trailer[..trailer.len() - 1]).unwrap();
    assert!(matches!(p.finish(), Err(Error::Truncated { .. })));
    let mut p = IndexParser::new(&footer);
    let mut longer = trailer.to_vec();
    longer.push(0);
    assert!(p.feed(&longer).is_err());
}

#[test]
fn parser_checks_the_checksum_last() {
    let (mut file, _) = file_with(&[(100, 50), (100, 100)]);
    let n = file.len();
    file[n - FOOTER_LEN + F_CHECKSUM] ^= 1;
    let footer = Footer::parse(&file[n - FOOTER_LEN..], n as u64).unwrap();
    let mut p = IndexParser::new(&footer);
    p.feed(&file[footer.index_offset as usize..]).unwrap();
    assert!(matches!(p.finish(), Err(Error::Checksum { .. })));
}

/// A footer may claim only as many frames as the bytes before the index can hold: the
/// huge sparse file of issue 24 (a footer claiming 125 M frames) is refused from the
/// footer alone.
#[test]
fn footer_frame_count_is_bounded_by_the_room_before_the_index() {
    let footer_for = |index_offset: u64, count: u64| {
        let mut f = vec![0u8; FOOTER_LEN];
        f[F_INDEX_OFFSET..][..8].copy_from_slice(&index_offset.to_le_bytes());
        f[F_FRAME_COUNT..][..8].copy_from_slice(&count.to_le_bytes());
        f[F_MAGIC..].copy_from_slice(&FOOTER_MAGIC);
        let len = index_offset + (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + count * 40;
        Footer::parse(&f, len)
    };
    let count = 125_000_000u64;
    let err = footer_for(FILE_HEADER_LEN as u64 + 100, count).unwrap_err();
    assert!(matches!(err, Error::BadField { field: "frame_count", .. }), "{err}");
    // Exactly enough room for `count` smallest frames is accepted; one byte less is not.
    let room = count * MIN_FRAME_LEN;
    assert!(footer_for(FILE_HEADER_LEN as u64 + room, count).is_ok());
    assert!(footer_for(FILE_HEADER_LEN as u64 + room - 1, count).is_err());
    // No frames: the index must follow the file header.
    assert!(footer_for(FILE_HEADER_LEN as u64, 0).is_ok());
    assert!(footer_for(FILE_HEADER_LEN as u64 + 57, 0).is_err());
}

/// A trailer of zeros (a sparse file) fails in its first piece, whatever its claimed size.
#[test]
fn parser_fails_on_the_first_bad_piece() {
    let count = 1_000_000u64;
    let index_offset = FILE_HEADER_LEN as u64 + count * MIN_FRAME_LEN;
    let mut f = vec![0u8; FOOTER_LEN];
    f[F_INDEX_OFFSET..][..8].copy_from_slice(&index_offset.to_le_bytes());
    f[F_FRAME_COUNT..][..8].copy_from_slice(&count.to_le_bytes());
    f[F_MAGIC..].copy_from_slice(&FOOTER_MAGIC);
    let len = index_offset + (INDEX_HEADER_LEN + FOOTER_LEN) as u64 + count * 40;
    let footer = Footer::parse(&f, len).unwrap();
    let mut p = IndexParser::new(&footer);
    assert!(matches!(p.feed(&[0u8; 4096]), Err(Error::BadMagic { .. })));
    // A valid header, then entries of zeros.
    let mut p = IndexParser::new(&footer);
    let mut head = INDEX_MAGIC.to_vec();
    head.extend_from_slice(&[0; 4]);
    head.extend_from_slice(&count.to_le_bytes());
    p.feed(&head).unwrap();
    assert!(matches!(p.feed(&[0u8; 4096]), Err(Error::IndexMismatch { frame: 0, .. })));
}
