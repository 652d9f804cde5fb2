//! What a spawn has to say, collected in order for `main` to print (60-webhook-spawn §11): warning lines for
//! stderr and the one result line for stdout. The library never writes to either stream.

/// A spawn's stderr lines (without the program prefix) and its stdout line.
#[derive(Debug, Default)]
pub struct Out {
    notes: Vec<String>,
    added: Option<String>,
}

impl Out {
    pub fn new() -> Self {
        Self::default()
    }

    /// A warning (W-line) on stderr.
    pub fn warn(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// The result line on stdout (the entry is written by then).
    pub fn added(&mut self, line: String) {
        self.added = Some(line);
    }

    /// The stderr lines so far.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The stdout line, if the batch was accepted with an entry.
    pub fn added_line(&self) -> Option<&str> {
        self.added.as_deref()
    }
}
