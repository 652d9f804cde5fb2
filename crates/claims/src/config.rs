//! The claims database's configuration (docs/boxes.md BX-1): `AGENT_BOX_CLAIMS` (a libpq connection string without
//! a password), the box's label, the term; the password from the env store's `PGPASSWORD` or a passfile, so that it
//! is never on an argv or in a unit file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `AGENT_BOX_CLAIMS`.
pub const CLAIMS_ENV: &str = "AGENT_BOX_CLAIMS";
/// `AGENT_BOX_CLAIM_TERM`, whole seconds.
pub const TERM_ENV: &str = "AGENT_BOX_CLAIM_TERM";
pub const DEFAULT_TERM: Duration = Duration::from_secs(90);
pub const TERM_RANGE: std::ops::RangeInclusive<u64> = 10..=3600;
/// The env store key the password is read from.
pub const PASSWORD_KEY: &str = "PGPASSWORD";

/// What is wrong with the configuration (the supervisor's start-up problem, exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "AGENT_BOX_CLAIMS must not hold a password (it is in every process listing and unit file): put it into the env store (agent-box-session env set PGPASSWORD) or a passfile"
    )]
    PasswordInString,
    #[error("AGENT_BOX_CLAIMS is not a libpq connection string ({0})")]
    Unparsable(String),
    #[error("AGENT_BOX_CLAIM_TERM must be a whole number of seconds from 10 to 3600 (it is '{0}')")]
    Term(String),
    #[error("the claims database needs a box label: set AGENT_BOX_HOST_LABEL (no host name could be read)")]
    NoLabel,
}

/// The claims configuration of one box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimsConfig {
    /// The connection string as given, the `passfile` parameter taken out (the client does not know it).
    pub connection: String,
    /// The passfile named by the string, if any (else `~/.pgpass` is looked at).
    pub passfile: Option<PathBuf>,
    pub label: String,
    pub term: Duration,
}

impl ClaimsConfig {
    /// `Ok(None)` without `AGENT_BOX_CLAIMS`; `label` is the box label the supervisor already resolved
    /// (`AGENT_BOX_HOST_LABEL`, else the host name).
    pub fn from_lookup(
        env: &impl Fn(&str) -> Option<OsString>,
        label: Option<&str>,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(raw) = env(CLAIMS_ENV).map(|v| v.to_string_lossy().trim().to_owned()).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let term = match env(TERM_ENV).map(|v| v.to_string_lossy().trim().to_owned()).filter(|v| !v.is_empty()) {
            None => DEFAULT_TERM,
            Some(text) => match text.parse::<u64>() {
                Ok(secs) if TERM_RANGE.contains(&secs) => Duration::from_secs(secs),
                _ => return Err(ConfigError::Term(text)),
            },
        };
        let (connection, passfile) = split_passfile(&raw)?;
        connection.parse::<postgres::Config>().map_err(|e| ConfigError::Unparsable(e.to_string()))?;
        let label = label.filter(|l| !l.is_empty()).ok_or(ConfigError::NoLabel)?.to_owned();
        Ok(Some(Self { connection, passfile, label, term }))
    }

    /// The client configuration: the string, the password (`password`, when one was found), bounded waits.
    pub fn client(&self, password: Option<&[u8]>) -> Result<postgres::Config, ConfigError> {
        let mut config: postgres::Config =
            self.connection.parse().map_err(|e: postgres::Error| ConfigError::Unparsable(e.to_string()))?;
        if let Some(password) = password {
            config.password(password);
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.keepalives_idle(Duration::from_secs(10));
        config.application_name("agent-box");
        Ok(config)
    }
}

/// How long one connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Takes `passfile=…` out of a key=value string (the client refuses keys it does not know) and refuses a password
/// anywhere in it: `password=` or a URI's `user:password@`.
fn split_passfile(raw: &str) -> Result<(String, Option<PathBuf>), ConfigError> {
    if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
        let authority = raw.split_once("://").map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
        let userinfo = authority.rsplit_once('@').map(|(info, _)| info);
        if userinfo.is_some_and(|info| info.contains(':')) || raw.contains("password=") {
            return Err(ConfigError::PasswordInString);
        }
        return Ok((raw.to_owned(), None));
    }
    let mut kept = Vec::new();
    let mut passfile = None;
    for pair in key_values(raw)? {
        match pair.0.as_str() {
            "password" => return Err(ConfigError::PasswordInString),
            "passfile" => passfile = Some(PathBuf::from(&pair.1)),
            _ => kept.push(pair),
        }
    }
    let text = kept.iter().map(|(k, v)| format!("{k}={}", quote(v))).collect::<Vec<_>>().join(" ");
    Ok((text, passfile))
}

/// libpq's key=value syntax: values may be single-quoted, with `\'` and `\\` inside.
fn key_values(raw: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::new();
    let mut chars = raw.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(ConfigError::Unparsable(format!("'{key}' has no value")));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(ConfigError::Unparsable("an unterminated quote".into())),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace())).collect();
        }
        pairs.push((key, value));
    }
}

fn quote(value: &str) -> String {
    if !value.is_empty() && !value.chars().any(|c| c.is_whitespace() || c == '\'' || c == '\\') {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The password of a passfile line matching `host`, `port`, `dbname`, `user` (libpq's format: `*` matches
/// anything, `\` escapes `:` and `\`). A file others may read is not used, as libpq does.
pub fn password_from_passfile(path: &Path, host: &str, port: &str, dbname: &str, user: &str) -> Option<Vec<u8>> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let fields = passfile_fields(line);
        let [h, p, d, u, password] = fields.as_slice() else { return None };
        let matches = |field: &str, want: &str| field == "*" || field == want;
        (matches(h, host) && matches(p, port) && matches(d, dbname) && matches(u, user))
            .then(|| password.as_bytes().to_vec())
    })
}

fn passfile_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Option<ClaimsConfig>, ConfigError> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        ClaimsConfig::from_lookup(
            &|k: &str| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.into()),
            Some("box-a"),
        )
    }

    #[test]
    fn no_database_no_claims() {
        assert_eq!(config(&[]), Ok(None));
        assert_eq!(config(&[(CLAIMS_ENV, "  ")]), Ok(None));
    }

    #[test]
    fn a_password_in_the_string_stops_the_start() {
        for raw in [
            "host=db password=x",
            "host=db password='a b'",
            "postgresql://u:secret@db/agent_box",
            "postgres://db/x?password=y",
        ] {
            assert_eq!(config(&[(CLAIMS_ENV, raw)]), Err(ConfigError::PasswordInString), "{raw}");
        }
    }

    #[test]
    fn the_passfile_is_taken_out_and_the_term_read() {
        let got =
            config(&[(CLAIMS_ENV, "host=/run/pg dbname='agent box' passfile=/etc/pgpass user=ab"), (TERM_ENV, "30")])
                .unwrap()
                .unwrap();
        assert_eq!(got.connection, "host=/run/pg dbname='agent box' user=ab");
        assert_eq!(
            (got.passfile, got.term, got.label.as_str()),
            (Some("/etc/pgpass".into()), Duration::from_secs(30), "box-a")
        );
        assert_eq!(config(&[(CLAIMS_ENV, "host=db"), (TERM_ENV, "5")]), Err(ConfigError::Term("5".into())));
        assert!(matches!(config(&[(CLAIMS_ENV, "host")]), Err(ConfigError::Unparsable(_))));
    }

    #[test]
    fn passfile_lines_match_like_libpq() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "# comment\nother:*:*:*:no\n*:5432:agent_box:ab:s3cr\\:et\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(password_from_passfile(&path, "db", "5432", "agent_box", "ab"), Some(b"s3cr:et".to_vec()));
        assert_eq!(password_from_passfile(&path, "db", "5433", "agent_box", "ab"), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(password_from_passfile(&path, "db", "5432", "agent_box", "ab"), None, "readable by others");
    }
}
