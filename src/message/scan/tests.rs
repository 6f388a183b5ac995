use super::*;

fn all(text: &str) -> Result<Vec<(String, String)>, ScanError> {
    Scan::new(text)?.map(|m| m.map(|m| (m.key.to_owned(), m.value.to_owned()))).collect()
}

#[test]
fn members_are_found_as_written() {
    let got =
        all(r#" { "a" : 1 , "b":{"c":[1,{"d":"}"}]},"e\"f":"x\\\"y", "g":null,"h":-1.5e3 } "#)
            .unwrap();
    let want = [
        ("a", "1"),
        ("b", r#"{"c":[1,{"d":"}"}]}"#),
        (r#"e\"f"#, r#""x\\\"y""#),
        ("g", "null"),
        ("h", "-1.5e3"),
    ];
    assert_eq!(got, want.map(|(k, v)| (k.to_owned(), v.to_owned())));
    assert_eq!(all("{}").unwrap(), []);
    let m = Scan::new(r#"{"a\u0062":1}"#).unwrap().next().unwrap().unwrap();
    assert!(m.is("ab"));
    assert!(!m.is("a"));
}

#[test]
fn escapes_anywhere_in_a_key_are_seen() {
    for n in 40..60 {
        let key = format!("{}\\\"{}", "a".repeat(n), "b".repeat(n % 7));
        let unescaped = format!("{}\"{}", "a".repeat(n), "b".repeat(n % 7));
        let text = format!(r#"{{"{key}":"{key}","plain{n}":1}}"#);
        let got: Vec<Member<'_>> = Scan::new(&text).unwrap().map(Result::unwrap).collect();
        assert_eq!(got.len(), 2, "{text}");
        assert!(got[0].is(&unescaped), "{text}");
        assert_eq!(got[0].value, format!("\"{key}\""));
        assert!(got[1].is(&format!("plain{n}")), "{text}");
    }
}

#[test]
fn what_is_not_an_object_or_not_well_formed_is_said_so() {
    for t in ["[1]", "1", "\"{\"", ""] {
        assert_eq!(all(t).unwrap_err(), ScanError::NotObject, "{t:?}");
    }
    for t in [
        "{",
        r#"{"a"}"#,
        r#"{"a":}"#,
        r#"{"a":1"#,
        r#"{"a":"x}"#,
        r#"{"a":[1,2}"#,
        r#"{"a":1 "b":2}"#,
        r#"{,"a":1}"#,
        r#"{"a":1,}"#,
        r#"{"a\"#,
        r#"{a:1}"#,
    ] {
        assert_eq!(all(t).unwrap_err(), ScanError::Malformed, "{t:?}");
    }
}

#[test]
fn deep_nesting_costs_no_stack() {
    let deep = format!(r#"{{"a":{}{}}}"#, "[".repeat(1_000_000), "]".repeat(1_000_000));
    assert_eq!(all(&deep).unwrap().len(), 1);
}

#[cfg(feature = "mcp")]
#[test]
fn is_value_agrees_with_serde_json() {
    let deep_ok = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let deep_bad = format!("{}1{}", "[".repeat(300), "]".repeat(299));
    let cases = [
        r#"{"x":1}"#,
        r#"{"x":}"#,
        r#"{"x" 1}"#,
        r#"{"x":[1,]}"#,
        r#"{"x":[1,{"y":"}"}]}"#,
        r#"{"x":tru}"#,
        r#"{"x":"\q"}"#,
        r#"{"x":"\u00e9\n"}"#,
        r#"{"x":"\u00g9"}"#,
        r#"{"x":-0.5e+3}"#,
        r#"{"x":01}"#,
        r#"{"x":1.}"#,
        r#"{"x":-}"#,
        r#"{"a":1,}"#,
        r#"{,"a":1}"#,
        r#"[1 2]"#,
        r#"{"a":[}"#,
        r#"{"a":{]}"#,
        r#"{} {}"#,
        r#"{"a":{"b":[true,false,null,"s",{}]}}"#,
        "{\"a\":\"tab\there\"}",
        "",
        &deep_ok,
        &deep_bad,
    ];
    for text in cases {
        let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        assert_eq!(is_value(text), serde, "{text:.60}");
    }
}
