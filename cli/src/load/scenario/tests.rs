use super::*;

#[test]
fn a_scenario_parses_with_defaults_and_names() {
    let ops = parse(
        r#"
        [[operation]]
        method = "tools/call"
        tool = "echo"
        weight = 3
        max_p99_ms = 50
        [[operation]]
        method = "tools/call"
        tool = "sleep"
        arguments = { ms = 5 }
        [[operation]]
        name = "readme"
        method = "resources/read"
        uri = "file:///README.md"
        [[operation]]
        method = "completion/complete"
        ref = { type = "ref/prompt", name = "p" }
        "#,
    )
    .unwrap();
    assert_eq!(ops[0].name, "tools/call echo");
    assert!(ops[0].generated_echo() && !ops[1].generated_echo());
    assert_eq!(ops[0].weight, 3);
    assert_eq!(ops[1].weight, 1);
    assert_eq!(ops[0].max_p99_ms, Some(50.0));
    assert_eq!(ops[2].name, "readme");
    assert_eq!(ops[1].params().unwrap(), json!({"name":"sleep","arguments":{"ms":5}}));
    assert_eq!(ops[3].params().unwrap()["ref"]["name"], "p");
}

#[test]
fn bad_scenarios_are_refused_with_a_reason() {
    for (text, why) in [
        ("", "no [[operation]]"),
        ("[[operation]]\nmethod = \"tools/call\"", "needs `tool`"),
        ("[[operation]]\nmethod = \"resources/read\"", "needs `uri`"),
        ("[[operation]]\nmethod = \"nope\"", "unknown variant"),
        ("[[operation]]\nmethod = \"ping\"\nweight = 0", "weight 0"),
        ("[[operation]]\nmethod = \"ping\"\nmax_error_rate = 1.5", "max_error_rate"),
        ("[[operation]]\nmethod = \"ping\"\nbogus = 1", "unknown field"),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(why), "{text}: {e}");
    }
    let at = "[[operation]]\nmethod = \"ping\"\n".repeat(DEFAULT_MAX_OPERATIONS);
    assert_eq!(parse(&at).unwrap().len(), DEFAULT_MAX_OPERATIONS);
    let past = "[[operation]]\nmethod = \"ping\"\n".repeat(DEFAULT_MAX_OPERATIONS + 1);
    assert!(parse(&past).unwrap_err().contains("more than"));
    let w = format!("[[operation]]\nmethod = \"ping\"\nweight = {MAX_WEIGHT}");
    assert!(parse(&w).is_ok());
    let w = format!("[[operation]]\nmethod = \"ping\"\nweight = {}", MAX_WEIGHT + 1);
    assert!(parse(&w).is_err());
}

#[test]
fn the_mix_picks_each_operation_exactly_its_weight_per_round() {
    let ops: Vec<_> = [3u64, 1, 2]
        .iter()
        .map(|&w| Operation { weight: w, ..Operation::single(Method::Ping, "", None) })
        .collect();
    let mix = Mix::new(ops);
    let mut n = [0; 3];
    for seq in 0..600 {
        n[mix.pick(seq)] += 1;
    }
    assert_eq!(n, [300, 100, 200]);
    // Interleaved, not in blocks.
    let first: Vec<_> = (0..6).map(|s| mix.pick(s)).collect();
    assert_ne!(first, vec![0, 0, 0, 1, 2, 2]);
    // Past the table's size: still each weight's share, within 1%.
    let big: Vec<_> = [MAX_TABLE, MAX_TABLE]
        .iter()
        .map(|&w| Operation { weight: w, ..Operation::single(Method::Ping, "", None) })
        .collect();
    let mix = Mix::new(big);
    let zeros = (0..100_000).filter(|&s| mix.pick(s) == 0).count();
    assert!((49_000..51_000).contains(&zeros), "{zeros}");
}

#[test]
fn checks_follow_the_method_and_expect_text() {
    let echo = Operation::single(Method::ToolsCall, "echo", None);
    let ok = r#"{"content":[{"type":"text","text":"Echo: hi there"}]}"#;
    assert_eq!(echo.check(ok, Some("hi there"), None), Ok(()));
    assert_eq!(echo.check(ok, Some("bye"), None).unwrap_err(), "echo_mismatch");
    assert_eq!(
        echo.check(r#"{"content":[],"isError":true}"#, None, None).unwrap_err(),
        "tool_error"
    );
    let want = Operation::single(Method::ToolsCall, "x", Some(json!({})));
    assert_eq!(want.check(ok, None, Some("there")), Ok(()));
    assert_eq!(want.check(ok, None, Some("nowhere")).unwrap_err(), "unexpected_result");
    let list = Operation::single(Method::ToolsList, "", None);
    assert_eq!(list.check(r#"{"tools":[]}"#, None, None), Ok(()));
    assert_eq!(list.check(r#"{"tool":[]}"#, None, None).unwrap_err(), "bad_result");
    // A multi round-trip answer is not a tool's result, whatever else it holds.
    let asks = r#"{"resultType":"input_required","inputRequests":{"a":{}}}"#;
    assert_eq!(echo.check(asks, None, None).unwrap_err(), "input_required");
    let asks = r#"{"resultType":"input_required","content":"not a list"}"#;
    assert_eq!(echo.check(asks, None, None).unwrap_err(), "input_required");
    let done = r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}]}"#;
    assert_eq!(echo.check(done, Some("hi"), None), Ok(()));
    assert_eq!(echo.check(r#"{"content":7}"#, None, None).unwrap_err(), "bad_result");
    let ping = Operation::single(Method::Ping, "", None);
    assert_eq!(ping.check("{}", None, None), Ok(()));
    assert_eq!(ping.check("[]", None, None).unwrap_err(), "bad_result");
}

#[test]
fn a_scenario_file_at_the_size_bound_loads_and_one_byte_more_does_not() {
    let dir = std::env::temp_dir().join(format!("mcpwire-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = "[[operation]]\nmethod = \"ping\"\n";
    let pad = |n: usize| format!("{body}#{}\n", "x".repeat(n - body.len() - 2));
    let at = dir.join("at.toml");
    std::fs::write(&at, pad(DEFAULT_MAX_SCENARIO_BYTES as usize)).unwrap();
    assert_eq!(load_file(&at).unwrap().ops.len(), 1);
    let past = dir.join("past.toml");
    std::fs::write(&past, pad(DEFAULT_MAX_SCENARIO_BYTES as usize + 1)).unwrap();
    assert!(load_file(&past).unwrap_err().contains("longer than"));
    assert!(load_file(&dir.join("missing.toml")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
