use super::*;

#[test]
fn only_an_accepted_answer_lends_its_fields() {
    let accepted: ElicitResult<'_> =
        serde_json::from_str(r#"{"action":"accept","content":{"name":"Ada","ok":true}}"#).unwrap();
    assert_eq!(accepted.text("name").unwrap().as_deref(), Some("Ada"));
    assert_eq!(accepted.flag("ok").unwrap(), Some(true));
    // Content the client sent with a decline or a cancel is not the user's answer.
    for action in ["decline", "cancel"] {
        let text = format!(r#"{{"action":"{action}","content":{{"name":"Ada","ok":true}}}}"#);
        let r: ElicitResult<'_> = serde_json::from_str(&text).unwrap();
        assert_eq!(r.text("name").unwrap(), None, "{action}");
        assert_eq!(r.flag("ok").unwrap(), None, "{action}");
    }
}
