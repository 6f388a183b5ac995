use super::*;

#[test]
fn a_sealed_state_opens_only_unchanged_and_under_its_key() {
    let key = StateKey::new([7; 32]);
    let sealed = key.seal("tools/call greet", r#"{"round":1}"#);
    assert_eq!(key.open("tools/call greet", &sealed).as_deref(), Some(r#"{"round":1}"#));
    // Any changed byte is refused.
    for i in 0..sealed.len() {
        let mut bytes = sealed.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).unwrap();
        if changed != sealed {
            assert_eq!(key.open("tools/call greet", &changed), None, "byte {i} changed");
        }
    }
    assert_eq!(StateKey::new([8; 32]).open("tools/call greet", &sealed), None, "another key");
    assert_eq!(key.open("tools/call other", &sealed), None, "another request");
    assert_eq!(key.open("tools/call gree", &sealed), None, "a prefix of the binding");
    assert_eq!(key.open("", &sealed), None);
    assert_eq!(key.open("tools/call greet", ""), None);
    assert_eq!(key.open("tools/call greet", "no-dot"), None);
    assert_eq!(key.open("tools/call greet", "."), None);
}

#[test]
fn state_length_is_bounded_at_and_past_the_limit() {
    let key = StateKey::new([1; 32]);
    // The sealed length of a payload of n bytes: 4n/3 rounded up, a dot, a 43-byte tag.
    let sealed_len = |n: usize| n.div_ceil(3) * 4 - (3 - n % 3) % 3 + 1 + 43;
    let mut n = MAX_REQUEST_STATE_BYTES * 3 / 4 - 100;
    while sealed_len(n + 1) <= MAX_REQUEST_STATE_BYTES {
        n += 1;
    }
    let at = key.seal("b", &"x".repeat(n));
    assert_eq!(at.len(), sealed_len(n));
    assert!(at.len() <= MAX_REQUEST_STATE_BYTES);
    assert!(key.open("b", &at).is_some(), "at the bound");
    let past = key.seal("b", &"x".repeat(n + 1));
    assert!(past.len() > MAX_REQUEST_STATE_BYTES);
    assert_eq!(key.open("b", &past), None, "past the bound");
}
