//! Typed, borrowed views of MCP's params and results, both eras (2025-11-25 and 2026-07-28),
//! as hosts use them.
//!
//! Every type derives serde's `Serialize` and `Deserialize` with a lifetime: decoded from a
//! message's text (`Incoming::params_as`, `RawJson::deserialize`, `serde_json::from_str`) a
//! string is borrowed from the frame when it was written without escapes (`Cow::Borrowed`),
//! and payloads the protocol does not interpret (`arguments`, `inputSchema`, `_meta`,
//! `structuredContent`) are kept as [`Raw`] text, so reading a `tools/call` allocates nothing.
//! Built by a host, the same types own what they hold (`Cow::Owned`, `Raw::owned`) and
//! serialise straight into the reply's buffer (`Reply::json`).
//!
//! Schemas are JSON text, kept exactly: a JSON Schema 2020-12 `inputSchema` with `$defs`,
//! `$ref`, `allOf`, `if`/`then`/`else` reaches the client as written, and `$ref` is never
//! dereferenced.
//!
//! Unknown members are ignored (the protocol grows by adding them); a member of the wrong type
//! is refused with serde's reason, which names the field.

mod asks;
mod content;
mod input_required;
mod lifecycle;
mod prompts;
mod raw;
mod resources;
mod tasks;
mod tools;
mod utilities;

pub use asks::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    ListRootsResult, Root, SamplingMessage,
};
pub use content::{Annotations, Content, ResourceContents, Role};
pub use input_required::{InputRequest, InputRequiredResult};
pub use lifecycle::{
    CacheScope, DiscoverResult, Empty, Implementation, InitializeParams, InitializeResult,
    ListChanged, ListParams, ResourcesCapability, ServerCapabilities,
};
pub use prompts::{
    GetPromptParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage,
};
pub use raw::Raw;
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceParams,
    ResourceTemplate, match_template,
};
pub use tasks::{
    DetailedTask, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus, TaskSupport, ToolExecution,
    UpdateTaskParams, iso8601,
};
pub use tools::{
    CallToolParams, CallToolResult, EMPTY_OBJECT_SCHEMA, ListToolsResult, Tool, ToolAnnotations,
};
pub use utilities::{
    CompleteArgument, CompleteParams, CompleteRef, CompleteResult, Completion, ListenFilter,
    ListenParams, LoggingLevel, LoggingMessageParams, MAX_COMPLETION_VALUES, ProgressParams,
    ResourceUpdatedParams, SetLevelParams,
};
