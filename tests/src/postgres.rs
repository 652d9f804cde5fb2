//! A real PostgreSQL server for the claims tests (issue 26): `initdb` into a temporary directory, the server on a
//! unix socket only, run as an unprivileged account when the tests run as root (PostgreSQL refuses root), with a
//! password (SCRAM) so the boxes' way of getting one is exercised too. Never a mock. Stopped on drop, also after a
//! failed assertion.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::privilege::{chown_tree, unprivileged};

/// The role the server is created with, and its password.
pub const ROLE: &str = "agent_box";
pub const PASSWORD: &str = "s3cret-claims";

/// One running server.
#[derive(Debug)]
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

/// Where the server's programs are: the newest `/usr/lib/postgresql/<n>/bin`, else `initdb` on PATH's directory.
pub fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("postgres").is_file())
        .collect();
    versions.sort_by_key(|p| p.parent().and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok()).unwrap_or(0));
    versions.pop()
}

impl Postgres {
    /// Starts a fresh server; `Err` says why none can run here (no PostgreSQL installed), for a SKIP line.
    pub fn start() -> Result<Self, String> {
        let bin = bin_dir()
            .ok_or("no PostgreSQL server programs under /usr/lib/postgresql/*/bin (apt-get install postgresql)")?;
        let dir = tempfile::Builder::new().prefix("abpg-").tempdir_in("/tmp").map_err(|e| e.to_string())?;
        // Only a unix socket in the server's own directory: the port only names the socket file there.
        let port = 5432;
        let server = Self { dir, bin, port };
        server.init()?;
        server.launch()?;
        server.wait_ready(Duration::from_secs(60))?;
        server.sql("postgres", &format!("CREATE DATABASE {ROLE} OWNER {ROLE}"))?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket directory, which is also the `host` of a connection string.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for database `dbname`, without the password (BX-1).
    pub fn connection(&self, dbname: &str) -> String {
        format!("host={} port={} dbname={dbname} user={ROLE}", self.socket_dir().display(), self.port)
    }

    fn init(&self) -> Result<(), String> {
        std::fs::create_dir_all(self.socket_dir()).map_err(|e| e.to_string())?;
        let pwfile = self.dir.path().join("pw");
        std::fs::write(&pwfile, format!("{PASSWORD}\n")).map_err(|e| e.to_string())?;
        chown_tree(self.dir.path());
        let mut initdb = Command::new(self.bin.join("initdb"));
        initdb
            .args(["-D"])
            .arg(self.data())
            .args(["-U", ROLE, "--auth=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .env("LANG", "C.UTF-8");
        quiet(&mut unprivileged(&initdb), "initdb")
    }

    fn launch(&self) -> Result<(), String> {
        let mut ctl = Command::new(self.bin.join("pg_ctl"));
        ctl.args(["-D"]).arg(self.data()).args(["-l"]).arg(self.dir.path().join("log")).arg("-o").arg(format!(
            "-k {} -p {} -c listen_addresses='' -c fsync=off -c unix_socket_permissions=0777 -c max_connections=200",
            self.socket_dir().display(),
            self.port
        ));
        ctl.args(["-w", "start"]);
        quiet(&mut unprivileged(&ctl), "pg_ctl start")
    }

    fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.sql("postgres", "SELECT 1").is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("PostgreSQL did not answer within {limit:?}; its log: {}", self.log()))
    }

    /// Runs one SQL statement with `psql` as the role; its output.
    pub fn sql(&self, dbname: &str, statement: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", ROLE, "-d", dbname, "-c", statement])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .map_err(|e| e.to_string())?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    /// Stops the server (fast shutdown: connections are closed), to be started again by [`Postgres::resume`].
    pub fn stop(&self) {
        let mut ctl = Command::new(self.bin.join("pg_ctl"));
        ctl.args(["-D"]).arg(self.data()).args(["-m", "fast", "-w", "stop"]);
        let _ = quiet(&mut unprivileged(&ctl), "pg_ctl stop");
    }

    /// Starts a stopped server again on the same socket and data.
    pub fn resume(&self) -> Result<(), String> {
        self.launch()?;
        self.wait_ready(Duration::from_secs(60))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut ctl = Command::new(self.bin.join("pg_ctl"));
        ctl.args(["-D"]).arg(self.data()).args(["-m", "immediate", "-w", "stop"]);
        let _ = quiet(&mut unprivileged(&ctl), "pg_ctl stop");
    }
}

fn quiet(cmd: &mut Command, what: &str) -> Result<(), String> {
    let output = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{what}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
