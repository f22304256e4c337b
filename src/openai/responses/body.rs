//! Events → one `response` object (non-streaming responses).

use super::options::{OutputOptions, ResponseMeta};
use super::stream::EventEncoder;
use crate::api::{BodyBuilder, ErrorReply};
use crate::event::{Event, Failure};

/// Assembles a non-streaming response from the same events a stream is made of, as they
/// arrive, and writes the `response` object at the end.
///
/// The body is exactly the `response` a stream of the same events ends with
/// (`response.completed`, or `response.incomplete` with its `incomplete_details`): the
/// builder runs the stream's item machine ([`EventEncoder`]) and keeps only its end, so
/// the two cannot disagree. A failure is the bridge's to send as an OpenAI error body
/// with its status.
#[derive(Debug)]
pub struct ResponseBuilder {
    encoder: EventEncoder,
    /// Where the stream's frames go, cleared after each event.
    frames: Vec<u8>,
}

impl ResponseBuilder {
    /// A builder for one response.
    #[must_use]
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        ResponseBuilder {
            encoder: EventEncoder::new(meta, options),
            frames: Vec::new(),
        }
    }

    /// Takes in one event. Events after the answer finished are ignored.
    pub fn push(&mut self, event: &Event<'_>) {
        self.encoder.encode(event, &mut self.frames);
        self.frames.clear();
    }

    /// Whether a `Finish` or `Failed` event arrived.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.encoder.is_finished()
    }

    /// The failure, if the answer failed.
    #[must_use]
    pub fn failure(&self) -> Option<&Failure> {
        self.encoder.failure()
    }

    /// The HTTP status of the body: 200, or the failure's status.
    #[must_use]
    pub fn status(&self) -> u16 {
        self.failure()
            .map_or(200, |failure| ErrorReply::from_failure(failure).status())
    }

    /// Appends the `response` object.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        self.encoder.write_response(out);
    }
}

impl BodyBuilder for ResponseBuilder {
    fn push(&mut self, event: &Event<'_>) {
        ResponseBuilder::push(self, event);
    }

    fn is_finished(&self) -> bool {
        ResponseBuilder::is_finished(self)
    }

    fn failure(&self) -> Option<&Failure> {
        ResponseBuilder::failure(self)
    }

    fn write_body(&self, out: &mut Vec<u8>) {
        ResponseBuilder::write_body(self, out);
    }
}
