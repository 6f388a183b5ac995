use super::*;
use crate::load::scenario::{Method, parse_mix};
use serde_json::json;

fn vars(pairs: &[(&str, Value)]) -> Vars {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

#[test]
fn a_whole_template_keeps_the_value_and_an_unset_one_leaves_its_member_out() {
    let v = vars(&[("n", json!(7)), ("s", json!("a b")), ("o", json!({"k": [1]}))]);
    let params = json!({
        "name": "${s}", "count": "${n}", "obj": "${o}", "cursor": "${unset}",
        "text": "n=${n}, s=${s}", "list": ["${n}", "${unset}", "x"], "keep": 1.5,
        "literal": "${not a name} and ${} and ${open",
    });
    let out = render(&params, &v).unwrap().unwrap();
    assert_eq!(
        out,
        json!({
            "name": "a b", "count": 7, "obj": {"k": [1]}, "text": "n=7, s=a b",
            "list": [7, "x"], "keep": 1.5, "literal": "${not a name} and ${} and ${open",
        })
    );
    assert!(has_template(&params) && !has_template(&json!({"a": ["${}", 1]})));
    assert_eq!(render_str("page ${unset}", &v).unwrap_err(), "missing_value");
    assert_eq!(render_str("${unset}", &v).unwrap(), None);
    assert!(Method::ToolsCall.complete(&json!({"name": "t"})));
    assert!(!Method::ToolsCall.complete(&json!({"arguments": {}})));
    assert!(!Method::ResourcesRead.complete(&json!({})));
    assert!(Method::ToolsList.complete(&json!({})));
}

#[test]
fn saved_values_follow_their_pointers_within_their_bound() {
    let mut v = Vars::new();
    let keep: BTreeMap<String, String> =
        [("cursor".into(), "/nextCursor".into()), ("uri".into(), "/resources/0/uri".into())].into();
    let page = r#"{"resources":[{"uri":"test://a"}],"nextCursor":"p2"}"#;
    save(page, &keep, &mut v, DEFAULT_MAX_SAVED_VALUE_BYTES).unwrap();
    assert_eq!(v, vars(&[("cursor", json!("p2")), ("uri", json!("test://a"))]));
    // The last page: no cursor, so the name is unset and the next list starts again.
    save(r#"{"resources":[{"uri":"test://b"}]}"#, &keep, &mut v, 1024).unwrap();
    assert_eq!(v, vars(&[("uri", json!("test://b"))]));
    assert_eq!(save("not json", &keep, &mut v, 1024).unwrap_err(), "bad_result");
    // At the bound a value is kept; one byte past it the request fails and the name is unset.
    let text = "x".repeat(98);
    let result = json!({"nextCursor": text, "resources": []}).to_string();
    save(&result, &keep, &mut v, 100).unwrap();
    assert_eq!(v["cursor"], json!(text));
    let result = json!({"nextCursor": format!("{text}x"), "resources": []}).to_string();
    assert_eq!(save(&result, &keep, &mut v, 100).unwrap_err(), "saved_value_too_large");
    assert!(!v.contains_key("cursor"));
}

#[test]
fn think_times_are_bounded_and_drawn_within_their_range() {
    assert!(Think::Fixed(0.0).check().is_ok() && Think::Fixed(MAX_THINK_MS).check().is_ok());
    for bad in [
        Think::Fixed(-1.0),
        Think::Fixed(f64::NAN),
        Think::Fixed(MAX_THINK_MS + 1.0),
        Think::Range([5.0, 1.0]),
        Think::Range([0.0, f64::INFINITY]),
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
    let mut rng = 1;
    let r = Think::Range([10.0, 20.0]);
    let picks: Vec<Duration> = (0..1000).map(|_| r.pick(&mut rng)).collect();
    assert!(picks.iter().all(|d| (10.0..=20.0).contains(&(d.as_secs_f64() * 1000.0))));
    let mean = picks.iter().map(Duration::as_secs_f64).sum::<f64>() / 1000.0 * 1000.0;
    assert!((14.0..16.0).contains(&mean), "{mean}");
    assert_eq!(Think::Fixed(250.0).pick(&mut rng), Duration::from_millis(250));
}

#[test]
fn a_session_parses_and_its_mistakes_are_refused() {
    let mix = parse_mix(
        r#"
        max_saved_value_bytes = 512
        [[step]]
        method = "resources/list"
        cursor = "${cursor}"
        save = { cursor = "/nextCursor", uri = "/resources/0/uri" }
        think_ms = [50, 250]
        [[step]]
        method = "resources/read"
        uri = "${uri}"
        think_ms = 10
        "#,
    )
    .unwrap();
    assert_eq!(mix.session, Some(Session { max_saved_value_bytes: 512 }));
    assert_eq!(mix.ops[0].think_ms, Some(Think::Range([50.0, 250.0])));
    assert!(mix.ops[0].templated() && mix.ops[1].templated());
    assert_eq!(mix.ops[0].params(), Some(json!({"cursor": "${cursor}"})));
    let plain = parse_mix("[[step]]\nmethod = \"tools/list\"\n").unwrap();
    assert_eq!(plain.session.unwrap().max_saved_value_bytes, DEFAULT_MAX_SAVED_VALUE_BYTES);
    assert!(!plain.ops[0].templated());
    for (text, why) in [
        ("[[step]]\nmethod = \"ping\"\n[[operation]]\nmethod = \"ping\"", "not both"),
        ("[[operation]]\nmethod = \"ping\"\nthink_ms = 5", "belong to a session"),
        ("[[operation]]\nmethod = \"ping\"\nsave = { a = \"/x\" }", "belong to a session"),
        ("max_saved_value_bytes = 5\n[[operation]]\nmethod = \"ping\"", "belongs to a session"),
        ("[[step]]\nmethod = \"ping\"\nthink_ms = -5", "think_ms"),
        ("[[step]]\nmethod = \"ping\"\nsave = { user = \"/x\" }", "save `user`"),
        ("[[step]]\nmethod = \"ping\"\nsave = { \"a-b\" = \"/x\" }", "save `a-b`"),
        ("[[step]]\nmethod = \"ping\"\nsave = { a = \"x\" }", "not a JSON pointer"),
        ("[[step]]\nmethod = \"ping\"\ncursor = \"c\"", "takes no `cursor`"),
    ] {
        let e = parse_mix(text).map(|_| ()).unwrap_err();
        assert!(e.contains(why), "{text}: {e}");
    }
}
