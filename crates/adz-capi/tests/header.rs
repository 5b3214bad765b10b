//! `include/adz.h` is written by hand: this test keeps it true. It checks that the header
//! declares exactly the functions the library exports, the same error codes with the same
//! values, and the summary struct's fields in the same order. (A C program compiled against
//! the header, `examples/c/test_bad_args.c`, checks the rest under `make c-test`.)

use std::collections::BTreeMap;

const HEADER: &str = include_str!("../include/adz.h");
const SOURCE: &str = include_str!("../src/ffi.rs");

/// The text without `/* ... */` and `// ...` comments (the header's example calls functions).
fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        match rest[i..].find("*/") {
            Some(j) => rest = &rest[i + j + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn idents_before_paren(s: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in s.match_indices(prefix) {
        if i > 0 && (s.as_bytes()[i - 1].is_ascii_alphanumeric() || s.as_bytes()[i - 1] == b'_') {
            continue;
        }
        let ident: String =
            s[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if s[i + ident.len()..].trim_start().starts_with('(') {
            found.push(ident);
        }
    }
    found.sort();
    found
}

#[test]
fn header_declares_exactly_the_exported_functions() {
    let header = strip_comments(HEADER);
    let declared = idents_before_paren(&header, "adz_");
    let mut exported: Vec<String> = SOURCE
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub unsafe extern \"C\" fn ")
                .or_else(|| l.strip_prefix("pub extern \"C\" fn "))
                .map(|rest| rest.split('(').next().unwrap_or("").to_owned())
        })
        .collect();
    exported.sort();
    assert!(exported.len() >= 15, "found only {exported:?}");
    assert_eq!(declared, exported, "include/adz.h and src/ffi.rs disagree");
    for name in &exported {
        let n = SOURCE.matches(&format!("fn {name}(")).count();
        assert_eq!(n, 1, "{name} defined {n} times");
        let at = SOURCE.find(&format!("fn {name}(")).unwrap();
        let before = &SOURCE[..at];
        let attr = before.rfind("#[no_mangle]").unwrap_or(0);
        assert!(!before[attr..].contains("\n}\n") && attr > 0, "{name} is not #[no_mangle]");
    }
}

#[test]
fn header_error_codes_match() {
    let header = strip_comments(HEADER);
    let mut declared = BTreeMap::new();
    for l in header.lines() {
        if let Some(rest) = l.trim().strip_prefix("#define ADZ_") {
            let mut parts = rest.split_whitespace();
            let name = format!("ADZ_{}", parts.next().unwrap());
            let Some(value) = parts.next() else { continue }; // the include guard
            let value: i32 = value.trim_matches(['(', ')']).parse().unwrap();
            declared.insert(name, value);
        }
    }
    let mut exported = BTreeMap::new();
    for l in SOURCE.lines() {
        if let Some(rest) = l.trim().strip_prefix("pub const ADZ_") {
            let (name, value) = rest.split_once(": c_int = ").unwrap();
            let value: i32 = value.trim_end_matches(';').parse().unwrap();
            exported.insert(format!("ADZ_{name}"), value);
        }
    }
    assert!(exported.len() >= 8);
    assert_eq!(declared, exported);
    assert_eq!(exported["ADZ_E_CLOSED"], adz_capi::ADZ_E_CLOSED);
}

#[test]
fn header_summary_fields_match() {
    let header = strip_comments(HEADER);
    let body = header.split("typedef struct adz_summary {").nth(1).unwrap();
    let body = body.split('}').next().unwrap();
    let c_fields: Vec<(String, String)> = body
        .split(';')
        .filter_map(|f| {
            let mut w = f.split_whitespace();
            Some((w.next()?.to_owned(), w.next()?.to_owned()))
        })
        .collect();
    let rs = SOURCE.split("pub struct AdzSummary {").nth(1).unwrap();
    let rs = rs.split("\n}").next().unwrap();
    let rust_fields: Vec<(String, String)> = rs
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .map(|l| {
            let (n, t) = l.split_once(": ").unwrap();
            let c = match t.trim_end_matches(',') {
                "u64" => "uint64_t",
                "f64" => "double",
                other => panic!("no C type for {other}"),
            };
            (c.to_owned(), n.to_owned())
        })
        .collect();
    assert_eq!(c_fields, rust_fields);
    assert_eq!(std::mem::size_of::<adz_capi::AdzSummary>(), 48);
}
