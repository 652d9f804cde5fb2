//! Writing results to stdout (50-session-cli §3.9): a closed stdout ends the program quietly with the exit code it
//! would have had; any other write error means exit 1.

use std::io::{self, Write};

/// Buffered stdout that remembers how writing went.
#[derive(Debug, Default)]
pub struct Out {
    buffer: Vec<u8>,
}

/// What happened when the output was flushed.
#[derive(Debug, PartialEq, Eq)]
pub enum Flushed {
    Ok,
    /// The reader went away (EPIPE): exit quietly with the intended code.
    Closed,
    /// Another write error: exit 1.
    Failed,
}

impl Out {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn line(&mut self, text: &str) {
        self.buffer.extend_from_slice(text.as_bytes());
        self.buffer.push(b'\n');
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The text written so far (tests).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer).into_owned()
    }

    /// Writes everything to stdout.
    pub fn flush(self) -> Flushed {
        let mut stdout = io::stdout().lock();
        match stdout.write_all(&self.buffer).and_then(|()| stdout.flush()) {
            Ok(()) => Flushed::Ok,
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Flushed::Closed,
            Err(_) => Flushed::Failed,
        }
    }
}

/// Prints one message line on stderr with the program prefix.
pub fn say(text: &str) {
    eprintln!("agent-box-session: {text}");
}

/// Prints one stderr line exactly as given (the messages kept without prefix, 50-session-cli §14).
pub fn say_bare(text: &str) {
    eprintln!("{text}");
}
