use super::*;
use crate::mcp::types::Content;

#[test]
fn tool_results_are_written_as_serde_writes_them() {
    let block = |json: &'static str| serde_json::from_str::<Content<'static>>(json).unwrap();
    let structured = crate::mcp::types::Raw::owned(r#"{"a":[1,"x\u00e9"]}"#.into()).unwrap();
    let results = [
        CallToolResult::text("plain"),
        CallToolResult::text("a\"b\\c\nd\te\u{0}f é 日本 😀 \u{2028}"),
        CallToolResult::error("it broke"),
        CallToolResult::new(vec![]),
        CallToolResult::new(vec![
            Content::text("one"),
            block(r#"{"type":"text","text":"noted","annotations":{"priority":0.5}}"#),
            block(r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#),
            Content::text("two"),
        ]),
        CallToolResult { structured_content: Some(structured), ..CallToolResult::text("s") },
    ];
    for r in &results {
        let want = serde_json::to_string(r).unwrap();
        assert_eq!(tool_json(r, 0).unwrap(), want);
    }
}
