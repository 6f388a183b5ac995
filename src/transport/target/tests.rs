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
