//! `cursor::Decoder` for JavaScript: stdout bytes in, events out as JSON.

use agentwire::cursor::Decoder;
use wasm_bindgen::prelude::wasm_bindgen;

use crate::config;
use crate::error::RawError;
use crate::events;

/// A decoder; the TypeScript `Decoder` wraps it.
#[wasm_bindgen]
pub struct RawDecoder {
    decoder: Decoder,
    /// The JSON of the events being handed out.
    json: Vec<u8>,
}

#[wasm_bindgen]
impl RawDecoder {
    /// A decoder with `config`'s decoder limits (`config`: the JSON of the package's
    /// `Config`, or nothing for the defaults).
    #[wasm_bindgen(constructor)]
    pub fn new(config: Option<String>) -> Result<RawDecoder, RawError> {
        let config = config::parse(config.as_deref())?;
        Ok(RawDecoder {
            decoder: Decoder::new(config.decoder),
            json: Vec::new(),
        })
    }

    // Getters.

    /// `[lines, unknown, nonJson, badLines, recaps, reconciled, divergences, results]`.
    pub fn stats(&self) -> Vec<f64> {
        let s = self.decoder.stats();
        [
            s.lines,
            s.unknown,
            s.non_json,
            s.bad_lines,
            s.recaps,
            s.reconciled,
            s.divergences,
            s.results,
        ]
        .map(|n| n as f64)
        .to_vec()
    }

    /// The agent's session id, once an event carried one.
    #[wasm_bindgen(js_name = sessionId)]
    pub fn session_id(&self) -> Option<String> {
        self.decoder.session_id().map(str::to_owned)
    }

    /// The model's display name from `system/init`.
    pub fn model(&self) -> Option<String> {
        self.decoder.model().map(str::to_owned)
    }

    /// Whether stdout ended and every event was handed out.
    #[wasm_bindgen(js_name = isFinished)]
    pub fn is_finished(&self) -> bool {
        self.decoder.is_finished()
    }

    // Inputs.

    /// Stdout bytes, in any chunking.
    #[wasm_bindgen(js_name = pushStdout)]
    pub fn push_stdout(&mut self, data: &[u8]) -> Result<(), RawError> {
        Ok(self.decoder.push_stdout(data)?)
    }

    /// Stdout ended.
    #[wasm_bindgen(js_name = pushEof)]
    pub fn push_eof(&mut self) -> Result<(), RawError> {
        Ok(self.decoder.push_eof()?)
    }

    // Outputs.

    /// The next event as a JSON object, or nothing until the next input.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Option<String> {
        self.json.clear();
        while let Some(event) = self.decoder.poll_event() {
            if events::write(&mut self.json, &event) {
                return Some(self.take_json());
            }
        }
        None
    }

    /// Every pending event, as a JSON array; the empty string when none (nothing to parse).
    pub fn drain(&mut self) -> String {
        self.json.clear();
        let mut first = true;
        while let Some(event) = self.decoder.poll_event() {
            let mark = self.json.len();
            self.json.push(if first { b'[' } else { b',' });
            if events::write(&mut self.json, &event) {
                first = false;
            } else {
                self.json.truncate(mark);
            }
        }
        if !first {
            self.json.push(b']');
        }
        self.take_json()
    }

    /// Test only: panics while the decoder is borrowed, as a bug inside it would.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = testPanic)]
    pub fn test_panic(&mut self) {
        panic!("RawDecoder::test_panic");
    }
}

impl RawDecoder {
    fn take_json(&mut self) -> String {
        // serde_json writes UTF-8 only. The text is handed over whole (the glue frees it
        // once JavaScript has read it), so the next call starts a new buffer.
        String::from_utf8(std::mem::take(&mut self.json)).expect("JSON is UTF-8")
    }
}
