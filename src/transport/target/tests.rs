use super::*;

#[test]
fn text_round_trips() {
    for s in ["stdio:python3 server.py", "tcp:127.0.0.1:7000", "unix:/run/mcp.sock"] {
        assert_eq!(s.parse::<Target>().unwrap().to_string(), s);
    }
    #[cfg(feature = "http")]
    assert_eq!("http://h:1/mcp".parse::<Target>().unwrap().to_string(), "http://h:1/mcp");
    for bad in ["", "stdio:", "tcp: ", "ftp:x", "nothing"] {
        assert!(bad.parse::<Target>().is_err(), "{bad}");
    }
}

#[test]
fn a_bad_target_says_what_is_expected_or_the_feature_it_needs() {
    let e = "ftp://x".parse::<Target>().unwrap_err().to_string();
    assert!(e.starts_with("`ftp://x`: expected stdio:COMMAND, tcp:HOST:PORT"), "{e}");
    assert_eq!(e.contains("http://HOST"), cfg!(feature = "http"), "{e}");
    for (text, on, feature) in [
        ("http://h:1/mcp", cfg!(feature = "http"), "http"),
        ("https://h/mcp", cfg!(feature = "tls"), "tls"),
    ] {
        match text.parse::<Target>() {
            Ok(t) => assert!(on && t.to_string() == text, "{text}"),
            Err(e) => {
                let scheme = &text[..text.find(':').unwrap()];
                let want =
                    format!("`{text}`: {scheme}:// targets need mcpwire's `{feature}` feature");
                assert!(!on && e.to_string() == want, "{e}");
            }
        }
    }
}
