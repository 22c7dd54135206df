//! The stdio transport of `wo lsp`: `lsp-server` frames and parses every message
//! (`Message::read`, `Message::write`); this module only decides what a bad message
//! costs. `lsp-server`'s own stdio transport ends the session at the first message
//! it cannot parse. Here a frame whose header was read but whose body is not a
//! JSON-RPC message (the whole body was consumed, so the stream is still in step) is
//! skipped: the client is told with a `window/showMessage` error naming the problem,
//! and the session goes on. A bad header leaves the stream out of step: that still
//! ends the session (exit 65, the input was invalid).

use std::io::{self, BufRead, Write};
use std::thread::JoinHandle;

use lsp_server::{Connection, Message, Notification};
use lsp_types::notification::{Notification as _, ShowMessage};
use lsp_types::{MessageType, ShowMessageParams};

/// The I/O threads of a session.
pub struct Threads {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl Threads {
    /// Waits for both threads: the reader ends at `exit` or at the end of input, the
    /// writer when every sender is gone.
    pub fn join(self) -> io::Result<()> {
        let read = self
            .reader
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let written = self
            .writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        read.and(written)
    }
}

/// A connection on stdin/stdout, for the server's side.
pub fn stdio() -> (Connection, Threads) {
    serve_on(io::BufReader::new(io::stdin()), io::stdout())
}

/// A connection reading from `input` and writing to `output` (stdin and stdout, or a
/// test's buffers).
pub fn serve_on(
    mut input: impl BufRead + Send + 'static,
    mut output: impl Write + Send + 'static,
) -> (Connection, Threads) {
    let (server, client) = Connection::memory();
    let Connection {
        sender: to_server,
        receiver: from_server,
    } = client;
    // The reader also speaks to the client (about a message it skipped).
    let to_client = server.sender.clone();
    let reader = std::thread::spawn(move || loop {
        let msg = match Message::read(&mut input) {
            Ok(Some(msg)) => msg,
            Ok(None) => return Ok(()),
            Err(e) if skippable(&e) => {
                let n = Notification::new(
                    ShowMessage::METHOD.to_string(),
                    ShowMessageParams {
                        typ: MessageType::ERROR,
                        message: format!("wo lsp: a message was skipped: {e}"),
                    },
                );
                if to_client.send(Message::Notification(n)).is_err() {
                    return Ok(());
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
        if to_server.send(msg).is_err() || is_exit {
            return Ok(());
        }
    });
    let writer = std::thread::spawn(move || {
        for msg in from_server {
            msg.write(&mut output)?;
        }
        output.flush()
    });
    (server, Threads { reader, writer })
}

/// Whether a read error left the stream in step: the frame's body was read whole,
/// but it is not UTF-8 or not a JSON-RPC message (`lsp-server`'s words for these).
fn skippable(e: &io::Error) -> bool {
    let text = e.to_string();
    e.kind() == io::ErrorKind::InvalidData
        && (text.starts_with("malformed LSP payload") || text.starts_with("invalid utf-8"))
}

/// A read error in the words of the header it came from: `lsp-server` passes on the
/// bare integer parse error for a `Content-Length` that is not a number.
pub fn describe(e: &io::Error) -> String {
    let text = e.to_string();
    let parse_error = [
        "invalid digit found in string",
        "cannot parse integer from empty string",
        "number too large to fit in target type",
    ];
    if parse_error.contains(&text.as_str()) {
        format!("the `Content-Length` header is not a byte count ({text})")
    } else {
        text
    }
}
