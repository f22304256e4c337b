//! Which queued turn runs next and on which session, and how it starts: the session's
//! model set when the request asks for another (`session/set_config_option` or
//! `session/set_model`; its answer goes on in `route.rs`), then the prompt. The pool of
//! fresh sessions is kept filled ahead of need.
//!
//! At most [`AcpConfig::max_concurrent_prompts`](super::AcpConfig::max_concurrent_prompts)
//! turns hold a prompt slot at once (setting a model, prompting, or cancelled and not
//! yet ended); a cancelled prompt that never ended keeps its slot for good.

use serde_json::json;

use super::config::NativeTools;
use super::connection::Connection;
use super::handshake::Handshake;
use super::prompt::prompt_params;
use super::rpc::PendingKind;
use super::session::{ModelPlan, Session};
use super::turn::{Needs, Phase};
use crate::event::{Failure, FailureKind};

impl Connection {
    /// Gives queued turns sessions and prompt slots, in the order they were started, and
    /// keeps the pool filled.
    pub(super) fn schedule(&mut self, now_ms: u64) {
        self.reap();
        if self.handshake != Handshake::Ready {
            return;
        }
        let busy = self.stuck + self.turns.iter().filter(|t| t.holds_slot()).count();
        let mut slots = self
            .config
            .max_concurrent_prompts
            .max(1)
            .saturating_sub(busy);
        let mut index = 0;
        let mut pool_empty = false;
        while slots > 0 && index < self.turns.len() {
            if self.turns[index].is_queued() {
                match self.turns[index].needs() {
                    Needs::Resumed => {
                        slots -= 1;
                        self.begin_resume(index, now_ms);
                    }
                    Needs::OwnSession => {
                        slots -= 1;
                        if let Err(failure) = self.create_session_for(index, now_ms) {
                            self.turns[index].fail(failure, now_ms);
                        }
                    }
                    Needs::PoolSession if pool_empty => {}
                    Needs::PoolSession => match self.pool.take() {
                        Some(session) => {
                            slots -= 1;
                            self.begin(index, session, now_ms);
                        }
                        None => pool_empty = true,
                    },
                }
            }
            index += 1;
        }
        let queued = self
            .turns
            .iter()
            .filter(|t| t.is_queued() && t.needs() == Needs::PoolSession)
            .count();
        let wanted = queued.min(slots) + self.config.pool_size;
        let creating = self.rpc.awaiting(PendingKind::NewSession);
        let meta = match self.config.native_tools {
            NativeTools::Keep => None,
            NativeTools::Off => self.agent.and_then(|agent| agent.profile.no_tools_meta()),
        };
        for _ in (self.pool.len() + creating)..wanted {
            let deadline = now_ms.saturating_add(self.config.new_session_timeout_ms);
            self.rpc.request(
                PendingKind::NewSession,
                "session/new",
                Session::new_params(&self.config.cwd, meta.clone()),
                Some(deadline),
            );
        }
    }

    /// Gives the turn at `index` the fresh `session`: sets its model, or prompts at once.
    pub(super) fn begin(&mut self, index: usize, session: Session, now_ms: u64) {
        let turn = &mut self.turns[index];
        let plan = session
            .models()
            .plan(turn.bridge.model(), &self.config.default_model_names);
        match plan {
            ModelPlan::Unknown(offered) => {
                let failure = Failure::new(
                    FailureKind::ModelUnavailable,
                    format!(
                        "The model `{}` is not offered by this ACP agent; it offers: {}.",
                        turn.bridge.model(),
                        offered.join(", ")
                    ),
                );
                turn.fail(failure, now_ms);
                // Unused, so still fresh.
                self.pool.give_back(session);
            }
            ModelPlan::Set(method, mut params) => {
                params["sessionId"] = json!(session.id());
                turn.phase = Phase::SettingModel;
                turn.session = Some(session);
                let deadline = now_ms.saturating_add(self.config.set_model_timeout_ms);
                let kind = PendingKind::SetModel(turn.id);
                self.rpc.request(kind, method, params, Some(deadline));
            }
            ModelPlan::Keep => {
                turn.session = Some(session);
                self.prompt(index);
            }
        }
    }

    /// Sends the prompt of the turn at `index`, on its session.
    pub(super) fn prompt(&mut self, index: usize) {
        let turn = &mut self.turns[index];
        turn.phase = Phase::Prompting;
        let params = prompt_params(turn);
        if let Some(session) = turn.session.as_mut() {
            session.prompting = true;
        }
        let kind = PendingKind::Prompt(turn.id);
        self.rpc.request(kind, "session/prompt", params, None);
    }
}
