//! The `wo` command: a thin CLI over the compiler, the image format and the VM
//! (LANGUAGE.md §12). This file parses the command line (clap), installs the panic
//! hook and turns the outcome of a subcommand into the process exit status through
//! [`exit::Failure::status`], the only place statuses are decided.

// Messages go through `say!` and reports through `out!`; a bare `eprintln!` or
// `println!` panics on a closed stream (an internal error, 70).
#![deny(clippy::print_stderr, clippy::print_stdout)]

/// `println!` for a command's report that never panics: a reader that left (`wo db
/// verify d | head -1`) ends nothing (the command's status is the one it would have
/// had); any other failure (`> /dev/full`) makes a command that succeeded exit 74
/// (`exit::output_failure`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        crate::exit::note_output(writeln!(std::io::stdout(), $($arg)*));
    }};
}

/// `print!` for a command's report, as [`out!`], flushed (stdout is line-buffered,
/// and what is left at exit is flushed without a word on failure).
macro_rules! out_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout();
        crate::exit::note_output(write!(stdout, $($arg)*).and_then(|()| stdout.flush()));
    }};
}

/// `eprintln!` that never panics: a message for a stderr that is closed (`2>&-`) or a
/// pipe whose reader left (`wo check big.wo 2>&1 | head -1`) is dropped, and the
/// command ends with the status it would have had. (`eprintln!` panics on a failed
/// write; from the panic hook that was an abort, status 134.)
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that never panics, as [`say!`].
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod commands;
mod exit;
mod fmt;
mod lsp;
mod program;
mod render;
mod repl;
mod save;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// wo: a small statically typed language with an integrated database.
#[derive(Debug, Parser)]
#[command(name = "wo", version, about, long_about = None)]
#[command(propagate_version = true, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile a program (or load a .wob image) and run it.
    Run {
        /// A .wo file, a directory of .wo files (one program), or a .wob image.
        path: PathBuf,
        /// Directory of the durable database (also WO_DATA); without it tables live
        /// in memory.
        #[arg(long, value_name = "DIR", value_parser = clap::builder::NonEmptyStringValueParser::new())]
        data: Option<String>,
        /// Arguments passed to `main(args: multi Text)`, after `--`.
        #[arg(last = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Compile a program to a bytecode image.
    Build {
        /// A .wo file or a directory of .wo files.
        path: PathBuf,
        /// Where to write the image (default: PATH with the extension `.wob`). An
        /// existing file is replaced only if it is a wo image.
        #[arg(short, long, value_name = "OUT.wob")]
        output: Option<PathBuf>,
    },
    /// Report every diagnostic of the given programs without running them.
    Check {
        /// .wo files, directories (one program each) or .wob images (verified).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Print the bytecode of a program or an image.
    Disasm {
        /// A .wo file, a directory of .wo files, or a .wob image.
        path: PathBuf,
    },
    /// An interactive session: declarations, statements, expressions (values printed).
    Repl {
        /// Directory of the durable database (also WO_DATA).
        #[arg(long, value_name = "DIR", value_parser = clap::builder::NonEmptyStringValueParser::new())]
        data: Option<String>,
        /// A .wo file whose functions, classes and constants are declared first, as
        /// `.load FILE` does.
        file: Option<PathBuf>,
    },
    /// Run every `test_…` function of the programs, each in a fresh VM with an empty
    /// in-memory database (`main` is not run).
    Test {
        /// .wo files or directories (one program each).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Run only the tests whose name contains TEXT.
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// Stop a test that runs longer than this and count it failed (0: no limit).
        #[arg(long, value_name = "SECONDS", default_value_t = test::DEFAULT_TIMEOUT_SECS)]
        timeout: u64,
    },
    /// Rewrite .wo files in the one canonical layout (comments kept).
    Fmt {
        /// Write nothing; list the files that would change and exit 1 if any would.
        #[arg(long)]
        check: bool,
        /// .wo files, or directories (every .wo file under them); `-` formats
        /// standard input to standard output.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Inspect or maintain a data directory.
    #[command(subcommand)]
    Db(DbCommand),
    /// A language server on stdin/stdout (diagnostics, hover, go to definition,
    /// completion, document symbols, formatting), for editors.
    Lsp,
}

#[derive(Debug, Subcommand)]
enum DbCommand {
    /// Check a data directory without opening it for writing; print what it holds.
    Verify {
        /// The data directory.
        dir: PathBuf,
    },
    /// Write a checkpoint and shorten the log.
    Checkpoint {
        /// The data directory.
        dir: PathBuf,
    },
    /// Print the schema changes PROGRAM needs in DIR; with --apply, carry them out.
    Migrate {
        /// The data directory.
        dir: PathBuf,
        /// The program (a `.wo` file, a directory or a `.wob` image).
        program: PathBuf,
        /// Carry the plan out, the changes opening refuses included (as one crash-atomic
        /// step).
        #[arg(long)]
        apply: bool,
        /// Also remove this stored table, which the program does not declare
        /// (repeatable).
        #[arg(long, value_name = "NAME")]
        drop: Vec<String>,
    },
    /// Write the rows out (read-only; allowed while a program runs on DIR).
    Export {
        /// The data directory.
        dir: PathBuf,
        /// Only this table (needed for csv).
        #[arg(long, value_name = "NAME")]
        table: Option<String>,
        /// jsonl (the default), csv or sql.
        #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = ["jsonl", "csv", "sql"])]
        format: String,
    },
    /// Copy the data into PostgreSQL and keep it current.
    Mirror {
        /// The data directory.
        dir: PathBuf,
        /// A PostgreSQL connection string (`postgresql://user@host:port/db` or
        /// `host=… port=… user=… dbname=…`).
        #[arg(long, value_name = "URL")]
        to: String,
        /// Keep following the log while a program writes.
        #[arg(long)]
        follow: bool,
    },
}

/// Makes every panic an internal error: a message on stderr and exit status 70, never
/// Rust's 101.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        };
        let place = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        say!("wo: internal error: {what}{place}");
        std::process::exit(i32::from(exit::SOFTWARE));
    }));
}

fn dispatch(cmd: Command) -> Result<(), exit::Failure> {
    match cmd {
        Command::Run { path, data, args } => commands::run(&path, data.map(PathBuf::from), args),
        Command::Build { path, output } => commands::build(&path, output),
        Command::Check { paths } => commands::check(&paths),
        Command::Disasm { path } => commands::disasm(&path),
        Command::Repl { data, file } => repl::repl(data.map(PathBuf::from), file.as_deref()),
        Command::Test {
            paths,
            filter,
            timeout,
        } => test::test(&paths, filter.as_deref(), timeout),
        Command::Fmt { paths, check } => fmt::fmt(&paths, check),
        Command::Db(DbCommand::Verify { dir }) => commands::db_verify(&dir),
        Command::Db(DbCommand::Checkpoint { dir }) => commands::db_checkpoint(&dir),
        Command::Db(DbCommand::Migrate {
            dir,
            program,
            apply,
            drop,
        }) => commands::db_migrate(&dir, &program, apply, drop),
        Command::Db(DbCommand::Export { dir, table, format }) => {
            commands::db_export(&dir, table.as_deref(), &format)
        }
        Command::Db(DbCommand::Mirror { dir, to, follow }) => {
            commands::db_mirror(&dir, &to, follow)
        }
        Command::Lsp => lsp::serve(),
    }
}

/// A file-size limit (`ulimit -f`) must end in a durability failure (exit 74), not in
/// death by SIGXFSZ: with the signal handled, the write fails with EFBIG instead, and
/// the failure contract takes over (LANGUAGE.md §8).
fn survive_file_size_limit() {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGXFSZ, flag) {
        say!("wo: warning: cannot handle SIGXFSZ: {e}");
    }
}

/// What to say after clap's message for a habit it cannot know: a program's
/// arguments written without `--` (`wo run app.wo x`, as `python3 app.py x` takes
/// them).
fn usage_hint(e: &clap::Error) -> Option<String> {
    if e.kind() == clap::error::ErrorKind::InvalidSubcommand {
        return db_command_hint(e);
    }
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.first().map(String::as_str) != Some("run") || args.iter().any(|a| a == "--") {
        return None;
    }
    let bad = match e.get(clap::error::ContextKind::InvalidArg) {
        Some(clap::error::ContextValue::String(s)) => s.clone(),
        _ => return None,
    };
    if bad.starts_with('-') {
        return None; // clap's own tip says `-- --flag`
    }
    // (After `run` and the program's path, the first place it stands.)
    let at = 2 + args.iter().skip(2).position(|a| *a == bad)?;
    let mut fixed = args.clone();
    fixed.insert(at, "--".to_string());
    let shown: Vec<String> = fixed
        .iter()
        .map(|a| wo_vm::durable::shell_word(a))
        .collect();
    Some(format!(
        "hint: a program's arguments come after `--`: `wo {}`",
        shown.join(" ")
    ))
}

/// `wo migrate`, `wo verify`, …: a command of `wo db` written without `db`
/// (helper-95: clap said only "unrecognized subcommand").
fn db_command_hint(e: &clap::Error) -> Option<String> {
    let bad = match e.get(clap::error::ContextKind::InvalidSubcommand) {
        Some(clap::error::ContextValue::String(s)) => s.clone(),
        _ => return None,
    };
    let cli = <Cli as clap::CommandFactory>::command();
    let db = cli.find_subcommand("db")?;
    db.find_subcommand(&bad)?;
    let rest: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| wo_vm::durable::shell_word(&a.to_string_lossy()))
        .collect();
    Some(format!(
        "hint: `{bad}` is a command of `wo db`: `wo db {}`",
        rest.join(" ")
    ))
}

fn main() -> ExitCode {
    install_panic_hook();
    survive_file_size_limit();
    let done = match Cli::try_parse() {
        Ok(cli) => dispatch(cli.command),
        // A parse error other than `--help` and `--version` is a usage error.
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            if let Some(hint) = usage_hint(&e) {
                say!("{hint}");
            }
            Err(exit::Failure::Usage)
        }
        // `--help` and `--version` print on stdout and succeed, unless the output
        // cannot be written (74, as for every report); styled as clap styles them, on
        // a terminal that takes colours.
        Err(e) => {
            let styled = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            if styled {
                out_part!("{}", e.render().ansi());
            } else {
                out_part!("{}", e.render());
            }
            Ok(())
        }
    };
    // A report that could not be written is said even when the command failed in
    // another way, whose status it keeps (helper-90: `wo test > /dev/full` with a
    // failing test exited 1 without a word).
    match (done, exit::output_failure()) {
        (Ok(()), None) => ExitCode::SUCCESS,
        (Ok(()), Some(lost)) => {
            lost.say();
            ExitCode::from(lost.status())
        }
        (Err(failure), lost) => {
            failure.say();
            if let Some(lost) = lost {
                lost.say();
            }
            ExitCode::from(failure.status())
        }
    }
}
