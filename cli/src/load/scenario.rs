//! What `load` sends: one operation (`--method`, `--tool`, `--arguments`) or a weighted mix of
//! them from a `--scenario FILE.toml`, each with its own check of the answer and its own
//! budgets (`load init`, in `init.rs`, writes a starting scenario from a server's tools).
//!
//! ```toml
//! [[operation]]
//! name = "echo"                # the report's label (default: the method and its target)
//! method = "tools/call"
//! tool = "echo"                # without `arguments`, echo gets a generated `message`
//! weight = 3                   # share of the mix (default 1)
//! max_p99_ms = 50.0            # budgets for this operation alone
//! max_error_rate = 0.01
//!
//! [[operation]]
//! method = "tools/call"
//! tool = "sleep"
//! arguments = { ms = 5 }
//! expect_text = "slept"        # a text block of the result must contain it
//! ```
//!
//! Methods: `tools/call`, `tools/list`, `resources/list`, `prompts/list` (each list with an
//! optional `cursor`), `resources/read` (`uri`), `prompts/get` (`prompt`, `arguments`),
//! `completion/complete` (`ref`, `argument`), `ping` (legacy era only).
//!
//! A scenario of `[[step]]`s instead is a user's session (`steps.rs`; the users in `user.rs`): each closed-loop
//! worker runs the steps in order, again and again, waiting `think_ms` after each, and carries
//! values from one result to the next request (`save`, `${name}`):
//!
//! ```toml
//! [[step]]
//! method = "resources/list"
//! cursor = "${cursor}"                        # omitted while `cursor` is unset
//! save = { cursor = "/nextCursor", uri = "/resources/0/uri" }
//! think_ms = [50, 250]                        # uniform in the range, or one number
//!
//! [[step]]
//! method = "resources/read"
//! uri = "${uri}"
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

pub use steps::{Session, Think};

/// The most operations a scenario may list: the mix is walked for every request sent.
pub const DEFAULT_MAX_OPERATIONS: usize = 256;

/// The most bytes a scenario file may have: it is read whole before parsing.
pub const DEFAULT_MAX_SCENARIO_BYTES: u64 = 1 << 20;

/// The largest weight an operation may have: weights sum in a `u64` without overflow.
pub const MAX_WEIGHT: u64 = 1 << 32;

/// A request kind `load` knows how to send and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
pub enum Method {
    /// `tools/call` of a tool.
    #[serde(rename = "tools/call")]
    #[value(name = "tools/call")]
    ToolsCall,
    /// `tools/list`.
    #[serde(rename = "tools/list")]
    #[value(name = "tools/list")]
    ToolsList,
    /// `resources/list` (a page: `cursor` names which).
    #[serde(rename = "resources/list")]
    #[value(name = "resources/list")]
    ResourcesList,
    /// `prompts/list` (a page: `cursor` names which).
    #[serde(rename = "prompts/list")]
    #[value(name = "prompts/list")]
    PromptsList,
    /// `resources/read` of a URI.
    #[serde(rename = "resources/read")]
    #[value(name = "resources/read")]
    ResourcesRead,
    /// `prompts/get` of a prompt.
    #[serde(rename = "prompts/get")]
    #[value(name = "prompts/get")]
    PromptsGet,
    /// `completion/complete`.
    #[serde(rename = "completion/complete")]
    #[value(name = "completion/complete")]
    Complete,
    /// `ping` (the legacy era only).
    #[serde(rename = "ping")]
    #[value(name = "ping")]
    Ping,
}

impl Method {
    /// Whether `params` (a session's, rendered) still have what the method needs.
    #[must_use]
    pub fn complete(self, params: &Value) -> bool {
        let has = |k: &str| params.get(k).is_some_and(|v| !v.is_null());
        match self {
            Self::ToolsCall | Self::PromptsGet => has("name"),
            Self::ResourcesRead => has("uri"),
            Self::Complete => has("ref"),
            _ => true,
        }
    }

    /// Its JSON-RPC method name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ToolsCall => "tools/call",
            Self::ToolsList => "tools/list",
            Self::ResourcesList => "resources/list",
            Self::PromptsList => "prompts/list",
            Self::ResourcesRead => "resources/read",
            Self::PromptsGet => "prompts/get",
            Self::Complete => "completion/complete",
            Self::Ping => "ping",
        }
    }
}

/// One entry of the mix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// The report's label; the method and its target when absent.
    #[serde(default)]
    pub name: String,
    pub method: Method,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default, rename = "ref")]
    pub reference: Option<Value>,
    #[serde(default)]
    pub argument: Option<Value>,
    #[serde(default = "one")]
    pub weight: u64,
    /// A text the answer must contain (a text block of a tool result, else anywhere in it).
    #[serde(default)]
    pub expect_text: Option<String>,
    #[serde(default)]
    pub max_p99_ms: Option<f64>,
    #[serde(default)]
    pub max_error_rate: Option<f64>,
    /// A list's page (`tools/list`, `resources/list`, `prompts/list`).
    #[serde(default)]
    pub cursor: Option<String>,
    /// A session's step: the wait after it, in milliseconds.
    #[serde(default)]
    pub think_ms: Option<Think>,
    /// A session's step: values of its result kept for the steps after it, each a name and
    /// the JSON pointer of its value in the result.
    #[serde(default)]
    pub save: BTreeMap<String, String>,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    operation: Vec<Operation>,
    #[serde(default)]
    step: Vec<Operation>,
    /// Sessions: the most bytes of one saved value (its JSON text).
    #[serde(default)]
    max_saved_value_bytes: Option<usize>,
}

impl Operation {
    /// The single operation of `--method`/`--tool`/`--arguments`.
    #[must_use]
    pub fn single(method: Method, tool: &str, arguments: Option<Value>) -> Self {
        let mut op = Self {
            name: String::new(),
            method,
            tool: (method == Method::ToolsCall).then(|| tool.to_owned()),
            arguments,
            uri: None,
            prompt: None,
            reference: None,
            argument: None,
            weight: 1,
            expect_text: None,
            max_p99_ms: None,
            max_error_rate: None,
            cursor: None,
            think_ms: None,
            save: BTreeMap::new(),
        };
        op.name = op.default_name();
        op
    }

    fn default_name(&self) -> String {
        let target = match self.method {
            Method::ToolsCall => self.tool.as_deref(),
            Method::ResourcesRead => self.uri.as_deref(),
            Method::PromptsGet => self.prompt.as_deref(),
            _ => None,
        };
        match target {
            Some(t) => format!("{} {t}", self.method.name()),
            None => self.method.name().to_owned(),
        }
    }

    /// Whether the generated echo `message` (of `--payload-bytes`) is sent and checked.
    #[must_use]
    pub fn generated_echo(&self) -> bool {
        self.method == Method::ToolsCall
            && self.arguments.is_none()
            && self.tool.as_deref() == Some("echo")
    }

    /// The request's params, but for the generated echo message (see [`Self::generated_echo`]).
    #[must_use]
    pub fn params(&self) -> Option<Value> {
        let args = || self.arguments.clone().unwrap_or_else(|| json!({}));
        match self.method {
            Method::ToolsCall => Some(json!({"name": self.tool, "arguments": args()})),
            Method::ToolsList | Method::ResourcesList | Method::PromptsList => {
                self.cursor.as_ref().map(|c| json!({ "cursor": c }))
            }
            Method::Ping => None,
            Method::ResourcesRead => Some(json!({"uri": self.uri})),
            Method::PromptsGet => Some(json!({"name": self.prompt, "arguments": args()})),
            Method::Complete => Some(json!({
                "ref": self.reference,
                "argument": self.argument.clone().unwrap_or_else(|| json!({"name": "", "value": ""})),
            })),
        }
    }

    fn validate(&mut self, step: bool) -> Result<(), String> {
        let missing = |what: &str| format!("{} needs `{what}`", self.method.name());
        if !step && (self.think_ms.is_some() || !self.save.is_empty()) {
            return Err("`think_ms` and `save` belong to a session's [[step]]".into());
        }
        if let Some(think) = &self.think_ms {
            think.check()?;
        }
        steps::check_save(&self.save)?;
        if self.cursor.is_some()
            && !matches!(
                self.method,
                Method::ToolsList | Method::ResourcesList | Method::PromptsList
            )
        {
            return Err(format!("{} takes no `cursor`", self.method.name()));
        }
        match self.method {
            Method::ToolsCall if self.tool.is_none() => return Err(missing("tool")),
            Method::ResourcesRead if self.uri.is_none() => return Err(missing("uri")),
            Method::PromptsGet if self.prompt.is_none() => return Err(missing("prompt")),
            Method::Complete if self.reference.is_none() => return Err(missing("ref")),
            _ => {}
        }
        if self.weight == 0 || self.weight > MAX_WEIGHT {
            return Err(format!("weight {} is not in 1..={MAX_WEIGHT}", self.weight));
        }
        if let Some(p) = self.max_p99_ms
            && !(p.is_finite() && p >= 0.0)
        {
            return Err(format!("max_p99_ms {p} is not a duration"));
        }
        if let Some(r) = self.max_error_rate
            && !(0.0..=1.0).contains(&r)
        {
            return Err(format!("max_error_rate {r} is not in 0..=1"));
        }
        if self.name.is_empty() {
            self.name = self.default_name();
        }
        Ok(())
    }

    /// Checks a result: the method's shape, and `expect` (the operation's `expect_text`, or a
    /// session's, rendered). `Err` names the failure kind.
    ///
    /// # Errors
    ///
    /// `bad_result`, `tool_error`, `input_required`, `echo_mismatch` or `unexpected_result`.
    pub fn check(
        &self,
        result: &str,
        echo: Option<&str>,
        expect: Option<&str>,
    ) -> Result<(), String> {
        #[derive(Deserialize)]
        struct Block<'a> {
            #[serde(borrow, default)]
            text: Option<Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        struct ToolResult<'a> {
            #[serde(borrow, default)]
            content: Vec<Block<'a>>,
            #[serde(rename = "isError", default)]
            is_error: bool,
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<Cow<'a, str>>,
        }
        let shape_ok = |key: &str| -> Result<(), String> {
            match serde_json::from_str::<Value>(result) {
                Ok(Value::Object(m)) if m.get(key).is_some_and(Value::is_array) => Ok(()),
                _ => Err("bad_result".into()),
            }
        };
        match self.method {
            Method::ToolsCall => {
                // A modern server that needs the client's input first (a multi round-trip
                // request) has not answered the call; `load` gives none. Such a result need
                // not have a tool result's shape.
                let input_required = || {
                    mcpwire::mcp::meta::result_type(mcpwire::RawJson::new(result))
                        .ok()
                        .flatten()
                        .as_deref()
                        == Some("input_required")
                };
                let r: ToolResult<'_> = match serde_json::from_str(result) {
                    Ok(r) => r,
                    Err(_) if input_required() => return Err("input_required".into()),
                    Err(_) => return Err("bad_result".into()),
                };
                if r.result_type.as_deref() == Some("input_required") {
                    return Err("input_required".into());
                }
                if r.is_error {
                    return Err("tool_error".into());
                }
                let has = |want: &str| {
                    r.content.iter().any(|b| b.text.as_deref().is_some_and(|t| t.contains(want)))
                };
                // The reference server answers `Echo: <message>`, ours the message itself.
                if let Some(sent) = echo
                    && !has(sent)
                {
                    return Err("echo_mismatch".into());
                }
                if let Some(want) = expect
                    && !has(want)
                {
                    return Err("unexpected_result".into());
                }
                return Ok(());
            }
            Method::ToolsList => shape_ok("tools")?,
            Method::ResourcesList => shape_ok("resources")?,
            Method::PromptsList => shape_ok("prompts")?,
            Method::ResourcesRead => shape_ok("contents")?,
            Method::PromptsGet => shape_ok("messages")?,
            Method::Complete => match serde_json::from_str::<Value>(result) {
                Ok(v) if v["completion"]["values"].is_array() => {}
                _ => return Err("bad_result".into()),
            },
            Method::Ping => match serde_json::from_str::<Value>(result) {
                Ok(Value::Object(_)) => {}
                _ => return Err("bad_result".into()),
            },
        }
        if let Some(want) = expect
            && !result.contains(want)
        {
            return Err("unexpected_result".into());
        }
        Ok(())
    }

    /// Whether a session's step renders its request (or its `expect_text`) from saved values.
    #[must_use]
    pub fn templated(&self) -> bool {
        self.params().is_some_and(|p| steps::has_template(&p))
            || self.expect_text.as_deref().is_some_and(steps::is_template)
    }
}

/// The operations of a run, and the smooth weighted round robin that picks among them: over
/// any `sum(weights)` consecutive picks each operation is picked exactly `weight` times, so a
/// run of `--requests N` sends an exact, predictable mix.
#[derive(Debug, Clone)]
pub struct Mix {
    pub ops: Vec<Operation>,
    /// A session's settings when the operations are its steps, run in order by each user.
    pub session: Option<Session>,
    /// Operation index for each slot of one round (`sum(weights)` slots, interleaved), when the
    /// round is short enough to tabulate; otherwise picks walk the cumulative weights.
    table: Vec<u32>,
    cumulative: Vec<u64>,
}

/// Rounds longer than this are not tabulated (the table costs 4 bytes a slot).
const MAX_TABLE: u64 = 1 << 16;

impl Mix {
    /// A mix of `ops` (non-empty, validated).
    #[must_use]
    pub fn new(ops: Vec<Operation>) -> Self {
        let mut cumulative = Vec::with_capacity(ops.len());
        let mut sum = 0u64;
        for op in &ops {
            sum += op.weight;
            cumulative.push(sum);
        }
        let mut table = Vec::new();
        if sum <= MAX_TABLE {
            // Smooth weighted round robin (each step: add every weight, take the largest,
            // subtract the total from it).
            let mut current = vec![0i64; ops.len()];
            for _ in 0..sum {
                for (c, op) in current.iter_mut().zip(&ops) {
                    *c += op.weight as i64;
                }
                let (best, _) = current
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
                    .expect("a mix is not empty");
                current[best] -= sum as i64;
                table.push(best as u32);
            }
        }
        Self { ops, table, cumulative, session: None }
    }

    /// The steps of a session (non-empty, validated), each user running them in order.
    #[must_use]
    pub fn session(ops: Vec<Operation>, session: Session) -> Self {
        Self { session: Some(session), ..Self::new(ops) }
    }

    /// The operation for the `seq`-th request (from 0).
    #[must_use]
    pub fn pick(&self, seq: u64) -> usize {
        if !self.table.is_empty() {
            return self.table[(seq % self.table.len() as u64) as usize] as usize;
        }
        let total = *self.cumulative.last().expect("a mix is not empty");
        // A multiplicative hash spreads consecutive requests across the weights.
        let x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) % total;
        self.cumulative.partition_point(|&c| c <= x)
    }
}

/// Reads and checks a scenario file.
///
/// # Errors
///
/// The file cannot be read, is larger than [`DEFAULT_MAX_SCENARIO_BYTES`], is not a scenario,
/// or lists no operation or more than [`DEFAULT_MAX_OPERATIONS`].
pub fn load_file(path: &std::path::Path) -> Result<Mix, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(DEFAULT_MAX_SCENARIO_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > DEFAULT_MAX_SCENARIO_BYTES {
        return Err(format!("{}: longer than {DEFAULT_MAX_SCENARIO_BYTES} bytes", path.display()));
    }
    parse_mix(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the text of a scenario of `[[operation]]`s (the tests' shorthand).
///
/// # Errors
///
/// As [`load_file`], and a session's `[[step]]`s.
#[cfg(test)]
pub fn parse(text: &str) -> Result<Vec<Operation>, String> {
    let mix = parse_mix(text)?;
    if mix.session.is_some() {
        return Err("a session's [[step]]s, not [[operation]]s".into());
    }
    Ok(mix.ops)
}

/// Parses a scenario's text: a mix of `[[operation]]`s, or a session of `[[step]]`s.
///
/// # Errors
///
/// As [`load_file`]; both kinds in one file; a bad `think_ms`, `save` or `cursor`.
pub fn parse_mix(text: &str) -> Result<Mix, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let step = !file.step.is_empty();
    if step && !file.operation.is_empty() {
        return Err("[[operation]]s (a mix) or [[step]]s (a session), not both".into());
    }
    if !step && file.max_saved_value_bytes.is_some() {
        return Err("`max_saved_value_bytes` belongs to a session of [[step]]s".into());
    }
    let mut ops = if step { file.step } else { file.operation };
    if ops.is_empty() {
        return Err("no [[operation]] (or [[step]])".into());
    }
    if ops.len() > DEFAULT_MAX_OPERATIONS {
        return Err(format!("more than {DEFAULT_MAX_OPERATIONS} operations"));
    }
    let what = if step { "step" } else { "operation" };
    for (i, op) in ops.iter_mut().enumerate() {
        op.validate(step).map_err(|e| format!("{what} {}: {e}", i + 1))?;
    }
    if !step {
        return Ok(Mix::new(ops));
    }
    let max_saved_value_bytes =
        file.max_saved_value_bytes.unwrap_or(steps::DEFAULT_MAX_SAVED_VALUE_BYTES);
    Ok(Mix::session(ops, Session { max_saved_value_bytes }))
}

pub mod steps;
#[cfg(test)]
mod tests;
