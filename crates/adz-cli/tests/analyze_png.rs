//! `adz analyze --plot FILE.png`: the report as a PNG image (decision 0032's chart, bitmap).

mod common;

use adz_datagen::{generate, Kind};
use common::*;

#[test]
fn analyze_plot_png_writes_a_png_of_the_chart() {
    let dir = Dir::new();
    let text = generate(Kind::Text, 1 << 20, 9);
    let f = dir.write("twice.bin", &text.repeat(2));
    let png = dir.s("report.PNG");
    ok(&run(&["analyze", "--plot", &png, &f]));
    let b = std::fs::read(&png).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    assert_eq!(&b[12..16], b"IHDR");
    // PNG's integers are big-endian: read byte by byte (the workspace lints ban from_be_bytes).
    let be = |i: usize| b[i..i + 4].iter().fold(0u32, |a, &x| a << 8 | u32::from(x));
    assert_eq!((be(16), be(20)), (1200, 500), "width and height");
    // A blank 1200x500 image compresses to a few KB; axes, bars and text take more.
    assert!(b.len() > 12_000, "{} bytes: is anything drawn?", b.len());
    let o = run(&["analyze", "--plot", &dir.s("no/such/dir/x.png"), &f]);
    assert!(fail(&o).contains("x.png"));
}
