//! Unit tests of the env store: the reading rules, the writer's encoding, and rewrites that keep other lines.

use super::*;

/// A file as the settings daemon leaves it: the header, then its pairs in order.
const DAEMON: &str = "# Managed by agent-box settings page. KEY=value, one per line.\n\
# Do not add secrets by hand here unless you know what you are doing.\n\
GH_TOKEN=ghp_1\nANTHROPIC_API_KEY=\"sk ant\"\nQUOTED='a=b'\n";

#[test]
fn lines_are_read_as_both_old_writers_read_them() {
    assert_eq!(parse_line(b"  KEY = v a l  "), Some(("KEY".into(), b" v a l".to_vec())));
    assert_eq!(parse_line(b"KEY=\"x\""), Some(("KEY".into(), b"x".to_vec())));
    assert_eq!(parse_line(b"KEY='x'"), Some(("KEY".into(), b"x".to_vec())));
    assert_eq!(parse_line(b"KEY=\"x'"), Some(("KEY".into(), b"\"x'".to_vec())));
    assert_eq!(parse_line(b"KEY=\""), Some(("KEY".into(), b"\"".to_vec())));
    assert_eq!(parse_line(b"KEY=a=b"), Some(("KEY".into(), b"a=b".to_vec())));
    assert_eq!(parse_line(b"KEY=x\r"), Some(("KEY".into(), b"x".to_vec())));
    for bad in [&b"# KEY=x"[..], b"", b"   ", b"noequals", b"1KEY=x", b"export KEY=x", b"K-Y=x", b"=x", b"K=\0"] {
        assert_eq!(parse_line(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn the_last_of_a_key_set_twice_wins_and_keys_are_listed_once() {
    let store = Store::parse(b"A=1\nB=2\nA=3");
    assert_eq!(store.keys(), ["A", "B"]);
    assert_eq!(store.pairs()["A"], b"3");
}

#[test]
fn every_value_without_a_newline_round_trips_through_the_encoding() {
    let values: [&[u8]; 12] = [
        b"",
        b" lead",
        b"trail ",
        b"\"q\"",
        b"'q'",
        b"\"",
        b"a b=c \"d\" 'e' $(id) `id` \\",
        b"\t",
        b"x\r",
        b"\xff\xfe",
        b"#not a comment",
        b"'",
    ];
    for value in values {
        let mut store = Store::default();
        store.set("K", value);
        let back = Store::parse(&store.to_bytes());
        assert_eq!(back.pairs()["K"], value, "{:?}", String::from_utf8_lossy(value));
    }
}

#[test]
fn a_set_keeps_every_other_line_byte_for_byte() {
    let mut store = Store::parse(format!("{DAEMON}not a pair\nGH_TOKEN=old\n").as_bytes());
    store.set("GH_TOKEN", b"new");
    store.set("EXTRA", b"e");
    let expected = DAEMON.replace("GH_TOKEN=ghp_1", "GH_TOKEN=new") + "not a pair\nEXTRA=e\n";
    assert_eq!(String::from_utf8(store.to_bytes()).unwrap(), expected);
    assert!(store.remove("QUOTED") && !store.remove("QUOTED"));
    assert_eq!(store.keys(), ["ANTHROPIC_API_KEY", "EXTRA", "GH_TOKEN"]);
}

#[test]
fn keys_and_values_are_checked() {
    assert!(is_key("_a1") && is_key("GH_TOKEN") && !is_key("1a") && !is_key("") && !is_key("a-b"));
    assert!(is_reserved("AGENT_BOX_X") && is_reserved("_abx_l") && !is_reserved("AGENT_BOXX"));
    assert_eq!(check_value(b"a\nb"), Err(ValueError::Newline));
    assert_eq!(check_value(b"a\0b"), Err(ValueError::Nul));
    assert_eq!(check_value(b"a\rb"), Ok(()));
}

#[test]
fn edit_creates_a_private_file_and_directory_and_leaves_others_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfg/env");
    let ((), durability) = edit(&path, LOCK_WAIT, |s| {
        s.set("A", b"1");
        (true, ())
    })
    .unwrap();
    assert!(durability.is_some());
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&path), mode(&dir.path().join("cfg"))), (0o600, 0o700));
    assert_eq!(fs::read_to_string(&path).unwrap(), format!("{}\n{}\nA=1\n", HEADER[0], HEADER[1]));
    let (removed, durability) = edit(&path, LOCK_WAIT, |s| (false, s.contains("B"))).unwrap();
    assert!(!removed && durability.is_none());
    assert!(read(&dir.path().join("missing")).unwrap().is_none());
    assert!(matches!(read(dir.path()), Err(StoreError::NotAFile(_))));
}

/// The store every pane loads and the settings daemon writes is `~/.config/agent-box/env` (docs/env-store.md).
#[test]
fn the_store_is_config_agent_box_env_under_home() {
    assert_eq!(store_path(Path::new("/home/agent")), Path::new("/home/agent/.config/agent-box/env"));
}

/// `env set KEY` asks on the terminal: the typed line (without its newline) is the answer, echo is off while it is
/// typed, and the terminal's mode is restored afterwards.
#[test]
fn a_line_is_read_from_the_terminal_with_echo_off_and_the_mode_restored() {
    use nix::sys::termios::{LocalFlags, tcgetattr};
    use std::io::Write as _;
    use std::os::fd::AsFd;
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut master = std::fs::File::from(pty.master);
    let before = tcgetattr(pty.slave.as_fd()).unwrap().local_flags.contains(LocalFlags::ECHO);
    let mut echo_while_asking = None;
    let line = read_line_without_echo(pty.slave.as_fd(), || {
        echo_while_asking = Some(tcgetattr(pty.slave.as_fd()).unwrap().local_flags.contains(LocalFlags::ECHO));
        master.write_all(b"s3cret value\n").unwrap();
    })
    .unwrap();
    assert_eq!(line, b"s3cret value");
    assert_eq!(echo_while_asking, Some(false));
    assert!(before, "a new terminal echoes");
    assert_eq!(tcgetattr(pty.slave.as_fd()).unwrap().local_flags.contains(LocalFlags::ECHO), before);
}

/// Issue 18: only "no such file" is a missing store; a path that cannot be opened for another reason is an error.
#[test]
fn a_store_that_cannot_be_opened_is_an_error_not_absence() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(matches!(read(&file.join("env")), Err(StoreError::Read { .. })));
}

#[test]
fn contains_tells_a_set_key_from_a_missing_one() {
    let store = Store::parse(b"# comment\nA=1\n");
    assert!(store.contains("A"));
    assert!(!store.contains("B") && !store.contains("# comment"));
}

/// A store of exactly `MAX_BYTES` is read whole, to its last byte; one byte more is refused.
#[test]
fn the_size_bound_is_max_bytes_inclusive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("env");
    let last = b"Z=9";
    let filler = usize::try_from(MAX_BYTES).unwrap() - last.len();
    let mut bytes = vec![b'#'; filler - 1];
    bytes.push(b'\n');
    bytes.extend_from_slice(last);
    std::fs::write(&path, &bytes).unwrap();
    let store = read(&path).unwrap().unwrap();
    assert_eq!(store.pairs().get("Z").map(Vec::as_slice), Some(&b"9"[..]));
    bytes.insert(0, b'#');
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(read(&path), Err(StoreError::TooLarge(_))));
}
