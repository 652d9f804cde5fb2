//! The supervisor's handle on the claims database: a worker thread owns the connection, and every call waits for
//! it at most a bound (docs/boxes.md BX-4, BX-9). The loop must go on supervising the local sessions whatever the
//! network does, and a query on a connection whose peer vanished can hang for minutes; a call that runs out of
//! time abandons that worker (it ends once its query does) and the next call starts a fresh one.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use crate::config::{ClaimsConfig, PASSWORD_KEY, password_from_passfile};
use crate::store::{Store, StoreError};

/// How long one call may take before the database counts as unreachable for it.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(8);

type Job = Box<dyn FnOnce(&mut Option<Store>) + Send>;

/// The claims database of one box, reached through a worker thread.
#[derive(Debug)]
pub struct Claims {
    config: ClaimsConfig,
    home: PathBuf,
    worker: Option<Sender<Job>>,
}

impl Claims {
    /// `home` locates the env store (`PGPASSWORD`) and the default passfile `~/.pgpass`.
    pub fn new(config: ClaimsConfig, home: PathBuf) -> Self {
        Self { config, home, worker: None }
    }

    pub fn config(&self) -> &ClaimsConfig {
        &self.config
    }

    /// Runs `job` on the connection (opened, and migrated, first when there is none), within [`CALL_TIMEOUT`].
    pub fn call<R: Send + 'static>(
        &mut self,
        job: impl FnOnce(&mut Store) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (answer, wait) = mpsc::channel();
        let config = self.config.clone();
        let password = self.password();
        let work: Job = Box::new(move |store: &mut Option<Store>| {
            let result = run(store, &config, password.as_deref(), job);
            let _ = answer.send(result);
        });
        let sent = self.worker().send(work);
        if sent.is_err() {
            self.worker = None;
            return Err(StoreError::Unreachable("the claims worker stopped".into()));
        }
        match wait.recv_timeout(CALL_TIMEOUT) {
            Ok(result) => result,
            Err(_) => {
                // A wedged connection: leave that worker to its query and start afresh next time.
                self.worker = None;
                Err(StoreError::Timeout(CALL_TIMEOUT))
            }
        }
    }

    fn worker(&mut self) -> &Sender<Job> {
        self.worker.get_or_insert_with(|| {
            let (tx, rx): (Sender<Job>, Receiver<Job>) = mpsc::channel();
            std::thread::spawn(move || {
                let mut store: Option<Store> = None;
                while let Ok(job) = rx.recv() {
                    job(&mut store);
                }
            });
            tx
        })
    }

    /// The password: the env store's `PGPASSWORD`, else the passfile's line for this connection, else none.
    fn password(&self) -> Option<Vec<u8>> {
        let store = registry::envstore::store_path(&self.home);
        if let Ok(Some(values)) = registry::envstore::read(&store)
            && let Some((_, value)) = values.pairs().into_iter().find(|(k, _)| k == PASSWORD_KEY)
        {
            return Some(value);
        }
        let client = self.config.client(None).ok()?;
        let host = match client.get_hosts().first() {
            Some(postgres::config::Host::Tcp(name)) => name.clone(),
            Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = client.get_ports().first().map_or_else(|| "5432".to_owned(), |p| p.to_string());
        let user = client.get_user().map(str::to_owned).or_else(registry::paths::passwd_name).unwrap_or_default();
        let dbname = client.get_dbname().map_or_else(|| user.clone(), str::to_owned);
        let passfile = self.config.passfile.clone().unwrap_or_else(|| self.home.join(".pgpass"));
        password_from_passfile(&passfile, &host, &port, &dbname, &user)
    }
}

/// One job on the worker: open the connection when there is none; an error that may have broken the connection
/// drops it, so the next job reconnects.
fn run<R>(
    store: &mut Option<Store>,
    config: &ClaimsConfig,
    password: Option<&[u8]>,
    job: impl FnOnce(&mut Store) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    if store.is_none() {
        *store = Some(Store::open(config, password)?);
    }
    let Some(open) = store.as_mut() else { return Err(StoreError::Unreachable("no connection".into())) };
    let result = job(open);
    if matches!(result, Err(StoreError::Unreachable(_))) {
        *store = None;
    }
    result
}
