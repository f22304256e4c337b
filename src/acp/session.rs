//! One ACP session: how it is asked for (`session/new`), what the agent's answer gives (its
//! id and the models it offers), and how a request's model is set on it.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::message::{AUTH_REQUIRED, RpcError};
use crate::event::{Failure, FailureKind};
use crate::mcp::link::McpLink;

/// A session the agent created: where its turns' prompts, updates and permission
/// requests meet.
#[derive(Debug)]
pub(super) struct Session {
    id: String,
    models: ModelChoice,
    /// The client's tools, served to this session as an MCP server of its own.
    pub(super) link: Option<McpLink>,
    /// A prompt of ours on it has not been answered: the agent's turn is not over.
    pub(super) prompting: bool,
    /// Results the client sent that could no longer answer the agent's calls (answered
    /// already with a note at the agent's limit, or given up by the agent): given to the
    /// agent as a prompt at the next chance.
    pub(super) late_results: String,
}

impl Session {
    /// The `session/new` params: the working directory, no MCP server, and the agent's own
    /// `_meta` for the session, if any.
    pub(super) fn new_params(cwd: &str, meta: Option<Value>) -> Value {
        let mut params = json!({"cwd": cwd, "mcpServers": []});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        params
    }

    /// The `session/new` params of a session given the client's tools: the working
    /// directory, the MCP server `server`, and the agent's own `_meta` for it, if any.
    pub(super) fn new_params_with(cwd: &str, server: Value, meta: Option<Value>) -> Value {
        let mut params = json!({"cwd": cwd, "mcpServers": [server]});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        params
    }

    /// Whether the client's tools are served to it.
    pub(super) fn has_client_tools(&self) -> bool {
        self.link.is_some()
    }

    /// The session a `session/new` answer gives, or why there is none.
    pub(super) fn from_answer(
        result: Result<Option<&RawValue>, RpcError>,
    ) -> Result<Self, Failure> {
        let created = result
            .as_ref()
            .ok()
            .and_then(|r| r.as_ref())
            .and_then(|r| serde_json::from_str::<NewSession>(r.get()).ok());
        if let Some(created) = created {
            return Ok(Session {
                models: created.model_choice(),
                id: created.session_id,
                link: None,
                prompting: false,
                late_results: String::new(),
            });
        }
        Err(match result {
            Err(error) if error.code == AUTH_REQUIRED => Failure::new(
                FailureKind::NotAuthenticated,
                format!(
                    "The ACP agent is not logged in ({}). Log it in (for cursor-agent: run `cursor-agent login` or set CURSOR_API_KEY).",
                    error.describe()
                ),
            ),
            Err(error) => Failure::new(
                FailureKind::Misconfigured,
                format!(
                    "The ACP agent could not create a session: {}",
                    error.describe()
                ),
            ),
            Ok(_) => Failure::new(
                FailureKind::BadOutput,
                "The ACP agent answered `session/new` without a session id.",
            ),
        })
    }

    /// The agent's id for it.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The models it offers and how one is chosen.
    pub(super) fn models(&self) -> &ModelChoice {
        &self.models
    }
}

/// The fields of a `session/new` result agentwire reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSession {
    session_id: String,
    #[serde(default)]
    models: Option<Models>,
    #[serde(default)]
    config_options: Vec<ConfigOption>,
}

/// The older `models` table (`session/set_model`), still served by claude-agent-acp,
/// gemini-cli and cursor-agent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Models {
    #[serde(default)]
    current_model_id: Option<String>,
    #[serde(default)]
    available_models: Vec<ModelInfo>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelInfo {
    model_id: String,
}

/// A `configOptions` entry (`session/set_config_option`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigOption {
    id: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    current_value: Option<Value>,
    #[serde(default)]
    options: Vec<ConfigValue>,
}

#[derive(Debug, Deserialize)]
struct ConfigValue {
    #[serde(default)]
    value: Option<Value>,
}

/// How a session's model is chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ModelChoice {
    /// `session/set_config_option` with this config id, when the agent offers one.
    config_id: Option<String>,
    current: Option<String>,
    available: Vec<String>,
}

/// What to do about a request's model on a session.
#[derive(Debug, PartialEq)]
pub(crate) enum ModelPlan {
    /// The session already uses it (or the agent's default was asked for).
    Keep,
    /// Send this request (method, params without `sessionId`).
    Set(&'static str, Value),
    /// The agent does not offer it: the list it offers.
    Unknown(Vec<String>),
}

impl NewSession {
    /// The session's model choice: its `model` config option (preferred: ACP replaced
    /// `set_model` with it), else its `models` table.
    fn model_choice(&self) -> ModelChoice {
        let option = self
            .config_options
            .iter()
            .find(|option| option.category.as_deref() == Some("model") || option.id == "model");
        if let Some(option) = option {
            return ModelChoice {
                config_id: Some(option.id.clone()),
                current: option
                    .current_value
                    .as_ref()
                    .and_then(|v| v.as_str())
                    .map(Into::into),
                available: option
                    .options
                    .iter()
                    .filter_map(|o| o.value.as_ref()?.as_str().map(Into::into))
                    .collect(),
            };
        }
        match &self.models {
            Some(models) => ModelChoice {
                config_id: None,
                current: models.current_model_id.clone(),
                available: models
                    .available_models
                    .iter()
                    .map(|m| m.model_id.clone())
                    .collect(),
            },
            None => ModelChoice::default(),
        }
    }
}

impl ModelChoice {
    /// The model the session uses, when the agent says.
    pub(crate) fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// The models the session offers, in the agent's order.
    pub(crate) fn available(&self) -> &[String] {
        &self.available
    }

    /// What to do for `model`. An unlisted model is refused before anything is sent:
    /// agents accept unknown ids and fail later (codex-acp and gemini-cli at the prompt,
    /// as an error or as answer text), so the list is the only early answer.
    pub(crate) fn plan(&self, model: &str, default_names: &[String]) -> ModelPlan {
        if model.is_empty() || self.current.as_deref() == Some(model) {
            return ModelPlan::Keep;
        }
        if self.available.iter().any(|m| m == model) {
            return match &self.config_id {
                Some(config_id) => ModelPlan::Set(
                    "session/set_config_option",
                    json!({"configId": config_id, "value": model}),
                ),
                None => ModelPlan::Set("session/set_model", json!({"modelId": model})),
            };
        }
        if default_names.iter().any(|name| name == model) {
            return ModelPlan::Keep;
        }
        ModelPlan::Unknown(self.available.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(result: &str) -> ModelChoice {
        serde_json::from_str::<NewSession>(result)
            .unwrap()
            .model_choice()
    }

    #[test]
    fn the_config_option_is_preferred_and_unknown_models_are_refused() {
        let defaults = ["auto".to_string(), "default".to_string()];
        let codex = choice(
            r#"{"sessionId":"s","configOptions":[{"id":"model","category":"model","currentValue":"gpt-5.5","options":[{"value":"gpt-5.5"},{"value":"gpt-5.4"}]}]}"#,
        );
        assert_eq!(codex.plan("gpt-5.5", &defaults), ModelPlan::Keep);
        assert_eq!(codex.plan("auto", &defaults), ModelPlan::Keep);
        assert!(matches!(
            codex.plan("gpt-5.4", &defaults),
            ModelPlan::Set("session/set_config_option", _)
        ));
        assert!(
            matches!(codex.plan("nope", &defaults), ModelPlan::Unknown(list) if list.len() == 2)
        );
        let gemini = choice(
            r#"{"sessionId":"s","models":{"currentModelId":"auto","availableModels":[{"modelId":"auto"},{"modelId":"gemini-2.5-pro"}]}}"#,
        );
        assert!(matches!(
            gemini.plan("gemini-2.5-pro", &defaults),
            ModelPlan::Set("session/set_model", _)
        ));
    }
}
