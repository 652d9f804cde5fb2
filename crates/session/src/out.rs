//! What a verb has to say, collected in order for `main` to print (50-session-cli §3.9): the results for stdout
//! and the warning lines for stderr. Verbs never write to either stream themselves.

/// One stderr line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Printed after the program prefix `agent-box-session: `.
    Prefixed(String),
    /// Printed exactly as given (the messages kept without prefix, §14).
    Bare(String),
}

/// A verb's stdout bytes and stderr lines, in the order the verb produced them.
#[derive(Debug, Default)]
pub struct Out {
    stdout: Vec<u8>,
    notes: Vec<Line>,
}

impl Out {
    pub fn new() -> Self {
        Self::default()
    }

    /// One stdout line.
    pub fn line(&mut self, text: &str) {
        self.stdout.extend_from_slice(text.as_bytes());
        self.stdout.push(b'\n');
    }

    /// Stdout bytes as they are.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.stdout.extend_from_slice(bytes);
    }

    /// A warning on stderr, after the program prefix.
    pub fn warn(&mut self, text: impl Into<String>) {
        self.notes.push(Line::Prefixed(text.into()));
    }

    /// The stdout bytes so far.
    pub fn stdout(&self) -> &[u8] {
        &self.stdout
    }

    /// The stdout text so far (tests).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The stderr lines so far.
    pub fn notes(&self) -> &[Line] {
        &self.notes
    }
}
