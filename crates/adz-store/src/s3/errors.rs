//! S3 client errors mapped into adz's [`Error`], by what a caller can do about them.

use std::fmt;

use crate::{Error, RemoteKind};

/// An [`Error::Remote`] of kind `Other` with a message.
pub(super) fn remote_other(op: &'static str, name: &str, msg: &str) -> Error {
    Error::Remote { kind: RemoteKind::Other, op, name: name.to_owned(), source: msg.into() }
}

/// Maps an object_store error into adz's, by what a caller can do about it.
pub(super) fn remote_error(op: &'static str, name: &str, err: object_store::Error) -> Error {
    let text = crate::chain_text(&err);
    let kind = match &err {
        object_store::Error::NotFound { .. } => {
            if text.contains("NoSuchBucket") {
                RemoteKind::NoSuchBucket
            } else {
                return Error::NotFound { name: name.to_owned() };
            }
        }
        object_store::Error::Unauthenticated { .. } => RemoteKind::Unauthenticated,
        object_store::Error::PermissionDenied { .. } if credentials_rejected(&text) => {
            RemoteKind::Unauthenticated
        }
        object_store::Error::PermissionDenied { .. } => RemoteKind::PermissionDenied,
        _ => match classify(&err, &text) {
            RemoteKind::Other => match http_status(&text) {
                Some(401) => RemoteKind::Unauthenticated,
                Some(403) if credentials_rejected(&text) => RemoteKind::Unauthenticated,
                Some(403) => RemoteKind::PermissionDenied,
                _ => RemoteKind::Other,
            },
            kind => kind,
        },
    };
    Error::Remote { kind, op, name: name.to_owned(), source: Box::new(ClientError::new(&err)) }
}

/// The client's error as one line: object_store's messages already include their sources
/// (which would print twice in an error chain), and S3 error bodies are multi-line XML.
#[derive(Debug)]
struct ClientError(String);

impl ClientError {
    fn new(err: &object_store::Error) -> ClientError {
        let text = err.to_string();
        let tag = |name: &str| {
            let open = format!("<{name}>");
            let start = text.find(&open)? + open.len();
            let len = text[start..].find(&format!("</{name}>"))?;
            Some(text[start..start + len].to_owned())
        };
        let one_line = match (http_status(&text), tag("Code")) {
            // An S3 error document: its status, code and message say it all.
            (Some(status), Some(code)) => {
                let message = tag("Message").map(|m| format!(": {m}")).unwrap_or_default();
                format!("HTTP {status} {code}{message}")
            }
            _ => text,
        };
        ClientError(one_line.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClientError {}

/// The kind of an error without a specific object_store variant: a transport error's kind,
/// or the HTTP status and S3 error code of the answer.
fn classify(err: &(dyn std::error::Error + 'static), text: &str) -> RemoteKind {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<HttpError>() {
            return match http.kind() {
                HttpErrorKind::Connect => RemoteKind::Unreachable,
                HttpErrorKind::Timeout => RemoteKind::Timeout,
                HttpErrorKind::Request | HttpErrorKind::Interrupted => RemoteKind::ConnectionLost,
                _ => RemoteKind::Other,
            };
        }
        current = e.source();
    }
    if text.contains("NoSuchBucket") {
        return RemoteKind::NoSuchBucket;
    }
    if ["XMinioStorageFull", "XMinioAdminBucketQuotaExceeded"].iter().any(|c| text.contains(c)) {
        return RemoteKind::StorageFull;
    }
    if text.contains("SlowDown") {
        return RemoteKind::Throttled;
    }
    // object_store keeps the status in a private type; its message reads
    // "Server returned non-2xx status code: 503 Service Unavailable: ...".
    match http_status(text) {
        Some(429) => RemoteKind::Throttled,
        Some(408) => RemoteKind::Timeout,
        // 507 Insufficient Storage.
        Some(507) => RemoteKind::StorageFull,
        Some(500..=599) => RemoteKind::ServerError,
        _ => RemoteKind::Other,
    }
}

/// Whether an S3 error says the credentials themselves are wrong (not merely insufficient).
fn credentials_rejected(text: &str) -> bool {
    ["InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"]
        .iter()
        .any(|code| text.contains(code))
}

fn http_status(text: &str) -> Option<u16> {
    let at = text.find("status code: ")? + "status code: ".len();
    text.get(at..at + 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_messages() {
        let kind = |msg: &str| classify(&std::io::Error::other(msg.to_owned()), msg);
        assert_eq!(
            kind("Server returned non-2xx status code: 503 Service Unavailable: <Code>SlowDown"),
            RemoteKind::Throttled
        );
        assert_eq!(
            kind("Server returned non-2xx status code: 500 Internal"),
            RemoteKind::ServerError
        );
        assert_eq!(
            kind("Server returned non-2xx status code: 429 Too Many"),
            RemoteKind::Throttled
        );
        assert_eq!(kind("Server returned non-2xx status code: 400 Bad"), RemoteKind::Other);
        assert_eq!(kind("<Code>NoSuchBucket</Code>"), RemoteKind::NoSuchBucket);
        assert_eq!(
            kind("Server returned non-2xx status code: 507 Insufficient Storage: <Code>XMinioStorageFull</Code>"),
            RemoteKind::StorageFull
        );
        assert_eq!(kind("<Code>XMinioAdminBucketQuotaExceeded</Code>"), RemoteKind::StorageFull);
        assert_eq!(kind("Server returned non-2xx status code: 507 x"), RemoteKind::StorageFull);
        assert_eq!(kind("nothing"), RemoteKind::Other);
    }
}
