//! The typed layer (`mcpwire::mcp::types`) under hostile params: whatever a client sends, the
//! decoders return a value or an error, never panic, and agree with each other:
//!
//! - every params and result type decodes arbitrary text without panicking, and what decodes
//!   encodes back to text that decodes to an equal value;
//! - `CallToolParams::from_params` (the allocation-free scanner) and serde's `Deserialize` agree
//!   on `name`, `arguments` and `requestState` wherever both accept the text (the scanner also
//!   refuses a member named twice, which serde resolves to the last);
//! - `GetPromptParams::argument` and `ElicitResult::text`/`flag` never panic on what decoded.
//!
//! Input: the bytes are the `params` text (lossily made UTF-8, as a frame would refuse anything
//! else before these decoders run).

use mcpwire::RawJson;
use mcpwire::mcp::types::{
    CallToolParams, CallToolResult, CompleteParams, Content, CreateMessageResult, ElicitResult,
    GetPromptParams, GetPromptResult, InitializeParams, InputRequiredResult, ListParams,
    ListRootsResult, ListToolsResult, ReadResourceResult, ResourceParams, SetLevelParams,
};

/// Decodes `text` as `$t`; when it decodes, its encoding decodes to an equal value.
macro_rules! round_trip {
    ($t:ty, $text:expr) => {{
        let value: Option<$t> = serde_json::from_str($text).ok();
        if let Some(v) = &value {
            let again = serde_json::to_string(v).expect("a decoded value encodes");
            let back: $t = serde_json::from_str(&again)
                .unwrap_or_else(|e| panic!("{again:?} does not decode again: {e}"));
            assert_eq!(&back, v, "round trip of {:?}", $text);
        }
        value
    }};
}

/// Runs every property on one input.
pub fn check_typed(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    let serde_call = round_trip!(CallToolParams<'_>, text);
    let scanned = CallToolParams::from_params(RawJson::new(text));
    if let (Some(a), Ok(b)) = (&serde_call, &scanned) {
        assert_eq!(a.name, b.name, "name of {text:?}");
        assert_eq!(
            a.arguments.as_ref().map(|r| r.get()),
            b.arguments.as_ref().map(|r| r.get()),
            "arguments of {text:?}"
        );
        assert_eq!(a.request_state, b.request_state, "requestState of {text:?}");
    }
    if let Ok(b) = &scanned {
        // What the scanner lends encodes as the exact text it found.
        let encoded = serde_json::to_string(b).expect("scanned params encode");
        let _: serde_json::Value = serde_json::from_str(&encoded).expect("and are JSON");
    }

    if let Some(p) = round_trip!(GetPromptParams<'_>, text) {
        for name in ["a", "arg1", ""] {
            let _ = p.argument(name);
        }
    }
    if let Some(r) = round_trip!(ElicitResult<'_>, text) {
        let _ = (r.text("name"), r.flag("ok"));
    }
    let _ = round_trip!(ResourceParams<'_>, text);
    let _ = round_trip!(CompleteParams<'_>, text);
    let _ = round_trip!(InitializeParams<'_>, text);
    let _ = round_trip!(ListParams<'_>, text);
    let _ = round_trip!(SetLevelParams, text);
    let _ = round_trip!(CreateMessageResult<'_>, text);
    let _ = round_trip!(ListRootsResult<'_>, text);
    let _ = round_trip!(InputRequiredResult<'_>, text);
    let _ = round_trip!(CallToolResult<'_>, text);
    let _ = round_trip!(Content<'_>, text);
    let _ = round_trip!(ListToolsResult<'_>, text);
    let _ = round_trip!(ReadResourceResult<'_>, text);
    let _ = round_trip!(GetPromptResult<'_>, text);
}
