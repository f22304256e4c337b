//! Client mode: turning the agent's tool use and text envelopes into the client's tool
//! calls, in batches, and ending the turn with them.

use std::collections::HashSet;

use super::Emitter;
use super::config::Config;
use crate::event::{ActivityPhase, Event, FinishReason, ToolCall};
use crate::tools::envelope::{EnvelopeScanner, ScanItem};
use crate::tools::loop_guard::LoopGuard;
use crate::tools::{Delivery, MappedCall, ToolPlan, ids};

/// The client-mode pipeline between the decoder and the response.
///
/// - A cursor `tool_call/started` that maps to an offered client tool (alias and schema
///   normalisation in [`ToolPlan::map_native`]) joins the open batch; starts sharing a
///   `model_call_id` (parallel calls) form one batch.
/// - Text passes through an [`EnvelopeScanner`] when some client tool is taught as a text
///   envelope; complete envelopes in a row form one batch.
/// - A batch closes at the next event that is not part of it, at the end of the answer, or
///   after [`Config::batch_window_ms`]. Closing emits the calls with indices `0..n`, then
///   [`FinishReason::ToolCalls`]: the turn is over and the agent is stopped.
/// - A call the [`LoopGuard`] refuses ends the turn with an answer saying which call was
///   refused and why, and [`FinishReason::Stop`]; when calls were batched before it, the
///   batch is handed over without it.
/// - A malformed or schema-invalid envelope is not passed to the client: a short note in
///   the answer text reports it, so the model sees it on the next turn.
pub(super) struct ClientTools {
    plan: ToolPlan,
    guard: LoopGuard,
    scanner: Option<EnvelopeScanner>,
    parallel: bool,
    batch: Vec<PendingCall>,
    /// The ids in `batch`, for finding a call reported twice in constant time.
    batch_ids: HashSet<BatchId>,
    source: Option<Source>,
    deadline: Option<u64>,
    window_ms: u64,
    id_seed: u64,
    ended_turn: bool,
}

struct PendingCall {
    id: BatchId,
    name: String,
    arguments: String,
}

/// A call id in the open batch. In tests its comparisons are counted, so that duplicate
/// detection is held to a constant number of them per call: one batch can hold tens of
/// thousands of calls.
#[derive(Clone)]
struct BatchId(String);

impl PartialEq for BatchId {
    fn eq(&self, other: &Self) -> bool {
        #[cfg(test)]
        tests::ID_COMPARISONS.with(|count| count.set(count.get() + 1));
        self.0 == other.0
    }
}

impl Eq for BatchId {}

impl std::hash::Hash for BatchId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// How long a batch of calls the transport received as such stays open (at most; the
/// configured window when shorter).
const DIRECT_WINDOW_MS: u64 = 50;

/// Where the open batch came from; a batch never mixes sources.
#[derive(PartialEq, Eq)]
enum Source {
    /// Cursor-native starts of one model call.
    Native { model_call_id: Option<String> },
    /// Text envelopes.
    Envelope,
    /// Calls the transport received as calls of the client's tools (an MCP server's
    /// `tools/call`): the batch closes when its window ends or anything else happens.
    Direct,
}

impl ClientTools {
    pub(super) fn new(
        plan: ToolPlan,
        guard: LoopGuard,
        parallel: bool,
        config: &Config,
        id_seed: u64,
    ) -> Self {
        let envelopes = plan
            .catalogue()
            .any(|entry| matches!(entry.delivery, Delivery::Envelope));
        ClientTools {
            plan,
            guard,
            scanner: envelopes.then(|| EnvelopeScanner::new(config.max_envelope_bytes)),
            parallel,
            batch: Vec::new(),
            batch_ids: HashSet::new(),
            source: None,
            deadline: None,
            window_ms: config.batch_window_ms,
            id_seed,
            ended_turn: false,
        }
    }

    /// Whether this pipeline ended the turn (tool calls sent, or the loop guard stopped
    /// it): the agent must be stopped.
    pub(super) fn ended_turn(&self) -> bool {
        self.ended_turn
    }

    /// When the open batch closes by itself.
    pub(super) fn deadline(&self) -> Option<u64> {
        self.deadline
    }

    pub(super) fn handle_timeout(&mut self, now_ms: u64, emitter: &mut Emitter) {
        if self.deadline.is_some_and(|d| now_ms >= d) {
            self.close_batch(emitter);
        }
    }

    pub(super) fn route(&mut self, event: &Event<'_>, now_ms: u64, emitter: &mut Emitter) {
        if self.ended_turn {
            return;
        }
        match event {
            Event::AgentActivity(activity) if activity.phase == ActivityPhase::Started => {
                if let Some(mapped) = self.plan.map_native(activity.tool, activity.arguments) {
                    let source = Source::Native {
                        model_call_id: activity.model_call_id.map(str::to_owned),
                    };
                    let id = ids::call_id(activity.call_id);
                    self.offer(source, id, mapped, now_ms, emitter);
                } else {
                    self.interrupt(event, emitter);
                }
            }
            Event::TextDelta(text) => {
                if matches!(self.source, Some(Source::Native { .. } | Source::Direct)) {
                    self.close_batch(emitter);
                    return;
                }
                match &mut self.scanner {
                    Some(scanner) => {
                        scanner.push(text);
                        self.drain_scanner(now_ms, emitter);
                    }
                    None => emitter.emit(event),
                }
            }
            Event::Finish(_) | Event::Failed(_) => {
                if let Some(scanner) = &mut self.scanner {
                    scanner.finish();
                    self.drain_scanner(now_ms, emitter);
                }
                if self.ended_turn {
                    return;
                }
                if !self.batch.is_empty() {
                    // The calls are complete and valid: hand them over whatever the agent
                    // did next.
                    self.close_batch(emitter);
                } else {
                    emitter.emit(event);
                }
            }
            Event::Usage(_) | Event::Progress(_) => emitter.emit(event),
            _ => self.interrupt(event, emitter),
        }
    }

    /// A call of the client's tool `name` the transport received as such (an MCP
    /// `tools/call`), with the client-facing `id` the transport chose: it joins the open
    /// batch of such calls, as the loop guard allows.
    pub(super) fn offer_direct(
        &mut self,
        id: String,
        name: &str,
        arguments: &str,
        now_ms: u64,
        emitter: &mut Emitter,
    ) {
        if self.ended_turn {
            return;
        }
        let call = MappedCall {
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        };
        self.offer(Source::Direct, id, call, now_ms, emitter);
    }

    /// Any other event: it closes an open batch (the turn then ends), or passes through.
    fn interrupt(&mut self, event: &Event<'_>, emitter: &mut Emitter) {
        if self.batch.is_empty() {
            emitter.emit(event);
        } else {
            self.close_batch(emitter);
        }
    }

    fn drain_scanner(&mut self, now_ms: u64, emitter: &mut Emitter) {
        while let Some(item) = self.scanner.as_mut().and_then(EnvelopeScanner::poll) {
            if self.ended_turn {
                continue;
            }
            match item {
                ScanItem::Text(text) => {
                    if self.source == Some(Source::Envelope) {
                        // Text after the calls (often an imagined result) is dropped: the
                        // turn ends with the calls.
                        if !text.trim().is_empty() {
                            self.close_batch(emitter);
                        }
                        continue;
                    }
                    emitter.emit(&Event::TextDelta(&text));
                }
                ScanItem::Envelope(Ok(envelope)) => match self.plan.check_envelope(
                    &envelope.name,
                    &envelope.arguments,
                    envelope.input.as_deref(),
                ) {
                    Ok(mapped) => {
                        let index = u32::try_from(self.batch.len()).unwrap_or(u32::MAX);
                        let id = ids::envelope_call_id(self.id_seed, index, &mapped.arguments);
                        self.offer(Source::Envelope, id, mapped, now_ms, emitter);
                    }
                    Err(error) => self.note(
                        &format!("tool call `{}` not executed: {error}", envelope.name),
                        emitter,
                    ),
                },
                ScanItem::Envelope(Err(error)) => {
                    self.note(&format!("tool call not executed: {error}"), emitter)
                }
            }
        }
    }

    /// A client call joins the open batch, or opens one; a call from another source or
    /// model call closes the open batch first (and with it the turn).
    fn offer(
        &mut self,
        source: Source,
        id: String,
        call: MappedCall,
        now_ms: u64,
        emitter: &mut Emitter,
    ) {
        if self.source.as_ref().is_some_and(|open| *open != source) {
            self.close_batch(emitter);
            return;
        }
        let id = BatchId(id);
        if self.batch_ids.contains(&id) {
            // The same call reported again: it is in the batch already.
            return;
        }
        if let Err(refusal) = self.guard.admit(&call.name, &call.arguments) {
            if self.batch.is_empty() {
                let answer = refusal.answer(&call.name, &call.arguments);
                emitter.emit(&Event::TextDelta(&answer));
                emitter.emit(&Event::Finish(FinishReason::Stop));
                self.ended_turn = true;
            } else {
                self.close_batch(emitter);
            }
            return;
        }
        self.batch_ids.insert(id.clone());
        self.batch.push(PendingCall {
            id,
            name: call.name,
            arguments: call.arguments,
        });
        if self.source.is_none() {
            // Calls a transport receives as such are made together when they are made in
            // parallel (an agent's MCP client sends them at once): a short window gathers
            // them, where the agent's own tool starts are reported over a longer span.
            let window = match source {
                Source::Direct => self.window_ms.min(DIRECT_WINDOW_MS),
                Source::Native { .. } | Source::Envelope => self.window_ms,
            };
            self.source = Some(source);
            self.deadline = Some(now_ms.saturating_add(window));
        }
        if !self.parallel {
            // One call per turn: the client asked for no parallel calls.
            self.close_batch(emitter);
        }
    }

    /// A note in the answer text, on its own line.
    fn note(&mut self, text: &str, emitter: &mut Emitter) {
        let line = format!("\n[{text}]\n");
        emitter.emit(&Event::TextDelta(&line));
    }

    fn close_batch(&mut self, emitter: &mut Emitter) {
        if self.batch.is_empty() || self.ended_turn {
            return;
        }
        for (index, call) in self.batch.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            emitter.emit(&Event::ToolCall(ToolCall {
                index,
                id: &call.id.0,
                name: &call.name,
                arguments: &call.arguments,
            }));
        }
        emitter.emit(&Event::Finish(FinishReason::ToolCalls));
        self.batch.clear();
        self.batch_ids.clear();
        self.deadline = None;
        self.ended_turn = true;
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use crate::bridge::{Bridge, BridgeParams, Config, Dialect, Output};

    thread_local! {
        /// `BatchId` comparisons made on this thread.
        pub(super) static ID_COMPARISONS: Cell<u64> = const { Cell::new(0) };
    }

    /// A client-mode request (OpenCode's tools) and a transcript of `starts` parallel
    /// `read` starts of one model call, each reported twice; returns the tool calls handed
    /// to the client and the id comparisons made.
    fn one_batch(starts: usize) -> (usize, u64) {
        let request = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/requests/client_tools.json"),
        )
        .unwrap();
        let mut stdout = Vec::new();
        for i in 0..starts {
            let line = format!(
                r#"{{"type":"tool_call","subtype":"started","call_id":"call_{i}\nfc_{i}","tool_call":{{"readToolCall":{{"args":{{"path":"/p/{i}.rs"}}}}}},"model_call_id":"m"}}"#
            );
            for _ in 0..2 {
                stdout.extend_from_slice(line.as_bytes());
                stdout.push(b'\n');
            }
        }
        stdout
            .extend_from_slice(b"{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"\"}\n");
        let params = BridgeParams {
            now_ms: 0,
            created_unix: 0,
            id_seed: 1,
        };
        let mut bridge = Bridge::new(
            Dialect::ChatCompletions,
            &request,
            &Config::default(),
            params,
        );
        ID_COMPARISONS.with(|count| count.set(0));
        bridge.push_stdout(&stdout, 1).unwrap();
        let mut body = Vec::new();
        while let Some(output) = bridge.poll_output() {
            if let Output::Body(bytes) = output {
                body.extend_from_slice(bytes);
            }
        }
        let calls = String::from_utf8(body)
            .unwrap()
            .matches(r#""type":"function""#)
            .count();
        (calls, ID_COMPARISONS.with(Cell::get))
    }

    #[test]
    fn duplicate_detection_is_linear_in_the_batch() {
        for starts in [1_000, 2_000] {
            let (calls, comparisons) = one_batch(starts);
            assert_eq!(calls, starts, "every call once, duplicates dropped");
            // One comparison finds each duplicate; a scan of the batch would make
            // starts² / 2 of them.
            let bound = 2 * starts as u64;
            assert!(
                comparisons <= bound,
                "{comparisons} id comparisons for {starts} starts (at most {bound})"
            );
        }
    }
}
