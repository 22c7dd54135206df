//! The server's state: the open documents, the program each belongs to, and each
//! program's last analysis. A document is analysed as part of its directory's program
//! (every `.wo` file below it, as `wo run DIR` compiles them) when that directory holds
//! one program (at most one `fn main` among its files); otherwise, as in a directory of
//! separate programs like `samples/`, alone. Open documents are read from the editor,
//! the other files of a program from disk.
//!
//! Answers are computed here from [`query`] and converted to the protocol's types.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionResponse, DiagnosticRelatedInformation,
    DiagnosticSeverity, DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover,
    HoverContents, Location, MarkupContent, MarkupKind, NumberOrString, Position, SymbolKind,
    TextDocumentContentChangeEvent, TextEdit, Url,
};
use wo_compiler::tir::Ty;
use wo_compiler::{Analysis, Diagnostic, FileId, Severity, SourceMap, Span};

use super::document::{Document, Encoding};
use super::path_of;
use super::query::{self, At, Item, Kind};

/// A directory with more `.wo` files than this is not taken as one program.
const MAX_PROGRAM_FILES: usize = 256;

/// How many parent directories a file without a `fn main` in its own directory looks
/// through for the program it belongs to.
const MAX_CLIMB: usize = 3;

/// A directory whose tree has more subdirectories than this is not taken as one
/// program, and not walked further.
const MAX_PROGRAM_ENTRIES: usize = 4096;

/// One program: its files (in the compiler's file order) and its last analysis.
struct Program {
    files: Vec<Url>,
    sources: SourceMap,
    analysis: Option<Rc<Analysis>>,
    /// The last analysis without a syntax error, and its sources: completion falls
    /// back on it while the function being written does not parse.
    clean: Option<(Rc<Analysis>, SourceMap)>,
}

pub struct World {
    enc: Encoding,
    docs: HashMap<Url, Document>,
    /// The program (its key: a directory's or a file's URI) of each open document.
    doc_program: HashMap<Url, Url>,
    programs: HashMap<Url, Program>,
    /// Programs changed since their last analysis.
    stale: HashSet<Url>,
    /// Programs analysed whose diagnostics are not yet published.
    unpublished: HashSet<Url>,
    /// Files not open whose diagnostics were published (not empty), with their
    /// program's key: they are cleared when they compile again, leave the program, or
    /// the program is closed.
    shown: HashMap<Url, Url>,
    /// Files whose published diagnostics are to be cleared at the next publishing.
    to_clear: Vec<Url>,
}

impl World {
    pub fn new(enc: Encoding) -> World {
        World {
            enc,
            docs: HashMap::new(),
            doc_program: HashMap::new(),
            programs: HashMap::new(),
            stale: HashSet::new(),
            unpublished: HashSet::new(),
            shown: HashMap::new(),
            to_clear: Vec::new(),
        }
    }

    pub fn has_stale(&self) -> bool {
        !self.stale.is_empty() || !self.unpublished.is_empty() || !self.to_clear.is_empty()
    }

    pub fn open(&mut self, uri: Url, text: String, version: i32) {
        // Open, it is published with its version from now on.
        self.shown.remove(&uri);
        self.docs.insert(uri.clone(), Document::new(text, version));
        self.regroup(&uri);
    }

    pub fn change(
        &mut self,
        uri: &Url,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) {
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        for c in changes {
            doc.apply(c, self.enc);
        }
        doc.version = version;
        if let Some(p) = self.doc_program.get(uri) {
            self.stale.insert(p.clone());
        }
    }

    pub fn close(&mut self, uri: &Url) {
        self.docs.remove(uri);
        if let Some(p) = self.doc_program.remove(uri) {
            if !self.doc_program.values().any(|q| *q == p) {
                self.drop_program(&p);
            } else {
                self.stale.insert(p);
            }
        }
    }

    /// A save may add a `fn main` or a file: the grouping is decided again.
    pub fn saved(&mut self, uri: &Url) {
        if self.docs.contains_key(uri) {
            self.regroup(uri);
        }
    }

    /// Forgets a program none of whose files is open; what was published for its
    /// other files is cleared.
    fn drop_program(&mut self, key: &Url) {
        self.programs.remove(key);
        self.stale.remove(key);
        self.unpublished.remove(key);
        let gone: Vec<Url> = self
            .shown
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|(u, _)| u.clone())
            .collect();
        for u in gone {
            self.shown.remove(&u);
            self.to_clear.push(u);
        }
    }

    /// Decides which program `uri` belongs to, and marks it stale.
    fn regroup(&mut self, uri: &Url) {
        let (key, files) = self.program_of(uri);
        if let Some(old) = self.doc_program.insert(uri.clone(), key.clone()) {
            if old != key && !self.doc_program.values().any(|q| *q == old) {
                self.drop_program(&old);
            }
        }
        let p = self.programs.entry(key.clone()).or_insert(Program {
            files: Vec::new(),
            sources: SourceMap::default(),
            analysis: None,
            clean: None,
        });
        p.files = files;
        self.stale.insert(key);
    }

    /// The key and the files of the program `uri` is part of: the `.wo` files below
    /// its directory when they form one program (at most one `fn main`); when they
    /// have no `fn main`, the files below the nearest of its parent directories (up
    /// to [`MAX_CLIMB`], not past a repository's top, marked by `.git`, nor to the home
    /// directory or `/`; each walk bounded by [`MAX_PROGRAM_ENTRIES`]) whose files
    /// have exactly one, since `wo run DIR` compiles a program's subdirectories with
    /// it. Otherwise the file alone.
    fn program_of(&self, uri: &Url) -> (Url, Vec<Url>) {
        let alone = (uri.clone(), vec![uri.clone()]);
        let Some(path) = path_of(uri) else {
            return alone;
        };
        let Some(own_dir) = path.parent() else {
            return alone;
        };
        let Some((mut paths, mains)) = self.group(own_dir, &path) else {
            return alone;
        };
        let mut dir = own_dir;
        if mains > 1 {
            return alone;
        }
        if mains == 0 {
            let mut up = own_dir;
            let home = std::env::var_os("HOME").map(PathBuf::from);
            for _ in 0..MAX_CLIMB {
                // Not past a repository's top, nor to the home directory or `/`.
                let Some(parent) = up.parent().filter(|p| p.parent().is_some()) else {
                    break;
                };
                if up.join(".git").exists()
                    || home.as_deref() == Some(up)
                    || home.as_deref() == Some(parent)
                {
                    break;
                }
                match self.group(parent, &path) {
                    Some((found, 1)) => {
                        (dir, paths) = (parent, found);
                        break;
                    }
                    Some((_, 0)) => up = parent,
                    _ => break,
                }
            }
        }
        if paths.len() == 1 {
            return alone;
        }
        let files: Vec<Url> = paths
            .iter()
            .filter_map(|p| Url::from_file_path(p).ok())
            .collect();
        match Url::from_directory_path(dir) {
            Ok(key) => (key, files),
            Err(()) => alone,
        }
    }

    /// The `.wo` files below `dir` (sorted) and how many declare `fn main`; `None`
    /// when there are too many to be one program or `path` is not among them.
    fn group(&self, dir: &Path, path: &Path) -> Option<(Vec<PathBuf>, usize)> {
        let mut paths = Vec::new();
        let mut budget = MAX_PROGRAM_ENTRIES;
        if !wo_files(dir, &mut paths, &mut HashSet::new(), &mut budget)
            || !paths.iter().any(|p| p == path)
        {
            return None;
        }
        paths.sort();
        let mains = paths
            .iter()
            .filter(|p| {
                let text = Url::from_file_path(p)
                    .ok()
                    .and_then(|u| self.docs.get(&u).map(|d| d.text.clone()))
                    .or_else(|| std::fs::read_to_string(p).ok())
                    .unwrap_or_default();
                declares_main(&text)
            })
            .count();
        Some((paths, mains))
    }

    /// Analyses every stale program; returns the diagnostics of each file of each
    /// program analysed since the last call: an open document's with its version, a
    /// file not open (read from disk) when it has some or had some published, without
    /// one; and an empty list for each file whose published ones no longer apply.
    /// (helper-90: an error in a file not open, `lib.wo`, showed nowhere while the
    /// program did not compile.)
    pub fn refresh(&mut self) -> Vec<(Url, Option<i32>, Vec<lsp_types::Diagnostic>)> {
        for key in std::mem::take(&mut self.stale) {
            self.analyse(&key);
        }
        let mut out: Vec<_> = std::mem::take(&mut self.to_clear)
            .into_iter()
            .map(|u| (u, None, Vec::new()))
            .collect();
        for key in std::mem::take(&mut self.unpublished) {
            let Some(p) = self.programs.get(&key) else {
                continue;
            };
            let Some(a) = &p.analysis else {
                continue;
            };
            // The diagnostics are grouped by file once (a program has up to 256).
            let mut by_file: Vec<Vec<&Diagnostic>> = vec![Vec::new(); p.files.len()];
            for d in &a.diags {
                if let Some(of_file) = by_file.get_mut(d.span.file.0 as usize) {
                    of_file.push(d);
                }
            }
            let mut shown = HashSet::new();
            for ((i, uri), of_file) in p.files.iter().enumerate().zip(by_file) {
                if let Some(doc) = self.docs.get(uri) {
                    let diags = of_file.iter().map(|d| self.diagnostic(d, doc, p)).collect();
                    out.push((uri.clone(), Some(doc.version), diags));
                    continue;
                }
                if of_file.is_empty() {
                    if self.shown.get(uri) == Some(&key) {
                        out.push((uri.clone(), None, Vec::new()));
                    }
                    continue;
                }
                // (The text is copied only for a file with diagnostics.)
                let Some(src) = p.sources.files.get(i) else {
                    continue;
                };
                let doc = Document::new(src.src.clone(), 0);
                let diags = of_file
                    .into_iter()
                    .map(|d| self.diagnostic(d, &doc, p))
                    .collect();
                shown.insert(uri.clone());
                out.push((uri.clone(), None, diags));
            }
            // What was shown for this program and is not now (a file that compiles
            // again or left the program) is cleared.
            let before: Vec<Url> = self
                .shown
                .iter()
                .filter(|(u, k)| **k == key && !shown.contains(u))
                .map(|(u, _)| u.clone())
                .collect();
            for u in before {
                self.shown.remove(&u);
                if !p.files.contains(&u) {
                    out.push((u, None, Vec::new()));
                }
            }
            for u in shown {
                self.shown.insert(u, key.clone());
            }
        }
        out
    }

    fn analyse(&mut self, key: &Url) {
        let Some(p) = self.programs.get_mut(key) else {
            return;
        };
        let mut sources = SourceMap::default();
        for uri in &p.files {
            let name = path_of(uri).map_or(uri.to_string(), |p| p.display().to_string());
            let text = match self.docs.get(uri) {
                Some(d) => d.text.clone(),
                None => path_of(uri)
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default(),
            };
            let text = text
                .strip_prefix('\u{feff}')
                .map(str::to_string)
                .unwrap_or(text);
            sources.add(name, text);
        }
        // A program of tests alone needs no `main`, as for `wo check` (helper-68: the
        // editor showed a false error on every such file). The stand-in comes after
        // the program's files, so their indexes stay.
        crate::test::stand_in_main(&mut sources);
        let a = Rc::new(wo_compiler::analyze(&sources));
        if !a.diags.iter().any(|d| matches!(d.code, "syntax" | "lex")) {
            p.clean = Some((Rc::clone(&a), sources.clone()));
        }
        p.analysis = Some(a);
        p.sources = sources;
        self.unpublished.insert(key.clone());
    }

    fn diagnostic(&self, d: &Diagnostic, doc: &Document, p: &Program) -> lsp_types::Diagnostic {
        let mut message = d.message.clone();
        for n in &d.notes {
            message.push_str("\nnote: ");
            message.push_str(n);
        }
        let related: Vec<DiagnosticRelatedInformation> = d
            .labels
            .iter()
            .filter_map(|(span, text)| {
                Some(DiagnosticRelatedInformation {
                    location: self.location(p, *span)?,
                    message: text.clone(),
                })
            })
            .collect();
        lsp_types::Diagnostic {
            range: doc.range(d.span.lo as usize, d.span.hi as usize, self.enc),
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.to_string())),
            source: Some("wo".to_string()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            // An editor greys out what is never used or never runs (helper-96).
            tags: matches!(d.code, "unused" | "unreachable")
                .then(|| vec![lsp_types::DiagnosticTag::UNNECESSARY]),
            ..lsp_types::Diagnostic::default()
        }
    }

    /// A span of program `p` as a protocol location.
    fn location(&self, p: &Program, span: Span) -> Option<Location> {
        let uri = p.files.get(span.file.0 as usize)?;
        let range = match self.docs.get(uri) {
            Some(doc) => doc.range(span.lo as usize, span.hi as usize, self.enc),
            None => {
                let src = &p.sources.files.get(span.file.0 as usize)?.src;
                Document::new(src.clone(), 0).range(span.lo as usize, span.hi as usize, self.enc)
            }
        };
        Some(Location {
            uri: uri.clone(),
            range,
        })
    }

    /// The analysed program of an open document (analysed now if stale), and the
    /// document's file in it.
    fn at(&mut self, uri: &Url) -> Option<(&Program, FileId, &Document)> {
        let key = self.doc_program.get(uri)?.clone();
        if self.stale.remove(&key) {
            self.analyse(&key);
        }
        let p = self.programs.get(&key)?;
        let i = p.files.iter().position(|f| f == uri)?;
        let doc = self.docs.get(uri)?;
        Some((p, FileId(u32::try_from(i).ok()?), doc))
    }

    pub fn hover(&mut self, uri: &Url, pos: Position) -> Option<Hover> {
        let enc = self.enc;
        let (p, file, doc) = self.at(uri)?;
        let at = At {
            analysis: p.analysis.as_ref()?,
            sources: &p.sources,
            file,
        };
        let (text, span) = at.hover(doc.offset(pos, enc))?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: text,
            }),
            range: Some(doc.range(span.lo as usize, span.hi as usize, enc)),
        })
    }

    pub fn definition(&mut self, uri: &Url, pos: Position) -> Option<GotoDefinitionResponse> {
        let enc = self.enc;
        let (p, file, doc) = self.at(uri)?;
        let at = At {
            analysis: p.analysis.as_ref()?,
            sources: &p.sources,
            file,
        };
        let span = at.definition(doc.offset(pos, enc))?;
        let loc = self.programs_location(uri, span)?;
        Some(GotoDefinitionResponse::Scalar(loc))
    }

    fn programs_location(&self, uri: &Url, span: Span) -> Option<Location> {
        let p = self.programs.get(self.doc_program.get(uri)?)?;
        self.location(p, span)
    }

    pub fn completion(&mut self, uri: &Url, pos: Position) -> Option<CompletionResponse> {
        let enc = self.enc;
        let (p, file, doc) = self.at(uri)?;
        let off = doc.offset(pos, enc);
        let items = complete(p, file, &doc.text, off);
        Some(CompletionResponse::Array(
            items.into_iter().map(completion_item).collect(),
        ))
    }

    pub fn symbols(&mut self, uri: &Url) -> Option<DocumentSymbolResponse> {
        let enc = self.enc;
        let (p, file, doc) = self.at(uri)?;
        let at = At {
            analysis: p.analysis.as_ref()?,
            sources: &p.sources,
            file,
        };
        let symbols = at
            .symbols()
            .into_iter()
            .map(|s| symbol(s, doc, enc))
            .collect();
        Some(DocumentSymbolResponse::Nested(symbols))
    }

    /// The edits that put an open document in `wo fmt`'s layout (none when it already
    /// is); the first syntax error when it does not parse. `None` for a document
    /// that is not wo's open one (another language's, left alone: helper-105, the
    /// answer was an error "is not open", which editors show as a failed format).
    pub fn format(&mut self, uri: &Url) -> Result<Option<Vec<TextEdit>>, String> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(None);
        };
        match wo_compiler::fmt::format_checked(uri.path(), &doc.text) {
            Ok(text) if text == doc.text => Ok(Some(Vec::new())),
            Ok(text) => Ok(Some(vec![TextEdit {
                range: doc.range(0, doc.text.len(), self.enc),
                new_text: text,
            }])),
            Err(diags) if diags.iter().any(|d| d.code == "internal") => {
                Err(diags.iter().map(|d| d.message.as_str()).collect())
            }
            Err(diags) => {
                let first = diags.first().map_or_else(String::new, |d| {
                    let p = doc.position(d.span.lo as usize, self.enc);
                    format!(": {}:{}: {}", p.line + 1, p.character + 1, d.message)
                });
                Err(format!("cannot format a file that does not parse{first}"))
            }
        }
    }
}

/// Collects the `.wo` files under `dir` as `wo_compiler::load_sources` does (names
/// starting with `.` skipped); false when there are too many to be one program.
fn wo_files(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
    budget: &mut usize,
) -> bool {
    let Ok(real) = std::fs::canonicalize(dir) else {
        return true;
    };
    if !seen.insert(real) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            // Directories count (a home directory is not walked whole), and `.wo`
            // files, but not other files: a program with many assets is still one.
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if !wo_files(&path, out, seen, budget) {
                return false;
            }
        } else if path.extension().is_some_and(|e| e == "wo") {
            out.push(path);
            if out.len() > MAX_PROGRAM_FILES {
                return false;
            }
        }
    }
    true
}

/// Whether a file declares `fn main` (at the start of a line, as every program writes it).
fn declares_main(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("fn main")
            .is_some_and(|rest| rest.trim_start().starts_with('('))
    })
}

pub(super) fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether the end of `line` (a line up to the cursor) is in a comment, or in the text
/// of a literal and not in one of its `${…}`: no completion there. A literal ends at
/// its line's end (LANGUAGE.md §2), so the line is enough.
fn in_comment_or_text(line: &str) -> bool {
    // What is open: `None` a text, `Some(n)` an interpolation with `n` open braces.
    let mut open: Vec<Option<usize>> = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match (open.last_mut(), b[i]) {
            (Some(None), b'\\') => i += 1,
            (Some(None), b'"') => {
                open.pop();
            }
            (Some(None), b'$') if b.get(i + 1) == Some(&b'{') => {
                open.push(Some(1));
                i += 1;
            }
            (Some(None), _) => {}
            (_, b'-') if b.get(i + 1) == Some(&b'-') => return true,
            (_, b'"') => open.push(None),
            (Some(Some(n)), b'{') => *n += 1,
            (Some(Some(n)), b'}') => {
                *n -= 1;
                if *n == 0 {
                    open.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    matches!(open.last(), Some(None))
}

/// What may be written at `off` of file `file`: after `use `, a module; after `@`, an
/// annotation; after `x.`, the members of `x`'s type; else any name in scope.
fn complete(p: &Program, file: FileId, text: &str, off: usize) -> Vec<Item> {
    let Some(analysis) = &p.analysis else {
        return Vec::new();
    };
    let at = At {
        analysis,
        sources: &p.sources,
        file,
    };
    let line_start = text[..off].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..off];
    if in_comment_or_text(line) {
        return Vec::new();
    }
    let word_len = line.len() - line.trim_end_matches(is_ident).len();
    let before = &line[..line.len() - word_len];
    if before.trim() == "use" {
        return query::modules();
    }
    if before.ends_with('@') {
        return query::annotations();
    }
    if !before.ends_with('.') || before.ends_with("..") {
        return at.names(off);
    }
    let dot = line_start + before.len() - 1;
    let recv = &before[..before.len() - 1];
    let recv_word = &recv[recv.trim_end_matches(is_ident).len()..];
    let simple = !recv[..recv.len() - recv_word.len()].ends_with('.');
    let is_module = query::modules().iter().any(|m| m.label == recv_word);
    if simple && is_module && at.local_before(recv_word, off).is_none() {
        return query::module_members(recv_word);
    }
    if simple && recv_word.starts_with(|c: char| c.is_ascii_uppercase()) {
        if let Some(c) = at.class_named(recv_word) {
            return at.class_members(c);
        }
    }
    // A receiver whose type has no members (or an error recovery's guess) leaves the
    // question to the fallbacks below.
    let members = |at: &At, ty: Option<Ty>| ty.map(|t| at.members(&t)).filter(|m| !m.is_empty());
    if let Some(m) = members(&at, at.receiver_ty(dot)) {
        return m;
    }
    // The statement being written may not parse: with a name after the dot it may,
    // and the receiver's type is then known.
    if word_len == 0 {
        let mut patched = p.sources.clone();
        let f = &mut patched.files[file.0 as usize];
        let src = format!("{}__complete{}", &f.src[..off], &f.src[off..]);
        *f = wo_compiler::SourceFile::new(f.name.clone(), src);
        let a = wo_compiler::analyze(&patched);
        let at2 = At {
            analysis: &a,
            sources: &patched,
            file,
        };
        if let Some(m) = members(&at, at2.receiver_ty(dot)) {
            return m;
        }
    }
    if !simple || recv_word.is_empty() {
        return Vec::new();
    }
    // A query variable of a query that does not parse yet: `from e in Employee where e.`
    if let Some(m) = members(&at, query_var(&at, &text[..off], recv_word)) {
        return m;
    }
    if at.out_of_scope(recv_word, off) {
        return Vec::new();
    }
    if let Some(m) = members(&at, at.local_before(recv_word, off)) {
        return m;
    }
    // The whole function may be lost to a syntax error: the local as the last
    // analysis that parsed knew it (offsets there are close to those here).
    let Some((a, sources)) = &p.clean else {
        return Vec::new();
    };
    let old = At {
        analysis: a,
        sources,
        file,
    };
    let ty = query_var(&old, &text[..off], recv_word).or_else(|| old.local_before(recv_word, off));
    ty.map(|t| old.members(&t)).unwrap_or_default()
}

/// The type of `var` in the last `from var in SOURCE` of `text`: SOURCE's rows, or the
/// elements of a list SOURCE. Not once that query has ended (its `select` clause on
/// an earlier line than the end of `text`): the variable is out of scope after it.
fn query_var(at: &At, text: &str, var: &str) -> Option<Ty> {
    let pat = format!("from {var} in ");
    let i = text.rfind(&pat)? + pat.len();
    let rest = &text[i..];
    if query_ended(rest) {
        return None;
    }
    let source: String = rest.chars().take_while(|c| is_ident(*c)).collect();
    if source.starts_with(|c: char| c.is_ascii_uppercase()) {
        return at.class_named(&source).map(Ty::Class);
    }
    match at.local_before(&source, i)? {
        Ty::List(t) => Some(*t),
        _ => None,
    }
}

/// Whether the query whose text (after `from x in `) is `rest`, up to the cursor, has
/// ended: a `select` clause, then the end of its statement (a `;`, written or put at
/// a line break where the statement can end). By tokens, so `is_selected` or a
/// `select` in a text is no clause, and a constructor `select R {` open over lines
/// is still the query.
fn query_ended(rest: &str) -> bool {
    use wo_compiler::lexer::{tokenize, Mode, Tok};
    let toks = tokenize(rest, FileId(0), 0, 0, Mode::File).toks;
    // (`tokenize` ends the text with a `;` of its own: the cursor is not an end.)
    let toks = match toks.last() {
        Some((_, Tok::Semi, _)) => &toks[..toks.len() - 1],
        _ => &toks[..],
    };
    toks.iter()
        .position(|(_, t, _)| matches!(t, Tok::Select))
        .is_some_and(|at| toks[at..].iter().any(|(_, t, _)| matches!(t, Tok::Semi)))
}

fn completion_item(i: Item) -> CompletionItem {
    CompletionItem {
        label: i.label,
        kind: Some(match i.kind {
            Kind::Keyword => CompletionItemKind::KEYWORD,
            Kind::Local => CompletionItemKind::VARIABLE,
            Kind::Function => CompletionItemKind::FUNCTION,
            Kind::Method => CompletionItemKind::METHOD,
            Kind::Field => CompletionItemKind::FIELD,
            Kind::Class => CompletionItemKind::CLASS,
            Kind::Const => CompletionItemKind::CONSTANT,
            Kind::Module => CompletionItemKind::MODULE,
        }),
        detail: i.detail,
        documentation: i.doc.map(lsp_types::Documentation::String),
        ..CompletionItem::default()
    }
}

#[allow(deprecated)] // reason: `DocumentSymbol::deprecated` must be written, as `None`
fn symbol(s: query::Symbol, doc: &Document, enc: Encoding) -> DocumentSymbol {
    let children: Vec<DocumentSymbol> = s
        .children
        .into_iter()
        .map(|c| symbol(c, doc, enc))
        .collect();
    DocumentSymbol {
        name: s.name,
        detail: s.detail,
        kind: match s.kind {
            query::SymbolKind::Function => SymbolKind::FUNCTION,
            query::SymbolKind::Class => SymbolKind::CLASS,
            query::SymbolKind::Table => SymbolKind::STRUCT,
            query::SymbolKind::Field => SymbolKind::FIELD,
            query::SymbolKind::Method => SymbolKind::METHOD,
            query::SymbolKind::Const => SymbolKind::CONSTANT,
        },
        tags: None,
        deprecated: None,
        range: doc.range(s.span.lo as usize, s.span.hi as usize, enc),
        selection_range: doc.range(s.name_span.lo as usize, s.name_span.hi as usize, enc),
        children: (!children.is_empty()).then_some(children),
    }
}

#[cfg(test)]
mod tests {
    use super::{in_comment_or_text, query_ended};

    #[test]
    fn a_query_ends_after_its_select_and_its_statement() {
        for ended in ["E select q.name\n  print(q.", "E select q.name; print(q."] {
            assert!(query_ended(ended), "{ended:?}");
        }
        for open in [
            "E\n    where q.is_selected and\n      q.",
            "E select R {\n      n: q.",
            "E select q.",
            "E where q.a == \"select\"\n    order by q.",
        ] {
            assert!(!query_ended(open), "{open:?}");
        }
    }

    #[test]
    fn comments_and_texts_but_not_interpolations() {
        for quiet in [
            "-- p.",
            "  x = 1 -- p.",
            "print(\"p.",
            "\"a\\\" p.",
            "\"${a} p.",
            "\"${\"}\"} p.",
        ] {
            assert!(in_comment_or_text(quiet), "{quiet}");
        }
        for open in [
            "p.",
            "print(\"a\", p.",
            "\"${p.",
            "\"${ {\"k\": 1}[p.",
            "\"${\"a\" .. p.",
        ] {
            assert!(!in_comment_or_text(open), "{open}");
        }
    }
}
