//! Every file of the JSONTestSuite (`tests/data/JSONTestSuite/test_parsing/`) POSTed as a body
//! on one session and one kept-alive connection: none is a message, so each gets 400 with a
//! JSON-RPC error body (-32700 for what is not JSON, -32600 for JSON that is not a message), and
//! the session answers a ping after each.

use crate::harness::*;

const SUITE_DIR: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/JSONTestSuite/test_parsing");

#[tokio::test]
async fn every_json_test_suite_file_is_refused_with_its_code_and_the_session_goes_on() {
    let s = serve_default().await;
    let mut c = Client::session(s.addr, NO_BATCHES).await;
    let mut files: Vec<_> = std::fs::read_dir(SUITE_DIR)
        .unwrap_or_else(|e| panic!("the JSONTestSuite corpus must be at {SUITE_DIR}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() > 300, "only {} files in {SUITE_DIR}", files.len());
    let (mut parse_errors, mut invalid) = (0, 0);
    for (n, path) in files.iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read(path).unwrap();
        let a = c.post(&body).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{name}: {a:?}");
        let code = a.json()["error"]["code"].as_i64();
        match code {
            Some(PARSE_ERROR) => parse_errors += 1,
            Some(INVALID_REQUEST) => invalid += 1,
            _ => panic!("{name}: {a:?}"),
        }
        // Valid JSON is never a parse error; what the suite says must be refused is never taken.
        if name.starts_with("y_") {
            assert_eq!(code, Some(INVALID_REQUEST), "{name}: {a:?}");
        }
        c.ping_ok(i64::try_from(n).unwrap()).await;
    }
    assert!(parse_errors > 100 && invalid > 50, "{parse_errors} parse errors, {invalid} invalid");
}
