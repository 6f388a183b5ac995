use serde_json::json;

use super::*;

/// The form of SEP-1034: every field optional, each with a default.
fn form() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]}
    }, "required": []})
}

#[test]
fn every_omitted_field_with_a_default_is_filled() {
    let mut content = Map::new();
    assert_eq!(apply_defaults(&form(), &mut content), 6);
    assert_eq!(
        Value::Object(content),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active",
            "verified": true, "tags": ["a", "b"]})
    );
}

#[test]
fn given_fields_are_kept_and_null_ones_filled() {
    let mut content = Map::new();
    content.insert("name".into(), json!("Ann"));
    content.insert("verified".into(), json!(false));
    content.insert("age".into(), Value::Null);
    assert_eq!(apply_defaults(&form(), &mut content), 4);
    assert_eq!(content["name"], "Ann");
    assert_eq!(content["verified"], false);
    assert_eq!(content["age"], 30);
}

#[test]
fn a_default_that_does_not_fit_its_field_is_not_sent() {
    let schema = json!({"properties": {
        "age": {"type": "integer", "default": 30.5},
        "name": {"type": "string", "default": 7},
        "ok": {"type": "boolean", "default": "yes"},
        "obj": {"type": "object", "default": {}},
        "tags": {"type": "array", "default": [1]},
        "pick": {"enum": ["x", "y"], "default": "z"},
        "pick2": {"enum": ["x", "y"], "default": "y"},
        "bare": {"default": 1},
        "weird": 5
    }});
    let mut content = Map::new();
    assert_eq!(apply_defaults(&schema, &mut content), 1);
    assert_eq!(Value::Object(content), json!({"pick2": "y"}));
}

#[test]
fn a_default_outside_its_typed_fields_choices_is_not_sent() {
    let schema = json!({"properties": {
        "pick": {"type": "string", "enum": ["x", "y"], "default": "z"},
        "titled": {"type": "string", "oneOf": [{"const": "x", "title": "X"}], "default": "z"},
        "many": {"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": ["x", "z"]},
        "many2": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}, "default": ["z"]},
        "ok": {"type": "string", "enum": ["x", "y"], "default": "y"},
        "ok2": {"type": "string", "oneOf": [{"const": "x", "title": "X"}], "default": "x"},
        "ok3": {"type": "array", "items": {"type": "string", "enum": ["x", "w"]}, "default": ["w"]}
    }});
    let mut content = Map::new();
    assert_eq!(apply_defaults(&schema, &mut content), 3);
    assert_eq!(Value::Object(content), json!({"ok": "y", "ok2": "x", "ok3": ["w"]}));
}

#[test]
fn schemas_without_properties_fill_nothing() {
    for schema in [json!(null), json!({}), json!({"properties": []}), json!("s")] {
        let mut content = Map::new();
        assert_eq!(apply_defaults(&schema, &mut content), 0, "{schema}");
        assert!(content.is_empty());
    }
}

#[test]
fn accepting_builds_the_elicit_result_and_refuses_what_has_no_form() {
    let params = json!({"message": "m", "requestedSchema": form()}).to_string();
    let r = accept_with_defaults(RawJson::new(&params), Map::new()).unwrap();
    assert_eq!(r["action"], "accept");
    assert_eq!(r["content"]["score"], 95.5);
    for bad in [
        "[]",
        "{",
        r#"{"message":"m"}"#,
        r#"{"message":"m","requestedSchema":1}"#,
        r#"{"mode":"url","url":"https://x","message":"m","elicitationId":"1"}"#,
    ] {
        assert!(accept_with_defaults(RawJson::new(bad), Map::new()).is_err(), "{bad}");
    }
}
