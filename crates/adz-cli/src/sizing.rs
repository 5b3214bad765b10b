//! `--frame-size auto|SIZE` and `--filter LIST`: the flags' parsing, and the choice of the frame
//! size by multi-reference sizing (`adz_control::mrc`) when the input's size is known.

use adz_core::control::mrc::{auto_frame_size, MrcChoice, MrcInput};
use adz_core::control::{Hint, Link};
use adz_core::format::{FilterSpec, MAX_FRAME_RAW_LEN};
use adz_core::DEFAULT_BLOCK_SIZE;

/// The `--frame-size` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameSize {
    /// Choose by multi-reference sizing from the input size, links and `reads-per-write`.
    Auto,
    /// This many raw bytes per frame.
    Fixed(u32),
}

/// `auto`, or a size of 1 byte ..= 64 MiB.
pub fn parse_frame_size(s: &str) -> Result<FrameSize, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(FrameSize::Auto);
    }
    let bytes = crate::parse_bytes(s)?;
    if bytes == 0 || bytes > u64::from(MAX_FRAME_RAW_LEN) {
        return Err(format!("frame size must be auto or 1 byte ..= 64 MiB, got {s}"));
    }
    Ok(FrameSize::Fixed(bytes as u32))
}

/// One filter of a `--filter` list (the list is split at commas by clap).
pub fn parse_filter(s: &str) -> Result<FilterSpec, String> {
    s.parse().map_err(|e: adz_core::format::Error| e.to_string())
}

/// What `--frame-size auto` decided, and on what, for the summary line.
pub struct AutoSize {
    /// How it was chosen, in words.
    pub note: String,
}

/// The frame size to write with. `input_len` is the input's size when known (a regular file);
/// `link` and `throttle` give the write link, `read_link` the read link (default: equal).
pub fn resolve(
    size: FrameSize,
    input_len: Option<u64>,
    hints: &[Hint],
    link: Link,
    throttle: Option<f64>,
    read_link: Option<f64>,
) -> (u32, Option<AutoSize>) {
    if let FrameSize::Fixed(n) = size {
        return (n, None);
    }
    let k = reads_per_write(hints);
    let Some(len) = input_len.filter(|&n| n > 0) else {
        let note = format!(
            "frame size auto: input size unknown (stdin), so the default {} KiB",
            DEFAULT_BLOCK_SIZE >> 10
        );
        return (DEFAULT_BLOCK_SIZE, Some(AutoSize { note }));
    };
    let write = match link {
        Link::Fixed(r) => Some(r),
        _ => throttle,
    };
    let (bw, br, links) = match (write, read_link) {
        (Some(w), Some(r)) => (w, r, format!("Bw/Br = {:.0}/{:.0} MB/s", w / 1e6, r / 1e6)),
        (Some(_), None) => (1.0, 1.0, "read link = write link".to_owned()),
        (None, Some(_)) => (
            1.0,
            1.0,
            "write link not known before writing (--link auto), taken equal to --read-link"
                .to_owned(),
        ),
        (None, None) => (1.0, 1.0, "read link = write link".to_owned()),
    };
    let c: MrcChoice = auto_frame_size(&MrcInput::new(len, k).with_links(bw, br));
    let note = format!(
        "frame size auto: {} KiB (MRC: N = {:.0} entries, reads-per-write {k}, {links}, \
         R = {:.1} references)",
        c.frame_size >> 10,
        c.entries,
        c.references
    );
    (c.frame_size, Some(AutoSize { note }))
}

/// The last `reads-per-write` hint, or 1 (reads and writes weigh the same: MRC's simplified
/// rule, R = sqrt(N)).
pub fn reads_per_write(hints: &[Hint]) -> f64 {
    hints
        .iter()
        .rev()
        .find_map(|h| match h {
            Hint::ReadsPerWrite(k) => Some(*k),
            _ => None,
        })
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_names_the_format_this_build_writes() {
        use adz_core::format::{VERSION_MAJOR, VERSION_MINOR};
        let want = format!("(adz format {VERSION_MAJOR}.{VERSION_MINOR})");
        assert!(crate::VERSION.ends_with(&want), "{} vs {want}", crate::VERSION);
    }

    #[test]
    fn frame_sizes_parse() {
        assert_eq!(parse_frame_size("auto"), Ok(FrameSize::Auto));
        assert_eq!(parse_frame_size("AUTO"), Ok(FrameSize::Auto));
        assert_eq!(parse_frame_size("64K"), Ok(FrameSize::Fixed(65536)));
        assert!(parse_frame_size("0").is_err());
        assert!(parse_frame_size("65M").unwrap_err().contains("64 MiB"));
    }

    #[test]
    fn auto_on_stdin_falls_back_to_the_default() {
        let (n, a) = resolve(FrameSize::Auto, None, &[], Link::Auto, None, None);
        assert_eq!(n, DEFAULT_BLOCK_SIZE);
        assert!(a.unwrap().note.contains("stdin"));
        let (n, a) = resolve(FrameSize::Fixed(4096), Some(1 << 30), &[], Link::Auto, None, None);
        assert_eq!((n, a.is_none()), (4096, true));
    }

    #[test]
    fn auto_uses_the_hint_and_the_links() {
        let gib = Some(1u64 << 30);
        let at =
            |hints: &[Hint], link, read| resolve(FrameSize::Auto, gib, hints, link, None, read).0;
        let k10 = [Hint::ReadsPerWrite(10.0)];
        assert!(at(&k10, Link::Auto, None) < at(&[], Link::Auto, None));
        // A read link ten times faster than the write link: reading is cheap, fewer references.
        assert!(
            at(&[], Link::Fixed(100e6), Some(1000e6)) > at(&[], Link::Fixed(100e6), None),
            "a fast read link should mean larger frames"
        );
        assert_eq!(reads_per_write(&[Hint::ReadsPerWrite(3.0), Hint::ReadsPerWrite(0.0)]), 0.0);
    }
}
