//! The argv of every tmux call, as pure functions, so the exact words can be checked without running tmux.

use std::ffi::{OsStr, OsString};

use base::SessionName;

use crate::api::NewSession;
use crate::config::TmuxConfig;
use crate::escape::{escape_format, exact_session, exact_session_pane};
use crate::hook::{WAKE_HOOK_NAME, WakeHook};
use crate::identity::{SESSION_ID_FORMAT, SessionId};

/// The format every listing asks for; it is ours, not data, so it is not escaped.
pub(crate) const SESSION_NAME_FORMAT: &str = "#{session_name}";

/// tmux runs the commands of one client in order and skips the rest after a failing one.
const SEPARATOR: &str = ";";

/// `[-f conf] [-N] -L socket COMMAND…`: the arguments after the program name.
pub(crate) fn client_args(config: &TmuxConfig, command: Vec<OsString>) -> Vec<OsString> {
    let mut args = Vec::with_capacity(command.len() + 5);
    if let Some(conf) = &config.conf {
        args.push("-f".into());
        args.push(conf.as_os_str().to_owned());
    }
    if config.never_start {
        args.push("-N".into());
    }
    args.push("-L".into());
    args.push(config.socket.clone().into());
    args.extend(command);
    args
}

/// `[-f conf] -D -L socket`: a server in the foreground, as the tmux unit of 75-upgrades (UP-2.1) runs it. `-D`
/// takes no command and turns `exit-empty` off; `-N` would contradict it, so it is never added here.
pub(crate) fn foreground_server(config: &TmuxConfig) -> Vec<OsString> {
    let mut args = Vec::with_capacity(5);
    if let Some(conf) = &config.conf {
        args.push("-f".into());
        args.push(conf.as_os_str().to_owned());
    }
    args.extend(words(&["-D", "-L"]));
    args.push(config.socket.clone().into());
    args
}

fn words(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// The server's pid, which tells a restarted server from the same one (SUP-4.4); ours, not data.
pub(crate) const SERVER_PID_FORMAT: &str = "#{pid}";

/// One process that starts the server, keeps it up with zero sessions, prints the server's pid, and lists
/// (SUP-4.1). `display-message -p` answers without a session too (measured on 3.3a).
pub(crate) fn ensure_server_and_list() -> Vec<OsString> {
    let mut command = words(&[
        "start-server",
        SEPARATOR,
        "set-option",
        "-g",
        "exit-empty",
        "off",
        SEPARATOR,
        "display-message",
        "-p",
        SERVER_PID_FORMAT,
        SEPARATOR,
    ]);
    command.extend(list_sessions());
    command
}

/// The snapshot of [`ensure_server_and_list`] from a server that its own unit runs (75-upgrades UP-3.1): the
/// server's pid, then the sessions, and nothing that starts or configures a server (`tmux -D` already keeps
/// `exit-empty` off). Without a server the client fails with "no server running", which is the answer.
pub(crate) fn list_server() -> Vec<OsString> {
    let mut command = words(&["display-message", "-p", SERVER_PID_FORMAT, SEPARATOR]);
    command.extend(list_sessions());
    command
}

/// `attach-session -t =NAME`: the exact session, never a prefix match.
pub(crate) fn attach_session(name: &SessionName) -> Vec<OsString> {
    vec!["attach-session".into(), "-t".into(), exact_session(name)]
}

/// `switch-client -t =NAME`, for a caller that is already a client of this server.
pub(crate) fn switch_client(name: &SessionName) -> Vec<OsString> {
    vec!["switch-client".into(), "-t".into(), exact_session(name)]
}

pub(crate) fn list_sessions() -> Vec<OsString> {
    words(&["list-sessions", "-F", SESSION_NAME_FORMAT])
}

pub(crate) fn has_session(name: &SessionName) -> Vec<OsString> {
    vec!["has-session".into(), "-t".into(), exact_session(name)]
}

pub(crate) fn kill_session(name: &SessionName) -> Vec<OsString> {
    vec!["kill-session".into(), "-t".into(), exact_session(name)]
}

/// `list-sessions -F '#{pid} #{session_id} #{session_name}'`: every session with its identity, in one client.
pub(crate) fn list_session_ids() -> Vec<OsString> {
    words(&["list-sessions", "-F", SESSION_ID_FORMAT])
}

/// What the kill of a session by identity prints when the server is not the one that gave the id.
pub(crate) const OTHER_SERVER: &str = "agent-box: another tmux server";

/// Kills session `id` in one client, and only on the server that gave it: `if-shell -F` compares the server's pid
/// inside the server, so a new server that counts its ids from `$0` again never loses a session to an old id (it
/// prints [`OTHER_SERVER`] instead). Both numbers are digits we formatted; the target is quoted for tmux's parser,
/// which would read a bare `$N` as a variable.
pub(crate) fn kill_session_id(id: &SessionId) -> Vec<OsString> {
    vec![
        "if-shell".into(),
        "-F".into(),
        format!("#{{==:#{{pid}},{}}}", id.server_pid()).into(),
        format!("kill-session -t '{}'", id.target()).into(),
        format!("display-message -p '{OTHER_SERVER}'").into(),
    ]
}

/// What `new-session -P` prints: the new pane's pid (ours, not data).
pub(crate) const PANE_PID_FORMAT: &str = "#{pane_pid}";

/// `new-session -d -P -F '#{pane_pid}' -s NAME -c CWD [-e K=V]… [-- ARGV…]`. The name and directory are format positions
/// (3.3a expands both, measured); `-e` values and ARGV are not, so they pass verbatim.
pub(crate) fn new_session(request: &NewSession) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![
        "new-session".into(),
        "-d".into(),
        "-P".into(),
        "-F".into(),
        PANE_PID_FORMAT.into(),
        "-s".into(),
        escape_format(OsStr::new(request.name.as_str())),
        "-c".into(),
        escape_format(request.cwd.as_os_str()),
    ];
    for (key, value) in &request.env {
        command.push("-e".into());
        command.push(format!("{key}={value}").into());
    }
    if !request.argv.is_empty() {
        // An ARGV word starting with `-` must not be read as another flag.
        command.push("--".into());
        command.extend(request.argv.iter().cloned());
    }
    command
}

/// display-message fails silently on a missing target (it prints an empty line and exits 0, measured on
/// 3.3a), so `has-session` runs first in the same client: a missing session then stops the queue with
/// `can't find session`.
pub(crate) fn display(name: &SessionName, format: &str) -> Vec<OsString> {
    let mut command = has_session(name);
    command.push(SEPARATOR.into());
    command.extend(["display-message".into(), "-p".into(), "-t".into(), exact_session_pane(name), format.into()]);
    command
}

/// `show-environment -t =NAME KEY`: the key is ours (a constant), never data.
pub(crate) fn show_environment(name: &SessionName, key: &str) -> Vec<OsString> {
    vec!["show-environment".into(), "-t".into(), exact_session(name), key.into()]
}

/// Without a pane, tmux answers for the session in `$TMUX`; the pane id is data, so it is escaped.
pub(crate) fn current_session(pane: Option<&str>) -> Vec<OsString> {
    let mut command = words(&["display-message", "-p"]);
    if let Some(pane) = pane {
        command.push("-t".into());
        command.push(escape_format(OsStr::new(pane)));
    }
    command.push(SESSION_NAME_FORMAT.into());
    command
}

pub(crate) fn set_global_option(key: &str, value: &str) -> Vec<OsString> {
    words(&["set-option", "-g", "--", key, value])
}

/// `set-hook -g session-closed[4242] VALUE`; the value is already quoted for tmux's parser (see `hook`).
pub(crate) fn set_wake_hook(hook: &WakeHook) -> Vec<OsString> {
    vec!["set-hook".into(), "-g".into(), WAKE_HOOK_NAME.into(), hook.value().to_owned()]
}

/// `-q` makes an unset user option an empty answer instead of an error.
pub(crate) fn show_global_option(key: &str) -> Vec<OsString> {
    words(&["show-options", "-gqv", "--", key])
}

pub(crate) fn kill_server() -> Vec<OsString> {
    words(&["kill-server"])
}

/// `-V` needs no socket, so it goes without `-L` and `-f`.
pub(crate) fn version() -> Vec<OsString> {
    words(&["-V"])
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn name(text: &str) -> SessionName {
        SessionName::parse(text).unwrap()
    }

    fn strings(args: &[OsString]) -> Vec<&str> {
        args.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn client_args_put_conf_and_socket_first() {
        let config = TmuxConfig::new("/usr/bin/tmux", "abt-1-1", "/tmp/abt-1-1").with_conf("/dev/null");
        let args = client_args(&config, list_sessions());
        assert_eq!(strings(&args), ["-f", "/dev/null", "-L", "abt-1-1", "list-sessions", "-F", "#{session_name}"]);
        let bare = TmuxConfig::new("/usr/bin/tmux", "agent-box", "/run/agent-box-u");
        assert_eq!(strings(&client_args(&bare, kill_server())), ["-L", "agent-box", "kill-server"]);
    }

    #[test]
    fn ensure_server_is_one_client_with_standalone_separators() {
        assert_eq!(
            strings(&ensure_server_and_list()),
            [
                "start-server",
                ";",
                "set-option",
                "-g",
                "exit-empty",
                "off",
                ";",
                "display-message",
                "-p",
                "#{pid}",
                ";",
                "list-sessions",
                "-F",
                "#{session_name}"
            ]
        );
    }

    #[test]
    fn never_start_puts_minus_n_before_the_socket() {
        let config = TmuxConfig::new("/usr/bin/tmux", "agent-box", "/run/agent-box-u").never_starting_a_server();
        assert_eq!(
            strings(&client_args(&config, list_server())),
            ["-N", "-L", "agent-box", "display-message", "-p", "#{pid}", ";", "list-sessions", "-F", "#{session_name}"]
        );
        let with_conf = config.with_conf("/dev/null");
        assert_eq!(strings(&client_args(&with_conf, kill_server()))[..4], ["-f", "/dev/null", "-N", "-L"]);
    }

    #[test]
    fn a_foreground_server_is_minus_d_on_the_socket() {
        let config = TmuxConfig::new("/usr/bin/tmux", "abt-1-1", "/tmp/abt-1-1").with_conf("/dev/null");
        assert_eq!(strings(&foreground_server(&config)), ["-f", "/dev/null", "-D", "-L", "abt-1-1"]);
        let unit = TmuxConfig::new("/usr/bin/tmux", "agent-box", "/run/agent-box-u").never_starting_a_server();
        assert_eq!(strings(&foreground_server(&unit)), ["-D", "-L", "agent-box"]);
    }

    #[test]
    fn listing_an_external_server_neither_starts_nor_configures_one() {
        let command = list_server();
        let text = strings(&command);
        assert!(!text.contains(&"start-server") && !text.contains(&"set-option"), "{text:?}");
    }

    #[test]
    fn session_targets_are_exact() {
        assert_eq!(strings(&has_session(&name("a"))), ["has-session", "-t", "=a"]);
        assert_eq!(strings(&kill_session(&name("a"))), ["kill-session", "-t", "=a"]);
        assert_eq!(
            strings(&display(&name("a"), "#{pane_current_path}")),
            ["has-session", "-t", "=a", ";", "display-message", "-p", "-t", "=a:", "#{pane_current_path}"]
        );
    }

    #[test]
    fn a_session_is_listed_with_its_identity_and_killed_by_it_only_on_its_server() {
        assert_eq!(strings(&list_session_ids()), ["list-sessions", "-F", "#{pid} #{session_id} #{session_name}"]);
        assert_eq!(
            strings(&kill_session_id(&SessionId::new(4242, 17))),
            [
                "if-shell",
                "-F",
                "#{==:#{pid},4242}",
                "kill-session -t '$17'",
                "display-message -p 'agent-box: another tmux server'"
            ]
        );
    }

    #[test]
    fn new_session_escapes_cwd_but_not_env_or_argv() {
        let request = NewSession {
            name: name("hook-x"),
            cwd: PathBuf::from("/srv/#(touch m)/#{pane_pid}"),
            env: vec![("AGENT_BOX_SESSION_ID".to_owned(), "#{pane_pid}".to_owned())],
            argv: vec!["/bin/sh".into(), "/h/#x.launch".into()],
        };
        assert_eq!(
            strings(&new_session(&request)),
            [
                "new-session",
                "-d",
                "-P",
                "-F",
                "#{pane_pid}",
                "-s",
                "hook-x",
                "-c",
                "/srv/##(touch m)/##{pane_pid}",
                "-e",
                "AGENT_BOX_SESSION_ID=#{pane_pid}",
                "--",
                "/bin/sh",
                "/h/#x.launch"
            ]
        );
    }

    #[test]
    fn new_session_without_argv_has_no_separator() {
        let request = NewSession { name: name("a"), cwd: PathBuf::from("/"), env: Vec::new(), argv: Vec::new() };
        assert_eq!(
            strings(&new_session(&request)),
            ["new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "a", "-c", "/"]
        );
    }

    #[test]
    fn current_session_escapes_the_pane_and_omits_t_without_one() {
        assert_eq!(strings(&current_session(None)), ["display-message", "-p", "#{session_name}"]);
        assert_eq!(strings(&current_session(Some("%3#"))), ["display-message", "-p", "-t", "%3##", "#{session_name}"]);
    }

    #[test]
    fn option_commands() {
        assert_eq!(strings(&set_global_option("exit-empty", "off")), ["set-option", "-g", "--", "exit-empty", "off"]);
        assert_eq!(strings(&show_global_option("exit-empty")), ["show-options", "-gqv", "--", "exit-empty"]);
        assert_eq!(strings(&version()), ["-V"]);
        let hook = WakeHook::for_file(std::path::Path::new("/w")).unwrap();
        let args = set_wake_hook(&hook);
        let words = strings(&args);
        assert_eq!(words[..3], ["set-hook", "-g", "session-closed[4242]"]);
        assert!(words[3].starts_with("run-shell -b \"") && words.len() == 4);
    }
}
