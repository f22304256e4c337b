//! Where each line the agent writes goes: an answer to the request of ours it answers
//! (one method per kind of request), a `session/update` to the turn running on its
//! session, a request of the agent to its answer by policy. Lines that are not JSON-RPC
//! are counted and ignored.

use serde_json::value::RawValue;

use super::config::PermissionChoice;
use super::connection::Connection;
use super::handshake::{self, Handshake};
use super::message::{Incoming, RpcError};
use super::permission::{self, PermissionRequest, REQUEST_PERMISSION};
use super::profile::{CallFacts, Profile};
use super::rpc::PendingKind;
use super::session::Session;
use super::turn::{Phase, Turn, TurnId};
use super::update::{Update, UpdateParams};
use crate::event::{Failure, FailureKind};

impl Connection {
    /// One line the agent wrote.
    pub(super) fn handle_line(&mut self, line: &str, now_ms: u64) {
        let Ok(incoming) = serde_json::from_str::<Incoming<'_>>(line) else {
            self.malformed += 1;
            return;
        };
        match (incoming.id, incoming.method.as_deref()) {
            (Some(id), Some(method)) => self.handle_request(id, method, incoming.params),
            (None, Some("session/update")) => {
                if let Some(params) = incoming.params {
                    self.handle_update(params, now_ms);
                }
            }
            (None, Some(_)) => {}
            (Some(id), None) => {
                // Our ids are integers; anything else answers nothing of ours.
                let Ok(id) = id.get().parse::<u64>() else {
                    self.malformed += 1;
                    return;
                };
                let Some(kind) = self.rpc.take_answered(id) else {
                    return;
                };
                let result = match incoming.error {
                    Some(error) => Err(error),
                    None => Ok(incoming.result),
                };
                self.handle_response(kind, result, now_ms);
            }
            (None, None) => self.malformed += 1,
        }
    }

    /// A `session/update`, for the turn running on its session unless that turn is done.
    fn handle_update(&mut self, params: &RawValue, now_ms: u64) {
        let Ok(params) = serde_json::from_str::<UpdateParams<'_>>(params.get()) else {
            self.malformed += 1;
            return;
        };
        let Some(index) = self
            .turns
            .iter()
            .position(|t| t.session_id() == Some(&*params.session_id) && t.phase != Phase::Done)
        else {
            return;
        };
        if self.is_client_tool_call(index, &params.update) {
            // The client's own call, which reaches it as a tool call: not the agent's
            // activity.
            return;
        }
        self.turns[index].push_update(&params.update, now_ms);
        if !params.update.is_usage() {
            self.after_turn_input(index, now_ms);
        }
    }

    /// A request of the agent. A permission request belongs to the turn prompting on its
    /// session and is answered by policy; any other method by configuration.
    fn handle_request(&mut self, id: &RawValue, method: &str, params: Option<&RawValue>) {
        if method != REQUEST_PERMISSION {
            permission::answer_other(&mut self.rpc, id, &self.config);
            return;
        }
        let request = PermissionRequest::parse(params);
        let prompting = request.as_ref().and_then(|request| {
            self.turns.iter().position(|t| {
                t.session_id() == Some(request.session_id.as_str()) && t.phase == Phase::Prompting
            })
        });
        let policy = request
            .as_ref()
            .and_then(|request| self.tool_policy(&request.session_id, request.tool_call()));
        let parked = request.as_ref().is_some_and(|request| {
            self.conversations
                .parked
                .iter()
                .any(|p| p.session.id() == request.session_id)
        });
        // A cancelled (or unknown) turn's permission is answered `cancelled`; a parked
        // session's only when it is not the client's own tool.
        let chosen = request
            .filter(|_| prompting.is_some() || (parked && policy.is_some()))
            .and_then(|request| request.choose(policy.unwrap_or(self.config.permission)));
        if let Some(index) = prompting {
            // Remembered so that an agent ending the turn over it (codex-acp ends it
            // `cancelled`) is explained to the client.
            self.turns[index].refused |= chosen.as_ref().is_none_or(|choice| !choice.allows);
        }
        permission::answer_permission(&mut self.rpc, id, chosen);
    }

    /// An answer to a request of ours.
    fn handle_response(
        &mut self,
        kind: PendingKind,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        match kind {
            PendingKind::Initialize => self.initialized(result, now_ms),
            PendingKind::NewSession => self.session_created(result, now_ms),
            PendingKind::NewSessionFor(turn) => self.session_created_for(turn, result, now_ms),
            PendingKind::SetModel(turn) => self.model_set(turn, result, now_ms),
            PendingKind::Prompt(turn) => self.prompt_answered(turn, result, now_ms),
            PendingKind::HeldPrompt(serial) => self.held_prompt_answered(serial),
            // Awaited only so that its deadline bounds it: the answer changes nothing.
            PendingKind::Close => {}
        }
    }

    /// The handshake's answer: the agent serves, or it is restarted.
    fn initialized(&mut self, result: Result<Option<&RawValue>, RpcError>, now_ms: u64) {
        match handshake::accept(result) {
            Ok(agent) => {
                self.pool.close_retired(agent.closes_sessions);
                self.agent = Some(agent);
                self.handshake = Handshake::Ready;
            }
            Err(failure) => self.die(failure, now_ms),
        }
    }

    /// A fresh session for the pool; or, when none came, the oldest queued turn fails
    /// (nothing is queued on a particular `session/new`, and a pool refill failing fails
    /// no one).
    fn session_created(&mut self, result: Result<Option<&RawValue>, RpcError>, now_ms: u64) {
        match Session::from_answer(result) {
            Ok(session) => self.pool.add(session),
            Err(failure) => {
                if let Some(index) = self.turns.iter().position(Turn::is_queued) {
                    self.turns[index].fail(failure, now_ms);
                }
            }
        }
    }

    /// The session made for `turn` (with the client's tools): the turn begins on it, or
    /// fails when none came. A turn that ended meanwhile gives it up at once.
    fn session_created_for(
        &mut self,
        turn: TurnId,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        let index = self.index(turn);
        let link = index.and_then(|i| self.turns[i].pending_link.take());
        match (Session::from_answer(result), index) {
            (Ok(mut session), Some(index))
                if self.turns[index].phase == Phase::Creating
                    && !self.turns[index].bridge.is_ending() =>
            {
                session.link = link;
                self.begin(index, session, now_ms);
            }
            (Ok(mut session), _) => {
                session.link = link;
                self.end_session(session, None, now_ms);
            }
            (Err(failure), Some(index)) => self.turns[index].fail(failure, now_ms),
            (Err(_), None) => {}
        }
    }

    /// The agent answered the model request of `turn`: prompt, unless the turn ended
    /// meanwhile or the model was refused.
    fn model_set(
        &mut self,
        turn: TurnId,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        let Some(index) = self.index(turn) else {
            return;
        };
        if self.turns[index].bridge.is_ending() || self.turns[index].phase != Phase::SettingModel {
            self.turns[index].phase = Phase::Done;
            self.release_session(index, now_ms);
            return;
        }
        match result {
            Ok(_) => self.prompt(index),
            Err(error) => {
                self.release_session(index, now_ms);
                let model = self.turns[index].bridge.model().to_owned();
                let failure = Failure::new(
                    FailureKind::ModelUnavailable,
                    format!(
                        "The ACP agent refused the model `{model}`: {}",
                        error.describe()
                    ),
                );
                self.turns[index].fail(failure, now_ms);
            }
        }
    }

    /// The prompt's answer ends the turn on the agent's side: its session is released.
    fn prompt_answered(
        &mut self,
        turn: TurnId,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        let Some(index) = self.index(turn) else {
            return;
        };
        let ending = self.turns[index].bridge.is_ending();
        if let Some(session) = self.turns[index].session.as_mut() {
            session.prompting = false;
            // The agent finished a turn of its own (after a deferred call) while results
            // waited for it: they are its next prompt, for this turn's response.
            if !session.late_results.is_empty() && result.is_ok() && !ending {
                let text = std::mem::take(&mut session.late_results);
                self.prompt_text(index, text);
                return;
            }
        }
        self.turns[index].prompt_answered(result, now_ms);
        self.release_session(index, now_ms);
    }

    /// Whether `update`, for the turn at `index`, is about a call of the client's tools
    /// through the turn's session's MCP server (remembered by call id, as later updates of
    /// a call may not name its tool).
    fn is_client_tool_call(&mut self, index: usize, update: &Update<'_>) -> bool {
        let profile = self.profile();
        let server = self.config.mcp_server_name.clone();
        let Some(session) = self.turns[index].session.as_mut() else {
            return false;
        };
        let Some(link) = session.link.as_mut() else {
            return false;
        };
        let Some((id, title, raw)) = update.tool_call_facts() else {
            return false;
        };
        if link.hidden.iter().any(|hidden| hidden == id) {
            return true;
        }
        let raw: Option<serde_json::Value> = raw.and_then(|r| serde_json::from_str(r.get()).ok());
        let facts = CallFacts {
            title,
            id,
            raw_input: raw.as_ref().filter(|r| r.is_object()),
        };
        if profile.is_server_tool(&server, &facts) {
            link.hidden.push(id.to_owned());
            return true;
        }
        false
    }

    /// How a permission request of session `session` for `tool_call` is answered, when
    /// the session is given the client's tools: the client's own tools run (the client
    /// decided when it offered them), the agent's own are refused (they would act behind
    /// the client's back). `None` for other sessions: the configured policy.
    fn tool_policy(
        &self,
        session: &str,
        tool_call: Option<&serde_json::Value>,
    ) -> Option<PermissionChoice> {
        let holder = self
            .turns
            .iter()
            .filter_map(|t| t.session.as_ref())
            .chain(self.conversations.parked.iter().map(|p| &p.session))
            .find(|s| s.id() == session)?;
        holder.link.as_ref()?;
        let facts = tool_call.map(CallFacts::of).unwrap_or_default();
        Some(
            if self
                .profile()
                .is_server_tool(&self.config.mcp_server_name, &facts)
            {
                PermissionChoice::AllowOnce
            } else {
                PermissionChoice::RejectOnce
            },
        )
    }

    /// The agent's profile, once it said who it is.
    fn profile(&self) -> Profile {
        self.agent.map_or(Profile::Generic, |agent| agent.profile)
    }
}
