//! The rules for object names, shared by every backend so that a name that works in memory
//! also works in a directory and in a bucket.

use crate::{Error, Result};

/// Checks that `name` can be used as an object name.
///
/// A name is a relative path of one or more segments separated by `/`. It must not be empty
/// or start with `/`; no segment may be empty (`"a//b"`, `"a/"`), `"."` or `".."`; and it must
/// not contain a backslash (a separator on Windows) or a NUL byte. These rules keep a local
/// backend inside its root directory and give every backend the same set of names.
pub fn validate_name(name: &str) -> Result<()> {
    let invalid = |reason| Err(Error::InvalidName { name: name.to_owned(), reason });
    if name.is_empty() {
        return invalid("the name is empty");
    }
    if name.starts_with('/') {
        return invalid("absolute names are not allowed; names are relative to the store");
    }
    check_characters(name)?;
    name.split('/').try_for_each(|segment| check_segment(name, segment))
}

/// Checks that `prefix` can be used as a [`Storage::list`](crate::Storage::list) prefix.
///
/// The empty prefix lists everything. Otherwise the same rules as [`validate_name`] apply to
/// every complete segment (everything up to the last `/`); the last, partial segment may be
/// empty or any string, since it only filters names.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.starts_with('/') {
        return Err(Error::InvalidName {
            name: prefix.to_owned(),
            reason: "absolute prefixes are not allowed; names are relative to the store",
        });
    }
    check_characters(prefix)?;
    match prefix.rsplit_once('/') {
        Some((dirs, _partial)) => dirs.split('/').try_for_each(|s| check_segment(prefix, s)),
        None => Ok(()),
    }
}

fn check_characters(name: &str) -> Result<()> {
    let reason = if name.contains('\0') {
        "it contains a NUL byte"
    } else if name.contains('\\') {
        "it contains a backslash; separate segments with '/'"
    } else {
        return Ok(());
    };
    Err(Error::InvalidName { name: name.to_owned(), reason })
}

fn check_segment(name: &str, segment: &str) -> Result<()> {
    let reason = match segment {
        "" => "it contains an empty segment (\"//\" or a trailing '/')",
        "." | ".." => "it contains a '.' or '..' segment",
        _ => return Ok(()),
    };
    Err(Error::InvalidName { name: name.to_owned(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names() {
        for name in ["a", "a/b/c.adz", "..a", "a..", ".hidden", "a b/ü/ä.adz", "a/.../b"] {
            validate_name(name).unwrap_or_else(|e| panic!("{name:?} rejected: {e}"));
        }
    }

    #[test]
    fn invalid_names_say_why() {
        for (name, why) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("a//b", "empty segment"),
            ("a/", "empty segment"),
            ("..", "'..'"),
            ("a/../../b", "'..'"),
            ("./a", "'.'"),
            ("a\\b", "backslash"),
            ("a\0b", "NUL"),
        ] {
            match validate_name(name) {
                Err(Error::InvalidName { name: n, reason }) => {
                    assert_eq!(n, name);
                    assert!(reason.contains(why), "{name:?}: {reason:?} should mention {why}");
                }
                other => panic!("{name:?} should be invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn prefixes() {
        for prefix in ["", "a", "a/", "a/b", "a/b/", "a/..x", "a/.", "a/.."] {
            validate_prefix(prefix).unwrap_or_else(|e| panic!("{prefix:?} rejected: {e}"));
        }
        for prefix in ["/", "/a", "../", "a/../b", "a//", "./", "a\\", "\0"] {
            assert!(validate_prefix(prefix).is_err(), "{prefix:?} should be rejected");
        }
    }
}
