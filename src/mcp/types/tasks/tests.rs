use super::*;

#[test]
fn instants_are_written_as_iso8601() {
    assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(iso8601(1_785_240_000_000), "2026-07-28T12:00:00.000Z");
}

#[test]
fn a_detailed_task_is_flat() {
    let t = DetailedTask {
        task: Task {
            task_id: "t1".into(),
            status: TaskStatus::Completed,
            status_message: None,
            created_at: iso8601(0).into(),
            last_updated_at: iso8601(0).into(),
            ttl_ms: None,
            poll_interval_ms: Some(500),
        },
        input_requests: None,
        result: Some(Raw::parse(r#"{"content":[]}"#).unwrap()),
        error: None,
    };
    let text = serde_json::to_string(&t).unwrap();
    assert_eq!(
        text,
        r#"{"taskId":"t1","status":"completed","createdAt":"1970-01-01T00:00:00.000Z","lastUpdatedAt":"1970-01-01T00:00:00.000Z","ttlMs":null,"pollIntervalMs":500,"result":{"content":[]}}"#
    );
    let back: DetailedTask<'_> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, t);
    let s: TaskSupport = serde_json::from_str(r#""required""#).unwrap();
    assert_eq!(s, TaskSupport::Required);
}
