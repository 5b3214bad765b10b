//! Where a command reads or writes: `-` (stdin/stdout), a local path (or `file://` URL), or
//! an object in a bucket (`s3://bucket/key`).
//!
//! ```
//! use adz_store::location::Location;
//!
//! assert_eq!(Location::parse("-")?, Location::Stdio);
//! assert_eq!(
//!     Location::parse("s3://my-bucket/run1/data.adz")?,
//!     Location::S3 { bucket: "my-bucket".into(), key: "run1/data.adz".into() }
//! );
//! assert_eq!(Location::parse("file:///tmp/x.adz")?, Location::Local("/tmp/x.adz".into()));
//! assert!(Location::parse("s3://my-bucket").is_err()); // no key
//! # Ok::<(), adz_store::location::LocationError>(())
//! ```

use std::fmt;
use std::path::PathBuf;

use crate::{validate_name, validate_prefix};

/// A parsed location.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// `-`: standard input or output.
    Stdio,
    /// A path on the local file system.
    Local(PathBuf),
    /// An object `key` in bucket `bucket` of an S3-compatible store.
    S3 {
        /// The bucket.
        bucket: String,
        /// The object name inside the bucket (a valid [`validate_name`] name).
        key: String,
    },
}

/// Why a string is not a usable location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// A URL scheme adz does not know.
    #[error("{url:?}: unsupported URL scheme {scheme:?}; use s3://BUCKET/KEY, file://PATH or a plain path")]
    UnsupportedScheme {
        /// The whole argument.
        url: String,
        /// The scheme found.
        scheme: String,
    },
    /// The bucket name breaks S3's naming rules.
    #[error("{url:?}: invalid bucket name {bucket:?}: {reason}")]
    InvalidBucket {
        /// The whole argument.
        url: String,
        /// The bucket part.
        bucket: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The key is missing or not a valid object name.
    #[error("{url:?}: invalid object key: {reason}")]
    InvalidKey {
        /// The whole argument.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl Location {
    /// Parses a command-line argument that names one object or file.
    pub fn parse(arg: &str) -> Result<Location, LocationError> {
        if arg == "-" {
            return Ok(Location::Stdio);
        }
        let Some((scheme, rest)) = split_scheme(arg) else {
            return Ok(Location::Local(PathBuf::from(arg)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => Ok(Location::Local(PathBuf::from(rest))),
            "s3" => {
                let (bucket, key) = split_bucket(arg, rest)?;
                if key.is_empty() {
                    return Err(LocationError::InvalidKey {
                        url: arg.to_owned(),
                        reason: "the URL names a bucket but no object; use s3://BUCKET/KEY".into(),
                    });
                }
                validate_name(key).map_err(|e| LocationError::InvalidKey {
                    url: arg.to_owned(),
                    reason: e.to_string(),
                })?;
                Ok(Location::S3 { bucket: bucket.to_owned(), key: key.to_owned() })
            }
            _ => Err(LocationError::UnsupportedScheme {
                url: arg.to_owned(),
                scheme: scheme.to_owned(),
            }),
        }
    }

    /// Whether `arg` is a URL with a scheme (`s3://...`), rather than a path or `-`.
    pub fn is_url(arg: &str) -> bool {
        split_scheme(arg).is_some()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Stdio => f.write_str("-"),
            Location::Local(p) => write!(f, "{}", p.display()),
            Location::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
        }
    }
}

/// An `s3://bucket/prefix` URL for listing: the prefix may be empty or end in `/`.
pub fn parse_s3_prefix(arg: &str) -> Result<(String, String), LocationError> {
    let rest = match split_scheme(arg) {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("s3") => rest,
        Some((scheme, _)) => {
            return Err(LocationError::UnsupportedScheme {
                url: arg.to_owned(),
                scheme: scheme.to_owned(),
            })
        }
        None => {
            return Err(LocationError::UnsupportedScheme { url: arg.to_owned(), scheme: "".into() })
        }
    };
    let (bucket, prefix) = split_bucket(arg, rest)?;
    validate_prefix(prefix)
        .map_err(|e| LocationError::InvalidKey { url: arg.to_owned(), reason: e.to_string() })?;
    Ok((bucket.to_owned(), prefix.to_owned()))
}

/// `scheme://rest`, where the scheme is letters, digits, `+`, `-`, `.` (RFC 3986) and at least
/// two characters long (so that `C://x` stays a Windows path).
fn split_scheme(arg: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = arg.split_once("://")?;
    let ok = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    ok.then_some((scheme, rest))
}

fn split_bucket<'a>(url: &str, rest: &'a str) -> Result<(&'a str, &'a str), LocationError> {
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    check_bucket(bucket).map_err(|reason| LocationError::InvalidBucket {
        url: url.to_owned(),
        bucket: bucket.to_owned(),
        reason,
    })?;
    Ok((bucket, key))
}

/// S3's bucket naming rules: 3..=63 characters of lowercase letters, digits, `.` and `-`,
/// beginning and ending with a letter or digit.
pub fn check_bucket(bucket: &str) -> Result<(), &'static str> {
    if bucket.is_empty() {
        return Err("the bucket name is empty");
    }
    if !(3..=63).contains(&bucket.len()) {
        return Err("a bucket name has 3 to 63 characters");
    }
    if !bucket
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Err("a bucket name has only lowercase letters, digits, '.' and '-'");
    }
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !edge(bucket.as_bytes()[0]) || !edge(bucket.as_bytes()[bucket.len() - 1]) {
        return Err("a bucket name begins and ends with a letter or digit");
    }
    if bucket.contains("..") {
        return Err("a bucket name has no two adjacent periods");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_stdio() {
        assert_eq!(Location::parse("-").unwrap(), Location::Stdio);
        assert_eq!(Location::parse("a/b.adz").unwrap(), Location::Local("a/b.adz".into()));
        assert_eq!(Location::parse("/abs/x").unwrap(), Location::Local("/abs/x".into()));
        assert_eq!(Location::parse("file://rel/x").unwrap(), Location::Local("rel/x".into()));
        // A single letter before :// is a drive, not a scheme.
        assert_eq!(Location::parse("C://x").unwrap(), Location::Local("C://x".into()));
        assert!(!Location::is_url("data.bin") && Location::is_url("s3://b-1/x"));
    }

    #[test]
    fn s3_urls() {
        let loc = Location::parse("S3://bucket.1/a/b/c.adz").unwrap();
        assert_eq!(loc, Location::S3 { bucket: "bucket.1".into(), key: "a/b/c.adz".into() });
        assert_eq!(loc.to_string(), "s3://bucket.1/a/b/c.adz");
    }

    #[test]
    fn bad_s3_urls_say_why() {
        for (url, why) in [
            ("s3://bucket", "names a bucket but no object"),
            ("s3://bucket/", "names a bucket but no object"),
            ("s3://bucket/a//b", "empty segment"),
            ("s3://bucket/a/../b", "'..'"),
            ("s3://Bucket/a", "lowercase"),
            ("s3://ab/a", "3 to 63"),
            ("s3:///a", "empty"),
            ("s3://-ab/a", "begins and ends"),
            ("s3://a..b/a", "adjacent"),
            ("gs://bucket/a", "unsupported URL scheme"),
        ] {
            let err = Location::parse(url).unwrap_err().to_string();
            assert!(err.contains(why), "{url}: {err:?} should say {why:?}");
        }
    }

    #[test]
    fn prefixes_for_listing() {
        assert_eq!(parse_s3_prefix("s3://bucket").unwrap(), ("bucket".into(), "".into()));
        assert_eq!(parse_s3_prefix("s3://bucket/").unwrap(), ("bucket".into(), "".into()));
        assert_eq!(
            parse_s3_prefix("s3://bucket/run1/").unwrap(),
            ("bucket".into(), "run1/".into())
        );
        assert_eq!(parse_s3_prefix("s3://bucket/ru").unwrap(), ("bucket".into(), "ru".into()));
        assert!(parse_s3_prefix("s3://bucket/../").is_err());
        assert!(parse_s3_prefix("bucket/x").is_err());
    }
}
