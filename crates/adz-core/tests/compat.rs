//! Files written by every released format version keep reading (dwarfs' test/compat model).
//! Each fixture in tests/fixtures/v<major>.<minor>/ holds `adz-datagen mixed 6000 3` (or
//! nothing, for empty.adz), written with the codec its name says.

use std::path::Path;

use adz_core::{decode_stream, verify_stream};

#[test]
fn v1_0_fixtures_decode_to_their_source() {
    let source = adz_datagen::generate(adz_datagen::Kind::Mixed, 6000, 3);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1.0");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = std::fs::read(&path).unwrap();
        let mut out = Vec::new();
        decode_stream(&file[..], &mut out, |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let expected: &[u8] = if path.ends_with("empty.adz") { b"" } else { &source };
        assert!(out == expected, "{} decodes to different bytes", path.display());
        assert!(verify_stream(&file[..], |_| {}).problems.is_empty());
        seen += 1;
    }
    assert_eq!(seen, 8, "a fixture is missing");
}
