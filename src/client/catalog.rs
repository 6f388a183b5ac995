//! The catalog calls of a [`Client`]: resources and their templates, prompts, completion, and
//! the paging every `list_*` call shares.

use serde::Serialize;
use yoke::Yokeable;

use super::calls::{CallOptions, Cursor, Named, Uri, object_arguments};
use super::client::Client;
use super::decoded::Decoded;
use super::error::ClientError;
use crate::mcp::types::{
    CompleteResult, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, Prompt, ReadResourceResult, Resource, ResourceTemplate,
};

impl Client {
    /// One page of the resource list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_resources_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().resources[0].uri, "mem://readme");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resources_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListResourcesResult<'static>>, ClientError> {
        self.typed("resources/list", Cursor { cursor }, options).await
    }

    /// Every resource, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let resources = client.list_resources().await?;
    /// assert_eq!(resources[0].get().uri, "mem://readme");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resources(&self) -> Result<Vec<Decoded<Resource<'static>>>, ClientError> {
        self.all(
            "resources/list",
            |p: &Decoded<ListResourcesResult<'static>>| {
                (p.get().resources.len(), p.get().next_cursor.as_deref().map(str::to_owned))
            },
            |p, i| p.project(|r, _| r.resources[i].clone()),
        )
        .await
    }

    /// One page of the resource template list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_resource_templates_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().resource_templates.len(), 1);
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListResourceTemplatesResult<'static>>, ClientError> {
        self.typed("resources/templates/list", Cursor { cursor }, options).await
    }

    /// Every resource template, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let templates = client.list_resource_templates().await?;
    /// assert_eq!(templates[0].get().uri_template, "mem://item/{id}");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Vec<Decoded<ResourceTemplate<'static>>>, ClientError> {
        self.all(
            "resources/templates/list",
            |p: &Decoded<ListResourceTemplatesResult<'static>>| {
                (
                    p.get().resource_templates.len(),
                    p.get().next_cursor.as_deref().map(str::to_owned),
                )
            },
            |p, i| p.project(|r, _| r.resource_templates[i].clone()),
        )
        .await
    }

    /// Reads the resource at `uri`.
    ///
    /// # Errors
    ///
    /// As any call; a resource the server does not have is a protocol error (-32002 from a
    /// legacy server, -32602 from a modern one).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let r = client.read_resource("mem://readme").await?;
    /// assert!(r.json().contains("Read me"));
    /// let missing = client.read_resource("mem://nothing").await.unwrap_err();
    /// assert_eq!(missing.code(), Some(mcpwire::ErrorCode::INVALID_PARAMS)); // modern era
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Decoded<ReadResourceResult<'static>>, ClientError> {
        self.read_resource_with(uri, &CallOptions::default()).await
    }

    /// [`Client::read_resource`] with options.
    ///
    /// # Errors
    ///
    /// As [`Client::read_resource`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// use mcpwire::client::CallOptions;
    /// let options = CallOptions::new().meta("trace", serde_json::json!("abc"));
    /// let r = client.read_resource_with("mem://item/1", &options).await?;
    /// assert!(r.json().contains("one"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<Decoded<ReadResourceResult<'static>>, ClientError> {
        self.typed("resources/read", Uri { uri }, options).await
    }

    /// One page of the prompt list.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let page = client.list_prompts_page(None, &Default::default()).await?;
    /// assert_eq!(page.get().prompts[0].name, "greet");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_prompts_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<Decoded<ListPromptsResult<'static>>, ClientError> {
        self.typed("prompts/list", Cursor { cursor }, options).await
    }

    /// Every prompt, page after page.
    ///
    /// # Errors
    ///
    /// As [`Client::list_tools`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let prompts = client.list_prompts().await?;
    /// assert_eq!(prompts[0].get().name, "greet");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn list_prompts(&self) -> Result<Vec<Decoded<Prompt<'static>>>, ClientError> {
        self.all(
            "prompts/list",
            |p: &Decoded<ListPromptsResult<'static>>| {
                (p.get().prompts.len(), p.get().next_cursor.as_deref().map(str::to_owned))
            },
            |p, i| p.project(|r, _| r.prompts[i].clone()),
        )
        .await
    }

    /// Gets prompt `name` with `arguments` (an object of strings;
    /// [`NO_ARGUMENTS`](super::NO_ARGUMENTS) for none).
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let p = client.get_prompt("greet", serde_json::json!({ "who": "Ada" })).await?;
    /// assert!(p.json().contains("Say hello to Ada"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Decoded<GetPromptResult<'static>>, ClientError> {
        self.get_prompt_with(name, arguments, &CallOptions::default()).await
    }

    /// [`Client::get_prompt`] with options.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let options = mcpwire::client::CallOptions::new();
    /// let p = client.get_prompt_with("greet", serde_json::json!({ "who": "Bo" }), &options).await?;
    /// assert_eq!(p.get().messages.len(), 1);
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &CallOptions,
    ) -> Result<Decoded<GetPromptResult<'static>>, ClientError> {
        object_arguments("prompts/get", &arguments)?;
        self.typed("prompts/get", Named { name, arguments: Some(arguments) }, options).await
    }

    /// Completions for argument `argument` (typed so far: `value`) of a prompt
    /// (`{"type":"ref/prompt","name":…}`) or resource template
    /// (`{"type":"ref/resource","uri":…}`), `reference`.
    ///
    /// # Errors
    ///
    /// As any call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # use mcpwire::client::Client; use mcpwire::mcp::types::*;
    /// # let server = mcpwire::server::demo();
    /// let client = Client::connect(server.clone()).await?;
    /// let reference = CompleteRef::Prompt { name: "greet".into() };
    /// let done = client.complete(&reference, "who", "al").await?;
    /// assert_eq!(done.get().completion.values, ["alpha", "alpine"]);
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn complete(
        &self,
        reference: &crate::mcp::types::CompleteRef<'_>,
        argument: &str,
        value: &str,
    ) -> Result<Decoded<CompleteResult<'static>>, ClientError> {
        #[derive(Serialize)]
        struct Argument<'a> {
            name: &'a str,
            value: &'a str,
        }
        #[derive(Serialize)]
        struct Params<'a, R: Serialize> {
            #[serde(rename = "ref")]
            reference: R,
            argument: Argument<'a>,
        }
        let params = Params { reference, argument: Argument { name: argument, value } };
        self.typed("completion/complete", params, &CallOptions::default()).await
    }

    /// Pages through a list.
    pub(super) async fn all<L, T>(
        &self,
        method: &str,
        read: impl Fn(&Decoded<L>) -> (usize, Option<String>),
        item: impl Fn(&Decoded<L>, usize) -> Decoded<T>,
    ) -> Result<Vec<Decoded<T>>, ClientError>
    where
        L: for<'a> Yokeable<'a>,
        for<'a> <L as Yokeable<'a>>::Output: serde::Deserialize<'a>,
        T: for<'a> Yokeable<'a>,
    {
        let options = CallOptions::default();
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.0.max_pages {
            let p: Decoded<L> =
                self.typed(method, Cursor { cursor: cursor.as_deref() }, &options).await?;
            let (n, next) = read(&p);
            out.extend((0..n).map(|i| item(&p, i)));
            match next_page(method, next, &cursor)? {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
        Err(self.too_many_pages(method))
    }

    /// A list that went on past the client's `max_pages`.
    pub(super) fn too_many_pages(&self, method: &str) -> ClientError {
        ClientError::invalid(method, format!("the list goes on past {} pages", self.0.max_pages))
    }
}

/// The cursor of the next page (`None`: that was the last); a server that hands back the
/// cursor it was given would loop, and is refused.
pub(super) fn next_page(
    method: &str,
    next: Option<String>,
    cursor: &Option<String>,
) -> Result<Option<String>, ClientError> {
    match next {
        Some(next) if Some(&next) == cursor.as_ref() => {
            Err(ClientError::invalid(method, "the server gave the same cursor twice"))
        }
        next => Ok(next),
    }
}
