//! `wo lsp`: a language server on stdin/stdout (LANGUAGE.md §12): diagnostics, hover,
//! go to definition, completion, document symbols and formatting (`wo fmt`), built on `lsp-server`
//! (the JSON-RPC transport rust-analyzer uses) and `lsp-types`. This module is the
//! protocol loop: it keeps the open documents ([`document`]), hands questions about a
//! position to [`world`], and turns answers into messages. Nothing here knows the
//! language; everything it answers comes from `wo_compiler::analyze`.
//!
//! Documents are analysed lazily: a change only marks its program stale, and a stale
//! program is analysed again when the loop has no message waiting (then its
//! diagnostics are published) or when a request needs it, so a burst of keystrokes
//! costs one analysis, not one per keystroke.

mod builtins;
mod document;
mod query;
mod transport;
mod world;

use std::path::PathBuf;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, Request as _,
};
use lsp_types::{
    CompletionOptions, HoverProviderCapability, InitializeParams, OneOf, PositionEncodingKind,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    Url,
};

use crate::exit::Failure;
use document::Encoding;
use world::World;

/// The stack of the thread that analyses: as `wo_compiler::compile` gives the compiler,
/// for programs nested deeply (reserved, touched only as used).
const ANALYSIS_STACK: usize = 1 << 30;

/// `wo lsp`: serves one client on stdin/stdout until it says `exit`.
pub fn serve() -> Result<(), Failure> {
    let (connection, io_threads) = transport::stdio();
    let served = std::thread::Builder::new()
        .name("wo-lsp".to_string())
        .stack_size(ANALYSIS_STACK)
        .spawn(move || run(connection))
        .map_err(|e| Failure::Internal(format!("internal error: cannot start the server: {e}")))?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let ended = served?;
    let after_shutdown = matches!(ended, Ended::Clean);
    io_threads.join().or_else(|e| {
        // The input ended inside a message after `shutdown` was answered: as the end
        // of the input after `shutdown`.
        if after_shutdown && e.kind() == std::io::ErrorKind::UnexpectedEof {
            Ok(())
        } else {
            Err(e)
        }
    }).map_err(|e| {
        let message = format!("language server: {}", transport::describe(&e));
        match e.kind() {
            // A frame that could not be read (a bad header): the input was invalid.
            std::io::ErrorKind::InvalidData => Failure::BadSource(message),
            // The input ended inside a message: as an end of input before `shutdown`.
            std::io::ErrorKind::UnexpectedEof => {
                say!("wo: language server: the input ended inside a message (its body is shorter than its `Content-Length`), before `shutdown`");
                Failure::Reported(1)
            }
            _ => Failure::Input(message),
        }
    })?;
    match ended {
        Ended::Clean => Ok(()),
        Ended::Early(why) => {
            say!("wo: language server: {why} before `shutdown`");
            Err(Failure::Reported(1))
        }
    }
}

fn capabilities(enc: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match enc {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".to_string(), "@".to_string()]),
            ..CompletionOptions::default()
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// UTF-8 columns when the client offers them (no conversion), else UTF-16, the
/// protocol's default.
fn encoding(params: &InitializeParams) -> Encoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

fn protocol(e: impl std::fmt::Display) -> Failure {
    Failure::Input(format!("language server: {e}"))
}

/// How a session ended.
enum Ended {
    /// `shutdown`, then `exit`.
    Clean,
    /// Without `shutdown` first (an `exit` alone, or the end of the input, or a
    /// message the transport could not read): the protocol's status for that is 1.
    Early(&'static str),
}

/// How long edits must pause before diagnostics are published: a burst of keystrokes
/// costs one analysis.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(75);

fn run(connection: Connection) -> Result<Ended, Failure> {
    let (id, params) = match initialize_request(&connection)? {
        Ok(request) => request,
        Err(ended) => return Ok(ended),
    };
    let enc = encoding(&params);
    let caps = serde_json::to_value(capabilities(enc)).map_err(protocol)?;
    let result = serde_json::json!({
        "capabilities": caps,
        "serverInfo": { "name": "wo", "version": env!("CARGO_PKG_VERSION") },
    });
    send(&connection, Message::Response(Response::new_ok(id, result)))?;
    let mut world = World::new(enc);
    // When a document last changed (opened, edited, saved, closed).
    let mut last_edit = std::time::Instant::now();
    loop {
        // With stale programs, wait for the next message only a little: when none
        // comes for `PAUSE` (the typing paused), analyse them and publish their
        // diagnostics. (helper-68: taking only what was already waiting analysed after
        // every keystroke typed 30 ms apart.) Requests are answered as they come.
        let msg = if world.has_stale() {
            // Measured from the last edit, not the last message: questions (a hover
            // every 50 ms as the mouse moves) do not hold diagnostics back (helper-69).
            let wait = PAUSE.saturating_sub(last_edit.elapsed());
            if wait.is_zero() {
                publish(&connection, &mut world)?;
                continue;
            }
            match connection.receiver.recv_timeout(wait) {
                Ok(msg) => msg,
                Err(e) if e.is_timeout() => {
                    publish(&connection, &mut world)?;
                    continue;
                }
                Err(_) => return Ok(Ended::Early("the input ended")),
            }
        } else {
            match connection.receiver.recv() {
                Ok(msg) => msg,
                Err(_) => return Ok(Ended::Early("the input ended")),
            }
        };
        match msg {
            Message::Request(req) if req.method == "shutdown" => {
                let done = Response::new_ok(req.id, serde_json::Value::Null);
                send(&connection, Message::Response(done))?;
                return shut_down(&connection);
            }
            Message::Request(req) if req.method == "initialize" => {
                let err = Response::new_err(
                    req.id,
                    ErrorCode::InvalidRequest as i32,
                    "the server is already initialized".to_string(),
                );
                send(&connection, Message::Response(err))?;
            }
            Message::Request(req) => {
                let resp = answer(&mut world, req);
                send(&connection, Message::Response(resp))?;
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return Ok(Ended::Early("`exit` came"));
                }
                // (Only a document's change: `$/cancelRequest` as the mouse moves on
                // must not hold diagnostics back either, helper-70.)
                if n.method.starts_with("textDocument/did") {
                    last_edit = std::time::Instant::now();
                }
                if let Some(closed) = notify(&mut world, n) {
                    // An editor keeps what was published for a closed document
                    // until it is replaced.
                    let params = PublishDiagnosticsParams {
                        uri: closed,
                        diagnostics: Vec::new(),
                        version: None,
                    };
                    let n = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
                    send(&connection, Message::Notification(n))?;
                }
            }
            Message::Response(_) => {}
        }
    }
}

/// Waits for an `initialize` request with parameters that can be read: one that
/// cannot is answered with the protocol's "invalid params" error (the client may send
/// another), any other request before it with "not initialized", notifications are
/// dropped, and `exit` or the end of the input ends the session (`Err`).
fn initialize_request(
    connection: &Connection,
) -> Result<Result<(lsp_server::RequestId, InitializeParams), Ended>, Failure> {
    loop {
        match connection.receiver.recv() {
            Ok(Message::Request(req)) if req.method == "initialize" => {
                match serde_json::from_value::<InitializeParams>(req.params) {
                    Ok(params) => return Ok(Ok((req.id, params))),
                    Err(e) => {
                        let err = Response::new_err(
                            req.id,
                            ErrorCode::InvalidParams as i32,
                            format!("bad parameters for `initialize`: {e}"),
                        );
                        send(connection, Message::Response(err))?;
                    }
                }
            }
            Ok(Message::Request(req)) => {
                let err = Response::new_err(
                    req.id,
                    ErrorCode::ServerNotInitialized as i32,
                    format!(
                        "the server is not initialized: `{}` came before `initialize`",
                        req.method
                    ),
                );
                send(connection, Message::Response(err))?;
            }
            Ok(Message::Notification(n)) if n.method == "exit" => {
                return Ok(Err(Ended::Early("`exit` came")))
            }
            Ok(_) => {}
            Err(_) => return Ok(Err(Ended::Early("the input ended"))),
        }
    }
}

/// After `shutdown` was answered: a request gets the protocol's "invalid request"
/// error, a notification is dropped, and `exit` (or the end of the input) ends the
/// session cleanly.
fn shut_down(connection: &Connection) -> Result<Ended, Failure> {
    loop {
        match connection.receiver.recv() {
            Ok(Message::Request(req)) => {
                let err = Response::new_err(
                    req.id,
                    ErrorCode::InvalidRequest as i32,
                    format!(
                        "the server is shutting down: `{}` came after `shutdown`",
                        req.method
                    ),
                );
                send(connection, Message::Response(err))?;
            }
            Ok(Message::Notification(n)) if n.method == "exit" => return Ok(Ended::Clean),
            Ok(_) => {}
            Err(_) => return Ok(Ended::Clean),
        }
    }
}

fn send(connection: &Connection, msg: Message) -> Result<(), Failure> {
    connection.sender.send(msg).map_err(protocol)
}

/// Analyses every stale program and publishes the diagnostics of its open documents.
fn publish(connection: &Connection, world: &mut World) -> Result<(), Failure> {
    for (uri, version, diagnostics) in world.refresh() {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        let n = Notification::new(PublishDiagnostics::METHOD.to_string(), params);
        send(connection, Message::Notification(n))?;
    }
    Ok(())
}

/// Applies a notification to the documents; returns the document it closed, if any.
fn notify(world: &mut World, n: Notification) -> Option<Url> {
    match n.method.as_str() {
        DidOpenTextDocument::METHOD => {
            if let Ok(p) =
                n.extract::<lsp_types::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD)
            {
                let d = p.text_document;
                // Only wo's documents: a client that sends every file it opens
                // (a README, a log) gets no wo diagnostics on them (helper-101). A
                // `.wo` file is wo's whatever the client calls its language.
                if d.language_id == "wo" || d.uri.path().ends_with(".wo") {
                    world.open(d.uri, d.text, d.version);
                }
            }
        }
        DidChangeTextDocument::METHOD => {
            if let Ok(p) =
                n.extract::<lsp_types::DidChangeTextDocumentParams>(DidChangeTextDocument::METHOD)
            {
                world.change(
                    &p.text_document.uri,
                    p.text_document.version,
                    p.content_changes,
                );
            }
        }
        DidCloseTextDocument::METHOD => {
            if let Ok(p) =
                n.extract::<lsp_types::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD)
            {
                world.close(&p.text_document.uri);
                return Some(p.text_document.uri);
            }
        }
        DidSaveTextDocument::METHOD => {
            if let Ok(p) =
                n.extract::<lsp_types::DidSaveTextDocumentParams>(DidSaveTextDocument::METHOD)
            {
                world.saved(&p.text_document.uri);
            }
        }
        _ => {}
    }
    None
}

/// The response to one request (an error response for a method not served or
/// parameters that do not parse).
fn answer(world: &mut World, req: Request) -> Response {
    let id = req.id.clone();
    let res = match req.method.as_str() {
        HoverRequest::METHOD => params::<lsp_types::HoverParams>(req).map(|p| {
            let at = p.text_document_position_params;
            to_json(world.hover(&at.text_document.uri, at.position))
        }),
        GotoDefinition::METHOD => params::<lsp_types::GotoDefinitionParams>(req).map(|p| {
            let at = p.text_document_position_params;
            to_json(world.definition(&at.text_document.uri, at.position))
        }),
        Completion::METHOD => params::<lsp_types::CompletionParams>(req).map(|p| {
            let at = p.text_document_position;
            to_json(world.completion(&at.text_document.uri, at.position))
        }),
        DocumentSymbolRequest::METHOD => params::<lsp_types::DocumentSymbolParams>(req)
            .map(|p| to_json(world.symbols(&p.text_document.uri))),
        Formatting::METHOD => params::<lsp_types::DocumentFormattingParams>(req).and_then(|p| {
            let edits = world.format(&p.text_document.uri);
            edits
                .map(to_json)
                .map_err(|e| (ErrorCode::RequestFailed, e))
        }),
        other => Err((
            ErrorCode::MethodNotFound,
            format!("`wo lsp` does not serve `{other}`"),
        )),
    };
    match res {
        Ok(v) => Response::new_ok(id, v),
        Err((code, msg)) => Response::new_err(id, code as i32, msg),
    }
}

fn params<P: serde::de::DeserializeOwned>(req: Request) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(req.params).map_err(|e| {
        (
            ErrorCode::InvalidParams,
            format!("bad parameters for `{}`: {e}", req.method),
        )
    })
}

fn to_json(v: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// The file a `file:` URI names (`None` for other schemes: such a document is analysed
/// alone). The scheme is checked here: `Url::to_file_path` does not, and a diff view's
/// `git:/…/main.wo?ref=HEAD` was taken for the file on disk, whose program was
/// analysed instead of the document (helper-105).
fn path_of(uri: &Url) -> Option<PathBuf> {
    if uri.scheme() != "file" {
        return None;
    }
    uri.to_file_path().ok()
}
