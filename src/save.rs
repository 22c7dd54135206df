//! Writing a whole file (`wo fmt`'s rewrite of a source, `wo build`'s image) so that
//! a write that fails (a full disk, a file size limit) or a process killed meanwhile
//! leaves the file as it was, never a part of the new text over the old one.

use std::io::Write;
use std::path::Path;

/// Replaces (or creates) the file at `path` with `bytes`, as editors save: the bytes
/// go to a new file beside it (beside its target, through a symbolic link), given its
/// permissions when it exists, synced, then renamed over it; on a failure that file
/// is removed. Where no file can be made there (a directory that is not writable), the
/// file is rewritten in place, and its old bytes are written back if that fails.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (real, perms) = match std::fs::canonicalize(path) {
        Ok(real) => {
            let perms = std::fs::metadata(&real)?.permissions();
            (real, Some(perms))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (path.to_path_buf(), None),
        Err(e) => return Err(e),
    };
    let name = real.file_name().unwrap_or_default().to_string_lossy();
    let tmp = real.with_file_name(format!(".{name}.wo-tmp-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp);
    let mut file = match file {
        Ok(f) => f,
        Err(e)
            if perms.is_some()
                && matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
        {
            let old = std::fs::read(&real)?;
            return std::fs::write(&real, bytes).inspect_err(|_| {
                let _ = std::fs::write(&real, old);
            });
        }
        Err(e) => return Err(e),
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| perms.map_or(Ok(()), |p| file.set_permissions(p)))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &real));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
