//! Issue 21 end to end: the real supervisor runs the example notifier docs/examples/notify-gh.sh for a recorded
//! outcome, with a fake `gh` on the `PATH` the env store gives it (and `GH_TOKEN` from the store, never on an
//! argv); the comment goes to the issue of the lease; `leases --json` then shows the outcome delivered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use agent_box_tests::fixtures::{session, stdout};
use agent_box_tests::{Sandbox, wait_until};
use base::SessionName;
use serde_json::{Value, json};

const NAME: &str = "hook-acme-api-0b1e";

fn example_notifier() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/notify-gh.sh")
}

/// A fake `gh` that records its argv (one argument a line) and the token it saw, then exits with `$FAKE_GH_EXIT`.
fn fake_gh(sb: &Sandbox) -> PathBuf {
    let bin = sb.root().join("fake-bin");
    fs::create_dir_all(&bin).unwrap();
    let out = sb.root().join("gh-calls");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{out}'.args\nprintf %s \"$GH_TOKEN\" > '{out}'.token\nexit 0\n",
        out = out.display()
    );
    fs::write(bin.join("gh"), script).unwrap();
    fs::set_permissions(bin.join("gh"), fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn the_example_notifier_comments_on_the_issue_with_the_store_s_token_and_the_lease_says_delivered() {
    let jq = ["/usr/bin/jq", "/bin/jq", "/usr/local/bin/jq"].into_iter().any(|p| std::path::Path::new(p).exists());
    assert!(jq, "jq is required by this test (cargo xtask ci installs it; Debian: sudo apt-get install jq)");
    let mut sb = Sandbox::new();
    let bin = fake_gh(&sb);
    let store = sb.home().join(".config/agent-box/env");
    fs::create_dir_all(store.parent().unwrap()).unwrap();
    fs::write(&store, format!("PATH={}:/usr/bin:/bin\nGH_TOKEN=ghp_e2e_t0ken\n", bin.display())).unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o600)).unwrap();
    let leases = lease::LeaseDir::new(sb.state_dir().join("lease"));
    let name = SessionName::parse(NAME).unwrap();
    let lease_gen = leases.create(&name, "github:acme/api", Some("612"), None).unwrap();
    leases.mark_outcome(&name, &lease::Outcome::Died(2), &lease::Expect::Any).unwrap();
    let entry = json!({"agent": "tool", "stopped": true, "life": lease_gen.to_string()});
    sb.write_registry(&json!({"version": 1, "sessions": {NAME: entry}}).to_string());
    sb.set_env("AGENT_BOX_ON_OUTCOME", example_notifier());
    sb.set_env("AGENT_BOX_HOST_LABEL", "box-e2e");
    let pid = sb.start_supervisor();
    let args_file = sb.root().join("gh-calls.args");
    wait_until("the fake gh to be called", || args_file.exists() && sb.log_count("reported the outcome of") == 1);
    let args = fs::read_to_string(&args_file).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[..5], ["api", "--method", "POST", "repos/acme/api/issues/612/comments", "-f"], "{args:?}");
    assert!(
        args[5].starts_with("body=agent-box on box-e2e: the assignment of session `hook-acme-api-0b1e`"),
        "{args:?}"
    );
    assert!(args[5].contains("its agent exited with status 2"), "{args:?}");
    assert!(!args.iter().any(|a| a.contains("ghp_e2e_t0ken")), "the token is never on an argv");
    assert_eq!(fs::read_to_string(sb.root().join("gh-calls.token")).unwrap(), "ghp_e2e_t0ken");
    let listed = session(&sb, &["leases", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(report["leases"][0]["notification"]["state"], "delivered", "{report}");
    sb.signal(pid, nix::sys::signal::Signal::SIGTERM);
}
