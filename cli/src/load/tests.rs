use super::*;

#[test]
fn targets_parse_and_print_back() {
    for s in [
        "embedded",
        "stdio:node server.js stdio",
        "tcp:127.0.0.1:7000",
        "unix:/tmp/s",
        "http://127.0.0.1:3001/mcp",
        "https://mcp.example:8443/mcp",
    ] {
        assert_eq!(parse_target(s).unwrap().to_string(), s);
    }
    for bad in ["", "stdio:", "ftp://x", "tcp"] {
        assert!(parse_target(bad).is_err(), "{bad}");
    }
}

#[test]
fn messages_have_the_asked_size_and_need_escaping() {
    for bytes in [10, 64, 1000] {
        let m = message(7, bytes, &filler(bytes));
        assert!(m.starts_with("#7 "));
        // Cut on a character boundary: short of the size by less than one character.
        assert!(m.len() <= bytes && m.len() + 4 > bytes, "{bytes}: {}", m.len());
    }
    // Never shorter than its unique prefix.
    assert_eq!(message(7, 0, &filler(0)), "#7 ");
    let m = message(1, 200, &filler(200));
    assert!(m.contains('"') && m.contains('\n') && m.contains('é') && m.contains('😀'));
}
