//! A capture read into what a replay sends: each request in order with its offset, its
//! operation, its params and the shape of its recorded answer.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::capture::{self, Dir};
use crate::load::scenario::{DEFAULT_MAX_OPERATIONS, MAX_WEIGHT};
use crate::load::{Method, Operation};

/// The start of every failure kind of an answer whose shape differs from the recorded one's.
pub const MISMATCH: &str = "mismatch_";

/// The shape an answer is compared by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A JSON-RPC error, with its code.
    Error(i64),
    /// A result: its `resultType` (`None` for `complete` or absent) and its `isError`.
    Result { result_type: Option<String>, is_error: bool },
}

impl Shape {
    /// A result's shape from its JSON text (a result that is no object has the plain shape).
    #[must_use]
    pub fn of_result(text: &str) -> Self {
        #[derive(Deserialize)]
        struct Fields<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<Cow<'a, str>>,
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
        }
        let f = serde_json::from_str::<Fields<'_>>(text).ok();
        let result_type = f
            .as_ref()
            .and_then(|f| f.result_type.as_deref())
            .filter(|t| *t != "complete")
            .map(str::to_owned);
        Self::Result { result_type, is_error: f.and_then(|f| f.is_error).unwrap_or(false) }
    }

    fn of_answer(frame: &Value) -> Option<Self> {
        if let Some(code) = frame.get("error").map(|e| e["code"].as_i64()) {
            return Some(Self::Error(code.unwrap_or(0)));
        }
        let result = frame.get("result")?;
        Some(Self::of_result(&result.to_string()))
    }
}

/// Checks an answer's shape against the recorded one (`None`: the capture has no answer, and
/// only an error fails).
///
/// # Errors
///
/// The failure kind: `mismatch_…` when the shapes differ, `rpc_error_CODE` for an error where
/// nothing was recorded.
pub fn compare(expect: Option<&Shape>, got: &Shape) -> Result<(), String> {
    match (expect, got) {
        (None, Shape::Error(c)) => Err(format!("rpc_error_{c}")),
        (None, Shape::Result { .. }) => Ok(()),
        (Some(e), g) if e == g => Ok(()),
        (Some(_), Shape::Error(c)) => Err(format!("{MISMATCH}rpc_error_{c}")),
        (Some(Shape::Error(_)), Shape::Result { .. }) => Err(format!("{MISMATCH}result")),
        (Some(Shape::Result { is_error: want, .. }), Shape::Result { result_type, is_error }) => {
            Err(if want != is_error {
                format!("{MISMATCH}{}", if *is_error { "tool_error" } else { "tool_ok" })
            } else {
                format!("{MISMATCH}result_type_{}", result_type.as_deref().unwrap_or("complete"))
            })
        }
    }
}

/// One request of the capture.
#[derive(Debug)]
struct Entry {
    /// Its offset from the first request replayed, at the replay's speed.
    at: Duration,
    op: usize,
    /// Its method, in `methods`.
    method: usize,
    params: Option<String>,
    expect: Option<Shape>,
}

/// What a replay sends.
#[derive(Debug)]
pub struct Script {
    entries: Vec<Entry>,
    /// The methods requests have.
    methods: Vec<String>,
    ops: Vec<Operation>,
    /// When the capture starts over (with `--replay-loop`): past its last request by one mean
    /// inter-arrival time.
    period: Duration,
    looped: bool,
    summary: Value,
    /// When the replay sent its last request (nanoseconds from the window's start, when its
    /// first was due), and how many it sent: the rate achieved.
    last_sent: AtomicU64,
    sent: AtomicU64,
}

/// Requests the replay leaves out, by why.
#[derive(Debug, Default)]
struct LeftOut {
    handshake: u64,
    notifications: u64,
    answers: u64,
    batches: u64,
    bad: u64,
    unsampled: u64,
}

/// The most answers held for a request not read yet (answers to requests the capture lost
/// stay there): a bound on memory.
const MAX_EARLY: usize = 100_000;

/// The operation of the requests past the most a report lists.
const OTHER: &str = "other";

/// The methods that settle the era: the generator sends its own.
const HANDSHAKE: [&str; 2] = ["initialize", "server/discover"];

impl Script {
    /// Reads the capture at `path`.
    ///
    /// # Errors
    ///
    /// It cannot be read, is not a capture (see `capture::read`), or holds no request.
    pub fn load(path: &Path, speed: f64, sample: f64, looped: bool) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        Self::read(BufReader::new(file), &path.display().to_string(), speed, sample, looped)
    }

    /// Reads a capture from `input`.
    ///
    /// # Errors
    ///
    /// As [`Script::load`].
    pub fn read(
        input: impl std::io::BufRead,
        name: &str,
        speed: f64,
        sample: f64,
        looped: bool,
    ) -> Result<Self, String> {
        let mut raw: Vec<(Duration, String, Option<String>, Option<Shape>)> = Vec::new();
        // Requests read and not answered yet: the entry, or `None` for one not replayed.
        let mut waiting: HashMap<(u64, Option<String>, String), Option<usize>> = HashMap::new();
        let mut early: HashMap<(u64, Option<String>, String), Shape> = HashMap::new();
        let mut left = LeftOut::default();
        let mut index = 0u64;
        let header = capture::read(input, |line| {
            let Some(frame) = line.frame else {
                left.bad += u64::from(line.dir == Dir::ClientToServer);
                return Ok(());
            };
            match line.dir {
                Dir::ClientToServer => {
                    let Value::Object(mut m) = frame else {
                        left.batches += 1;
                        return Ok(());
                    };
                    let Some(method) = m.get("method").and_then(Value::as_str).map(str::to_owned)
                    else {
                        left.answers += 1;
                        return Ok(());
                    };
                    let id = match m.get("id") {
                        None | Some(Value::Null) => {
                            left.notifications += 1;
                            return Ok(());
                        }
                        Some(id) => id.to_string(),
                    };
                    let key = (line.conn, line.session, id);
                    if HANDSHAKE.contains(&method.as_str()) {
                        left.handshake += 1;
                        waiting.insert(key, None);
                        return Ok(());
                    }
                    index += 1;
                    if !sampled(index, sample) {
                        left.unsampled += 1;
                        waiting.insert(key, None);
                        return Ok(());
                    }
                    let params = match m.remove("params") {
                        Some(Value::Object(mut p)) => {
                            p.remove("_meta");
                            (!p.is_empty()).then_some(Value::Object(p))
                        }
                        other => other,
                    };
                    // An answer recorded before its request (two readers raced) waits here.
                    let expect = early.remove(&key);
                    if expect.is_none() {
                        waiting.insert(key, Some(raw.len()));
                    }
                    raw.push((line.t, method, params.map(|p| p.to_string()), expect));
                }
                Dir::ServerToClient => {
                    let Some(id) = frame.get("id").filter(|_| frame.get("method").is_none()) else {
                        return Ok(());
                    };
                    let key = (line.conn, line.session, id.to_string());
                    match waiting.remove(&key) {
                        Some(Some(i)) => raw[i].3 = Shape::of_answer(&frame),
                        Some(None) => {}
                        None if early.len() < MAX_EARLY => {
                            if let Some(shape) = Shape::of_answer(&frame) {
                                early.insert(key, shape);
                            }
                        }
                        None => {}
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        if raw.is_empty() {
            return Err(format!(
                "no request to replay ({} handshake, {} notifications, {} answers, {} batches, \
                 {} bad frames, {} left out by the sample)",
                left.handshake,
                left.notifications,
                left.answers,
                left.batches,
                left.bad,
                left.unsampled
            ));
        }
        // Recorded lines of one direction are in order; offsets may still step back by the
        // microseconds two readers raced (HTTP exchanges on many connections), so sort.
        raw.sort_by_key(|r| r.0);
        let first = raw[0].0;
        let span = raw[raw.len() - 1].0 - first;
        let mut ops: Vec<Operation> = Vec::new();
        let mut by_label: HashMap<String, usize> = HashMap::new();
        let mut methods: Vec<String> = Vec::new();
        let mut by_method: HashMap<String, usize> = HashMap::new();
        let unanswered = raw.iter().filter(|r| r.3.is_none()).count();
        let scale = |d: Duration| {
            Duration::try_from_secs_f64(d.as_secs_f64() / speed)
                .map_err(|_| format!("an offset of {d:?} at speed {speed} is past any run"))
        };
        let mut entries = Vec::with_capacity(raw.len());
        for (t, method, params, expect) in raw {
            let mut label = label(&method, params.as_deref());
            if !by_label.contains_key(&label) && by_label.len() + 1 >= DEFAULT_MAX_OPERATIONS {
                // Past the most operations a report lists: one operation for the rest.
                label = OTHER.to_owned();
            }
            let op = *by_label.entry(label.clone()).or_insert_with(|| {
                ops.push(operation(&method, &label, params.as_deref()));
                ops.len() - 1
            });
            ops[op].weight = (ops[op].weight + 1).min(MAX_WEIGHT);
            let m = *by_method.entry(method.clone()).or_insert_with(|| {
                methods.push(method);
                methods.len() - 1
            });
            entries.push(Entry { at: scale(t - first)?, op, method: m, params, expect });
        }
        let n = entries.len();
        let gap = if n > 1 {
            scale(span)?.div_f64((n - 1) as f64)
        } else {
            scale(Duration::from_secs(1))?
        };
        let rate = if span.is_zero() { n as f64 } else { (n - 1) as f64 / span.as_secs_f64() };
        let summary = json!({
            "capture": name,
            "source": header.get("source").cloned().unwrap_or(Value::Null),
            "requests": n,
            "span_s": span.as_secs_f64(),
            "recorded_rate_rps": rate,
            "speed": speed,
            "loop": looped,
            "sample": sample,
            "unanswered": unanswered,
            "left_out": {
                "handshake": left.handshake, "notifications": left.notifications,
                "answers": left.answers, "batches": left.batches, "bad_frames": left.bad,
                "unsampled": left.unsampled,
            },
        });
        let period = entries[n - 1].at.checked_add(gap).ok_or("the capture is too long to loop")?;
        Ok(Self {
            entries,
            methods,
            ops,
            period,
            looped,
            summary,
            last_sent: AtomicU64::new(0),
            sent: AtomicU64::new(0),
        })
    }

    /// The requests to replay (without the loop).
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The operations, weighted by their counts in the capture.
    #[must_use]
    pub fn operations(&self) -> Vec<Operation> {
        self.ops.clone()
    }

    /// The rate the replay sends at on average (requests per second).
    #[must_use]
    pub fn rate(&self) -> f64 {
        let n = self.entries.len() as f64;
        let span = self.period.as_secs_f64();
        if span > 0.0 { n / span } else { n }
    }

    /// Notes a request sent `at` from the window's start.
    pub fn sent(&self, at: Duration) {
        let ns = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        self.last_sent.fetch_max(ns, Ordering::Relaxed);
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// As the JSON report gives it: the capture, and the rate the replay achieved (from its
    /// start, when its first request was due, to its last request sent).
    #[must_use]
    pub fn summary(&self) -> Value {
        let mut v = self.summary.clone();
        let n = self.sent.load(Ordering::Relaxed);
        let last = self.last_sent.load(Ordering::Relaxed);
        // From the replay's start, when its first request was due, to its last one sent.
        let span = Duration::from_nanos(last).as_secs_f64();
        v["replayed_requests"] = json!(n);
        v["replayed_span_s"] = json!(if n > 0 { span } else { 0.0 });
        v["replayed_rate_rps"] =
            json!(if n > 1 && span > 0.0 { (n - 1) as f64 / span } else { 0.0 });
        v
    }

    /// When request `i` (counting on through the loops) is due, from the first; `None` past
    /// the end.
    #[must_use]
    pub fn due(&self, i: u64) -> Option<Duration> {
        let n = self.entries.len() as u64;
        let round = i / n;
        if round > 0 && !self.looped {
            return None;
        }
        let base = self.period.checked_mul(u32::try_from(round).ok()?)?;
        base.checked_add(self.entries[(i % n) as usize].at)
    }

    /// How many requests (counting on through the loops) are due before `t`.
    #[must_use]
    pub fn due_before(&self, t: Duration) -> u64 {
        let n = self.entries.len() as u64;
        let within = |t: Duration| self.entries.partition_point(|e| e.at < t) as u64;
        if !self.looped || self.period.is_zero() {
            return within(t);
        }
        let rounds = (t.as_nanos() / self.period.as_nanos()) as u64;
        let rest =
            t.saturating_sub(self.period.saturating_mul(u32::try_from(rounds).unwrap_or(u32::MAX)));
        rounds.saturating_mul(n).saturating_add(within(rest))
    }

    /// The operation of request `i`.
    #[must_use]
    pub fn op(&self, i: u64) -> usize {
        self.entries[(i % self.entries.len() as u64) as usize].op
    }

    /// Request `i`: its method, params and recorded answer's shape.
    #[must_use]
    pub fn request(&self, i: u64) -> (&str, Option<&str>, Option<&Shape>) {
        let e = &self.entries[(i % self.entries.len() as u64) as usize];
        (&self.methods[e.method], e.params.as_deref(), e.expect.as_ref())
    }
}

/// Whether the `i`-th request is in a sample of `share`: a fixed hash of its place.
fn sampled(i: u64, share: f64) -> bool {
    if share >= 1.0 {
        return true;
    }
    // splitmix64's finaliser spreads consecutive places evenly.
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x as f64) < share * u64::MAX as f64
}

/// The report's name of a request: its method and what it names (a tool, a URI, a prompt).
fn label(method: &str, params: Option<&str>) -> String {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return method.to_owned(),
    };
    let v: Value = params.and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Value::Null);
    match v[key].as_str() {
        Some(name) => format!("{method} {name}"),
        None => method.to_owned(),
    }
}

/// An operation for the report (its name and weight) and the era decision (a `ping` asks for
/// the legacy era under `auto`); what is sent comes from the capture, whatever its method.
fn operation(method: &str, label: &str, params: Option<&str>) -> Operation {
    let kind = match method {
        "tools/call" => Method::ToolsCall,
        "resources/read" => Method::ResourcesRead,
        "prompts/get" => Method::PromptsGet,
        "completion/complete" => Method::Complete,
        "ping" => Method::Ping,
        _ => Method::ToolsList,
    };
    let tool = label.strip_prefix("tools/call ").unwrap_or_default();
    let mut op = Operation::single(kind, tool, None);
    // A generated echo message is never sent in a replay; the params are the capture's.
    op.arguments = params.map(|_| json!({}));
    op.name = label.to_owned();
    op.weight = 0;
    op
}

#[cfg(test)]
mod tests;
