//! A turn's prompt: the `session/prompt` request, and what its answer (a stop reason, and
//! usage where the agent reports it) makes of the turn's response.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::message::{AUTH_REQUIRED, RpcError};
use super::turn::{Phase, Turn, Work};
use super::usage::PromptResult;
use crate::event::{Event, Failure, FailureKind, FinishReason};

/// The `session/prompt` params of `turn`: the prompt rendered for the agent from the
/// request's conversation, as one text block.
pub(super) fn prompt_params(turn: &Turn) -> Value {
    let text = match &turn.work {
        Work::Fresh { prompt, .. } => prompt.clone(),
        Work::Bridge | Work::Resume { .. } => turn
            .bridge
            .invocation()
            .map(|invocation| String::from_utf8_lossy(&invocation.stdin).into_owned())
            .unwrap_or_default(),
    };
    json!({
        "sessionId": turn.session_id(),
        "prompt": [{"type": "text", "text": text}],
    })
}

/// How a stop reason finishes the response; `None` when the agent ended the turn without
/// an answer (`cancelled`, or a reason this does not know).
fn finish_reason(stop_reason: &str) -> Option<FinishReason> {
    match stop_reason {
        "end_turn" => Some(FinishReason::Stop),
        "max_tokens" | "max_turn_requests" => Some(FinishReason::Length),
        "refusal" => Some(FinishReason::ContentFilter),
        _ => None,
    }
}

/// The failure of a prompt the agent answered with an error.
fn prompt_error(error: RpcError) -> Failure {
    if error.code == AUTH_REQUIRED {
        Failure::new(
            FailureKind::NotAuthenticated,
            format!("The ACP agent is not logged in ({}).", error.describe()),
        )
    } else {
        Failure::new(
            FailureKind::AgentError,
            format!("The ACP agent failed the prompt: {}", error.describe()),
        )
    }
}

impl Turn {
    /// The agent answered the turn's prompt: the response gets its usage and finish, or
    /// the failure that explains why there is none. Nothing more comes for the turn, and
    /// nothing is left to cancel.
    pub(super) fn prompt_answered(
        &mut self,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        let cancelling = matches!(self.phase, Phase::Cancelling { .. });
        self.phase = Phase::Done;
        if let Err(failure) = self.finish(result, cancelling, now_ms) {
            self.bridge.push_event(&Event::Failed(failure), now_ms);
        }
        let _ = self.bridge.take_stop();
    }

    /// Pushes the answer's usage (where reported) and finish; the failure when there is
    /// no finish. The end of a prompt we cancelled needs neither: the response already
    /// ended (client gone, timeout, shutdown).
    fn finish(
        &mut self,
        result: Result<Option<&RawValue>, RpcError>,
        cancelling: bool,
        now_ms: u64,
    ) -> Result<(), Failure> {
        let raw = result.map_err(prompt_error)?;
        let result = raw
            .and_then(|r| serde_json::from_str::<PromptResult>(r.get()).ok())
            .ok_or_else(|| {
                Failure::new(
                    FailureKind::BadOutput,
                    "The ACP agent's prompt result has no stop reason.",
                )
            })?;
        if let Some(usage) = result.usage(self.cost) {
            self.bridge.push_event(&Event::Usage(usage), now_ms);
        }
        match finish_reason(&result.stop_reason) {
            Some(finish) => {
                self.bridge.push_event(&Event::Finish(finish), now_ms);
                Ok(())
            }
            None if cancelling => Ok(()),
            None if self.refused => Err(Failure::new(
                FailureKind::AgentError,
                format!(
                    "The ACP agent ended the turn ({}) after its request for permission to run a tool was refused: permissions are answered `reject_once` (`AcpConfig::permission`; `--allow-force` in the proxies allows them). Ask for something that needs no permission, or allow it.",
                    result.stop_reason
                ),
            )),
            None => Err(Failure::new(
                FailureKind::AgentError,
                format!("The ACP agent ended the turn: {}.", result.stop_reason),
            )),
        }
    }
}
