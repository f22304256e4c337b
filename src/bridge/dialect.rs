//! Which API a request speaks, and the one place that knows every dialect module: how each
//! parses a body, writes its responses and renders its errors.

use std::fmt;

use super::{BridgeParams, Config};
use crate::api::{BodyBuilder, ErrorReply, Request, RequestError, StreamEncoder};
use crate::names::named;
use crate::openai::ApiError;
use crate::openai::chat::{ChunkEncoder, CompletionBuilder, OutputOptions, ResponseMeta};
use crate::{anthropic, openai};

/// The API a request speaks. The caller chooses it from the route the request came in on
/// (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`): it is never guessed from the
/// body.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// OpenAI Chat Completions ([`openai::chat`]).
    #[default]
    ChatCompletions,
    /// OpenAI Responses ([`openai::responses`]).
    Responses,
    /// Anthropic Messages ([`anthropic`]).
    Messages,
}

// Named after the APIs, as the bindings and the examples take them.
named!(Dialect, "dialect" {
    ChatCompletions => "chat-completions",
    Responses => "responses",
    Messages => "messages",
});

/// A request of some dialect, parsed, with the writer of its response.
#[derive(Debug)]
pub struct Prepared {
    /// The request, in no dialect's terms.
    pub request: Request,
    /// The writer of its response: a stream encoder when the request asks for a stream.
    pub writer: ResponseWriter,
    /// The id the response will carry when its dialect gives responses ids a later
    /// request can name (Responses: `resp_…`, for `previous_response_id`).
    pub response_id: Option<String>,
}

/// A dialect's writer of one response.
pub enum ResponseWriter {
    /// SSE frames as events come.
    Stream(Box<dyn StreamEncoder>),
    /// One body at the end.
    Body(Box<dyn BodyBuilder>),
}

impl fmt::Debug for ResponseWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResponseWriter::Stream(_) => "ResponseWriter::Stream",
            ResponseWriter::Body(_) => "ResponseWriter::Body",
        })
    }
}

impl ResponseWriter {
    fn new<S, B>(
        stream: bool,
        encoder: impl FnOnce() -> S,
        builder: impl FnOnce() -> B,
    ) -> ResponseWriter
    where
        S: StreamEncoder + 'static,
        B: BodyBuilder + 'static,
    {
        if stream {
            ResponseWriter::Stream(Box::new(encoder()))
        } else {
            ResponseWriter::Body(Box::new(builder()))
        }
    }
}

impl Dialect {
    /// Parses `body` as a request of this dialect and makes the writer of its response
    /// (with the response options of `config`, the identity from `params`); or says what
    /// is wrong with the body. The [`Bridge`](super::Bridge) does this first; embedders
    /// that drive a [`Decoder`](crate::cursor::Decoder) themselves can too.
    pub fn prepare(
        self,
        body: &[u8],
        config: &Config,
        params: &BridgeParams,
    ) -> Result<Prepared, RequestError> {
        match self {
            Dialect::ChatCompletions => {
                let request = openai::chat::parse_request(body, &config.request_limits)?;
                let meta = ResponseMeta::new(
                    params.id_seed,
                    params.created_unix,
                    request.response_model.clone(),
                );
                let options = OutputOptions {
                    reasoning: config.reasoning,
                    activity_notes: config.activity_notes,
                    include_usage: request.include_usage,
                };
                let writer = ResponseWriter::new(
                    request.stream,
                    || ChunkEncoder::new(&meta, &options),
                    || CompletionBuilder::new(&meta, &options),
                );
                Ok(Prepared {
                    request,
                    writer,
                    response_id: None,
                })
            }
            Dialect::Responses => {
                use openai::responses::{
                    EventEncoder, OutputOptions, ResponseBuilder, ResponseMeta,
                };
                let request = openai::responses::parse_request(body, &config.request_limits)?;
                let meta = ResponseMeta::new(params.id_seed, params.created_unix, &request);
                let options = OutputOptions::new(&request, config.activity_notes);
                let writer = ResponseWriter::new(
                    request.stream,
                    || EventEncoder::new(&meta, &options),
                    || ResponseBuilder::new(&meta, &options),
                );
                let response_id = Some(meta.id.clone());
                Ok(Prepared {
                    request,
                    writer,
                    response_id,
                })
            }
            Dialect::Messages => {
                let request = anthropic::parse_request(body, &config.request_limits)?;
                let meta =
                    anthropic::ResponseMeta::new(params.id_seed, request.response_model.clone());
                let options = anthropic::OutputOptions {
                    thinking: anthropic::shows_thinking(&request.reasoning),
                    activity_notes: config.activity_notes,
                };
                let writer = ResponseWriter::new(
                    request.stream,
                    || anthropic::MessageStreamEncoder::new(&meta, &options),
                    || anthropic::MessageBuilder::new(&meta, &options),
                );
                Ok(Prepared {
                    request,
                    writer,
                    response_id: None,
                })
            }
        }
    }

    /// Appends the dialect's error body for `reply` (to send with `reply.status()`, and
    /// `reply.retryable()` as `x-should-retry`). Adapters use it for their own refusals
    /// (unknown route, busy, not authenticated) on a dialect's route.
    pub fn write_error(self, reply: &ErrorReply, out: &mut Vec<u8>) {
        match self {
            Dialect::ChatCompletions | Dialect::Responses => {
                ApiError::from(reply).write_json(out);
            }
            Dialect::Messages => anthropic::write_error(reply, out),
        }
    }
}
