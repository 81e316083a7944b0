//! Resources, prompts and completion across the runtime's servers.
//!
//! Lists are asked of every running server that offers the feature, concurrently,
//! when the host asks; a server that announces its list changes has its lists held
//! by its connection until it announces one (`connection::features::HeldLists`),
//! the others are asked each time. A server that fails is named in the answer's
//! `failures`, the others' entries stand. A read or a prompt is routed to the server named, or, when none is,
//! to the one server that lists it.
//!
//! Invariants:
//! 1. Every request is bounded by the server's `tool_timeout_sec` (each page of a
//!    list, each read), and one given up is followed by `notifications/cancelled`.
//! 2. A listed entry that is not a valid resource, template or prompt is left out with
//!    a warning naming the server; the rest of the list stands. An entry kept keeps
//!    every field the server listed (its `definition`), and a read or a prompt is
//!    the result as the server returned it ([`ReadResult`], [`PromptResult`]): what
//!    a newer revision or an extension adds passes through.
//! 3. An unrouted read or prompt never guesses: no server offering it, or more than
//!    one, is an error naming them.

use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, JsonObject, Prompt, Resource, ResourceTemplate,
    ServerResult,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Runtime;
use crate::{
    changes::ServerChange,
    connection::{Connection, error::FeatureError, features::Feature},
    feature_result::{PromptResult, ReadResult},
    sync::lock,
    transport::error::RestartError,
};

/// A resource and the server that lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerResource {
    /// The server.
    pub server: String,
    /// The resource, as rmcp reads it.
    pub resource: Resource,
    /// The resource as the server listed it, every field.
    pub definition: JsonObject,
}

/// A resource template and the server that lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerResourceTemplate {
    /// The server.
    pub server: String,
    /// The template, as rmcp reads it.
    pub template: ResourceTemplate,
    /// The template as the server listed it, every field.
    pub definition: JsonObject,
}

/// A prompt and the server that lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerPrompt {
    /// The server.
    pub server: String,
    /// The prompt, as rmcp reads it.
    pub prompt: Prompt,
    /// The prompt as the server listed it, every field.
    pub definition: JsonObject,
}

/// The resources and templates of every running server that offers resources.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Resources {
    /// Every listed resource, in server name order, each server's in its order.
    pub resources: Vec<ServerResource>,
    /// Every listed template, likewise.
    pub templates: Vec<ServerResourceTemplate>,
    /// The servers whose lists failed, and why.
    pub failures: Vec<FeatureError>,
}

/// The prompts of every running server that offers prompts.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Prompts {
    /// Every listed prompt, in server name order, each server's in its order.
    pub prompts: Vec<ServerPrompt>,
    /// The servers whose lists failed, and why.
    pub failures: Vec<FeatureError>,
}

impl Runtime {
    /// Lists the resources and resource templates of every running server that
    /// offers resources (see the module's invariants).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes each server's page in flight its cancellation.
    pub async fn resources(&self) -> Resources {
        let listed = self
            .for_each_offering(Feature::Resources, async |name, connection, timeout| {
                let resources: Vec<(Resource, JsonObject)> = entries(
                    name,
                    connection
                        .list_all("resources/list", "resources", timeout)
                        .await?
                        .as_slice(),
                );
                let templates: Vec<(ResourceTemplate, JsonObject)> = entries(
                    name,
                    connection
                        .list_all("resources/templates/list", "resourceTemplates", timeout)
                        .await?
                        .as_slice(),
                );
                Ok((resources, templates))
            })
            .await;
        let mut answer = Resources::default();
        for (server, result) in listed {
            match result {
                Ok((resources, templates)) => {
                    answer
                        .resources
                        .extend(resources.into_iter().map(|(resource, definition)| {
                            ServerResource {
                                server: server.clone(),
                                resource,
                                definition,
                            }
                        }));
                    answer
                        .templates
                        .extend(templates.into_iter().map(|(template, definition)| {
                            ServerResourceTemplate {
                                server: server.clone(),
                                template,
                                definition,
                            }
                        }));
                }
                Err(error) => answer.failures.push(error),
            }
        }
        answer
    }

    /// Lists the prompts of every running server that offers prompts.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes each server's page in flight its cancellation.
    pub async fn prompts(&self) -> Prompts {
        let listed = self
            .for_each_offering(Feature::Prompts, async |name, connection, timeout| {
                Ok(entries::<Prompt>(
                    name,
                    connection
                        .list_all("prompts/list", "prompts", timeout)
                        .await?
                        .as_slice(),
                ))
            })
            .await;
        let mut answer = Prompts::default();
        for (server, result) in listed {
            match result {
                Ok(prompts) => {
                    answer
                        .prompts
                        .extend(
                            prompts
                                .into_iter()
                                .map(|(prompt, definition)| ServerPrompt {
                                    server: server.clone(),
                                    prompt,
                                    definition,
                                }),
                        )
                }
                Err(error) => answer.failures.push(error),
            }
        }
        answer
    }

    /// Reads the resource at `uri` from `server`, or, when `None`, from the one
    /// server that lists it (or lists a template it could come from). The result is
    /// as the server returned it, contents of a kind mcp-runtime does not know
    /// included.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes the server the request's cancellation.
    pub async fn read_resource(
        &self,
        uri: &str,
        server: Option<&str>,
    ) -> Result<ReadResult, FeatureError> {
        let server = self.resource_server(uri, server).await?;
        let (connection, timeout) = self.offering(&server, Feature::Resources).await?;
        let method = "resources/read";
        let answer = connection
            .feature_object(method, json!({ "uri": uri }), timeout)
            .await?;
        ReadResult::from_object(answer).map_err(|message| FeatureError::Answer {
            server,
            method,
            message,
        })
    }

    /// Subscribes to updates of the resource at `uri` on `server`, or, when `None`,
    /// on the one server that lists it: each update is a
    /// [`ServerChange::ResourceUpdated`] of [`Self::changes`]. A handshake-era server
    /// is sent `resources/subscribe`; a 2026-07-28 server's listen stream is opened
    /// again with the URI. A server whose capabilities do not offer subscriptions is
    /// [`FeatureError::NotOffered`]. A server started again after it stopped keeps
    /// no subscription.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the subscriptions as they were.
    pub async fn subscribe_resource(
        &self,
        uri: &str,
        server: Option<&str>,
    ) -> Result<(), FeatureError> {
        self.change_subscription(uri, server, true).await
    }

    /// Withdraws a subscription of [`Self::subscribe_resource`].
    ///
    /// # Cancel safety
    ///
    /// As [`Self::subscribe_resource`].
    pub async fn unsubscribe_resource(
        &self,
        uri: &str,
        server: Option<&str>,
    ) -> Result<(), FeatureError> {
        self.change_subscription(uri, server, false).await
    }

    /// The changes the servers report from now on: their resource and prompt lists
    /// changed, a subscribed resource was updated (see [`ServerChange`]). A
    /// receiver that falls more changes behind than the runtime keeps
    /// ([`StartOptions::with_change_backlog`], 256 by default) is told how many it
    /// missed.
    ///
    /// [`StartOptions::with_change_backlog`]: crate::StartOptions::with_change_backlog
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<ServerChange> {
        self.shared.host.changes.subscribe()
    }

    async fn change_subscription(
        &self,
        uri: &str,
        server: Option<&str>,
        subscribe: bool,
    ) -> Result<(), FeatureError> {
        let server = self.resource_server(uri, server).await?;
        let (connection, timeout) = self.offering(&server, Feature::Resources).await?;
        connection.subscribe_resource(uri, subscribe, timeout).await
    }

    /// `server`, or, when `None`, the one server that lists the resource at `uri` (or
    /// lists a template it could come from).
    async fn resource_server(
        &self,
        uri: &str,
        server: Option<&str>,
    ) -> Result<String, FeatureError> {
        if let Some(server) = server {
            return Ok(server.to_owned());
        }
        let listed = self.resources().await;
        let mut servers: Vec<String> = listed
            .resources
            .iter()
            .filter(|entry| entry.resource.uri == uri)
            .map(|entry| entry.server.clone())
            .collect();
        if servers.is_empty() {
            servers = listed
                .templates
                .iter()
                .filter(|entry| template_may_make(&entry.template.uri_template, uri))
                .map(|entry| entry.server.clone())
                .collect();
        }
        only_one("resource", uri, servers)
    }

    /// The prompt `name` of `server`, or, when `None`, of the one server that lists
    /// it, with `arguments`. The result is as the server returned it, messages of a
    /// kind mcp-runtime does not know included.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes the server the request's cancellation.
    pub async fn get_prompt(
        &self,
        name: &str,
        server: Option<&str>,
        arguments: Option<JsonObject>,
    ) -> Result<PromptResult, FeatureError> {
        let server = match server {
            Some(server) => server.to_owned(),
            None => {
                let servers = self
                    .prompts()
                    .await
                    .prompts
                    .into_iter()
                    .filter(|entry| entry.prompt.name == name)
                    .map(|entry| entry.server)
                    .collect();
                only_one("prompt", name, servers)?
            }
        };
        let (connection, timeout) = self.offering(&server, Feature::Prompts).await?;
        let mut params = json!({ "name": name });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        let method = "prompts/get";
        let answer = connection.feature_object(method, params, timeout).await?;
        PromptResult::from_object(answer).map_err(|message| FeatureError::Answer {
            server,
            method,
            message,
        })
    }

    /// `completion/complete` on `server`: the values it suggests for an argument of
    /// a prompt or a resource template.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes the server the request's cancellation.
    pub async fn complete(
        &self,
        server: &str,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, FeatureError> {
        let (connection, timeout) = self.offering(server, Feature::Completions).await?;
        let params = serde_json::to_value(params).unwrap_or_default();
        let answer = connection
            .feature_request("completion/complete", params, timeout)
            .await?;
        typed(server, "completion/complete", answer)
    }

    /// The connection of `server` (started again if it stopped) and its timeout,
    /// when it offers `feature`.
    async fn offering(
        &self,
        server: &str,
        feature: Feature,
    ) -> Result<(Arc<Connection>, std::time::Duration), FeatureError> {
        let Some(configured) = self.shared.servers.get(server) else {
            return Err(FeatureError::UnknownServer {
                server: server.to_owned(),
            });
        };
        let (connection, _) = self
            .shared
            .available(server)
            .await
            .map_err(|error| match error {
                RestartError::UnknownServer { server } => FeatureError::UnknownServer { server },
                error => FeatureError::Restart(error),
            })?;
        if !connection.offers(feature) {
            return Err(FeatureError::NotOffered {
                server: server.to_owned(),
                feature: feature.name(),
            });
        }
        Ok((connection, configured.config.tool_timeout))
    }

    /// `each` for every server with a live connection that offers `feature`,
    /// concurrently; the answers in server name order.
    async fn for_each_offering<T>(
        &self,
        feature: Feature,
        each: impl AsyncFn(&str, &Connection, std::time::Duration) -> Result<T, FeatureError>,
    ) -> Vec<(String, Result<T, FeatureError>)> {
        let offering: Vec<(String, Arc<Connection>, std::time::Duration)> = self
            .shared
            .servers
            .iter()
            .filter_map(|(name, server)| {
                let (connection, _) = lock(&server.live).usable()?;
                connection
                    .offers(feature)
                    .then(|| (name.clone(), connection, server.config.tool_timeout))
            })
            .collect();
        let each = &each;
        futures::future::join_all(offering.iter().map(async |(name, connection, timeout)| {
            (name.clone(), each(name, connection, *timeout).await)
        }))
        .await
    }
}

/// The entries of a list that are valid `T`s, each with its JSON as listed; the
/// others are left out with a warning (invariant 2).
fn entries<T: DeserializeOwned>(server: &str, listed: &[Value]) -> Vec<(T, JsonObject)> {
    listed
        .iter()
        .filter_map(|entry| match (T::deserialize(entry), entry) {
            (Ok(typed), Value::Object(definition)) => Some((typed, definition.clone())),
            (Ok(_), _) => None,
            (Err(error), _) => {
                tracing::warn!(server, reason = %error, "left out an entry the server listed");
                None
            }
        })
        .collect()
}

/// The answer as the method's result type.
fn typed<T: DeserializeOwned>(
    server: &str,
    method: &'static str,
    answer: ServerResult,
) -> Result<T, FeatureError> {
    serde_json::to_value(answer)
        .and_then(serde_json::from_value)
        .map_err(|error| FeatureError::Answer {
            server: server.to_owned(),
            method,
            message: error.to_string(),
        })
}

/// The one server of `servers` (invariant 3).
fn only_one(
    kind: &'static str,
    name: &str,
    mut servers: Vec<String>,
) -> Result<String, FeatureError> {
    servers.sort();
    servers.dedup();
    match servers.len() {
        0 => Err(FeatureError::NotFound {
            kind,
            name: name.to_owned(),
        }),
        1 => Ok(servers.remove(0)),
        _ => Err(FeatureError::Ambiguous {
            kind,
            name: name.to_owned(),
            servers,
        }),
    }
}

/// Whether a URI template (RFC 6570) could expand to `uri`: its text before the
/// first expression is a prefix of `uri`, and a template without expressions equals
/// it.
fn template_may_make(template: &str, uri: &str) -> bool {
    match template.find('{') {
        Some(start) => uri.starts_with(&template[..start]),
        None => template == uri,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_may_make_a_uri_with_its_fixed_start() {
        assert!(template_may_make(
            "test://static/resource/{id}",
            "test://static/resource/7"
        ));
        assert!(!template_may_make(
            "test://static/resource/{id}",
            "test://other/7"
        ));
        assert!(template_may_make("file:///a.txt", "file:///a.txt"));
        assert!(!template_may_make("file:///a.txt", "file:///a.txt.bak"));
    }

    #[test]
    fn one_server_is_chosen_never_guessed() {
        let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        assert_eq!(only_one("prompt", "p", names(&["b", "b"])).unwrap(), "b");
        let error = only_one("prompt", "p", names(&["b", "a"])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "prompt `p` is offered by more than one server (`a`, `b`): name the server"
        );
        let error = only_one("resource", "x://y", names(&[])).unwrap_err();
        assert_eq!(error.to_string(), "no server offers resource `x://y`");
    }
}
