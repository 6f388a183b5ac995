//! The decode workloads: single frames P, S, N, E, M, L, B, D and the 10,000-frame stream.

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    ToServer,
    ToClient,
}

pub(crate) struct Workload {
    pub(crate) group: &'static str,
    pub(crate) frame: Vec<u8>,
    pub(crate) direction: Direction,
    /// Messages in the frame: 1, or the batch length.
    pub(crate) messages: usize,
    /// The `Debug` prefix of the rmcp typed message's payload variant, checked once.
    pub(crate) rmcp_variant: &'static str,
}

/// A JSON string literal (quotes included) of about `json_len` bytes, made of `lines` in turn.
pub(crate) fn text_literal(json_len: usize, lines: &[&str]) -> String {
    let mut raw = String::new();
    let mut len = 2;
    for line in lines.iter().cycle() {
        let escaped = serde_json::to_string(line).unwrap().len() - 2;
        if len + escaped > json_len {
            break;
        }
        raw.push_str(line);
        len += escaped;
    }
    let literal = serde_json::to_string(&raw).unwrap();
    assert_eq!(literal.len(), len);
    literal
}

/// Tool output: quotes, tabs, newlines, Windows paths, and text in several scripts.
pub(crate) const TOOL_OUTPUT: &[&str] = &[
    "Résumé: 3 files changed — all checks passed ✓\n",
    "\tsrc/lib.rs: \"ok\" (12 ms)\n",
    "\tC:\\Users\\dev\\projet\\données.txt → 日本語のテキスト\n",
    "Status: 🚀 deployed; naïve café façade, Straße, Ελληνικά, русский текст\n",
    "plain ASCII output line with nothing to escape in it at all, just words\n",
];

/// A source file: mostly ASCII, a quote or tab on most lines, a rare non-ASCII comment.
pub(crate) const SOURCE_FILE: &[&str] = &[
    "fn parse(input: &str) -> Result<Value, Error> {\n",
    "    if input.is_empty() {\n",
    "        return Err(Error::new(\"empty input\"));\n",
    "    }\n",
    "\tlet message = format!(\"{}: {}\", name, value); // C:\\tmp\\out.log\n",
    "    let pattern = r\"\\d+\\.\\d+\"; // naïve — résumé\n",
    "    Ok(Value::String(input.trim().to_owned()))\n",
    "}\n",
    "\n",
];

pub(crate) const PING_RESPONSE: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
pub(crate) const TOOLS_CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}"#;
pub(crate) const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"call-42","progress":50,"total":100,"message":"Indexing files"}}"#;
pub(crate) const ERROR_WITH_DATA: &str = r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: \"nope\"","data":{"tool":"nope","available":["echo","sleep"]}}}"#;

pub(crate) fn tool_result_4k() -> String {
    let envelope = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":}],"isError":false}}"#;
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":{}}}],"isError":false}}}}"#,
        text_literal(4096 - envelope.len(), TOOL_OUTPUT)
    )
}

pub(crate) fn resource_1m() -> String {
    let envelope = r#"{"jsonrpc":"2.0","id":8,"result":{"contents":[{"uri":"file:///project/src/parser.rs","mimeType":"text/x-rust","text":}]}}"#;
    format!(
        r#"{{"jsonrpc":"2.0","id":8,"result":{{"contents":[{{"uri":"file:///project/src/parser.rs","mimeType":"text/x-rust","text":{}}}]}}}}"#,
        text_literal((1 << 20) - envelope.len(), SOURCE_FILE)
    )
}

/// 16 requests a client sends at once: tool calls, reads, listings, a prompt, a ping.
pub(crate) fn batch_16() -> String {
    let requests: Vec<String> = (0..16)
        .map(|i| match i % 5 {
            0 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"item {i}"}}}}}}"#
            ),
            1 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"file:///project/src/mod{i}.rs"}}}}"#
            ),
            2 => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":{{}}}}"#),
            3 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"prompts/get","params":{{"name":"summarize","arguments":{{"style":"short"}}}}}}"#
            ),
            _ => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#),
        })
        .collect();
    format!("[{}]", requests.join(","))
}

/// 126 levels in all: the message, `params`, and 124 arrays.
pub(crate) fn deep_126() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/deep","params":{{"v":{}1{}}}}}"#,
        "[".repeat(124),
        "]".repeat(124)
    )
}

pub(crate) fn workloads() -> Vec<Workload> {
    use Direction::{ToClient, ToServer};
    let w = |group, frame: String, direction, messages, rmcp_variant| Workload {
        group,
        frame: frame.into_bytes(),
        direction,
        messages,
        rmcp_variant,
    };
    vec![
        w(
            "P_ping_response",
            PING_RESPONSE.into(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(1), result: EmptyResult",
        ),
        w(
            "S_tools_call",
            TOOLS_CALL.into(),
            ToServer,
            1,
            "Request(JsonRpcRequest { jsonrpc: JsonRpcVersion2_0, id: Number(42), request: CallToolRequest",
        ),
        w(
            "N_progress",
            PROGRESS.into(),
            ToClient,
            1,
            "Notification(JsonRpcNotification { jsonrpc: JsonRpcVersion2_0, notification: ProgressNotification",
        ),
        w(
            "E_error_with_data",
            ERROR_WITH_DATA.into(),
            ToClient,
            1,
            "Error(JsonRpcError { jsonrpc: JsonRpcVersion2_0, id: Some(Number(9)), error: ErrorData",
        ),
        w(
            "M_tool_result_4k",
            tool_result_4k(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(7), result: CallToolResult",
        ),
        w(
            "L_resource_1m",
            resource_1m(),
            ToClient,
            1,
            "Response(JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: Number(8), result: ReadResourceResult",
        ),
        w(
            "B_batch_16",
            batch_16(),
            ToServer,
            16,
            "Request(JsonRpcRequest { jsonrpc: JsonRpcVersion2_0, id: Number(0), request: CallToolRequest",
        ),
        w(
            "D_deep_126",
            deep_126(),
            ToServer,
            1,
            "Notification(JsonRpcNotification { jsonrpc: JsonRpcVersion2_0, notification: CustomNotification",
        ),
    ]
}

/// 10,000 frames drawn from P, S, N, E, M and B by a fixed-seed xorshift: by count mostly small
/// frames, by bytes mostly tool results and batches. Returns the stream and its message count.
pub(crate) fn stream_10k() -> (Vec<u8>, usize) {
    let (m, b) = (tool_result_4k(), batch_16());
    // (frame, messages, cumulative weight out of 100)
    let mix: [(&str, usize, u64); 6] = [
        (PING_RESPONSE, 1, 30),
        (TOOLS_CALL, 1, 60),
        (PROGRESS, 1, 80),
        (ERROR_WITH_DATA, 1, 85),
        (&m, 1, 95),
        (&b, 16, 100),
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let (mut stream, mut messages) = (Vec::new(), 0);
    for _ in 0..10_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let pick = state % 100;
        let &(frame, n, _) = mix.iter().find(|&&(_, _, upto)| pick < upto).unwrap();
        stream.extend_from_slice(frame.as_bytes());
        stream.push(b'\n');
        messages += n;
    }
    (stream, messages)
}
