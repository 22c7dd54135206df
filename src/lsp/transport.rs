//! The stdio transport of `wo lsp`: `lsp-server` frames and parses every message
//! (`Message::read`, `Message::write`); this module only decides what a bad message
//! costs. `lsp-server`'s own stdio transport ends the session at the first message
//! it cannot parse. Here a frame whose header was read but whose body is not a
//! JSON-RPC message (the whole body was consumed, so the stream is still in step) is
//! skipped: the client is told with a `window/showMessage` error naming the problem,
//! and the session goes on. A bad header leaves the stream out of step: that still
//! ends the session (exit 65, the input was invalid).

use std::io::{self, BufRead, Read, Write};
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

/// The largest message body the server reads (a document of this size is far past
/// what an editor sends): `lsp-server` allocates a header's `Content-Length` at once,
/// so `Content-Length: 5000000000` aborted the process and one of 2⁶⁴−1 panicked.
pub const MAX_BODY: u64 = 256 << 20;

/// The input, with each header line checked before `lsp-server` reads it: a
/// `Content-Length` over [`MAX_BODY`] is an error (a bad header, exit 65). The
/// framing and parsing stay `lsp-server`'s.
struct Guarded<R>(R);

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<R: BufRead> BufRead for Guarded<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.0.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.0.consume(n)
    }
    fn read_line(&mut self, line: &mut String) -> io::Result<usize> {
        let start = line.len();
        let n = self.0.read_line(line)?;
        let header = &line[start..];
        if let Some((name, value)) = header.split_once(':') {
            // (`lsp-server` parses the value as a `usize`, which takes a leading `+`.)
            let value = value.trim();
            let value = value.strip_prefix('+').unwrap_or(value);
            if name.trim().eq_ignore_ascii_case("content-length")
                && !value.is_empty()
                && value.bytes().all(|b| b.is_ascii_digit())
                && value.parse::<u64>().map_or(true, |len| len > MAX_BODY)
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the `Content-Length` header asks for {value} bytes, over the limit of {} MiB for one message",
                        MAX_BODY >> 20
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// A connection reading from `input` and writing to `output` (stdin and stdout, or a
/// test's buffers).
pub fn serve_on(
    input: impl BufRead + Send + 'static,
    mut output: impl Write + Send + 'static,
) -> (Connection, Threads) {
    let mut input = Guarded(input);
    let (server, client) = Connection::memory();
    let Connection {
        sender: to_server,
        receiver: from_server,
    } = client;
    // The reader also speaks to the client (about a message it skipped).
    let to_client = server.sender.clone();
    let reader = std::thread::spawn(move || loop {
        let skipped = match Message::read(&mut input) {
            Ok(Some(msg)) => match unanswerable(&msg) {
                None => Ok(msg),
                Some(why) => Err(why),
            },
            Ok(None) => return Ok(()),
            Err(e) if skippable(&e) => Err(e.to_string()),
            Err(e) => return Err(e),
        };
        let msg = match skipped {
            Ok(msg) => msg,
            Err(why) => {
                let n = Notification::new(
                    ShowMessage::METHOD.to_string(),
                    ShowMessageParams {
                        typ: MessageType::ERROR,
                        message: format!("wo lsp: a message was skipped: {why}"),
                    },
                );
                if to_client.send(Message::Notification(n)).is_err() {
                    return Ok(());
                }
                continue;
            }
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

/// Why a message that parsed cannot be served, if it cannot (helper-68: these went
/// unanswered and unmentioned). `lsp-server` reads a message with an `id` but no
/// `method` text (`"method": 5`) as a response, and one whose `id` is neither a
/// number nor a text (`{"a":1}`, `3.5`) as a notification.
fn unanswerable(msg: &Message) -> Option<String> {
    use lsp_types::request::{
        Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, Initialize,
        Request as _, Shutdown,
    };
    const REQUESTS: [&str; 7] = [
        Initialize::METHOD,
        Shutdown::METHOD,
        HoverRequest::METHOD,
        GotoDefinition::METHOD,
        Completion::METHOD,
        DocumentSymbolRequest::METHOD,
        Formatting::METHOD,
    ];
    match msg {
        Message::Response(r) => Some(format!(
            "a message with the id {} and no `method` text reads as a response, and the server asked the client nothing",
            r.id
        )),
        Message::Notification(n) if REQUESTS.contains(&n.method.as_str()) => Some(format!(
            "`{}` is a request, but came without an id that is a number or a text, so it cannot be answered",
            n.method
        )),
        _ => None,
    }
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
