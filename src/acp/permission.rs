//! The agent's requests to the client, answered by policy ([`AcpConfig`]): a
//! `session/request_permission` by the kind of the options offered, every other method
//! (`fs/*`, `terminal/*`, extensions) by [`ExtensionPolicy`].

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::config::{AcpConfig, ExtensionPolicy, PermissionChoice};
use super::message::METHOD_NOT_FOUND;
use super::rpc::Rpc;

/// The method of a permission request.
pub(super) const REQUEST_PERMISSION: &str = "session/request_permission";

/// The fields of a `session/request_permission` agentwire reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionRequest {
    pub(super) session_id: String,
    options: Vec<PermissionOption>,
    #[serde(default)]
    tool_call: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionOption {
    option_id: Value,
    kind: String,
}

/// The option chosen for a permission request.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Choice {
    /// The option's id, echoed whatever its JSON type.
    option_id: Value,
    /// Whether it lets the tool run (kind `allow_once`).
    pub(super) allows: bool,
}

impl PermissionRequest {
    /// The request in `params`, if they are one.
    pub(super) fn parse(params: Option<&RawValue>) -> Option<Self> {
        params.and_then(|p| serde_json::from_str(p.get()).ok())
    }

    /// The tool call it asks about.
    pub(super) fn tool_call(&self) -> Option<&Value> {
        self.tool_call.as_ref()
    }

    /// The option to select under `choice`, by kind and never by id (every recorded agent
    /// names its options differently); `None` when none of the acceptable kinds is
    /// offered. `allow_always` is never chosen.
    pub(super) fn choose(&self, choice: PermissionChoice) -> Option<Choice> {
        let kinds: &[&str] = match choice {
            PermissionChoice::AllowOnce => &["allow_once", "reject_once"],
            PermissionChoice::RejectOnce => &["reject_once"],
        };
        kinds.iter().find_map(|kind| {
            let option = self.options.iter().find(|o| o.kind == *kind)?;
            Some(Choice {
                option_id: option.option_id.clone(),
                allows: *kind == "allow_once",
            })
        })
    }
}

/// Answers a permission request: the chosen option, or `cancelled` when there is none
/// (the request's turn is not prompting, or no acceptable kind was offered), as ACP
/// requires.
pub(super) fn answer_permission(rpc: &mut Rpc, id: &RawValue, chosen: Option<Choice>) {
    let outcome = match chosen {
        Some(choice) => {
            json!({"outcome": {"outcome": "selected", "optionId": choice.option_id}})
        }
        None => json!({"outcome": {"outcome": "cancelled"}}),
    };
    rpc.answer(id, outcome);
}

/// Answers a request of any other method as the configuration says: agentwire offers the
/// agent no client capability.
pub(super) fn answer_other(rpc: &mut Rpc, id: &RawValue, config: &AcpConfig) {
    match &config.extensions {
        ExtensionPolicy::MethodNotFound => {
            rpc.answer_error(id, METHOD_NOT_FOUND, "Method not found")
        }
        ExtensionPolicy::Answer(value) => rpc.answer(id, value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(options: &str) -> PermissionRequest {
        let params = format!(r#"{{"sessionId":"s","toolCall":{{}},"options":{options}}}"#);
        PermissionRequest::parse(Some(&RawValue::from_string(params).unwrap())).unwrap()
    }

    #[test]
    fn options_are_chosen_by_kind_never_always() {
        let offered = request(
            r#"[{"optionId":"yes-always","kind":"allow_always"},{"optionId":7,"kind":"allow_once"},{"optionId":"no","kind":"reject_once"}]"#,
        );
        assert_eq!(
            offered.choose(PermissionChoice::AllowOnce),
            Some(Choice {
                option_id: json!(7),
                allows: true
            })
        );
        assert_eq!(
            offered.choose(PermissionChoice::RejectOnce),
            Some(Choice {
                option_id: json!("no"),
                allows: false
            })
        );
        let always_only = request(r#"[{"optionId":"a","kind":"allow_always"}]"#);
        assert_eq!(always_only.choose(PermissionChoice::AllowOnce), None);
        // Without an `allow_once`, allowing falls back to rejecting once.
        let reject_only = request(r#"[{"optionId":"r","kind":"reject_once"}]"#);
        assert_eq!(
            reject_only
                .choose(PermissionChoice::AllowOnce)
                .map(|c| c.allows),
            Some(false)
        );
    }
}
