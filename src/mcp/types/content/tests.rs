use super::*;

#[test]
fn every_block_round_trips_and_borrows() {
    let text = r#"[{"type":"text","text":"hi"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain","text":"t"}},{"type":"resource_link","uri":"test://y","name":"y","size":3}]"#;
    let blocks: Vec<Content<'_>> = serde_json::from_str(text).unwrap();
    assert_eq!(blocks.len(), 5);
    assert!(matches!(&blocks[0], Content::Text { text: Cow::Borrowed("hi"), .. }));
    assert_eq!(serde_json::to_string(&blocks).unwrap(), text);
}

#[test]
fn an_unknown_block_type_is_refused() {
    assert!(serde_json::from_str::<Content<'_>>(r#"{"type":"video","data":""}"#).is_err());
    assert!(serde_json::from_str::<Content<'_>>(r#"{"text":"no type"}"#).is_err());
    assert!(serde_json::from_str::<Content<'_>>(r#"{"type":"image","data":"AA=="}"#).is_err());
}
