//! What an operator applies to run `mcpwire load` past one machine (cli/deploy/): the
//! Kubernetes manifests pass the API's schemas offline (kubernetes-validate from PyPI, installed
//! by tests/deploy/install.sh into target/deploy/venv, or MCPWIRE_DEPLOY_DIR's venv, when
//! missing; without it the test fails with the installer's output), and the Jobs' own commands,
//! run here as N generator processes and one merge against one `mcpwire serve --http`, give a
//! merged report that is the sum of the generators' reports.

#[path = "installs/mod.rs"]
mod installs;
mod load_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use load_support::{BIN, serve_on};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> [PathBuf; 2] {
    let dir = root().join("deploy/kubernetes");
    [dir.join("load.yaml"), dir.join("merge.yaml")]
}

fn venv_bin(name: &str) -> PathBuf {
    installs::deploy_dir().join("venv/bin").join(name)
}

fn install() {
    let out = Command::new("bash").arg(root().join("tests/deploy/install.sh")).output().unwrap();
    assert!(
        out.status.success(),
        "installing kubernetes-validate failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `kubernetes-validate --strict` (unknown fields refused) on `files`: success and the output.
fn validate(files: &[PathBuf]) -> (bool, String) {
    let out =
        Command::new(venv_bin("kubernetes-validate")).arg("--strict").args(files).output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn the_manifests_pass_the_kubernetes_schemas_offline() {
    install();
    let (ok, text) = validate(&manifests());
    assert!(ok, "{text}");
    for resource in
        ["persistentvolumeclaim/mcpwire-results", "job/mcpwire-load", "job/mcpwire-load-merge"]
    {
        assert!(text.contains(&format!("passed for resource {resource}")), "{resource}: {text}");
    }
    // The control: one misspelt field fails, so the check reads what it is given.
    let load = std::fs::read_to_string(&manifests()[0]).unwrap();
    assert!(load.contains("completionMode: Indexed"));
    let broken = temp("broken.yaml");
    std::fs::write(&broken, load.replace("completionMode: Indexed", "completionMod: Indexed"))
        .unwrap();
    let (ok, text) = validate(&[broken]);
    assert!(!ok, "a misspelt field passed: {text}");
}

/// The manifests as JSON (PyYAML comes with kubernetes-validate): one value per document.
fn documents(path: &Path) -> Vec<Value> {
    let out = Command::new(venv_bin("python"))
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one container of a Job's pod: its `sh -c` script and its environment.
fn container(job: &Value) -> (String, Vec<(String, String)>) {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], serde_json::json!(["sh", "-c"]), "{c}");
    let script = c["args"][0].as_str().unwrap().to_owned();
    let env = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["value"].as_str().unwrap().to_owned()))
        .collect();
    (script, env)
}

/// Runs a Job's script as its pod would, with `mcpwire` this build's binary and `over` in
/// place of the manifest's values.
fn run_pod(script: &str, env: &[(String, String)], over: &[(&str, String)]) -> std::process::Child {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).env("PATH", path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    for (k, v) in over {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

#[test]
fn the_jobs_commands_fan_out_and_merge_to_the_sum() {
    install();
    let load = documents(&manifests()[0]);
    let generators = load.iter().find(|d| d["kind"] == "Job").expect("the generators' Job");
    assert_eq!(generators["spec"]["completionMode"], "Indexed");
    let merge = documents(&manifests()[1]).remove(0);
    let (gen_script, gen_env) = container(generators);
    let (merge_script, merge_env) = container(&merge);

    let (_server, target) = serve_on(&["--http", "0"]);
    let results = temp("results");
    std::fs::create_dir_all(&results).unwrap();
    let n = 3;
    let over = |i: usize| {
        vec![
            ("TARGET", target.clone()),
            ("RATE", "100".to_owned()),
            ("DURATION", "2".to_owned()),
            ("RESULTS", results.display().to_string()),
            ("JOB_COMPLETION_INDEX", i.to_string()),
        ]
    };
    let pods: Vec<_> = (0..n).map(|i| run_pod(&gen_script, &gen_env, &over(i))).collect();
    for mut pod in pods {
        assert!(pod.wait().unwrap().success(), "a generator failed");
    }
    let reports: Vec<Value> = (0..n)
        .map(|i| {
            let text = std::fs::read(results.join(format!("gen-{i}.json"))).unwrap();
            serde_json::from_slice(&text).unwrap()
        })
        .collect();
    let mut merged =
        run_pod(&merge_script, &merge_env, &[("RESULTS", results.display().to_string())]);
    assert!(merged.wait().unwrap().success(), "the merge failed");
    let merged: Value =
        serde_json::from_slice(&std::fs::read(results.join("report.json")).unwrap()).unwrap();
    assert!(std::fs::read_to_string(results.join("report.html")).unwrap().contains("<svg"));

    let sum = |key: &str| reports.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    assert!(reports.iter().all(|r| r["requests"].as_u64() > Some(50)), "{reports:?}");
    assert_eq!(merged["requests"].as_u64(), Some(sum("requests")), "{merged}");
    assert_eq!(merged["errors"].as_u64(), Some(sum("errors")), "{merged}");
    let op = |r: &Value| r["operations"][0]["requests"].as_u64().unwrap();
    assert_eq!(op(&merged), reports.iter().map(op).sum::<u64>());
    // The merged latencies lie within the generators' own.
    let p99 = |r: &Value| r["latency_us"]["p99"].as_u64().unwrap();
    let (lo, hi) = (reports.iter().map(p99).min().unwrap(), reports.iter().map(p99).max().unwrap());
    let m = p99(&merged);
    assert!(lo * 99 / 100 <= m && m <= hi * 101 / 100, "{lo} ≤ {m} ≤ {hi}");
}
