use std::collections::BTreeMap;

use super::lines::mismatches;
use super::*;

#[test]
fn mismatches_are_the_failures_of_that_kind() {
    let mut errors = BTreeMap::new();
    errors.insert("mismatch_tool_error".to_owned(), 3);
    errors.insert("mismatch_rpc_error_-32601".to_owned(), 2);
    errors.insert("timeout".to_owned(), 7);
    assert_eq!(mismatches(&errors), 5);
}

#[test]
fn the_flags_bound_speed_and_sample() {
    assert!(parse_speed("0").is_err());
    assert!(parse_speed("1000").is_ok());
    assert!(parse_speed("1000.1").is_err());
    assert!(parse_speed("nan").is_err());
    assert!(parse_sample("0").is_err());
    assert!(parse_sample("1").is_ok());
    assert!(parse_sample("1.01").is_err());
}
