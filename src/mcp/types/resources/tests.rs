use super::*;

#[test]
fn templates_match_only_what_they_describe() {
    let mut seen = Vec::new();
    assert!(match_template("a://{x}/b/{y}", "a://1/b/2", |n, v| seen
        .push((n.to_owned(), v.to_owned()))));
    assert_eq!(seen, [("x".to_owned(), "1".to_owned()), ("y".to_owned(), "2".to_owned())]);
    assert!(!match_template("a://{x}/b", "a://1/c", |_, _| {}));
    assert!(!match_template("a://{x}/b", "a://1/2/b", |_, _| {}));
    assert!(!match_template("a://{x}", "b://1", |_, _| {}));
    assert!(match_template("a://fixed", "a://fixed", |_, _| {}));
    assert!(!match_template("a://{x}", "a://", |_, _| {}));
    assert!(!match_template("a://{unclosed", "a://x", |_, _| {}));
}
