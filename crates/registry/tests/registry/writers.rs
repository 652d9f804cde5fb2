//! Concurrent and killed writers: no lost update, no torn file, no temp that survives cleanup
//! (issue proof items; 80 RG12, RG13; 90 Q6, Q7 at test scale).

use std::fs;
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_box_tests::kill;

use crate::common::*;

#[test]
fn four_writers_times_250_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let gate = dir.path().join("gate");
    let start = Instant::now();
    let children: Vec<_> = (0..4)
        .map(|i| {
            example_cmd("rmw")
                .arg(&registry)
                .arg("shared")
                .arg("250")
                .arg(format!("own{i}"))
                .env("RMW_GATE", &gate)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    fs::write(&gate, b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let wall = start.elapsed();
    let shared = read_counter(&registry, "shared");
    eprintln!("4x250 locked read-modify-writes: {wall:?} wall, {} lost updates", 1000 - shared);
    assert_eq!(shared, 1000, "lost updates");
    for i in 0..4 {
        assert_eq!(read_counter(&registry, &format!("own{i}")), 250);
    }
}

// RG12
#[test]
fn readers_never_see_a_torn_document() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    fs::write(&registry, b"{\"version\":1,\"sessions\":{}}\n").unwrap();
    let mut children: Vec<_> = (0..4)
        .map(|_| example_cmd("rmw").arg(&registry).args(["c", "50"]).stdout(Stdio::null()).spawn().unwrap())
        .collect();
    let mut reads = 0;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        let bytes = fs::read(&registry).unwrap();
        assert!(registry::Document::parse(&bytes).is_ok(), "torn read: {:?}", String::from_utf8_lossy(&bytes));
        reads += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(reads > 0);
    assert_eq!(read_counter(&registry, "c"), 200);
}

// RG13
#[test]
fn writers_killed_at_random_points_never_corrupt_or_lose_a_commit() {
    let seed = kill::test_seed();
    eprintln!("rg13 seed {seed} (AGENT_BOX_TEST_SEED replays)");
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("sessions.json");
    let filler: String = (0..50).map(|i| format!(",\"f{i}\":{{\"agent\":\"tool\",\"n\":{i}}}")).collect();
    fs::write(&registry, format!("{{\"version\":1,\"sessions\":{{\"c\":{{\"count\":0}}{filler}}}}}\n")).unwrap();
    let lock = registry.with_extension("json.lock");
    let mut last_committed = 0;
    // The harness's kill engine: one writer (rmw, 1000 increments), killed at a point in its first 20 ms.
    let mut kills = kill::KillLoop::new(seed);
    kills
        .run::<()>(200, &[Duration::from_millis(20)], |_, kill::Pick { iteration: round, delay, .. }| {
            let mut cmd = example_cmd("rmw");
            cmd.arg(&registry).args(["c", "1000"]).stdout(Stdio::piped());
            let mut ended = kill::run_killed(&mut cmd, Some(delay)).unwrap();
            let mut printed = String::new();
            ended.child.stdout.take().unwrap().read_to_string(&mut printed).unwrap();
            if let Some(n) = printed.lines().filter_map(|l| l.strip_prefix("committed ")).next_back() {
                last_committed = n.parse().unwrap();
            }
            let bytes = fs::read(&registry).unwrap();
            assert!(registry::Document::parse(&bytes).is_ok(), "round {round}: registry invalid");
            let count = read_counter(&registry, "c");
            assert!(
                count >= last_committed && count <= last_committed + 1,
                "round {round}: {count} vs {last_committed}"
            );
            last_committed = count;
            assert!(lock_is_free(&lock), "round {round}: a killed writer's flock must die with it");
            Ok(())
        })
        .unwrap();
    registry::with_lock(
        &registry,
        Duration::from_secs(1),
        registry::LockPolicy::SUPERVISOR,
        registry::remove_temp_leftovers,
    )
    .unwrap();
    assert!(registry::atomic::temp_leftovers_of(&registry).is_empty(), "no temp survives the cleanup");
}
