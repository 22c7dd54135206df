//! A throwaway PostgreSQL server for the tests of `wo db export --format sql` and
//! `wo db mirror`: `initdb` once per test process into a template directory, then per
//! test a copy of it started with `pg_ctl` on a free loopback port, its socket in its
//! own directory, `fsync=off` (the server's durability is not under test). As root (CI)
//! the server runs as the `postgres` user through `runuser`, since PostgreSQL refuses
//! to run as root. Dropping the [`Pg`] stops the server and removes its directory.
//!
//! Without PostgreSQL (no `/usr/lib/postgresql/*/bin/initdb`) a test prints SKIPPED and
//! passes, except in CI (`CI=true`), where `.ci/run` installs it: there it fails.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A running server.
pub struct Pg {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
}

/// The directory of the newest installed PostgreSQL's programs.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs one of PostgreSQL's programs (as `postgres` when we are root).
fn pg_cmd(bin: &Path, prog: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(prog));
        c
    } else {
        Command::new(bin.join(prog))
    }
}

fn run(mut c: Command) {
    let shown = format!("{c:?}");
    let out = c.output().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn give_to_postgres(dir: &Path) {
    if is_root() {
        run({
            let mut c = Command::new("chown");
            c.args(["-R", "postgres:postgres"]).arg(dir);
            c
        });
    }
}

/// The initdb'd template, made once and kept (`$TMPDIR/wo-pg-template-VERSION`):
/// copying it is much faster than `initdb`.
fn template(bin: &Path) -> PathBuf {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let version = bin
                .parent()
                .and_then(|p| p.file_name())
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = std::env::temp_dir().join(format!("wo-pg-template-{version}"));
            if dir.join("data").join("PG_VERSION").exists() {
                return dir;
            }
            let tmp = std::env::temp_dir().join(format!("wo-pg-template-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(&tmp).expect("create the template directory");
            give_to_postgres(&tmp);
            let mut c = pg_cmd(bin, "initdb");
            c.args(["-D"]).arg(tmp.join("data")).args([
                "-U",
                "wo",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ]);
            run(c);
            // Another test process may have made one meanwhile: either is fine.
            if std::fs::rename(&tmp, &dir).is_err() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            dir
        })
        .clone()
}

/// `pg_ctl start` of the server in `dir` on `port`, waiting until it takes
/// connections: whether it started.
fn pg_ctl_start(bin: &Path, dir: &Path, port: u16) -> bool {
    let mut c = pg_cmd(bin, "pg_ctl");
    c.arg("-D")
        .arg(dir.join("data"))
        .arg("-l")
        .arg(dir.join("log"))
        .args(["-w", "-t", "60", "-o"])
        .arg(format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            dir.display()
        ))
        .arg("start");
    c.output().expect("pg_ctl runs").status.success()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Pg {
    /// Starts a server, or `None` (after printing SKIPPED) when PostgreSQL is not
    /// installed outside CI.
    pub fn start(label: &str) -> Option<Pg> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); .ci/run installs it"
            );
            eprintln!("SKIPPED {label}: PostgreSQL is not installed");
            return None;
        };
        let tpl = template(&bin);
        let dir = std::env::temp_dir().join(format!("wo-pg-{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        run({
            let mut c = Command::new("cp");
            c.arg("-a").arg(&tpl).arg(&dir);
            c
        });
        give_to_postgres(&dir);
        // A port taken between the probe and the start makes pg_ctl fail: try again.
        for _ in 0..5 {
            let port = free_port();
            if pg_ctl_start(&bin, &dir, port) {
                return Some(Pg { dir, bin, port });
            }
        }
        panic!(
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(dir.join("log")).unwrap_or_default()
        );
    }

    /// Stops the server (its clients lose their connections), to start it again
    /// with [`Pg::start_again`].
    pub fn stop(&self) {
        let mut c = pg_cmd(&self.bin, "pg_ctl");
        c.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "fast", "-w", "stop"]);
        run(c);
    }

    /// Starts the stopped server again, on its port.
    pub fn start_again(&self) {
        assert!(
            pg_ctl_start(&self.bin, &self.dir, self.port),
            "PostgreSQL did not start again: {}",
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// The connection string `wo db mirror --to` takes.
    pub fn url(&self) -> String {
        format!("postgresql://wo@127.0.0.1:{}/postgres", self.port)
    }

    /// A client connection.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls).expect("connect to PostgreSQL")
    }

    /// `psql` with these arguments, connected to the server: (success, stdout, stderr).
    pub fn psql(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(self.bin.join("psql"))
            .arg(self.url())
            .args(args)
            .output()
            .expect("psql runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// What `psql -At -c sql` prints, trimmed (rows on lines, columns joined by `|`);
    /// the query must succeed.
    pub fn at(&self, sql: &str) -> String {
        let (ok, out, err) = self.psql(&["-At", "-c", sql]);
        assert!(ok, "{sql}: {err}");
        out.trim().to_string()
    }

    /// The rows of `table` ordered by id, each value as `wo db export --format csv`
    /// writes it (`None` for nil).
    pub fn rows(&self, table: &str) -> Vec<Vec<Option<String>>> {
        self.rows_of(table, &["*".to_string()])
    }

    /// The rows of `table` ordered by id, with the columns named in `cols` (quoted
    /// here), in that order.
    pub fn columns(&self, table: &str, cols: &[String]) -> Vec<Vec<Option<String>>> {
        let quoted: Vec<String> = cols
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        self.rows_of(table, &quoted)
    }

    /// The names of `table`'s columns, in PostgreSQL's order.
    pub fn column_names(&self, table: &str) -> Vec<String> {
        let mut client = self.client();
        client
            .query(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
                &[&table],
            )
            .expect("list the columns")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    fn rows_of(&self, table: &str, select: &[String]) -> Vec<Vec<Option<String>>> {
        use postgres::types::Type;
        let mut client = self.client();
        let q = format!(
            "SELECT {} FROM \"{}\" ORDER BY id",
            select.join(", "),
            table.replace('"', "\"\"")
        );
        let rows = client.query(q.as_str(), &[]).expect("select the rows");
        rows.iter()
            .map(|row| {
                row.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match *c.type_() {
                        Type::INT8 => row.get::<_, Option<i64>>(i).map(|v| v.to_string()),
                        Type::FLOAT8 => row.get::<_, Option<f64>>(i).map(float),
                        Type::BOOL => row.get::<_, Option<bool>>(i).map(|b| b.to_string()),
                        Type::TEXT => row.get::<_, Option<String>>(i),
                        ref t => panic!("unexpected column type {t}"),
                    })
                    .collect()
            })
            .collect()
    }
}

fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

/// Parses RFC 4180 CSV (as `wo db export --format csv` writes it): an unquoted empty
/// field is `None` (nil), a quoted one `Some("")`: the header's names, then the rows.
pub fn parse_csv(text: &str) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_quotes = true;
                quoted = true;
            }
            ',' => {
                row.push(take(&mut field, &mut quoted));
            }
            '\r' => {}
            '\n' => {
                row.push(take(&mut field, &mut quoted));
                rows.push(std::mem::take(&mut row));
            }
            c => field.push(c),
        }
    }
    let header = if rows.is_empty() {
        Vec::new()
    } else {
        rows.remove(0)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    };
    (header, rows)
}

fn take(field: &mut String, quoted: &mut bool) -> Option<String> {
    let f = std::mem::take(field);
    let q = std::mem::replace(quoted, false);
    (q || !f.is_empty()).then_some(f)
}

impl Drop for Pg {
    fn drop(&mut self) {
        let mut c = pg_cmd(&self.bin, "pg_ctl");
        c.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"]);
        let _ = c.output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
