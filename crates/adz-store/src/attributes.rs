//! [`KeepAttributes`]: an upload that replaces a file gives the new version the old one's mode
//! and owner before it is published.

use std::fs::{self, Metadata, Permissions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::{Error, Result, Upload};

/// An upload decorator: before the inner upload commits, its temporary file (if it has one:
/// local files) takes `owner` (uid, gid) and then `mode` (chown first, since it clears the
/// set-user-id bits), so that a reader never sees the new version with other permissions than
/// the old. Uploads without a temporary file are passed through.
#[derive(Debug)]
pub struct KeepAttributes {
    inner: Box<dyn Upload>,
    mode: u32,
    owner: Option<(u32, u32)>,
}

impl KeepAttributes {
    /// `inner`, committed with permission bits `mode` (the low 12 bits) and, if given, owner.
    pub fn new(inner: Box<dyn Upload>, mode: u32, owner: Option<(u32, u32)>) -> KeepAttributes {
        KeepAttributes { inner, mode: mode & 0o7777, owner }
    }

    /// `inner`, committed with `old`'s mode, and with its owner when this process may give a
    /// file away (it runs as root); otherwise the new file is the process's own.
    pub fn like(inner: Box<dyn Upload>, old: &Metadata) -> KeepAttributes {
        let owner = (effective_uid() == 0).then(|| (old.uid(), old.gid()));
        KeepAttributes::new(inner, old.permissions().mode(), owner)
    }

    fn apply(&self, tmp: &Path) -> Result<()> {
        let err = |op, source| Error::io(op, &tmp.display().to_string(), source);
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::lchown(tmp, Some(uid), Some(gid))
                .map_err(|e| err("set the owner of", e))?;
        }
        fs::set_permissions(tmp, Permissions::from_mode(self.mode))
            .map_err(|e| err("set the mode of", e))
    }
}

/// This process's effective user id: /proc/self belongs to it.
fn effective_uid() -> u32 {
    fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

impl Upload for KeepAttributes {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
    fn temporary_path(&self) -> Option<&Path> {
        self.inner.temporary_path()
    }
    fn commit(self: Box<Self>) -> Result<u64> {
        if let Some(tmp) = self.inner.temporary_path() {
            self.apply(tmp)?;
        }
        self.inner.commit()
    }
    fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort()
    }
    fn abandon(self: Box<Self>) -> Result<Option<String>> {
        self.inner.abandon()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LocalStorage, Storage};

    #[test]
    fn the_new_version_has_the_old_mode_and_owner_when_published() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path()).unwrap();
        store.put("f", b"old").unwrap();
        let path = dir.path().join("f");
        fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        let root = effective_uid() == 0;
        if root {
            std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
        }
        let old = fs::metadata(&path).unwrap();
        let mut up = KeepAttributes::like(store.create("f").unwrap(), &old);
        up.append(b"new").unwrap();
        Box::new(up).commit().unwrap();
        let new = fs::metadata(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(new.permissions().mode() & 0o7777, 0o640);
        if root {
            assert_eq!((new.uid(), new.gid()), (4321, 4322));
        }
    }
}
