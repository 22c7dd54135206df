//! Every way a `wo` command can fail, and the one mapping from failure to process exit
//! status (LANGUAGE.md §12, the BSD sysexits numbers). Commands return a [`Failure`];
//! only `main` turns it into a status, so the table below is the whole policy.

use std::fmt;
use std::path::{Path, PathBuf};

/// `EX_USAGE`: bad command line.
pub const USAGE: u8 = 64;
/// `EX_DATAERR`: compile error, invalid image, damaged data directory.
pub const DATAERR: u8 = 65;
/// `EX_NOINPUT`: an input file is missing or unreadable.
pub const NOINPUT: u8 = 66;
/// `EX_SOFTWARE`: an uncaught trap or an internal error.
pub const SOFTWARE: u8 = 70;
/// `EX_IOERR`: a durability failure, an uncaught `IO` trap, an output file not written.
pub const IOERR: u8 = 74;
/// `EX_TEMPFAIL`: the data directory is locked by another process.
pub const LOCKED: u8 = 75;

/// The first error writing a command's report to stdout, other than a reader that left
/// (`wo db verify d | head -1` ends as it would have: a closed pipe is the reader's
/// choice). `main` turns it into 74 when the command otherwise succeeded: a full disk
/// (`> /dev/full`) must not pass for a written report.
static OUTPUT_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Takes the result of a write of a command's own output (through `out!`).
pub fn note_output(res: std::io::Result<()>) {
    if let Err(e) = res {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = OUTPUT_ERROR.set(e.to_string());
        }
    }
}

/// The failure an output error makes of a command that otherwise succeeded.
pub fn output_failure() -> Option<Failure> {
    OUTPUT_ERROR.get().map(|e| Failure::Data {
        status: IOERR,
        message: format!("cannot write the output: {e}"),
    })
}

/// Why a command did not succeed. The `Display` text is the one line printed after
/// `wo: ` on stderr; variants whose details were already printed (diagnostics, trap
/// reports) display nothing and are marked as such by [`Failure::reported`].
#[derive(Debug)]
pub enum Failure {
    /// The command line was wrong (clap already printed why).
    Usage,
    /// The command line asks for something refused (`wo build` over a source file).
    Refused(String),
    /// Failures already printed one by one (`wo check` of several programs); the
    /// status is the worst of theirs.
    Reported(u8),
    /// Compilation failed; the diagnostics and the summary line are already printed.
    Compile,
    /// A `.wob` file is not a valid image, or does not link against this VM.
    InvalidImage { path: PathBuf, reason: String },
    /// A source file is not UTF-8 (a data error, like a compile error).
    BadSource(String),
    /// An input could not be found or read.
    Input(String),
    /// An output file could not be written.
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An uncaught trap, already reported with its stack; `io` for the `IO` kind.
    Trap { io: bool },
    /// The VM or the compiler broke an invariant; the text starts `internal error:`.
    Internal(String),
    /// The program ended with this status (`main`'s value or `exit(n)`), not 0.
    Program(u8),
    /// A data directory could not be opened: damaged or incompatible (65), an I/O
    /// error (74), locked by another process (75), a path that cannot be one (64).
    Data { status: u8, message: String },
}

impl Failure {
    /// A data directory that could not be opened, with the status its error names.
    pub fn data(e: &wo_vm::durable::OpenError) -> Failure {
        let status = match e.exit_status() {
            74 => IOERR,
            75 => LOCKED,
            66 => NOINPUT,
            64 => USAGE,
            _ => DATAERR,
        };
        Failure::Data {
            status,
            message: e.to_string(),
        }
    }

    pub fn invalid_image(path: &Path, reason: impl fmt::Display) -> Failure {
        Failure::InvalidImage {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        }
    }

    /// The process exit status for this failure: the single mapping of §12.
    pub fn status(&self) -> u8 {
        match self {
            Failure::Usage | Failure::Refused(_) => USAGE,
            Failure::Reported(status) => *status,
            Failure::Compile | Failure::InvalidImage { .. } | Failure::BadSource(_) => DATAERR,
            Failure::Input(_) => NOINPUT,
            Failure::Output { .. } => IOERR,
            Failure::Trap { io: true } => IOERR,
            Failure::Trap { io: false } | Failure::Internal(_) => SOFTWARE,
            Failure::Program(code) => *code,
            Failure::Data { status, .. } => *status,
        }
    }

    /// Whether everything the user needs to know was printed already.
    pub fn reported(&self) -> bool {
        matches!(
            self,
            Failure::Usage
                | Failure::Reported(_)
                | Failure::Compile
                | Failure::Trap { .. }
                | Failure::Program(_)
        )
    }
}

impl Failure {
    /// Says the failure on stderr unless it was said already, each of its lines as a
    /// line of its own beginning `wo: ` (a refused migration names one change a line).
    pub fn say(&self) {
        if self.reported() {
            return;
        }
        for line in self.to_string().lines() {
            say!("wo: {line}");
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::InvalidImage { path, reason } => {
                write!(f, "invalid image `{}`: {reason}", path.display())
            }
            Failure::BadSource(msg)
            | Failure::Input(msg)
            | Failure::Internal(msg)
            | Failure::Refused(msg) => f.write_str(msg),
            Failure::Data { message, .. } => f.write_str(message),
            Failure::Output { path, source } => {
                write!(f, "cannot write `{}`: {source}", path.display())
            }
            Failure::Usage
            | Failure::Reported(_)
            | Failure::Compile
            | Failure::Trap { .. }
            | Failure::Program(_) => Ok(()),
        }
    }
}

/// The exit status of a program that ended normally: the low 8 bits of `main`'s value
/// or of `exit(n)` (so 300 exits 44 and -1 exits 255).
pub fn program_status(code: i64) -> u8 {
    (code & 0xff) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_eight_bits() {
        assert_eq!(program_status(0), 0);
        assert_eq!(program_status(300), 44);
        assert_eq!(program_status(-1), 255);
        assert_eq!(program_status(256), 0);
    }

    #[test]
    fn statuses_follow_sysexits() {
        assert_eq!(Failure::Usage.status(), 64);
        assert_eq!(Failure::Compile.status(), 65);
        assert_eq!(
            Failure::invalid_image(Path::new("x.wob"), "bad").status(),
            65
        );
        assert_eq!(Failure::Input("missing".into()).status(), 66);
        assert_eq!(Failure::Trap { io: false }.status(), 70);
        assert_eq!(Failure::Trap { io: true }.status(), 74);
        assert_eq!(Failure::Internal("internal error: x".into()).status(), 70);
    }
}
