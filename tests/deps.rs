//! The crate graph stays the one STYLE.md draws: `wo → wo-compiler → wo-bytecode ←
//! wo-vm → wo-db`, `wo-stdlib → wo-vm` (and `wo-stdlib → wo-bytecode`), and the CLI
//! `wo` on top of `wo-vm`, `wo-stdlib` and `wo-bytecode`; besides, `wo → wo-mirror →
//! wo-db` (export and the PostgreSQL mirror read data directories, nothing else). This test reads every
//! workspace manifest and fails on an internal dependency edge (normal, build or dev)
//! that is not in that list, so the compiler never grows a dependency on the VM, nor
//! the database on bytecode. Adding an edge is a design change: update STYLE.md and
//! `ALLOWED` together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every internal dependency edge the architecture allows, `from → to`.
const ALLOWED: &[(&str, &str)] = &[
    ("wo", "wo-compiler"),
    ("wo", "wo-bytecode"),
    ("wo", "wo-vm"),
    ("wo", "wo-stdlib"),
    ("wo-compiler", "wo-bytecode"),
    ("wo-vm", "wo-bytecode"),
    ("wo-vm", "wo-db"),
    ("wo-stdlib", "wo-vm"),
    ("wo-stdlib", "wo-bytecode"),
    ("wo", "wo-mirror"),
    ("wo-mirror", "wo-db"),
];

/// One workspace crate: its package name and its manifest's text.
struct Manifest {
    name: String,
    text: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The member directories listed in `members = [ … ]` of the root manifest.
fn members(root_manifest: &str) -> Vec<String> {
    let start = root_manifest
        .find("members")
        .expect("the root manifest lists members");
    let open = start + root_manifest[start..].find('[').expect("members = [");
    let close = open + root_manifest[open..].find(']').expect("members = [ … ]");
    root_manifest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The `name = "…"` of the `[package]` section.
fn package_name(text: &str, path: &Path) -> String {
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(rest) = line.strip_prefix("name") {
                let value = rest.trim_start().trim_start_matches('=').trim();
                return value.trim_matches('"').to_string();
            }
        }
    }
    panic!("{} has no [package] name", path.display());
}

fn manifests() -> Vec<Manifest> {
    let root = root();
    let root_text = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let mut out = vec![Manifest {
        name: package_name(&root_text, &root.join("Cargo.toml")),
        text: root_text.clone(),
    }];
    for member in members(&root_text) {
        let path = root.join(&member).join("Cargo.toml");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read `{}`: {e}", path.display()));
        out.push(Manifest {
            name: package_name(&text, &path),
            text,
        });
    }
    out
}

/// The dependency names declared in any dependency table of a manifest:
/// `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, target-specific
/// ones, and `[dependencies.NAME]` tables.
fn dependencies(text: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut in_deps = false;
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            // `[workspace.dependencies]` declares versions, not edges.
            let is_table = !header.starts_with("workspace");
            let last = header.rsplit('.').next().unwrap_or(header);
            if is_table && header.contains("dependencies.") {
                // `[dependencies.wo-vm]`: the table name is the dependency.
                deps.insert(last.trim_matches('"').to_string());
                in_deps = false;
            } else {
                in_deps = is_table && header.ends_with("dependencies");
            }
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !key.is_empty() {
            deps.insert(key);
        }
    }
    deps
}

/// Every internal edge `from → to` in the workspace.
fn edges() -> BTreeSet<(String, String)> {
    let manifests = manifests();
    let internal: BTreeSet<String> = manifests.iter().map(|m| m.name.clone()).collect();
    let mut out = BTreeSet::new();
    for m in &manifests {
        for dep in dependencies(&m.text) {
            if internal.contains(&dep) {
                out.insert((m.name.clone(), dep));
            }
        }
    }
    out
}

#[test]
fn only_allowed_internal_dependencies() {
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let unexpected: Vec<String> = edges()
        .difference(&allowed)
        .map(|(a, b)| format!("{a} → {b}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "dependency edges not in STYLE.md's list: {}",
        unexpected.join(", ")
    );
}

/// The reader really sees the edges (so the test above is not vacuous).
#[test]
fn the_manifest_reader_finds_known_edges() {
    let edges = edges();
    for (from, to) in [
        ("wo", "wo-compiler"),
        ("wo-compiler", "wo-bytecode"),
        ("wo-vm", "wo-bytecode"),
        ("wo-stdlib", "wo-vm"),
    ] {
        assert!(
            edges.contains(&(from.to_string(), to.to_string())),
            "expected the edge {from} → {to} in {edges:?}"
        );
    }
    let names: BTreeSet<String> = manifests().into_iter().map(|m| m.name).collect();
    for name in [
        "wo",
        "wo-compiler",
        "wo-bytecode",
        "wo-vm",
        "wo-db",
        "wo-stdlib",
    ] {
        assert!(names.contains(name), "crate {name} is a workspace member");
    }
}

#[test]
fn the_reader_understands_every_table_form() {
    let text = "[package]\nname = \"x\"\n\n[dependencies]\nwo-vm.workspace = true\nfoo = \"1\"\n\n[dev-dependencies]\nwo-compiler = { path = \"../compiler\" }\n\n[target.'cfg(unix)'.build-dependencies]\nwo-db = \"0.1\"\n\n[dependencies.wo-stdlib]\nworkspace = true\n\n[workspace.dependencies]\nwo-bytecode = { path = \"b\" }\n";
    let deps: Vec<String> = dependencies(text).into_iter().collect();
    assert_eq!(deps, ["foo", "wo-compiler", "wo-db", "wo-stdlib", "wo-vm"]);
}
