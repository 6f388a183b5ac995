//! A server run as a child process (real `sh` children): a child that exits says how (its
//! status and the end of its stderr, bounded), and what a child starts is ended with it when
//! the connection closes or is dropped.

use std::time::Duration;

use mcpwire::client::{Client, ClientError, Stage};
use mcpwire::peer::{ChildExit, CloseReason, NoHandler, PeerBuilder};
use mcpwire::transport::{ChildStderr, ConnectOptions, Target};

mod common;

use common::{eventually, within};

fn sh(script: &str) -> Target {
    Target::command("sh", ["-c", script])
}

/// How connecting to a child that exits at once failed: its exit, as the connection's end.
async fn exit_of(client: mcpwire::client::ClientBuilder, target: Target) -> ChildExit {
    match within(client.connect(target)).await {
        Err(ClientError::Closed(CloseReason::Exited(exit))) => exit,
        other => panic!("the child's exit expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_at_once_says_its_status_and_stderr() {
    let exit = exit_of(Client::builder(), sh("echo boom >&2; exit 3")).await;
    assert_eq!((exit.code, exit.signal), (Some(3), None), "{exit:?}");
    assert_eq!(exit.stderr, "boom");
    assert!(exit.to_string().contains("exit status: 3") && exit.to_string().contains("boom"));

    let exit = exit_of(Client::builder(), "stdio:no_such_command_here".parse().unwrap()).await;
    assert_eq!(exit.code, Some(127), "{exit:?}");
    assert!(exit.stderr.contains("no_such_command_here"), "{exit:?}");
}

/// A child that reads and never answers: connecting fails within its own bound, at the probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_to_a_child_that_never_answers_is_bounded() {
    let client = Client::builder().connect_timeout(Duration::from_millis(300));
    let e = within(client.connect(sh("cat > /dev/null"))).await.unwrap_err();
    assert!(matches!(&e, ClientError::ConnectTimeout { stage: Stage::Probe }), "{e:?}");
    assert!(e.to_string().contains("server/discover"), "{e}");
}

/// The stderr kept is the end of it, at most the bound; the bound is the host's to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stderr_kept_is_bounded_to_its_end() {
    let script = "i=0; while [ $i -lt 600 ]; do echo line-$i-of-some-noise >&2; i=$((i+1)); done; \
                  echo last words >&2; exit 1";
    let exit = exit_of(Client::builder(), sh(script)).await;
    assert!(exit.stderr.len() <= 4096 && exit.stderr.len() > 4000, "{}", exit.stderr.len());
    assert!(exit.stderr.ends_with("last words"), "{:?}", exit.stderr);
    // At the bound and past it.
    let exit =
        exit_of(Client::builder().stderr_tail(10), sh("printf 0123456789 >&2; exit 1")).await;
    assert_eq!(exit.stderr, "0123456789");
    let exit = exit_of(Client::builder().stderr_tail(4), sh("printf 0123456789 >&2; exit 1")).await;
    assert_eq!(exit.stderr, "6789");
    let exit = exit_of(Client::builder().stderr_tail(0), sh("echo x >&2; exit 1")).await;
    assert_eq!(exit.stderr, "");
    // Lines still reach the host's own sink.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let lines = ChildStderr::Lines(std::sync::Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_owned());
    }));
    let exit = exit_of(Client::builder().stderr(lines), sh("echo a >&2; echo b >&2; exit 2")).await;
    assert_eq!(exit.stderr, "a\nb");
    assert_eq!(*seen.lock().unwrap(), ["a", "b"]);
}

/// Whether process `pid` is gone: no such process, or one that exited and waits to be reaped
/// (by whatever reaps orphans here).
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
    matches!(state, Some(Some('Z' | 'X'))) || stat.is_empty()
}

/// A child that starts a process of its own and waits for it forever: what it writes to
/// `file` is that process's pid.
async fn hanging_child(
    file: &std::path::Path,
) -> (mcpwire::peer::PeerHandle, mcpwire::peer::ConnectionTask, i32) {
    let script = format!("sleep 1000 & echo $! > {}; wait", file.display());
    let (peer, conn) = sh(&script)
        .connect(&PeerBuilder::new(), NoHandler, &ConnectOptions::default())
        .await
        .unwrap();
    eventually("the child wrote its child's pid", || {
        std::fs::read_to_string(file).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let pid: i32 = std::fs::read_to_string(file).unwrap().trim().parse().unwrap();
    assert!(!gone(pid), "the grandchild runs");
    (peer, conn, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_ends_what_the_child_started() {
    let dir = std::env::temp_dir().join(format!("mcpwire-child-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("closed.pid");
    let (_peer, mut conn, pid) = hanging_child(&file).await;
    let child = conn.child_id().unwrap() as i32;
    conn.close();
    assert_eq!(within(conn.closed()).await, CloseReason::Local);
    assert!(gone(child), "the child is reaped");
    assert!(gone(pid), "the grandchild {pid} was ended with its group");

    // Dropped rather than closed: the same, in the background.
    let file = dir.join("dropped.pid");
    let (_peer, conn, pid) = hanging_child(&file).await;
    drop(conn);
    let settle = Duration::from_secs(10);
    tokio::time::timeout(settle, async {
        while !gone(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the grandchild of a dropped connection was ended");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Client::close` on a child server returns once the child has exited and what it left
/// running in its group has been ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_close_waits_for_the_child_and_its_group() {
    let dir = std::env::temp_dir().join(format!("mcpwire-close-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("left.pid");
    // A legacy server in sh: it answers `initialize`, then reads until its stdin ends, leaving
    // a process of its own running behind it.
    let script = format!(
        r#"sleep 1000 & echo $! > {}
read line
id=$(printf '%s\n' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"sh","version":"1"}}}}}}\n' "$id"
cat > /dev/null"#,
        file.display()
    );
    let client = Client::builder().protocol_version("2025-11-25".parse().unwrap());
    let client = within(client.connect(sh(&script))).await.unwrap();
    assert_eq!(client.server_info().unwrap().name, "sh");
    let pid: i32 = std::fs::read_to_string(&file).unwrap().trim().parse().unwrap();
    assert!(!gone(pid));
    within(client.close()).await;
    assert!(gone(pid), "close returned before the child's group was ended");
    let _ = std::fs::remove_dir_all(&dir);
}
