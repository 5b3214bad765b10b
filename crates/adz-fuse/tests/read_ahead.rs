//! Read-ahead through a real mount: a sequential reader gets the next frames decoded before
//! it asks for them, each frame once; random readers trigger none.

mod common;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use common::{adz_bytes, data, test_options, Mounted};

const FRAME: usize = 64 << 10;
const FRAMES: usize = 48;

fn mounted(read_ahead: u64) -> Option<(Mounted, Vec<u8>, Vec<u8>)> {
    let seq = data(FRAMES * FRAME, 7);
    let rnd = data(FRAMES * FRAME, 8);
    let mut o = test_options();
    o.cache_bytes = 8 << 20;
    o.read_ahead_bytes = read_ahead; // 16 frames
                                     // The kernel asks for 2 frames at a time (its own default window): with a window as
                                     // large as the mount's, its requests would decode the frames before a sequence starts.
    o.kernel_read_ahead_bytes = 128 << 10;
    let m = Mounted::with(o, |src| {
        fs::write(src.join("seq.adz"), adz_bytes(&seq, FRAME as u32)).unwrap();
        fs::write(src.join("rnd.adz"), adz_bytes(&rnd, FRAME as u32)).unwrap();
    })?;
    Some((m, seq, rnd))
}

#[test]
fn random_reads_trigger_no_read_ahead() {
    let Some((m, _, rnd)) = mounted(1 << 20) else { return };
    let f = File::open(m.mnt.join("rnd")).unwrap();
    let mut buf = vec![0; 4096];
    // 4 KiB in 24 different frames, each read 17 frames away from the one before.
    for k in 1..25 {
        let at = (k * 17 % FRAMES) * FRAME + 1000;
        f.read_exact_at(&mut buf, at as u64).unwrap();
        assert_eq!(buf, rnd[at..at + 4096]);
    }
    std::thread::sleep(Duration::from_millis(200));
    let s = m.stats();
    assert_eq!(s.frames_read_ahead, 0, "{s:?}");
    assert!(s.frames_decoded >= 24, "{s:?}");
}

#[test]
fn a_sequential_reader_is_read_ahead_and_each_frame_decoded_once() {
    let Some((m, seq, _)) = mounted(1 << 20) else { return };
    let mut f = File::open(m.mnt.join("seq")).unwrap();
    // Read 4 frames, then wait: the next ones (the window is 16 frames) get decoded
    // though neither the program nor the kernel's own read-ahead (128 KiB) asked for them.
    let mut head = vec![0; 4 * FRAME];
    f.read_exact(&mut head).unwrap();
    assert_eq!(head, seq[..4 * FRAME]);
    let start = Instant::now();
    while m.stats().frames_read_ahead < 8 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let s = m.stats();
    assert!(s.frames_read_ahead >= 8, "frames beyond the reads were decoded: {s:?}");
    // The reads (4 frames, and what the kernel read ahead on its own) plus the window.
    assert!(s.frames_decoded + s.frames_read_ahead <= 32, "within the window: {s:?}");
    let mut rest = Vec::new();
    f.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, seq[4 * FRAME..]);
    let s = m.stats();
    assert_eq!(s.frames_decoded + s.frames_read_ahead, FRAMES as u64, "each frame once: {s:?}");
    assert!(s.frames_read_ahead >= 8, "{s:?}");
}

#[test]
fn read_ahead_off_decodes_only_what_reads_ask_for() {
    let Some((m, seq, _)) = mounted(0) else { return };
    let mut all = Vec::new();
    File::open(m.mnt.join("seq")).unwrap().read_to_end(&mut all).unwrap();
    assert_eq!(all, seq);
    let s = m.stats();
    assert_eq!((s.frames_read_ahead, s.frames_decoded), (0, FRAMES as u64), "{s:?}");
}
